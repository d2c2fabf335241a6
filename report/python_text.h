// Python's text conventions, reproduced exactly.
//
// TorchScan's observable output (json.dumps, the summary table, error
// messages) is produced by Python; matching it byte for byte needs Python's
// float repr, %-formatting, str repr, thousands separators and code-point
// string lengths.

#ifndef TORCHSCAN_REPORT_PYTHON_TEXT_H_
#define TORCHSCAN_REPORT_PYTHON_TEXT_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "report/count.h"

namespace torchscan::report {

// repr(float): the shortest digits that round-trip, laid out as Python does
// ("1.0", "0.1", "1e-05", "1e+16", "inf", "nan").
std::string PythonFloatRepr(double value);

// f"{value:.{decimals}f}": the exact binary value rounded half to even.
std::string PythonFixed(double value, int decimals);

// float(value) for a Python int: rounded to nearest, ties to even.
double CountToDouble(Count value);

// a // b for Python floats (CPython's float_divmod), which differs from
// floor(a / b) when the quotient rounds up to an integer.
double PythonFloorDivide(double a, double b);

// f"{value:,}".
std::string PythonThousands(Count value);

// repr(str) of UTF-8 text: the quote Python picks and its escapes. Code
// points Python deems unprintable are escaped for the C0/C1 controls,
// separators, format characters and private-use ranges; unassigned code
// points are printed as themselves (Python would escape them).
std::string PythonStringRepr(absl::string_view utf8);

// len(str) of UTF-8 text, in code points. Invalid bytes count one each.
std::size_t CodePointLength(absl::string_view utf8);

// s[:stop] with Python's slice semantics on code points: a negative stop
// counts from the end, and one beyond either end clamps.
std::string CodePointSlice(absl::string_view utf8, std::int64_t stop);

}  // namespace torchscan::report

#endif  // TORCHSCAN_REPORT_PYTHON_TEXT_H_
