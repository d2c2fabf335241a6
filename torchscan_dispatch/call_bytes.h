// Applies the bytes rule (byte_rule.h, NOTE [The bytes rule]) to one
// operator call's values: the counting fallback reads the arguments before
// the call and the results after it (NOTE [The counted path] in
// call_recording.h: no allocation, no reference count touched); calls whose
// arguments are held read both after it.

#ifndef TORCHSCAN_DISPATCH_CALL_BYTES_H_
#define TORCHSCAN_DISPATCH_CALL_BYTES_H_

#include <ATen/core/ivalue.h>
#include <c10/util/ArrayRef.h>

#include "torchscan_dispatch/byte_rule.h"
#include "torchscan_dispatch/operator_info.h"

namespace torchscan::dispatch {

// The bytes `info`'s arguments move: each distinct tensor (by identity, in
// lists too) read once, and written arguments no result returns written
// once. Read before the call: nothing the call does to them can change
// their sizes except an `out=` resize, and a resized destination is measured
// from the result that returns it.
CallBytes ArgumentBytesOf(const OperatorInfo& info,
                          c10::ArrayRef<c10::IValue> arguments);

// Adds what `info`'s results write to `bytes`.
void AddResultBytes(const OperatorInfo& info,
                    c10::ArrayRef<c10::IValue> results, CallBytes& bytes);

// Both, for a finished call whose arguments were held.
CallBytes CallBytesOf(const OperatorInfo& info,
                      c10::ArrayRef<c10::IValue> arguments,
                      c10::ArrayRef<c10::IValue> results);

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_DISPATCH_CALL_BYTES_H_
