#include "torchscan_dispatch/byte_rule.h"

#include <algorithm>

namespace torchscan::dispatch {
namespace {

// Operators with no tensor result that read tensor data anyway.
bool ReadsDataForAnswer(absl::string_view packet) {
  return packet == "aten::equal" || packet == "aten::is_nonzero";
}

// Allocations: their results are written by whoever fills them.
bool AllocatesOnly(absl::string_view packet) {
  return packet == "aten::empty" || packet == "aten::empty_like" ||
         packet == "aten::empty_strided" || packet == "aten::new_empty" ||
         packet == "aten::new_empty_strided" ||
         packet == "aten::empty_permuted";
}

bool SharesAliasSet(const SchemaValueFacts& a, const SchemaValueFacts& b) {
  for (const std::string& set : a.alias_sets) {
    if (std::find(b.alias_sets.begin(), b.alias_sets.end(), set) !=
        b.alias_sets.end()) {
      return true;
    }
  }
  return false;
}

}  // namespace

ByteRule DecideByteRule(absl::string_view packet,
                        absl::Span<const SchemaValueFacts> arguments,
                        absl::Span<const SchemaValueFacts> results) {
  ByteRule rule;
  rule.decided = true;
  rule.arguments.assign(arguments.size(), ArgumentBytes::kNone);
  rule.results.assign(results.size(), ResultBytes::kNone);
  bool any_tensor_result = false, every_result_a_view = true,
       any_scalar_result = false, any_written_argument = false;
  for (const SchemaValueFacts& result : results) {
    any_scalar_result |= result.is_scalar;
    if (!result.holds_tensors) continue;
    any_tensor_result = true;
    if (!result.aliases || result.writes) every_result_a_view = false;
  }
  for (const SchemaValueFacts& argument : arguments) {
    any_written_argument |= argument.holds_tensors && argument.writes;
  }
  const bool metadata = !any_tensor_result && !any_written_argument &&
                        !any_scalar_result && !ReadsDataForAnswer(packet);
  if ((any_tensor_result && every_result_a_view) || metadata ||
      AllocatesOnly(packet)) {
    rule.moves_nothing = true;
    return rule;
  }
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    const SchemaValueFacts& argument = arguments[i];
    if (!argument.holds_tensors) continue;
    if (!argument.writes) {
      rule.arguments[i] = ArgumentBytes::kRead;
      continue;
    }
    const bool returned = std::any_of(
        results.begin(), results.end(), [&](const SchemaValueFacts& result) {
          return result.writes && SharesAliasSet(argument, result);
        });
    if (returned) {
      rule.arguments[i] =
          argument.is_out ? ArgumentBytes::kNone : ArgumentBytes::kRead;
    } else {
      rule.arguments[i] = argument.is_out ? ArgumentBytes::kWritten
                                          : ArgumentBytes::kReadAndWritten;
    }
  }
  for (std::size_t i = 0; i < results.size(); ++i) {
    const SchemaValueFacts& result = results[i];
    if (result.holds_tensors && (!result.aliases || result.writes)) {
      rule.results[i] = ResultBytes::kWritten;
    }
  }
  return rule;
}

std::optional<std::int64_t> StridedTensorBytes(
    std::int64_t itemsize, absl::Span<const std::int64_t> sizes,
    absl::Span<const std::int64_t> strides) {
  std::int64_t bytes = itemsize;
  if (bytes < 0) return std::nullopt;
  bool overflow = false;
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] < 0) return std::nullopt;
    if (sizes[d] == 0) return 0;
    if (d < strides.size() && strides[d] == 0) continue;
    overflow |= __builtin_mul_overflow(bytes, sizes[d], &bytes);
  }
  if (overflow) return std::nullopt;
  return bytes;
}

}  // namespace torchscan::dispatch
