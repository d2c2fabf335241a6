#include "torchscan_dispatch/call_bytes.h"

#include <c10/core/impl/TorchDispatchModeTLS.h>

#include <array>
#include <vector>

namespace torchscan::dispatch {
namespace {

// Why `tensor`'s bytes cannot be known, or nullptr. Meta and fake tensors
// have sizes and strides: they are counted, as their FLOPs are.
const char* UnknownBytesReason(const c10::TensorImpl& tensor) {
  if (tensor.is_nested()) {
    return "a nested (jagged) tensor argument or result has no strided "
           "bytes";
  }
  if (tensor.layout() != c10::kStrided) {
    return "a tensor with a non-strided layout (sparse, mkldnn) has no "
           "strided bytes";
  }
  if (tensor.has_symbolic_sizes_strides()) {
    return "a tensor with symbolic sizes has no known bytes";
  }
  // A Python subclass outside a FakeTensorMode: a wrapper whose storage we
  // cannot see (the fallback passes most subclass calls on; this is what
  // is left). Rare, so the mode lookup happens only here.
  if (tensor.key_set().has(c10::DispatchKey::Python) &&
      !c10::impl::TorchDispatchModeTLS::get_mode(
          c10::impl::TorchDispatchModeKey::FAKE)) {
    return "a tensor subclass argument or result wraps storage that is not "
           "visible";
  }
  return nullptr;
}

// Adds one tensor's bytes to `into`, or records why they are unknown.
void AddTensor(const c10::TensorImpl& tensor, std::int64_t& into,
               CallBytes& bytes) {
  if (const char* reason = UnknownBytesReason(tensor)) {
    if (bytes.unknown == nullptr) bytes.unknown = reason;
    return;
  }
  const std::optional<std::int64_t> size =
      StridedTensorBytes(static_cast<std::int64_t>(tensor.dtype().itemsize()),
                         tensor.sizes(), tensor.strides());
  if (!size || __builtin_add_overflow(into, *size, &into)) {
    if (bytes.unknown == nullptr) bytes.unknown = "the byte count overflows";
  }
}

// NOTE [Wrapped numbers]
// A Python number passed where a tensor is expected (`x * 2`) reaches the
// dispatcher as a 0-d "wrapped number" tensor. It is no tensor the workload
// holds in memory, and a dispatch mode (FlopCounterMode's level) sees it as
// the Python number again: it moves nothing.
bool Counts(const at::Tensor& tensor) {
  return tensor.defined() && !tensor.unsafeGetTensorImpl()->is_wrapped_number();
}

// Calls `visit` on every tensor of `value` (a tensor or a list) that counts.
template <typename Visit>
void ForEachTensor(const c10::IValue& value, Visit visit) {
  if (value.isTensor()) {
    const at::Tensor& tensor = value.toTensor();
    if (Counts(tensor)) visit(*tensor.unsafeGetTensorImpl());
  } else if (value.isList()) {
    for (const c10::IValue& item : value.toListRef()) {
      if (item.isTensor() && Counts(item.toTensor())) {
        visit(*item.toTensor().unsafeGetTensorImpl());
      }
    }
  }
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

}  // namespace

CallBytes ArgumentBytesOf(const OperatorInfo& info,
                          c10::ArrayRef<c10::IValue> arguments) {
  CallBytes bytes;
  if (info.bytes.moves_nothing) return bytes;
  if (!info.bytes.decided || info.bytes.arguments.size() != arguments.size()) {
    bytes.unknown = "the operator has no schema to say what it reads";
    return bytes;
  }
  DistinctTensors read;
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    const ArgumentBytes role = info.bytes.arguments[i];
    if (role == ArgumentBytes::kNone) continue;
    ForEachTensor(arguments[i], [&](const c10::TensorImpl& tensor) {
      if (role != ArgumentBytes::kWritten && read.Insert(&tensor)) {
        AddTensor(tensor, bytes.read, bytes);
      }
      if (role != ArgumentBytes::kRead) {
        AddTensor(tensor, bytes.written, bytes);
      }
    });
  }
  return bytes;
}

void AddResultBytes(const OperatorInfo& info,
                    c10::ArrayRef<c10::IValue> results, CallBytes& bytes) {
  if (info.bytes.moves_nothing) return;
  if (!info.bytes.decided || info.bytes.results.size() != results.size()) {
    if (bytes.unknown == nullptr) {
      bytes.unknown = "the operator has no schema to say what it writes";
    }
    return;
  }
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (info.bytes.results[i] != ResultBytes::kWritten) continue;
    ForEachTensor(results[i], [&](const c10::TensorImpl& tensor) {
      AddTensor(tensor, bytes.written, bytes);
    });
  }
}

CallBytes CallBytesOf(const OperatorInfo& info,
                      c10::ArrayRef<c10::IValue> arguments,
                      c10::ArrayRef<c10::IValue> results) {
  CallBytes bytes = ArgumentBytesOf(info, arguments);
  AddResultBytes(info, results, bytes);
  return bytes;
}

}  // namespace torchscan::dispatch
