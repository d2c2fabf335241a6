#include "formulas/module_json.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace torchscan::formulas {
namespace {

using report::Json;

std::string KindOf(const Json& node) {
  if (report::IsJsonInteger(node)) return "integer";
  if (node.is_number_float()) return "float";
  if (node.is_boolean()) return "boolean";
  if (node.is_string()) return "string";
  if (node.is_null()) return "null";
  if (node.is_array()) return "array";
  if (node.is_object()) return "object";
  return "binary data";
}

// Keeps the first error of a whole parse, so that the readers below can hand
// back placeholder values and parsing code stays a list of assignments.
class ErrorSink {
 public:
  void Fail(absl::string_view path, absl::string_view problem) {
    if (status_.ok()) {
      status_ = absl::InvalidArgumentError(absl::StrCat(path, ": ", problem));
    }
  }
  bool ok() const { return status_.ok(); }
  const absl::Status& status() const { return status_; }

 private:
  absl::Status status_;
};

std::string IndexPath(absl::string_view path, std::size_t index) {
  return absl::StrCat(path, "[", index, "]");
}

std::optional<std::int64_t> IntValue(const Json& node, absl::string_view path,
                                     ErrorSink& sink) {
  if (!report::IsJsonInteger(node)) {
    sink.Fail(path, absl::StrCat("expected an integer, got ", KindOf(node)));
    return std::nullopt;
  }
  absl::StatusOr<report::Count> count = report::JsonToCount(node, path);
  if (!count.ok() || *count < std::numeric_limits<std::int64_t>::min() ||
      *count > std::numeric_limits<std::int64_t>::max()) {
    sink.Fail(path, "does not fit in 64 bits");
    return std::nullopt;
  }
  return static_cast<std::int64_t>(*count);
}

std::vector<std::int64_t> IntArrayValue(const Json& node,
                                        absl::string_view path, ErrorSink& sink,
                                        bool non_negative) {
  std::vector<std::int64_t> values;
  if (!node.is_array()) {
    sink.Fail(path, absl::StrCat("expected an array of integers, got ",
                                 KindOf(node)));
    return values;
  }
  for (std::size_t i = 0; i < node.size(); ++i) {
    const std::string item_path = IndexPath(path, i);
    std::optional<std::int64_t> value = IntValue(node[i], item_path, sink);
    if (!value) return values;
    if (non_negative && *value < 0) {
      sink.Fail(item_path, "must not be negative");
      return values;
    }
    values.push_back(*value);
  }
  return values;
}

// Reads the members of one JSON object.
class FieldReader {
 public:
  FieldReader(const Json& node, std::string path, ErrorSink& sink)
      : node_(node), path_(std::move(path)), sink_(sink) {
    if (!node_.is_object()) {
      sink_.Fail(path_,
                 absl::StrCat("expected an object, got ", KindOf(node_)));
    }
  }

  const std::string& path() const { return path_; }
  ErrorSink& sink() { return sink_; }
  std::string PathOf(absl::string_view key) const {
    return path_.empty() ? std::string(key) : absl::StrCat(path_, ".", key);
  }

  // nullptr (and an error) when absent.
  const Json* Required(absl::string_view key) {
    const Json* member = Optional(key);
    if (member == nullptr && node_.is_object())
      sink_.Fail(PathOf(key), "is missing");
    return member;
  }
  // nullptr when absent.
  const Json* Optional(absl::string_view key) {
    if (!node_.is_object()) return nullptr;
    auto it = node_.find(std::string(key));
    if (it == node_.end()) return nullptr;
    used_.insert(std::string(key));
    return &*it;
  }

  std::int64_t Int(absl::string_view key) {
    const Json* member = Required(key);
    if (member == nullptr) return 0;
    return IntValue(*member, PathOf(key), sink_).value_or(0);
  }
  // An integer or null (a tensor attribute that is None).
  std::optional<std::int64_t> IntOrNull(absl::string_view key) {
    const Json* member = Required(key);
    if (member == nullptr || member->is_null()) return std::nullopt;
    return IntValue(*member, PathOf(key), sink_);
  }
  bool Bool(absl::string_view key) {
    const Json* member = Required(key);
    if (member == nullptr) return false;
    if (!member->is_boolean()) {
      sink_.Fail(PathOf(key),
                 absl::StrCat("expected a boolean, got ", KindOf(*member)));
      return false;
    }
    return member->get<bool>();
  }
  double Number(absl::string_view key) {
    return NumberOrNull(key, /*allow_null=*/false).value_or(0);
  }
  std::optional<double> NumberOrNull(absl::string_view key,
                                     bool allow_null = true) {
    const Json* member = Required(key);
    if (member == nullptr) return std::nullopt;
    if (allow_null && member->is_null()) return std::nullopt;
    if (!member->is_number()) {
      sink_.Fail(PathOf(key),
                 absl::StrCat("expected a number", allow_null ? " or null" : "",
                              ", got ", KindOf(*member)));
      return std::nullopt;
    }
    const double value = member->get<double>();
    if (!std::isfinite(value)) sink_.Fail(PathOf(key), "is not finite");
    return value;
  }
  std::string String(absl::string_view key) {
    const Json* member = Required(key);
    if (member == nullptr) return "";
    if (!member->is_string()) {
      sink_.Fail(PathOf(key),
                 absl::StrCat("expected a string, got ", KindOf(*member)));
      return "";
    }
    return member->get<std::string>();
  }
  std::vector<std::int64_t> IntArray(absl::string_view key, bool non_negative) {
    const Json* member = Required(key);
    if (member == nullptr) return {};
    return IntArrayValue(*member, PathOf(key), sink_, non_negative);
  }
  // An int, a tuple (array of ints) or, when allowed, a string.
  HyperParameter Hyper(absl::string_view key, bool allow_string) {
    const Json* member = Required(key);
    if (member == nullptr) return {};
    return HyperValue(*member, PathOf(key), allow_string);
  }
  // Absent or null: the module has no such attribute.
  std::optional<HyperParameter> OptionalHyper(absl::string_view key) {
    const Json* member = Optional(key);
    if (member == nullptr || member->is_null()) return std::nullopt;
    return HyperValue(*member, PathOf(key), /*allow_string=*/false);
  }

  // Fails on the first member nothing read.
  void Finish() {
    if (!node_.is_object()) return;
    for (const auto& [key, value] : node_.items()) {
      if (used_.count(key) == 0) {
        sink_.Fail(PathOf(key), "is not a field of this object");
        return;
      }
    }
  }

 private:
  HyperParameter HyperValue(const Json& node, const std::string& path,
                            bool allow_string) {
    if (node.is_string() && allow_string) {
      return HyperParameter::String(node.get<std::string>());
    }
    if (node.is_array()) {
      return HyperParameter::Tuple(IntArrayValue(node, path, sink_, false));
    }
    if (report::IsJsonInteger(node)) {
      return HyperParameter::Int(IntValue(node, path, sink_).value_or(0));
    }
    sink_.Fail(path,
               absl::StrCat(
                   allow_string
                       ? "expected an integer, an array of integers or a string"
                       : "expected an integer or an array of integers",
                   ", got ", KindOf(node)));
    return {};
  }

  const Json& node_;
  std::string path_;
  ErrorSink& sink_;
  std::set<std::string> used_;
};

// Each Read* fills a hyper-parameter struct from the reader's object and
// marks the fields it reads; the caller calls Finish().

LinearParams ReadLinear(FieldReader& reader) {
  LinearParams linear;
  linear.in_features = reader.Int("in_features");
  linear.out_features = reader.Int("out_features");
  linear.bias = reader.Bool("bias");
  return linear;
}

ActivationParams ReadActivation(FieldReader& reader) {
  return ActivationParams{reader.Bool("inplace")};
}

ConvParams ReadConv(FieldReader& reader) {
  ConvParams conv;
  conv.in_channels = reader.Int("in_channels");
  conv.kernel_size = reader.Hyper("kernel_size", false);
  conv.stride = reader.Hyper("stride", false);
  conv.padding = reader.Hyper("padding", /*allow_string=*/true);
  conv.dilation = reader.Hyper("dilation", false);
  conv.groups = reader.Int("groups");
  conv.bias = reader.Bool("bias");
  return conv;
}

BatchNormParams ReadBatchNorm(FieldReader& reader) {
  BatchNormParams bn;
  bn.num_features = reader.Int("num_features");
  bn.affine = reader.Bool("affine");
  bn.track_running_stats = reader.Bool("track_running_stats");
  bn.training = reader.Bool("training");
  bn.momentum = reader.NumberOrNull("momentum");
  bn.running_mean_numel = reader.IntOrNull("running_mean_numel");
  bn.running_var_numel = reader.IntOrNull("running_var_numel");
  bn.weight_numel = reader.IntOrNull("weight_numel");
  bn.bias_numel = reader.IntOrNull("bias_numel");
  return bn;
}

PoolParams ReadPool(FieldReader& reader) {
  PoolParams pool;
  pool.kernel_size = reader.Hyper("kernel_size", false);
  pool.stride = reader.Hyper("stride", false);
  pool.padding = reader.Hyper("padding", false);
  pool.dilation = reader.OptionalHyper("dilation");
  return pool;
}

DropoutParams ReadDropout(FieldReader& reader) {
  DropoutParams dropout;
  dropout.p = reader.Number("p");
  dropout.inplace = reader.Bool("inplace");
  dropout.training = reader.Bool("training");
  return dropout;
}

LayerNormParams ReadLayerNorm(FieldReader& reader) {
  LayerNormParams norm;
  norm.normalized_shape =
      reader.IntArray("normalized_shape", /*non_negative=*/false);
  norm.weight = reader.Bool("weight");
  norm.bias = reader.Bool("bias");
  return norm;
}

MultiheadAttentionParams ReadMultiheadAttention(FieldReader& reader);

// A nested object read with `read`, its unknown fields rejected.
template <typename Params>
Params ReadNested(FieldReader& parent, absl::string_view key,
                  Params (*read)(FieldReader&)) {
  const Json* member = parent.Required(key);
  if (member == nullptr) return Params{};
  FieldReader reader(*member, parent.PathOf(key), parent.sink());
  Params params = read(reader);
  reader.Finish();
  return params;
}

// A LayerNorm object, or null.
std::optional<LayerNormParams> ReadOptionalLayerNorm(FieldReader& parent,
                                                     absl::string_view key) {
  const Json* member = parent.Required(key);
  if (member == nullptr || member->is_null()) return std::nullopt;
  return ReadNested(parent, key, &ReadLayerNorm);
}

MultiheadAttentionParams ReadMultiheadAttention(FieldReader& reader) {
  MultiheadAttentionParams mha;
  mha.embed_dim = reader.Int("embed_dim");
  mha.num_heads = reader.Int("num_heads");
  mha.head_dim = reader.Int("head_dim");
  mha.batch_first = reader.Bool("batch_first");
  mha.in_proj_bias = reader.Bool("in_proj_bias");
  mha.bias_k = reader.Bool("bias_k");
  mha.bias_v = reader.Bool("bias_v");
  mha.add_zero_attn = reader.Bool("add_zero_attn");
  mha.dropout = reader.Number("dropout");
  mha.training = reader.Bool("training");
  mha.out_proj = ReadNested(reader, "out_proj", &ReadLinear);
  return mha;
}

TransformerEncoderLayerParams ReadEncoderLayer(FieldReader& reader) {
  TransformerEncoderLayerParams layer;
  layer.self_attn = ReadNested(reader, "self_attn", &ReadMultiheadAttention);
  layer.linear1 = ReadNested(reader, "linear1", &ReadLinear);
  layer.dropout = ReadNested(reader, "dropout", &ReadDropout);
  layer.linear2 = ReadNested(reader, "linear2", &ReadLinear);
  layer.norm1 = ReadNested(reader, "norm1", &ReadLayerNorm);
  layer.norm2 = ReadNested(reader, "norm2", &ReadLayerNorm);
  layer.dropout1 = ReadNested(reader, "dropout1", &ReadDropout);
  layer.dropout2 = ReadNested(reader, "dropout2", &ReadDropout);
  layer.activation_is_relu = reader.Bool("activation_is_relu");
  return layer;
}

TransformerDecoderLayerParams ReadDecoderLayer(FieldReader& reader) {
  TransformerDecoderLayerParams layer;
  layer.self_attn = ReadNested(reader, "self_attn", &ReadMultiheadAttention);
  layer.multihead_attn =
      ReadNested(reader, "multihead_attn", &ReadMultiheadAttention);
  layer.linear1 = ReadNested(reader, "linear1", &ReadLinear);
  layer.dropout = ReadNested(reader, "dropout", &ReadDropout);
  layer.linear2 = ReadNested(reader, "linear2", &ReadLinear);
  layer.norm1 = ReadNested(reader, "norm1", &ReadLayerNorm);
  layer.norm2 = ReadNested(reader, "norm2", &ReadLayerNorm);
  layer.norm3 = ReadNested(reader, "norm3", &ReadLayerNorm);
  layer.dropout1 = ReadNested(reader, "dropout1", &ReadDropout);
  layer.dropout2 = ReadNested(reader, "dropout2", &ReadDropout);
  layer.dropout3 = ReadNested(reader, "dropout3", &ReadDropout);
  layer.activation_is_relu = reader.Bool("activation_is_relu");
  return layer;
}

// {"layers": [layer, ...], "norm": LayerNorm or null}
template <typename Layer>
void ReadStack(FieldReader& parent, absl::string_view key,
               Layer (*read_layer)(FieldReader&), std::vector<Layer>& layers,
               std::optional<LayerNormParams>& norm) {
  const Json* member = parent.Required(key);
  if (member == nullptr) return;
  FieldReader stack(*member, parent.PathOf(key), parent.sink());
  if (const Json* items = stack.Required("layers")) {
    if (!items->is_array()) {
      stack.sink().Fail(
          stack.PathOf("layers"),
          absl::StrCat("expected an array, got ", KindOf(*items)));
    } else {
      for (std::size_t i = 0; i < items->size(); ++i) {
        FieldReader layer((*items)[i], IndexPath(stack.PathOf("layers"), i),
                          parent.sink());
        layers.push_back(read_layer(layer));
        layer.Finish();
      }
    }
  }
  norm = ReadOptionalLayerNorm(stack, "norm");
  stack.Finish();
}

TransformerParams ReadTransformer(FieldReader& reader) {
  TransformerParams transformer;
  transformer.native_stacks = reader.Bool("native_stacks");
  // Non-native stacks are rejected by the formula before anything is read,
  // so their description may stop here.
  if (transformer.native_stacks || reader.Optional("encoder") != nullptr) {
    ReadStack(reader, "encoder", &ReadEncoderLayer, transformer.encoder_layers,
              transformer.encoder_norm);
  }
  if (transformer.native_stacks || reader.Optional("decoder") != nullptr) {
    ReadStack(reader, "decoder", &ReadDecoderLayer, transformer.decoder_layers,
              transformer.decoder_norm);
  }
  return transformer;
}

ModuleParams ReadParams(ModuleFamily family, FieldReader& reader) {
  switch (family) {
    case ModuleFamily::kLinear:
      return ReadLinear(reader);
    case ModuleFamily::kReLU:
    case ModuleFamily::kELU:
    case ModuleFamily::kLeakyReLU:
    case ModuleFamily::kReLU6:
      return ReadActivation(reader);
    case ModuleFamily::kConvTranspose:
    case ModuleFamily::kConv:
      return ReadConv(reader);
    case ModuleFamily::kBatchNorm:
      return ReadBatchNorm(reader);
    case ModuleFamily::kMaxPool:
    case ModuleFamily::kAvgPool:
      return ReadPool(reader);
    case ModuleFamily::kDropout:
      return ReadDropout(reader);
    case ModuleFamily::kLayerNorm:
      return ReadLayerNorm(reader);
    case ModuleFamily::kMultiheadAttention:
      return ReadMultiheadAttention(reader);
    case ModuleFamily::kTransformer:
      return ReadTransformer(reader);
    case ModuleFamily::kUnsupported:
    case ModuleFamily::kIdentity:
    case ModuleFamily::kFlatten:
    case ModuleFamily::kTanh:
    case ModuleFamily::kSigmoid:
    case ModuleFamily::kAdaptiveMaxPool:
    case ModuleFamily::kAdaptiveAvgPool:
      break;
  }
  return std::monostate();
}

constexpr absl::string_view kValueKinds =
    "tensor, none, tuple, list, mapping, scalar or object";

CallValue ReadValue(const Json& node, const std::string& path, ErrorSink& sink);

std::vector<CallValue> ReadValueArray(const Json* node, const std::string& path,
                                      ErrorSink& sink) {
  std::vector<CallValue> values;
  if (node == nullptr) return values;
  if (!node->is_array()) {
    sink.Fail(path, absl::StrCat("expected an array, got ", KindOf(*node)));
    return values;
  }
  for (std::size_t i = 0; i < node->size() && sink.ok(); ++i) {
    values.push_back(ReadValue((*node)[i], IndexPath(path, i), sink));
  }
  return values;
}

CallValue ReadValue(const Json& node, const std::string& path,
                    ErrorSink& sink) {
  FieldReader reader(node, path, sink);
  if (!sink.ok()) return CallValue::None();
  const std::string kind = reader.String("kind");
  CallValue value;
  if (kind == "tensor") {
    value = CallValue::Tensor(reader.IntArray("shape", /*non_negative=*/true));
    // Metadata the formulas do not read.
    if (reader.Optional("dtype") != nullptr) reader.String("dtype");
    if (reader.Optional("device") != nullptr) reader.String("device");
    if (reader.Optional("requires_grad") != nullptr)
      reader.Bool("requires_grad");
  } else if (kind == "none") {
    value = CallValue::None();
  } else if (kind == "tuple" || kind == "list") {
    std::vector<CallValue> items =
        ReadValueArray(reader.Required("items"), reader.PathOf("items"), sink);
    value = kind == "tuple" ? CallValue::Tuple(std::move(items))
                            : CallValue::List(std::move(items));
    if (reader.Optional("type") != nullptr) value.type = reader.String("type");
  } else if (kind == "mapping") {
    const std::string type = reader.String("type");
    std::vector<CallValue> values;
    const Json* items = reader.Required("items");
    if (items != nullptr && !items->is_array()) {
      sink.Fail(reader.PathOf("items"),
                absl::StrCat("expected an array, got ", KindOf(*items)));
    } else if (items != nullptr) {
      for (std::size_t i = 0; i < items->size() && sink.ok(); ++i) {
        FieldReader item((*items)[i], IndexPath(reader.PathOf("items"), i),
                         sink);
        item.Optional("key");  // absent for keys that are not identifiers
        item.String("key_type");
        if (const Json* entry = item.Required("value")) {
          values.push_back(ReadValue(*entry, item.PathOf("value"), sink));
        }
        item.Finish();
      }
    }
    value = CallValue::Mapping(type, std::move(values));
  } else if (kind == "scalar") {
    value = CallValue::Scalar(reader.String("type"));
  } else if (kind == "object") {
    value = CallValue::Object(reader.String("type"));
  } else if (sink.ok()) {
    sink.Fail(reader.PathOf("kind"),
              absl::StrCat("unknown value kind '", kind, "' (expected ",
                           kValueKinds, ")"));
  }
  reader.Finish();
  return value;
}

std::string FamilyNames() {
  std::vector<absl::string_view> names;
  for (int i = 0; i <= static_cast<int>(ModuleFamily::kTransformer); ++i) {
    names.push_back(ModuleFamilyName(static_cast<ModuleFamily>(i)));
  }
  return absl::StrJoin(names, ", ");
}

}  // namespace

absl::StatusOr<ModuleDescription> ModuleDescriptionFromJson(
    const Json& node, absl::string_view field) {
  ErrorSink sink;
  FieldReader reader(node, std::string(field), sink);
  ModuleDescription module;
  module.type = reader.String("type");
  const std::string family_name = reader.String("family");
  if (!sink.ok()) return sink.status();
  std::optional<ModuleFamily> family = ParseModuleFamily(family_name);
  if (!family) {
    sink.Fail(reader.PathOf("family"),
              absl::StrCat("unknown family '", family_name,
                           "' (expected one of ", FamilyNames(), ")"));
    return sink.status();
  }
  module.family = *family;
  if (const Json* count = reader.Required("parameter_count");
      count != nullptr) {
    if (!report::IsJsonInteger(*count)) {
      sink.Fail(reader.PathOf("parameter_count"),
                absl::StrCat("expected an integer, got ", KindOf(*count)));
    } else {
      absl::StatusOr<report::Count> value =
          report::JsonToCount(*count, reader.PathOf("parameter_count"));
      if (!value.ok()) return value.status();
      if (*value < 0)
        sink.Fail(reader.PathOf("parameter_count"), "must not be negative");
      module.parameter_count = *value;
    }
  }
  module.params = ReadParams(module.family, reader);
  reader.Finish();
  if (!sink.ok()) return sink.status();
  if (absl::Status status = ValidateModuleDescription(module); !status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", status.message()));
  }
  return module;
}

absl::StatusOr<CallValue> CallValueFromJson(const Json& node,
                                            absl::string_view field) {
  ErrorSink sink;
  CallValue value = ReadValue(node, std::string(field), sink);
  if (!sink.ok()) return sink.status();
  return value;
}

absl::StatusOr<ModuleCall> ModuleCallFromJson(const Json& node,
                                              absl::string_view field) {
  ErrorSink sink;
  FieldReader reader(node, std::string(field), sink);
  ModuleCall call;
  call.inputs =
      ReadValueArray(reader.Required("inputs"), reader.PathOf("inputs"), sink);
  if (const Json* output = reader.Required("output");
      output != nullptr && sink.ok()) {
    call.output = ReadValue(*output, reader.PathOf("output"), sink);
  }
  reader.Finish();
  if (!sink.ok()) return sink.status();
  return call;
}

absl::StatusOr<CapturedModuleCall> CapturedModuleCallFromJson(
    const Json& node, absl::string_view field) {
  ErrorSink sink;
  FieldReader reader(node, std::string(field), sink);
  CapturedModuleCall captured;
  captured.path = reader.String("path");
  const Json* module = reader.Required("module");
  const Json* call = reader.Required("call");
  reader.Finish();
  if (!sink.ok()) return sink.status();
  absl::StatusOr<ModuleDescription> description =
      ModuleDescriptionFromJson(*module, reader.PathOf("module"));
  if (!description.ok()) return description.status();
  captured.module = *std::move(description);
  absl::StatusOr<ModuleCall> module_call =
      ModuleCallFromJson(*call, reader.PathOf("call"));
  if (!module_call.ok()) return module_call.status();
  captured.call = *std::move(module_call);
  return captured;
}

}  // namespace torchscan::formulas
