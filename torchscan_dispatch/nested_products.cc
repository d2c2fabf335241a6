#include "torchscan_dispatch/nested_products.h"

#include <ATen/NestedTensorImpl.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "formulas/operator_call.h"
#include "torchscan_dispatch/operator_values.h"

namespace torchscan::dispatch {
namespace {

using report::Count;

// The implementation of a strided nested tensor (not a jagged one: that is
// a Python subclass, counted through its dense calls).
const at::native::NestedTensorImpl* StridedNested(const c10::IValue& value) {
  if (!value.isTensor()) return nullptr;
  const at::Tensor& tensor = value.toTensor();
  if (!tensor.defined() || !tensor.is_nested() ||
      tensor.key_set().has(c10::DispatchKey::Python)) {
    return nullptr;
  }
  return at::native::get_nested_tensor_impl_or_null(tensor);
}

// The dense products a nested matmul's or fused layer's kernel runs: what
// the padding is found in. Only products: under the elementwise convention
// the kernel's softmax and normalisations are counted too, and they are
// neither a component's product nor padding of one.
bool IsDenseProduct(const OperatorInfo& info) {
  return info.packet == "aten::mm" || info.packet == "aten::bmm" ||
         info.packet == "aten::addmm" || info.packet == "aten::baddbmm" ||
         info.packet == "aten::addbmm" ||
         info.packet == "aten::_addmm_activation";
}

// 2 x batch x m x k x n for components of sizes `a` (..., m, k) and `b`
// (..., k, n), leading dimensions broadcast; nullopt when they do not
// multiply.
std::optional<Count> ProductFlops(const std::int64_t* a, std::int64_t a_dims,
                                  const std::int64_t* b, std::int64_t b_dims) {
  if (a_dims < 2 || a_dims != b_dims || a[a_dims - 1] != b[b_dims - 2]) {
    return std::nullopt;
  }
  Count batch = 1;
  for (std::int64_t d = 0; d < a_dims - 2; ++d) {
    if (a[d] != b[d] && a[d] != 1 && b[d] != 1) return std::nullopt;
    batch *= std::max(a[d], b[d]);
  }
  return 2 * batch * a[a_dims - 2] * a[a_dims - 1] * b[b_dims - 1];
}

}  // namespace

bool IsNestedProductCall(const OperatorInfo& info,
                         c10::ArrayRef<c10::IValue> arguments) {
  if (!info.pads_nested) return false;
  return std::any_of(
      arguments.begin(), arguments.end(),
      [](const c10::IValue& value) { return StridedNested(value) != nullptr; });
}

std::optional<Count> ComponentProductFlops(const at::Tensor& a,
                                           const at::Tensor& b) {
  const at::native::NestedTensorImpl* left =
      at::native::get_nested_tensor_impl_or_null(a);
  const at::native::NestedTensorImpl* right =
      at::native::get_nested_tensor_impl_or_null(b);
  if (left == nullptr || right == nullptr) return std::nullopt;
  // n x dims int64 matrices on the CPU, one row per component.
  const at::Tensor& a_sizes = left->get_nested_sizes();
  const at::Tensor& b_sizes = right->get_nested_sizes();
  if (a_sizes.dim() != 2 || b_sizes.dim() != 2 ||
      a_sizes.size(0) != b_sizes.size(0) || !a_sizes.is_contiguous() ||
      !b_sizes.is_contiguous()) {
    return std::nullopt;
  }
  const std::int64_t a_dims = a_sizes.size(1), b_dims = b_sizes.size(1);
  const std::int64_t* a_rows = a_sizes.const_data_ptr<std::int64_t>();
  const std::int64_t* b_rows = b_sizes.const_data_ptr<std::int64_t>();
  Count flops = 0;
  for (std::int64_t i = 0; i < a_sizes.size(0); ++i) {
    const std::optional<Count> one =
        ProductFlops(a_rows + i * a_dims, a_dims, b_rows + i * b_dims, b_dims);
    if (!one) return std::nullopt;
    flops += *one;
  }
  return flops;
}

namespace {

// The components' own products of a matmul(self, other), or of a
// matmul_backward(grad, self, other, mask), whose gradients each cost one
// product of the forward's size.
std::optional<Count> MatmulComponentFlops(
    const OperatorInfo& info, c10::ArrayRef<c10::IValue> arguments) {
  const bool backward = info.packet == "aten::matmul_backward";
  const std::size_t first = backward ? 1 : 0;
  if (arguments.size() < first + 2 || !arguments[first].isTensor() ||
      !arguments[first + 1].isTensor()) {
    return std::nullopt;
  }
  const std::optional<Count> product = ComponentProductFlops(
      arguments[first].toTensor(), arguments[first + 1].toTensor());
  if (!product || !backward) return product;
  if (arguments.size() < 4 || !arguments[3].isBoolList()) return std::nullopt;
  Count gradients = 0;
  for (const bool wanted : arguments[3].toBoolList()) gradients += wanted;
  return gradients * *product;
}

// NOTE [A fused layer's components, one dense call each]
// The fused inference layers (aten::_native_multi_head_attention,
// aten::_transformer_encoder_layer_fwd) take a strided nested batch of
// sequences [n_i, E]. Their CPU kernel projects the real tokens (a dense mm
// over the sum of the n_i) but attends over every sequence padded to the
// longest. The work each sequence asks for is the dense layer on that
// sequence alone, a batch of one [1, n_i, E]: the operator's own formula
// evaluated once per component, with every nested argument replaced by its
// i-th component. One formula, no second copy of the layer's arithmetic.
std::optional<Count> FormulaComponentFlops(
    const OperatorInfo& info, c10::ArrayRef<c10::IValue> arguments) {
  if (info.formula == nullptr) return std::nullopt;
  std::vector<std::size_t> nested;
  std::int64_t components = -1;
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    const at::native::NestedTensorImpl* impl = StridedNested(arguments[i]);
    if (impl == nullptr) continue;
    const at::Tensor& sizes = impl->get_nested_sizes();
    if (sizes.dim() != 2 || !sizes.is_contiguous() ||
        (components >= 0 && sizes.size(0) != components)) {
      return std::nullopt;
    }
    components = sizes.size(0);
    nested.push_back(i);
  }
  if (nested.empty()) return std::nullopt;
  OperatorValues values = ToOperatorValues(arguments);
  Count flops = 0;
  for (std::int64_t component = 0; component < components; ++component) {
    for (const std::size_t i : nested) {
      const at::Tensor& sizes =
          at::native::get_nested_tensor_impl(arguments[i].toTensor())
              ->get_nested_sizes();
      const std::int64_t dims = sizes.size(1);
      const std::int64_t* row =
          sizes.const_data_ptr<std::int64_t>() + component * dims;
      formulas::Shape shape{1};
      shape.insert(shape.end(), row, row + dims);
      values[i] = formulas::OperatorValue::Tensor(std::move(shape));
    }
    const absl::StatusOr<Count> one =
        info.formula->formula(formulas::OperatorCall{values, {}});
    if (!one.ok()) return std::nullopt;
    flops += *one;
  }
  return flops;
}

std::optional<Count> UsefulFlops(const OperatorInfo& info,
                                 c10::ArrayRef<c10::IValue> arguments) {
  if (info.packet == "aten::matmul" || info.packet == "aten::matmul_backward") {
    return MatmulComponentFlops(info, arguments);
  }
  return FormulaComponentFlops(info, arguments);
}

}  // namespace

void RunNestedProduct(const OperatorInfo& info, const c10::OperatorHandle& op,
                      c10::DispatchKeySet below, torch::jit::Stack* stack,
                      CountingSession& session) {
  // NOTE [Nested products inside nested products]
  // A nested matmul_backward runs nested matmuls: only the outermost call
  // accounts for the padding of every dense product inside it, so that none
  // is left out twice.
  thread_local int depth = 0;
  if (depth > 0) {
    op.redispatchBoxed(below, stack);
    return;
  }
  const std::optional<Count> useful =
      UsefulFlops(info, torch::jit::last(*stack, info.num_arguments));
  const Count before = session.CountedFlopsOfThisThread(IsDenseProduct);
  ++depth;
  try {
    op.redispatchBoxed(below, stack);
  } catch (...) {
    --depth;
    throw;
  }
  --depth;
  const Count ran = session.CountedFlopsOfThisThread(IsDenseProduct) - before;
  if (useful && *useful <= ran) {
    if (*useful < ran) session.RecordMaskExclusion(info, ran - *useful, "");
    return;
  }
  session.RecordMaskExclusion(
      info, ran,
      useful ? absl::StrCat("the dense products counted inside a nested "
                            "tensor's ",
                            info.report_name,
                            " are fewer than its components' own products")
             : absl::StrCat("the work of the components of a nested tensor's ",
                            info.report_name, " is not known"));
}

}  // namespace torchscan::dispatch
