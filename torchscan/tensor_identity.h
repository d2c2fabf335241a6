// SeenTensors: a model's tensors, each counted once however it is held.
//
// Parameters and buffers are counted once per model, not once per module that
// holds them. In memory, tied weights (an embedding and the output layer that
// shares it) are one tensor object. After a saved model is loaded
// (torch::jit::load, torch.export.load) they are two tensor objects that view
// the same storage: the archive stores the storage once and each name gets
// its own view. So two tensors are one weight when they are the same
// TensorImpl, or when they view the same storage at the same offset with the
// same sizes, strides and dtype. Tensors without storage data (meta tensors,
// empty ones) can only be told apart by object, so only the TensorImpl
// identifies them. Views that overlap without being equal (a weight and a
// slice of it) count as two tensors.
//
// The set keeps addresses, not references: every inserted tensor must stay
// alive as long as the set is used (a freed tensor's address, and its
// storage's, can be reused by the next one). A crawl's tensors are the
// model's own, alive throughout.

#ifndef TORCHSCAN_TENSOR_IDENTITY_H_
#define TORCHSCAN_TENSOR_IDENTITY_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_set.h"

namespace torchscan {

class SeenTensors {
 public:
  // True the first time `tensor` (or another view equal to it) is inserted.
  bool Insert(const at::Tensor& tensor);

 private:
  struct View {
    const void* storage = nullptr;
    std::int64_t device = 0;  // type * 2^16 + index
    std::int64_t offset = 0;
    std::int64_t dtype = 0;
    std::vector<std::int64_t> sizes;
    std::vector<std::int64_t> strides;

    friend bool operator==(const View& a, const View& b) {
      return a.storage == b.storage && a.device == b.device &&
             a.offset == b.offset && a.dtype == b.dtype && a.sizes == b.sizes &&
             a.strides == b.strides;
    }
    template <typename H>
    friend H AbslHashValue(H h, const View& view) {
      return H::combine(std::move(h), view.storage, view.device, view.offset,
                        view.dtype, view.sizes, view.strides);
    }
  };

  absl::flat_hash_set<const void*> objects_;
  absl::flat_hash_set<View> views_;
};

}  // namespace torchscan

#endif  // TORCHSCAN_TENSOR_IDENTITY_H_
