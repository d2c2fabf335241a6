// Matrix products and fused layers of strided nested tensors in eager code:
// the padding their kernel computes is left out of the mask-aware count.
//
// A strided nested tensor (torch.nested.nested_tensor, and what a jagged
// tensor's math attention converts to on CPU) holds components of different
// lengths. On CPU its aten::matmul pads every component to the longest and
// runs one dense bmm, and its aten::matmul_backward (the nested matmul's
// gradient) runs such matmuls again. Both calls are passed on with the
// counting key still active, as a decomposition is: the dense bmm comes back
// and is counted as executed, padding included, because that is the work
// that ran (a nested matmul_backward has no formula of its own). The
// padding is work no query asked for, as a key-padding mask's excluded pairs
// are: the mask-aware count (CountingSession::RecordMaskExclusion) keeps
// only the components' own products, sum over i of 2 x batch_i x m_i x k_i
// x n_i (times the gradients a matmul_backward computes). When the products
// counted inside the call are fewer than that (a kernel that multiplies the
// components without a counted dense product), or the components' shapes do not
// tell the work, the call's products are left out of the mask-aware count
// instead, which stays a lower bound and names the call.
//
// The fused inference layers (aten::_native_multi_head_attention and
// aten::_transformer_encoder_layer_fwd, which nn.MultiheadAttention and
// nn.TransformerEncoderLayer run in eval mode on a nested batch) are passed
// on the same way: their kernel's dense products (the projections over the
// real tokens, the attention over sequences padded to the longest) are
// counted as executed, and the mask-aware count keeps what each sequence
// asks for: the layer's own formula on that sequence alone (NOTE [A fused
// layer's components, one dense call each] in nested_products.cc). Their
// dense formula cannot read a nested tensor's sizes.

#ifndef TORCHSCAN_DISPATCH_NESTED_PRODUCTS_H_
#define TORCHSCAN_DISPATCH_NESTED_PRODUCTS_H_

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <optional>

#include "report/count.h"
#include "torchscan_dispatch/counting_session.h"
#include "torchscan_dispatch/operator_info.h"

namespace torchscan::dispatch {

// Whether a call of `info` with `arguments` (schema order) is a matrix
// product or fused layer of strided nested tensors whose padding this file
// accounts for: an operator that pads them (OperatorInfo::pads_nested) with
// a strided nested tensor among its arguments.
bool IsNestedProductCall(const OperatorInfo& info,
                         c10::ArrayRef<c10::IValue> arguments);

// The FLOPs of multiplying the components of `a` and `b`, two strided nested
// tensors with as many components, component by component (2 x batch x m x
// k x n each, leading dimensions broadcast), or nullopt when their shapes do
// not make a product.
std::optional<report::Count> ComponentProductFlops(const at::Tensor& a,
                                                   const at::Tensor& b);

// Runs the nested product call on `stack` below the counting key (its
// decomposition comes back through the fallback and is counted) and records
// in `session` the padding its counted dense products computed.
void RunNestedProduct(const OperatorInfo& info, const c10::OperatorHandle& op,
                      c10::DispatchKeySet below, torch::jit::Stack* stack,
                      CountingSession& session);

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_DISPATCH_NESTED_PRODUCTS_H_
