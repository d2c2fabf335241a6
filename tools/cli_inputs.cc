#include "tools/cli_inputs.h"

#include <c10/util/Exception.h>
#include <torch/csrc/jit/serialization/import.h>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <new>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tools/cli_errors.h"

namespace torchscan::cli {

absl::StatusOr<std::vector<std::vector<std::int64_t>>> ParseInputShapes(
    absl::string_view text) {
  std::vector<std::vector<std::int64_t>> shapes;
  for (absl::string_view part : absl::StrSplit(text, ';')) {
    std::vector<std::int64_t> shape;
    for (absl::string_view dim : absl::StrSplit(part, ',')) {
      // Digits only: SimpleAtoi alone would also take "+3" and "-0".
      const absl::string_view digits = absl::StripAsciiWhitespace(dim);
      std::int64_t value;
      if (digits.empty() ||
          !std::all_of(digits.begin(), digits.end(),
                       [](char c) { return absl::ascii_isdigit(c); }) ||
          !absl::SimpleAtoi(digits, &value)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "bad --input-shape '", absl::CHexEscape(text), "': '",
            absl::CHexEscape(dim),
            "' is not a non-negative integer that fits 64 bits (expected "
            "e.g. 3,224,224)"));
      }
      shape.push_back(value);
    }
    shapes.push_back(std::move(shape));
  }
  return shapes;
}

absl::StatusOr<std::vector<c10::ScalarType>> ParseDtypes(
    absl::string_view text) {
  static constexpr std::pair<absl::string_view, c10::ScalarType> kTypes[] = {
      {"float32", c10::ScalarType::Float},
      {"float", c10::ScalarType::Float},
      {"float64", c10::ScalarType::Double},
      {"double", c10::ScalarType::Double},
      {"float16", c10::ScalarType::Half},
      {"half", c10::ScalarType::Half},
      {"bfloat16", c10::ScalarType::BFloat16},
      {"int64", c10::ScalarType::Long},
      {"long", c10::ScalarType::Long},
      {"int32", c10::ScalarType::Int},
      {"int", c10::ScalarType::Int},
      {"int16", c10::ScalarType::Short},
      {"int8", c10::ScalarType::Char},
      {"uint8", c10::ScalarType::Byte},
      {"bool", c10::ScalarType::Bool},
  };
  std::vector<c10::ScalarType> dtypes;
  if (text.empty()) return dtypes;
  for (absl::string_view name : absl::StrSplit(text, ';')) {
    std::string key = absl::AsciiStrToLower(name);
    if (absl::StartsWith(key, "torch.")) key = key.substr(6);
    bool found = false;
    for (const auto& [type_name, type] : kTypes) {
      if (key == type_name) {
        dtypes.push_back(type);
        found = true;
        break;
      }
    }
    if (!found) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown --dtype '", absl::CHexEscape(name),
          "' (expected e.g. float32, bfloat16, int64; ';' between inputs)"));
    }
  }
  return dtypes;
}

absl::StatusOr<c10::Device> ParseDevice(absl::string_view text) {
  try {
    return c10::Device(std::string(text));
  } catch (const c10::Error& error) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad --device '", absl::CHexEscape(text),
                     "': ", error.what_without_backtrace()));
  }
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    return absl::NotFoundError(absl::StrCat("no such file: ", path));
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return absl::PermissionDeniedError(absl::StrCat("cannot read ", path));
  }
  return std::string(std::istreambuf_iterator<char>(file),
                     std::istreambuf_iterator<char>());
}

absl::StatusOr<torch::jit::Module> LoadScriptModuleFile(
    const std::string& path) {
  std::error_code exists_error;
  if (!std::filesystem::is_regular_file(path, exists_error)) {
    return absl::NotFoundError(absl::StrCat("no such file: ", path));
  }
  const auto not_torchscript = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " is not a TorchScript model file (torch.jit.save): ",
                     OneLineCause(why)));
  };
  // PyTorch's loader reports damage with c10::Error mostly, but a corrupted
  // archive can also surface as a standard exception from the zip reader or
  // the unpickler, or as an allocation failure for a size read from it.
  try {
    return torch::jit::load(path);
  } catch (const c10::Error& error) {
    return not_torchscript(error.what_without_backtrace());
  } catch (const std::bad_alloc&) {
    return not_torchscript("a size recorded in it is too large to allocate");
  } catch (const std::exception& error) {
    return not_torchscript(error.what());
  }
}

}  // namespace torchscan::cli
