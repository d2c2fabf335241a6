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
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "base/status_macros.h"
#include "report/count.h"
#include "report/field_table.h"
#include "report/json_io.h"
#include "report/json_reader.h"

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

// --- JSON forms of the hyper-parameters.
//
// Each params struct below declares its JSON form in a field table
// (report/field_table.h), under torch's own attribute names; a description
// holds its family's in its own object (module_json.h). Descriptions come
// from our own front ends, so errors name only the kind of a wrong value
// ("got string") and say "must not be negative" without repeating the
// number. The codecs below keep those words.

// An int (a JSON integer) or a tuple (an array of integers).
struct HyperCodec {
  static report::Json Write(const HyperParameter& value);
  static absl::StatusOr<HyperParameter> Read(const report::JsonValue& node);
};

// HyperCodec, or a string (Conv padding "same").
struct HyperOrStringCodec {
  static report::Json Write(const HyperParameter& value);
  static absl::StatusOr<HyperParameter> Read(const report::JsonValue& node);
};

// An optional row's HyperCodec that reads null as nullopt: the module has no
// such attribute whether the key is absent or null.
struct HyperOrNullCodec {
  static report::Json Write(const HyperParameter& value);
  static absl::StatusOr<std::optional<HyperParameter>> Read(
      const report::JsonValue& node);
};

// An array of integers ("expected an array of integers" otherwise); with
// kNonNegative, a negative item "must not be negative" (tensor shapes).
template <bool kNonNegative>
struct IntArrayCodec {
  static report::Json Write(const std::vector<std::int64_t>& values) {
    return values;
  }
  static absl::StatusOr<std::vector<std::int64_t>> Read(
      const report::JsonValue& node);
};

// An integer or a float, and no more: JsonCodec<double>'s "inf" and "nan"
// strings are not hyper-parameters.
struct NumberCodec {
  static report::Json Write(double value) { return value; }
  static absl::StatusOr<double> Read(const report::JsonValue& node) {
    return node.Number();
  }
};

// NumberCodec for a nullable number (BatchNorm's momentum): null is read
// before the codec is asked, and a wrong value is "expected a number or
// null", which names both kinds the key takes.
struct NumberOrNullCodec {
  static report::Json Write(double value) { return value; }
  static absl::StatusOr<double> Read(const report::JsonValue& node);
};

// NOTE [Nested description objects refuse unread keys]
// A record nested in a description (out_proj, a transformer layer) is read
// by its table, then the keys nothing read are refused in
// JsonObject::RejectUnreadKeys' words ("is not a field of this object"),
// after its fields, as a description's own keys are (module_json.h): its
// errors name the same problem in the same order at every level. FromJson<T>
// (used alone, and by the round-trip tests) refuses them first, as "unknown
// field".
template <report::HasFieldTable T>
struct UnreadKeysRefused {
  static report::Json Write(const T& record) { return report::ToJson(record); }
  static absl::StatusOr<T> Read(const report::JsonValue& node) {
    TS_ASSIGN_OR_RETURN(report::JsonObject object, node.Object());
    TS_ASSIGN_OR_RETURN(T record, report::ReadFieldsIn<T>(object));
    TS_RETURN_IF_ERROR(object.RejectUnreadKeys());
    return record;
  }
};

struct LinearParams {
  std::int64_t in_features = 0;
  std::int64_t out_features = 0;
  bool bias = true;  // module.bias is not None

  bool operator==(const LinearParams&) const = default;
  static constexpr auto kFields = std::make_tuple(
      report::Field("in_features", &LinearParams::in_features),
      report::Field("out_features", &LinearParams::out_features),
      report::Field("bias", &LinearParams::bias));
};

// ReLU, ReLU6, ELU, LeakyReLU.
struct ActivationParams {
  bool inplace = false;

  bool operator==(const ActivationParams&) const = default;
  static constexpr auto kFields =
      std::make_tuple(report::Field("inplace", &ActivationParams::inplace));
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
  static constexpr auto kFields = std::make_tuple(
      report::Field("in_channels", &ConvParams::in_channels),
      report::FieldAs<HyperCodec>("kernel_size", &ConvParams::kernel_size),
      report::FieldAs<HyperCodec>("stride", &ConvParams::stride),
      report::FieldAs<HyperOrStringCodec>("padding", &ConvParams::padding),
      report::FieldAs<HyperCodec>("dilation", &ConvParams::dilation),
      report::Field("groups", &ConvParams::groups),
      report::Field("bias", &ConvParams::bias));
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
  // Each nullable member is required: its key is always written, null for
  // None.
  static constexpr auto kFields = std::make_tuple(
      report::Field("num_features", &BatchNormParams::num_features),
      report::Field("affine", &BatchNormParams::affine),
      report::Field("track_running_stats",
                    &BatchNormParams::track_running_stats),
      report::Field("training", &BatchNormParams::training),
      report::FieldAs<NumberOrNullCodec>("momentum",
                                         &BatchNormParams::momentum),
      report::Field("running_mean_numel", &BatchNormParams::running_mean_numel),
      report::Field("running_var_numel", &BatchNormParams::running_var_numel),
      report::Field("weight_numel", &BatchNormParams::weight_numel),
      report::Field("bias_numel", &BatchNormParams::bias_numel));
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
  static constexpr auto kFields = std::make_tuple(
      report::FieldAs<HyperCodec>("kernel_size", &PoolParams::kernel_size),
      report::FieldAs<HyperCodec>("stride", &PoolParams::stride),
      report::FieldAs<HyperCodec>("padding", &PoolParams::padding),
      report::FieldAs<HyperOrNullCodec>("dilation", &PoolParams::dilation,
                                        report::kOptional));
};

struct DropoutParams {
  double p = 0.5;
  bool inplace = false;
  bool training = false;

  bool operator==(const DropoutParams&) const = default;
  static constexpr auto kFields =
      std::make_tuple(report::FieldAs<NumberCodec>("p", &DropoutParams::p),
                      report::Field("inplace", &DropoutParams::inplace),
                      report::Field("training", &DropoutParams::training));
};

struct LayerNormParams {
  std::vector<std::int64_t> normalized_shape;
  bool weight = true;  // module.weight is not None
  bool bias = true;    // module.bias is not None

  bool operator==(const LayerNormParams&) const = default;
  static constexpr auto kFields = std::make_tuple(
      report::FieldAs<IntArrayCodec<false>>("normalized_shape",
                                            &LayerNormParams::normalized_shape),
      report::Field("weight", &LayerNormParams::weight),
      report::Field("bias", &LayerNormParams::bias));
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
  static constexpr auto kFields = std::make_tuple(
      report::Field("embed_dim", &MultiheadAttentionParams::embed_dim),
      report::Field("num_heads", &MultiheadAttentionParams::num_heads),
      report::Field("head_dim", &MultiheadAttentionParams::head_dim),
      report::Field("batch_first", &MultiheadAttentionParams::batch_first),
      report::Field("in_proj_bias", &MultiheadAttentionParams::in_proj_bias),
      report::Field("bias_k", &MultiheadAttentionParams::bias_k),
      report::Field("bias_v", &MultiheadAttentionParams::bias_v),
      report::Field("add_zero_attn", &MultiheadAttentionParams::add_zero_attn),
      report::FieldAs<NumberCodec>("dropout",
                                   &MultiheadAttentionParams::dropout),
      report::Field("training", &MultiheadAttentionParams::training),
      report::FieldAs<UnreadKeysRefused<LinearParams>>(
          "out_proj", &MultiheadAttentionParams::out_proj));
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
  static constexpr auto kFields = std::make_tuple(
      report::FieldAs<UnreadKeysRefused<MultiheadAttentionParams>>(
          "self_attn", &TransformerEncoderLayerParams::self_attn),
      report::FieldAs<UnreadKeysRefused<LinearParams>>(
          "linear1", &TransformerEncoderLayerParams::linear1),
      report::FieldAs<UnreadKeysRefused<DropoutParams>>(
          "dropout", &TransformerEncoderLayerParams::dropout),
      report::FieldAs<UnreadKeysRefused<LinearParams>>(
          "linear2", &TransformerEncoderLayerParams::linear2),
      report::FieldAs<UnreadKeysRefused<LayerNormParams>>(
          "norm1", &TransformerEncoderLayerParams::norm1),
      report::FieldAs<UnreadKeysRefused<LayerNormParams>>(
          "norm2", &TransformerEncoderLayerParams::norm2),
      report::FieldAs<UnreadKeysRefused<DropoutParams>>(
          "dropout1", &TransformerEncoderLayerParams::dropout1),
      report::FieldAs<UnreadKeysRefused<DropoutParams>>(
          "dropout2", &TransformerEncoderLayerParams::dropout2),
      report::Field("activation_is_relu",
                    &TransformerEncoderLayerParams::activation_is_relu));
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
  static constexpr auto kFields = std::make_tuple(
      report::FieldAs<UnreadKeysRefused<MultiheadAttentionParams>>(
          "self_attn", &TransformerDecoderLayerParams::self_attn),
      report::FieldAs<UnreadKeysRefused<MultiheadAttentionParams>>(
          "multihead_attn", &TransformerDecoderLayerParams::multihead_attn),
      report::FieldAs<UnreadKeysRefused<LinearParams>>(
          "linear1", &TransformerDecoderLayerParams::linear1),
      report::FieldAs<UnreadKeysRefused<DropoutParams>>(
          "dropout", &TransformerDecoderLayerParams::dropout),
      report::FieldAs<UnreadKeysRefused<LinearParams>>(
          "linear2", &TransformerDecoderLayerParams::linear2),
      report::FieldAs<UnreadKeysRefused<LayerNormParams>>(
          "norm1", &TransformerDecoderLayerParams::norm1),
      report::FieldAs<UnreadKeysRefused<LayerNormParams>>(
          "norm2", &TransformerDecoderLayerParams::norm2),
      report::FieldAs<UnreadKeysRefused<LayerNormParams>>(
          "norm3", &TransformerDecoderLayerParams::norm3),
      report::FieldAs<UnreadKeysRefused<DropoutParams>>(
          "dropout1", &TransformerDecoderLayerParams::dropout1),
      report::FieldAs<UnreadKeysRefused<DropoutParams>>(
          "dropout2", &TransformerDecoderLayerParams::dropout2),
      report::FieldAs<UnreadKeysRefused<DropoutParams>>(
          "dropout3", &TransformerDecoderLayerParams::dropout3),
      report::Field("activation_is_relu",
                    &TransformerDecoderLayerParams::activation_is_relu));
};

// nn.TransformerEncoder or nn.TransformerDecoder: {"layers": [layer, ...],
// "norm": LayerNorm or null}.
template <typename Layer>
struct TransformerStack {
  std::vector<Layer> layers;
  // Set only when the stack's norm is an nn.LayerNorm.
  std::optional<LayerNormParams> norm;

  bool operator==(const TransformerStack&) const = default;
  static constexpr auto kFields = std::make_tuple(
      report::FieldAs<report::ArrayOf<UnreadKeysRefused<Layer>>>(
          "layers", &TransformerStack::layers),
      report::FieldAs<UnreadKeysRefused<LayerNormParams>>(
          "norm", &TransformerStack::norm));
};

struct TransformerParams {
  // encoder is an nn.TransformerEncoder and decoder an nn.TransformerDecoder.
  // When false the stacks are not required (a description may stop at
  // native_stacks): upstream raises NotImplementedError before reading them.
  bool native_stacks = true;
  TransformerStack<TransformerEncoderLayerParams> encoder;
  TransformerStack<TransformerDecoderLayerParams> decoder;

  bool operator==(const TransformerParams&) const = default;

  static bool Native(const TransformerParams& p) { return p.native_stacks; }
  static bool NotNative(const TransformerParams& p) { return !p.native_stacks; }
  using Encoder = UnreadKeysRefused<decltype(encoder)>;
  using Decoder = UnreadKeysRefused<decltype(decoder)>;
  // NOTE: each stack has two rows of one name, whose conditions are
  // disjoint: required of native stacks, optional (read when present,
  // written when not empty) of others.
  static constexpr auto kFields = std::make_tuple(
      report::Field("native_stacks", &TransformerParams::native_stacks),
      report::FieldAs<Encoder>("encoder", &TransformerParams::encoder)
          .When(&Native),
      report::FieldAs<Encoder>("encoder", &TransformerParams::encoder,
                               report::kOptional)
          .When(&NotNative),
      report::FieldAs<Decoder>("decoder", &TransformerParams::decoder)
          .When(&Native),
      report::FieldAs<Decoder>("decoder", &TransformerParams::decoder,
                               report::kOptional)
          .When(&NotNative));
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
