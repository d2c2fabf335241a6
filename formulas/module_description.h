// What a module formula knows about a module: a plain description, no torch.
//
// TorchScan 0.2 dispatches its module formulas with isinstance checks on torch
// classes. Here the front end does the classifying (the Python front end with
// isinstance in upstream's check order, a TorchScript front end by qualified
// class name) and hands over the module's family and the hyper-parameters
// the family's formulas read, so one set of formulas serves every front end.
// The families are disjoint for torch's classes, which is why one family per
// module is enough although upstream's check order differs per metric.
//
// Hyper-parameters keep Python's shapes where a formula's result depends on
// them: MaxPool2d(2) stores the int 2 and MaxPool2d((2, 2)) the tuple (2, 2),
// and TorchScan counts them differently (a quirk of TorchScan 0.2's pool
// formulas).

#ifndef TORCHSCAN_FORMULAS_MODULE_DESCRIPTION_H_
#define TORCHSCAN_FORMULAS_MODULE_DESCRIPTION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "report/count.h"

namespace torchscan::formulas {

// Module families, named after TorchScan 0.2's isinstance targets.
enum class ModuleFamily {
  kUnsupported,      // anything else: every formula warns and returns 0
  kIdentity,         // nn.Identity
  kFlatten,          // nn.Flatten
  kLinear,           // nn.Linear and subclasses (not Bilinear)
  kReLU,             // nn.ReLU
  kELU,              // nn.ELU
  kLeakyReLU,        // nn.LeakyReLU
  kReLU6,            // nn.ReLU6
  kTanh,             // nn.Tanh
  kSigmoid,          // nn.Sigmoid
  kConvTranspose,    // _ConvTransposeNd (checked before _ConvNd upstream)
  kConv,             // _ConvNd: Conv1d/2d/3d and lazy variants
  kBatchNorm,        // _BatchNorm: BatchNorm1d/2d/3d, SyncBatchNorm, lazy
  kMaxPool,          // _MaxPoolNd
  kAvgPool,          // _AvgPoolNd
  kAdaptiveMaxPool,  // _AdaptiveMaxPoolNd
  kAdaptiveAvgPool,  // _AdaptiveAvgPoolNd
  kDropout,          // nn.Dropout and subclasses (not Dropout1d/2d/3d)
  kMultiheadAttention,
  kLayerNorm,
  kTransformer,  // nn.Transformer (metric leaf only as a crawl's root)
};

// The JSON name of a family: "max_pool", "multihead_attention", ...
absl::string_view ModuleFamilyName(ModuleFamily family);
// nullopt for an unknown name.
std::optional<ModuleFamily> ParseModuleFamily(absl::string_view name);

// A hyper-parameter as the module stores it: an int, a tuple of ints, or a
// string (Conv padding "same" / "valid").
struct HyperParameter {
  enum class Kind { kInt, kTuple, kString };
  Kind kind = Kind::kInt;
  // kInt: exactly one value; kTuple: the items.
  std::vector<std::int64_t> ints = {0};
  std::string text;  // kString

  static HyperParameter Int(std::int64_t value);
  static HyperParameter Tuple(std::vector<std::int64_t> values);
  static HyperParameter String(std::string text);

  bool operator==(const HyperParameter&) const = default;
};

struct LinearParams {
  std::int64_t in_features = 0;
  std::int64_t out_features = 0;
  bool bias = true;  // module.bias is not None

  bool operator==(const LinearParams&) const = default;
};

// ReLU, ReLU6, ELU, LeakyReLU.
struct ActivationParams {
  bool inplace = false;

  bool operator==(const ActivationParams&) const = default;
};

// Conv and ConvTranspose. torch stores kernel_size, stride and dilation as
// tuples, padding as a tuple or a string.
struct ConvParams {
  std::int64_t in_channels = 0;
  HyperParameter kernel_size = HyperParameter::Tuple({1});
  HyperParameter stride = HyperParameter::Tuple({1});
  HyperParameter padding = HyperParameter::Tuple({0});
  HyperParameter dilation = HyperParameter::Tuple({1});
  std::int64_t groups = 1;
  bool bias = true;

  bool operator==(const ConvParams&) const = default;
};

struct BatchNormParams {
  std::int64_t num_features = 0;
  bool affine = true;
  bool track_running_stats = true;
  // module.training when the formula runs (false in crawls: eval mode).
  bool training = false;
  std::optional<double> momentum = 0.1;  // nullopt: momentum is None
  // numel of each tensor attribute; nullopt when the attribute is None.
  std::optional<std::int64_t> running_mean_numel;
  std::optional<std::int64_t> running_var_numel;
  std::optional<std::int64_t> weight_numel;
  std::optional<std::int64_t> bias_numel;

  bool operator==(const BatchNormParams&) const = default;
};

// MaxPool and AvgPool, every value raw as stored (int or tuple).
struct PoolParams {
  HyperParameter kernel_size = HyperParameter::Int(1);
  HyperParameter stride = HyperParameter::Int(1);
  HyperParameter padding = HyperParameter::Int(0);
  // Set when the module has a `dilation` attribute (MaxPool; not AvgPool):
  // the receptive field formula tests hasattr(module, "dilation").
  std::optional<HyperParameter> dilation;

  bool operator==(const PoolParams&) const = default;
};

struct DropoutParams {
  double p = 0.5;
  bool inplace = false;
  bool training = false;

  bool operator==(const DropoutParams&) const = default;
};

struct LayerNormParams {
  std::vector<std::int64_t> normalized_shape;
  bool weight = true;  // module.weight is not None
  bool bias = true;    // module.bias is not None

  bool operator==(const LayerNormParams&) const = default;
};

struct MultiheadAttentionParams {
  std::int64_t embed_dim = 0;
  std::int64_t num_heads = 1;
  std::int64_t head_dim = 0;
  bool batch_first = false;
  bool in_proj_bias = true;  // in_proj_bias is not None
  bool bias_k = false;       // bias_k is not None
  bool bias_v = false;       // bias_v is not None
  bool add_zero_attn = false;
  double dropout = 0;  // the attention-weights dropout probability
  bool training = false;
  LinearParams out_proj;

  bool operator==(const MultiheadAttentionParams&) const = default;
};

// nn.TransformerEncoderLayer, by its torch attribute names.
struct TransformerEncoderLayerParams {
  MultiheadAttentionParams self_attn;
  LinearParams linear1;
  DropoutParams dropout;  // the feed-forward dropout
  LinearParams linear2;
  LayerNormParams norm1;
  LayerNormParams norm2;
  DropoutParams dropout1;
  DropoutParams dropout2;
  // layer.activation is torch.nn.functional.relu (upstream's identity test).
  bool activation_is_relu = true;

  bool operator==(const TransformerEncoderLayerParams&) const = default;
};

// nn.TransformerDecoderLayer, by its torch attribute names.
struct TransformerDecoderLayerParams {
  MultiheadAttentionParams self_attn;
  MultiheadAttentionParams multihead_attn;
  LinearParams linear1;
  DropoutParams dropout;
  LinearParams linear2;
  LayerNormParams norm1;
  LayerNormParams norm2;
  LayerNormParams norm3;
  DropoutParams dropout1;
  DropoutParams dropout2;
  DropoutParams dropout3;
  bool activation_is_relu = true;

  bool operator==(const TransformerDecoderLayerParams&) const = default;
};

struct TransformerParams {
  // encoder is an nn.TransformerEncoder and decoder an nn.TransformerDecoder.
  // When false nothing else is read: upstream raises NotImplementedError.
  bool native_stacks = true;
  std::vector<TransformerEncoderLayerParams> encoder_layers;
  // Set only when encoder.norm is an nn.LayerNorm.
  std::optional<LayerNormParams> encoder_norm;
  std::vector<TransformerDecoderLayerParams> decoder_layers;
  std::optional<LayerNormParams> decoder_norm;

  bool operator==(const TransformerParams&) const = default;
};

// The hyper-parameters of one family; std::monostate for the families that
// read none (Identity, Flatten, Tanh, Sigmoid, adaptive pools, unsupported).
using ModuleParams =
    std::variant<std::monostate, LinearParams, ActivationParams, ConvParams,
                 BatchNormParams, PoolParams, DropoutParams, LayerNormParams,
                 MultiheadAttentionParams, TransformerParams>;

struct ModuleDescription {
  // The class name (module.__class__.__name__): warnings name it, as in
  // "Module type not supported: Embedding".
  std::string type;
  ModuleFamily family = ModuleFamily::kUnsupported;
  ModuleParams params;
  // Total recursive parameter element count (torchscan's num_params), which
  // Linear and Conv DMAs read.
  report::Count parameter_count = 0;

  bool operator==(const ModuleDescription&) const = default;
};

// OK when `params` holds the alternative `family` reads and its values have
// the kinds torch stores (Conv tuples, pool ints or tuples, ...).
absl::Status ValidateModuleDescription(const ModuleDescription& module);

}  // namespace torchscan::formulas

#endif  // TORCHSCAN_FORMULAS_MODULE_DESCRIPTION_H_
