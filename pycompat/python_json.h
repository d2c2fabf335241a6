// JSON text exactly as Python's json.dumps writes it.
//
// TorchScan 0.2 users store reports with json.dumps(report) (separators
// ", " and ": ", ASCII-only output, float repr). DumpPythonJson writes the
// same bytes, so a report we parse and write back is identical to the file
// Python produced. DumpJson (json_io.h) stays the compact native form.

#ifndef TORCHSCAN_PYCOMPAT_PYTHON_JSON_H_
#define TORCHSCAN_PYCOMPAT_PYTHON_JSON_H_

#include <string>

#include "report/json_io.h"

namespace torchscan::pycompat {

// json.dumps(document) for indent < 0, json.dumps(document, indent=indent)
// otherwise. Integers of any report::Count size are written exactly; non-finite
// floats as NaN / Infinity / -Infinity, as Python does. Malformed UTF-8 in a
// string (which ParseJson never produces) is written as \ufffd.
std::string DumpPythonJson(const report::Json& document, int indent = -1);

}  // namespace torchscan::pycompat

#endif  // TORCHSCAN_PYCOMPAT_PYTHON_JSON_H_
