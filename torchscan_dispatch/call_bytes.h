// Applies the bytes rule (byte_rule.h, NOTE [The bytes rule]) to one
// operator call's values: the counting fallback reads the arguments before
// the call and the results after it (NOTE [The counted path] in
// call_recording.h: no allocation, no reference count touched); calls whose
// arguments are held read both after it.

#ifndef TORCHSCAN_DISPATCH_CALL_BYTES_H_
#define TORCHSCAN_DISPATCH_CALL_BYTES_H_

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <c10/util/ArrayRef.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <vector>

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

// The same rule one value at a time, for calls read from typed arguments
// (unboxed_kernels.h) rather than from a stack.

// Whether the arguments (results) of a call of `info` with `count` of them
// are read at all; if not, `bytes` says why, or the operator moves nothing.
bool ReadsArgumentBytes(const OperatorInfo& info, std::size_t count,
                        CallBytes& bytes);
bool ReadsResultBytes(const OperatorInfo& info, std::size_t count,
                      CallBytes& bytes);

// NOTE [Wrapped numbers]
// A Python number passed where a tensor is expected (`x * 2`) reaches the
// dispatcher as a 0-d "wrapped number" tensor. It is no tensor the workload
// holds in memory, and a dispatch mode (FlopCounterMode's level) sees it as
// the Python number again: it moves nothing.
// Whether `tensor` moves bytes at all.
inline bool CountsBytes(const at::Tensor& tensor) {
  return tensor.defined() && !tensor.unsafeGetTensorImpl()->is_wrapped_number();
}

// The tensors a call has read so far, by identity: the first kInline in
// place; a call with more (a long TensorList) spills to the heap.
class DistinctTensors {
 public:
  // Whether `tensor` was not seen before (and now is).
  bool Insert(const c10::TensorImpl* tensor) {
    const std::size_t in_place = std::min(count_, kInline);
    for (std::size_t i = 0; i < in_place; ++i) {
      if (seen_[i] == tensor) return false;
    }
    for (const c10::TensorImpl* other : spilled_) {
      if (other == tensor) return false;
    }
    if (count_ < kInline) {
      seen_[count_] = tensor;
    } else {
      spilled_.push_back(tensor);
    }
    ++count_;
    return true;
  }

 private:
  static constexpr std::size_t kInline = 32;
  std::array<const c10::TensorImpl*, kInline> seen_;
  std::size_t count_ = 0;
  std::vector<const c10::TensorImpl*> spilled_;
};

// Adds one argument tensor that CountsBytes, of role `role`; `read` holds
// the call's tensors read so far.
void AddArgumentTensor(ArgumentBytes role, const c10::TensorImpl& tensor,
                       DistinctTensors& read, CallBytes& bytes);
// Adds one result tensor that CountsBytes, of role `role`.
void AddResultTensor(ResultBytes role, const c10::TensorImpl& tensor,
                     CallBytes& bytes);

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_DISPATCH_CALL_BYTES_H_
