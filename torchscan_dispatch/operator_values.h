// Reduces the IValues of a call to the torch-free OperatorValues formulas use.

#ifndef TORCHSCAN_DISPATCH_OPERATOR_VALUES_H_
#define TORCHSCAN_DISPATCH_OPERATOR_VALUES_H_

#include <ATen/core/ivalue.h>
#include <c10/util/ArrayRef.h>

#include <vector>

#include "formulas/operator_call.h"

namespace torchscan::dispatch {

formulas::OperatorValue ToOperatorValue(const c10::IValue& value);

std::vector<formulas::OperatorValue> ToOperatorValues(
    c10::ArrayRef<c10::IValue> values);

// `value` with every tensor (also inside lists and tuples) replaced by a meta
// tensor of the same sizes, strides and dtype: its metadata without its data.
c10::IValue ToMetaIValue(const c10::IValue& value);

// Fills `converted.values` with the contents of `value` when it is a 1-D
// integer tensor whose data can be read (not meta, not a Python subclass
// such as FakeTensor). Runs tensor operators: call with counting excluded.
void ReadIntegerValues(const c10::IValue& value,
                       formulas::OperatorValue& converted);

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_DISPATCH_OPERATOR_VALUES_H_
