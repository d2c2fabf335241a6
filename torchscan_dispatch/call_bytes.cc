#include "torchscan_dispatch/call_bytes.h"

#include <c10/core/impl/TorchDispatchModeTLS.h>

#include <algorithm>
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

// Calls `visit` on every tensor of `value` (a tensor or a list) that counts.
template <typename Visit>
void ForEachTensor(const c10::IValue& value, Visit visit) {
  if (value.isTensor()) {
    const at::Tensor& tensor = value.toTensor();
    if (CountsBytes(tensor)) visit(*tensor.unsafeGetTensorImpl());
  } else if (value.isList()) {
    for (const c10::IValue& item : value.toListRef()) {
      if (item.isTensor() && CountsBytes(item.toTensor())) {
        visit(*item.toTensor().unsafeGetTensorImpl());
      }
    }
  }
}

}  // namespace

bool ReadsArgumentBytes(const OperatorInfo& info, std::size_t count,
                        CallBytes& bytes) {
  if (info.bytes.moves_nothing) return false;
  if (!info.bytes.decided || info.bytes.arguments.size() != count) {
    bytes.unknown = "the operator has no schema to say what it reads";
    return false;
  }
  return true;
}

bool ReadsResultBytes(const OperatorInfo& info, std::size_t count,
                      CallBytes& bytes) {
  if (info.bytes.moves_nothing) return false;
  if (!info.bytes.decided || info.bytes.results.size() != count) {
    if (bytes.unknown == nullptr) {
      bytes.unknown = "the operator has no schema to say what it writes";
    }
    return false;
  }
  return true;
}

void AddArgumentTensor(ArgumentBytes role, const c10::TensorImpl& tensor,
                       DistinctTensors& read, CallBytes& bytes) {
  if (role != ArgumentBytes::kWritten && read.Insert(&tensor)) {
    AddTensor(tensor, bytes.read, bytes);
  }
  if (role != ArgumentBytes::kRead) {
    AddTensor(tensor, bytes.written, bytes);
  }
}

void AddResultTensor(ResultBytes role, const c10::TensorImpl& tensor,
                     CallBytes& bytes) {
  if (role == ResultBytes::kWritten) AddTensor(tensor, bytes.written, bytes);
}

CallBytes ArgumentBytesOf(const OperatorInfo& info,
                          c10::ArrayRef<c10::IValue> arguments) {
  CallBytes bytes;
  if (!ReadsArgumentBytes(info, arguments.size(), bytes)) return bytes;
  DistinctTensors read;
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    const ArgumentBytes role = info.bytes.arguments[i];
    if (role == ArgumentBytes::kNone) continue;
    ForEachTensor(arguments[i], [&](const c10::TensorImpl& tensor) {
      AddArgumentTensor(role, tensor, read, bytes);
    });
  }
  return bytes;
}

void AddResultBytes(const OperatorInfo& info,
                    c10::ArrayRef<c10::IValue> results, CallBytes& bytes) {
  if (!ReadsResultBytes(info, results.size(), bytes)) return;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const ResultBytes role = info.bytes.results[i];
    if (role != ResultBytes::kWritten) continue;
    ForEachTensor(results[i], [&](const c10::TensorImpl& tensor) {
      AddResultTensor(role, tensor, bytes);
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
