#include "report/python_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "report/utf8.h"

namespace torchscan::report {

namespace {

struct CodePointRange {
  char32_t first;
  char32_t last;
};

// Code points outside printable ASCII that str.isprintable() rejects, apart
// from unassigned ones: controls (Cc), separators (Zs, Zl, Zp), format
// characters (Cf) and private use (Co).
constexpr CodePointRange kUnprintable[] = {
    {0x0080, 0x00A0},    {0x00AD, 0x00AD},   {0x0600, 0x0605},
    {0x061C, 0x061C},    {0x06DD, 0x06DD},   {0x070F, 0x070F},
    {0x0890, 0x0891},    {0x08E2, 0x08E2},   {0x1680, 0x1680},
    {0x180E, 0x180E},    {0x2000, 0x200F},   {0x2028, 0x202F},
    {0x205F, 0x2064},    {0x2066, 0x206F},   {0x3000, 0x3000},
    {0xE000, 0xF8FF},    {0xFDD0, 0xFDEF},   {0xFEFF, 0xFEFF},
    {0xFFF9, 0xFFFB},    {0xFFFE, 0xFFFF},   {0x110BD, 0x110BD},
    {0x110CD, 0x110CD},  {0x13430, 0x1343F}, {0x1BCA0, 0x1BCA3},
    {0x1D173, 0x1D17A},  {0xE0001, 0xE0001}, {0xE0020, 0xE007F},
    {0xF0000, 0x10FFFF},
};

bool IsPrintable(char32_t code_point) {
  if (code_point < 0x80) return code_point >= 0x20 && code_point < 0x7F;
  if ((code_point & 0xFFFE) == 0xFFFE) return false;  // Noncharacters.
  for (const CodePointRange& range : kUnprintable) {
    if (code_point >= range.first && code_point <= range.last) return false;
  }
  return true;
}

}  // namespace

std::string PythonFloatRepr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (value == 0) return std::signbit(value) ? "-0.0" : "0.0";
  // Shortest round-trip digits, as Python's repr chooses them.
  char buffer[64];
  const std::to_chars_result result = std::to_chars(
      buffer, buffer + sizeof(buffer), value, std::chars_format::scientific);
  const std::string scientific(buffer, result.ptr);
  const std::size_t e = scientific.find('e');
  std::string mantissa = scientific.substr(0, e);
  const int exponent = std::atoi(scientific.c_str() + e + 1);
  const bool negative = mantissa.front() == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits.push_back(c);
  }
  // Python places the point after `point` digits and switches to exponent
  // notation outside -4 < point <= 16.
  const int point = exponent + 1;
  std::string out = negative ? "-" : "";
  const int count = static_cast<int>(digits.size());
  if (point > -4 && point <= 16) {
    if (point <= 0) {
      absl::StrAppend(&out, "0.", std::string(-point, '0'), digits);
    } else if (point >= count) {
      absl::StrAppend(&out, digits, std::string(point - count, '0'), ".0");
    } else {
      absl::StrAppend(&out, digits.substr(0, point), ".", digits.substr(point));
    }
    return out;
  }
  out.push_back(digits[0]);
  if (count > 1) absl::StrAppend(&out, ".", digits.substr(1));
  absl::StrAppend(&out, absl::StrFormat("e%c%02d", exponent < 0 ? '-' : '+',
                                        std::abs(exponent)));
  return out;
}

std::string PythonFixed(double value, int decimals) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  // glibc prints the exact binary value and rounds half to even, as
  // Python's correctly rounded dtoa does.
  const int size = std::snprintf(nullptr, 0, "%.*f", decimals, value);
  std::string out(static_cast<std::size_t>(size) + 1, '\0');
  std::snprintf(out.data(), out.size(), "%.*f", decimals, value);
  out.pop_back();
  return out;
}

double CountToDouble(Count value) { return static_cast<double>(value); }

double PythonFloorDivide(double a, double b) {
  double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0) {
    if ((b < 0) != (mod < 0)) div -= 1.0;
  }
  if (div == 0) return std::copysign(0.0, a / b);
  double floor_div = std::floor(div);
  if (div - floor_div > 0.5) floor_div += 1.0;
  return floor_div;
}

std::string PythonThousands(Count value) {
  std::string digits = CountToString(value);
  std::string sign;
  if (!digits.empty() && digits.front() == '-') {
    sign = "-";
    digits.erase(0, 1);
  }
  std::string out;
  const std::size_t first_group =
      digits.size() % 3 == 0 ? 3 : digits.size() % 3;
  out.append(digits, 0, first_group);
  for (std::size_t i = first_group; i < digits.size(); i += 3) {
    out.push_back(',');
    out.append(digits, i, 3);
  }
  return sign + out;
}

std::string PythonStringRepr(absl::string_view utf8) {
  const bool has_single = utf8.find('\'') != absl::string_view::npos;
  const bool has_double = utf8.find('"') != absl::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (std::size_t i = 0; i < utf8.size();) {
    const DecodedCodePoint decoded = DecodeUtf8(utf8, i);
    i += decoded.length;
    // A malformed byte cannot be in a Python str; show it as \x escape.
    const char32_t c =
        decoded.valid ? decoded.value : static_cast<unsigned char>(utf8[i - 1]);
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (decoded.valid && IsPrintable(c)) {
      AppendUtf8(c, out);
    } else if (c <= 0xFF) {
      absl::StrAppend(&out,
                      absl::StrFormat("\\x%02x", static_cast<unsigned>(c)));
    } else if (c <= 0xFFFF) {
      absl::StrAppend(&out,
                      absl::StrFormat("\\u%04x", static_cast<unsigned>(c)));
    } else {
      absl::StrAppend(&out,
                      absl::StrFormat("\\U%08x", static_cast<unsigned>(c)));
    }
  }
  out.push_back(quote);
  return out;
}

std::size_t CodePointLength(absl::string_view utf8) {
  std::size_t count = 0;
  for (std::size_t i = 0; i < utf8.size(); i += DecodeUtf8(utf8, i).length) {
    ++count;
  }
  return count;
}

std::string CodePointSlice(absl::string_view utf8, std::int64_t stop) {
  const auto length = static_cast<std::int64_t>(CodePointLength(utf8));
  const std::int64_t keep = stop < 0 ? std::max<std::int64_t>(length + stop, 0)
                                     : std::min(stop, length);
  std::size_t end = 0;
  for (std::int64_t taken = 0; taken < keep; ++taken) {
    end += DecodeUtf8(utf8, end).length;
  }
  return std::string(utf8.substr(0, end));
}

}  // namespace torchscan::report
