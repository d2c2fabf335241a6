#include "torchscan/tensor_identity.h"

#include <utility>

namespace torchscan {

bool SeenTensors::Insert(const at::Tensor& tensor) {
  if (!objects_.insert(tensor.unsafeGetTensorImpl()).second) return false;
  // NOTE [Storage data as identity]
  // A meta tensor's storage has no data pointer, and neither has an empty
  // one: views of different storages would compare equal. Only the object
  // identifies those.
  if (!tensor.has_storage() || tensor.device().is_meta()) return true;
  const void* data = tensor.storage().data();
  if (data == nullptr) return true;
  View view{
      .storage = data,
      .device = static_cast<std::int64_t>(tensor.device().type()) * 65536 +
                tensor.device().index(),
      .offset = tensor.storage_offset(),
      .dtype = static_cast<std::int64_t>(tensor.scalar_type()),
      .sizes = tensor.sizes().vec(),
      .strides = tensor.strides().vec(),
  };
  return views_.insert(std::move(view)).second;
}

}  // namespace torchscan
