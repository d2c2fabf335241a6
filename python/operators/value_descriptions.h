// Descriptions of Python values (report/value_metadata.h) by TorchScan
// 0.2's "describe" rules: the one implementation for every Python front end
// (crawl_module's recorder, the ExportedProgram crawler, generated inputs).
//
// The rules, checked in this order (isinstance, so subclasses count):
//   torch.Tensor     {"kind": "tensor", shape, dtype, device, requires_grad}
//   None             {"kind": "none"}
//   tuple, list      their items, described in iteration order
//   Mapping          (collections.abc) its type's __name__ and its items:
//                    each key kept when it is an int (bools included) or an
//                    identifier string, with the key's type name always
//   bool, int, float, complex, str, bytes
//                    {"kind": "scalar", "type": type(value).__name__}
//   anything else    {"kind": "object", "type": type(value).__qualname__}
// Tensor contents, string values and non-identifier keys are never kept.
//
// Plain tensors and parameters are read from their TensorImpl; the dtype
// and device strings are Python's own (str(t.dtype), str(t.device)), made
// once per dtype and device. Tensor subclasses, and tensors whose sizes are
// not plain (nested), are read through their Python attributes, as a
// subclass may define them.
//
// TorchScript values (c10::IValue) are described by
// torchscan/ivalue_metadata.h with the same rules, as far as TorchScript's
// types reach (tests/python/test_value_description_parity.py compares the
// two on every kind TorchScript carries).

#ifndef TORCHSCAN_PYTHON_OPERATORS_VALUE_DESCRIPTIONS_H_
#define TORCHSCAN_PYTHON_OPERATORS_VALUE_DESCRIPTIONS_H_

#include <map>
#include <string>

#include "python/operators/python_objects.h"  // Python.h first
#include "report/value_metadata.h"

namespace torchscan::dispatch {

// Describes values, keeping the dtype and device names it has made. Needs
// the GIL. Every method returns false with a Python error set on failure
// (an exception from a value's own attributes or __iter__ propagates).
class ValueDescriber {
 public:
  ValueDescriber() = default;
  ValueDescriber(const ValueDescriber&) = delete;
  ValueDescriber& operator=(const ValueDescriber&) = delete;

  bool Describe(PyObject* value, report::ValueMetadata* out);
  // `args` a tuple, `kwargs` a dict (its items in order).
  bool DescribeCall(PyObject* args, PyObject* kwargs,
                    report::CallMetadata* out);
  // str(tensor.dtype) and str(tensor.device): for a plain tensor made once
  // per dtype and device, for any other read from its attributes.
  bool TensorNames(PyObject* tensor, std::string* dtype, std::string* device);
  // Whether `value`'s type is exactly torch.Tensor or torch.nn.Parameter.
  // False, with no error, before torch can be found.
  static bool IsPlainTensor(PyObject* value);

 private:
  bool DescribeTensor(PyObject* tensor, report::ValueMetadata* out);
  bool DescribeTensorByAttributes(PyObject* tensor, report::ValueMetadata* out);
  // The names of `dtype` and `device`, those of plain tensor `tensor`.
  bool PlainTensorNames(PyObject* tensor, c10::ScalarType dtype,
                        c10::Device device, const std::string** dtype_name,
                        const std::string** device_name);
  bool DescribeSequence(PyObject* value, bool tuple,
                        report::ValueMetadata* out);
  bool DescribeMapping(PyObject* value, report::ValueMetadata* out);

  std::map<int, std::string> dtype_names_;
  std::map<int, std::string> device_names_;
};

// Adds describe_value(value) -> dict and describe_call(args, kwargs) -> dict
// ({"args": [...], "kwargs": {...}}) to the extension module.
bool AddValueDescriptionFunctions(PyObject* module);

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_PYTHON_OPERATORS_VALUE_DESCRIPTIONS_H_
