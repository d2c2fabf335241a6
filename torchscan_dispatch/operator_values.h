// Reduces the IValues of a call to the torch-free OperatorValues formulas use.

#ifndef TORCHSCAN_DISPATCH_OPERATOR_VALUES_H_
#define TORCHSCAN_DISPATCH_OPERATOR_VALUES_H_

#include <vector>

#include <ATen/core/ivalue.h>
#include <c10/util/ArrayRef.h>

#include "formulas/operator_call.h"

namespace torchscan::dispatch {

formulas::OperatorValue ToOperatorValue(const c10::IValue& value);

std::vector<formulas::OperatorValue> ToOperatorValues(
    c10::ArrayRef<c10::IValue> values);

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_DISPATCH_OPERATOR_VALUES_H_
