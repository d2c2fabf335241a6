// Reduces the IValues of a call to the torch-free OperatorValues formulas use.

#ifndef TORCHSCAN_DISPATCH_OPERATOR_VALUES_H_
#define TORCHSCAN_DISPATCH_OPERATOR_VALUES_H_

#include <ATen/core/ivalue.h>
#include <ATen/core/stack.h>
#include <c10/util/ArrayRef.h>

#include <vector>

#include "absl/container/inlined_vector.h"
#include "formulas/operator_call.h"

namespace torchscan::dispatch {

// The values of one call. Inline up to the arguments of a convolution, so
// that reducing a call's values allocates nothing (NOTE [The counted path]
// in call_recording.h).
using OperatorValues = absl::InlinedVector<formulas::OperatorValue, 13>;

formulas::OperatorValue ToOperatorValue(const c10::IValue& value);

// Makes a default-constructed `converted` equal to ToOperatorValue(value), in
// place: a tensor's sizes go into the inline storage of `converted.shape`, so
// nothing is allocated for a tensor of up to 6 dimensions, None or a scalar.
void ToOperatorValueIn(const c10::IValue& value,
                       formulas::OperatorValue& converted);

// The same for a tensor argument or result read typed (unboxed_kernels.h):
// an undefined tensor is None, as on a stack.
void TensorToOperatorValueIn(const at::Tensor& tensor,
                             formulas::OperatorValue& converted);

OperatorValues ToOperatorValues(c10::ArrayRef<c10::IValue> values);

// `value` with every tensor (also inside lists and tuples) replaced by a meta
// tensor of the same sizes, strides and dtype: its metadata without its data.
c10::IValue ToMetaIValue(const c10::IValue& value);

// Fills `converted.values` with the contents of `value` when it is a 1-D
// integer tensor whose data can be read (not meta, not a Python subclass
// such as FakeTensor). Runs tensor operators: call with counting excluded.
void ReadIntegerValues(const c10::IValue& value,
                       formulas::OperatorValue& converted);

// Whether `predicate` holds for a defined tensor among `values`, looking
// inside tensor lists (and optional-tensor lists) too.
template <typename Predicate>
bool AnyTensorIn(c10::ArrayRef<c10::IValue> values, Predicate predicate) {
  for (const c10::IValue& value : values) {
    if (value.isTensor()) {
      if (value.toTensor().defined() && predicate(value.toTensor())) {
        return true;
      }
    } else if (value.isList()) {
      for (const c10::IValue& item : value.toListRef()) {
        if (item.isTensor() && item.toTensor().defined() &&
            predicate(item.toTensor())) {
          return true;
        }
      }
    }
  }
  return false;
}

// The same, over the last `count` values of `stack` (a call's arguments).
template <typename Predicate>
bool AnyTensorArgument(const torch::jit::Stack& stack, std::size_t count,
                       Predicate predicate) {
  return AnyTensorIn(torch::jit::last(stack, count), predicate);
}

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_DISPATCH_OPERATOR_VALUES_H_
