#include "formulas/ordered_inputs.h"

#include <cstddef>
#include <optional>
#include <utility>

namespace torchscan::formulas {
namespace {

using Kind = ForwardParameter::Kind;

std::vector<CallValue> Fallback(absl::Span<const CallValue> args,
                                absl::Span<const KeywordArgument> kwargs) {
  std::vector<CallValue> ordered(args.begin(), args.end());
  for (const KeywordArgument& kwarg : kwargs) ordered.push_back(kwarg.value);
  return ordered;
}

// The keyword arguments not yet bound, in call order.
class PendingKeywords {
 public:
  explicit PendingKeywords(absl::Span<const KeywordArgument> kwargs)
      : kwargs_(kwargs), taken_(kwargs.size(), false) {}

  bool Contains(const std::string& name) const {
    return Find(name).has_value();
  }
  // Removes and returns the value of `name`, if pending.
  std::optional<CallValue> Pop(const std::string& name) {
    std::optional<std::size_t> index = Find(name);
    if (!index) return std::nullopt;
    taken_[*index] = true;
    return kwargs_[*index].value;
  }
  std::vector<CallValue> Remaining() const {
    std::vector<CallValue> values;
    for (std::size_t i = 0; i < kwargs_.size(); ++i) {
      if (!taken_[i]) values.push_back(kwargs_[i].value);
    }
    return values;
  }

 private:
  std::optional<std::size_t> Find(const std::string& name) const {
    for (std::size_t i = 0; i < kwargs_.size(); ++i) {
      if (!taken_[i] && kwargs_[i].name == name) return i;
    }
    return std::nullopt;
  }

  absl::Span<const KeywordArgument> kwargs_;
  std::vector<bool> taken_;
};

// Signature._bind(args, kwargs, partial=True) of CPython 3.11: the values
// bound to each parameter (a *args parameter binds several), or nullopt
// where Python raises TypeError.
std::optional<std::vector<std::optional<std::vector<CallValue>>>> BindPartial(
    const ForwardSignature& signature, absl::Span<const CallValue> args,
    absl::Span<const KeywordArgument> kwargs) {
  const std::vector<ForwardParameter>& parameters = signature.parameters;
  std::vector<std::optional<std::vector<CallValue>>> bound(parameters.size());
  PendingKeywords pending(kwargs);
  std::size_t next = 0;               // the next parameter to bind
  std::optional<std::size_t> resume;  // where keyword binding starts
  std::size_t arg = 0;
  // Positional arguments bind to positional parameters in order.
  while (true) {
    if (arg == args.size()) {
      if (next == parameters.size()) break;
      const ForwardParameter& parameter = parameters[next++];
      if (parameter.kind == Kind::kVarPositional) break;
      if (pending.Contains(parameter.name) &&
          parameter.kind == Kind::kPositionalOnly) {
        return std::nullopt;  // positional only, but passed as a keyword
      }
      resume = next - 1;
      break;
    }
    if (next == parameters.size()) return std::nullopt;  // too many positional
    const std::size_t index = next++;
    const ForwardParameter& parameter = parameters[index];
    if (parameter.kind == Kind::kVarKeyword ||
        parameter.kind == Kind::kKeywordOnly) {
      return std::nullopt;  // too many positional arguments
    }
    if (parameter.kind == Kind::kVarPositional) {
      bound[index] = std::vector<CallValue>(args.begin() + arg, args.end());
      break;
    }
    if (pending.Contains(parameter.name) &&
        parameter.kind != Kind::kPositionalOnly) {
      return std::nullopt;  // multiple values for the argument
    }
    bound[index] = std::vector<CallValue>{args[arg++]};
  }
  // Keywords bind by name to the parameters left.
  std::optional<std::size_t> var_keyword;
  for (std::size_t index = resume.value_or(next); index < parameters.size();
       ++index) {
    const ForwardParameter& parameter = parameters[index];
    if (parameter.kind == Kind::kVarKeyword) {
      var_keyword = index;
      continue;
    }
    if (parameter.kind == Kind::kVarPositional) continue;
    std::optional<CallValue> value = pending.Pop(parameter.name);
    if (!value) continue;
    if (parameter.kind == Kind::kPositionalOnly) return std::nullopt;
    bound[index] = std::vector<CallValue>{*std::move(value)};
  }
  std::vector<CallValue> extra = pending.Remaining();
  if (!extra.empty()) {
    if (!var_keyword) return std::nullopt;  // an unexpected keyword argument
    bound[*var_keyword] =
        std::vector<CallValue>{CallValue::Mapping("dict", std::move(extra))};
  }
  return bound;
}

}  // namespace

std::vector<CallValue> OrderedInputs(const ForwardSignature* signature,
                                     absl::Span<const CallValue> args,
                                     absl::Span<const KeywordArgument> kwargs) {
  if (signature == nullptr) return Fallback(args, kwargs);
  std::optional<std::vector<std::optional<std::vector<CallValue>>>> bound =
      BindPartial(*signature, args, kwargs);
  if (!bound) return Fallback(args, kwargs);
  // apply_defaults, then one item per parameter with *args expanded.
  std::vector<CallValue> ordered;
  for (std::size_t i = 0; i < signature->parameters.size(); ++i) {
    const ForwardParameter& parameter = signature->parameters[i];
    if ((*bound)[i]) {
      for (CallValue& value : *(*bound)[i]) ordered.push_back(std::move(value));
    } else if (parameter.default_value) {
      ordered.push_back(*parameter.default_value);
    } else if (parameter.kind == Kind::kVarKeyword) {
      ordered.push_back(CallValue::Mapping("dict", {}));
    }
    // A *args parameter without values expands to nothing; a required
    // parameter left unbound is skipped.
  }
  return ordered;
}

}  // namespace torchscan::formulas
