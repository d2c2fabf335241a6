// Minimal UTF-8 decoding and encoding for code-point-exact text handling.

#ifndef TORCHSCAN_REPORT_UTF8_H_
#define TORCHSCAN_REPORT_UTF8_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace torchscan::report {

struct DecodedCodePoint {
  char32_t value = 0;
  // Bytes consumed; at least 1 so that a scan always advances.
  std::size_t length = 1;
  // False for a malformed, overlong or surrogate sequence (value is then
  // U+FFFD and length 1).
  bool valid = true;
};

// Decodes the code point starting at byte `position` (< text.size()).
DecodedCodePoint DecodeUtf8(absl::string_view text, std::size_t position);

void AppendUtf8(char32_t code_point, std::string& out);

}  // namespace torchscan::report

#endif  // TORCHSCAN_REPORT_UTF8_H_
