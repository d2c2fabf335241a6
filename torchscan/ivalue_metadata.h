// TorchScan 0.2's "describe" rules for C++ values: the metadata of a value
// (kind, tensor shape/dtype/device/requires_grad, container structure),
// never its contents, the same the Python package records for the Python
// value an IValue stands for (python/operators/value_descriptions.h has the
// rules; tests/python/test_value_description_parity.py checks every kind
// TorchScript carries against it: dict keys of each type, dtypes, enums,
// devices). One difference is left: a string key is kept when it is an
// ASCII identifier, where Python's str.isidentifier() also takes non-ASCII
// letters, which TorchScript code rarely uses as keys.

#ifndef TORCHSCAN_TORCHSCAN_IVALUE_METADATA_H_
#define TORCHSCAN_TORCHSCAN_IVALUE_METADATA_H_

#include <ATen/core/ivalue.h>
#include <c10/core/ScalarType.h>

#include <string>
#include <vector>

#include "report/value_metadata.h"

namespace torchscan {

// Python's spelling of a dtype: "torch.float32", "torch.int64", ...
std::string PythonDtypeName(c10::ScalarType type);

// A TorchScript class name without its "__torch__." prefix and
// "___torch_mangle_N" components: "torch.nn.modules.conv.Conv2d".
std::string DemangledClassName(const std::string& qualified_name);
// The last component: "Conv2d".
std::string ShortClassName(const std::string& qualified_name);

report::ValueMetadata DescribeValue(const c10::IValue& value);
// TorchScript passes arguments positionally: no kwargs.
report::CallMetadata DescribeCall(const std::vector<c10::IValue>& args);

}  // namespace torchscan

#endif  // TORCHSCAN_TORCHSCAN_IVALUE_METADATA_H_
