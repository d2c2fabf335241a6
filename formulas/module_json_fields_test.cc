// The JSON forms of module descriptions and calls: the round-trip tests of
// report/field_table_testing.h for every record with a field table, and
// the same checks, written out, for the two records with codecs of their
// own (a description and a value).

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "formulas/module_call.h"
#include "formulas/module_description.h"
#include "formulas/module_json.h"
#include "gtest/gtest.h"
#include "report/field_table.h"
#include "report/field_table_testing.h"
#include "report/json_io.h"
#include "report/json_reader.h"

namespace torchscan::formulas {
namespace {

LinearParams Linear(std::int64_t in, std::int64_t out, bool bias) {
  return LinearParams{.in_features = in, .out_features = out, .bias = bias};
}

DropoutParams Dropout(double p) {
  return DropoutParams{.p = p, .inplace = false, .training = true};
}

LayerNormParams Norm(std::int64_t size) {
  return LayerNormParams{.normalized_shape = {size}, .bias = false};
}

MultiheadAttentionParams Attention() {
  return MultiheadAttentionParams{.embed_dim = 4,
                                  .num_heads = 2,
                                  .head_dim = 2,
                                  .batch_first = true,
                                  .in_proj_bias = false,
                                  .bias_k = true,
                                  .bias_v = true,
                                  .add_zero_attn = true,
                                  .dropout = 0.25,
                                  .training = true,
                                  .out_proj = Linear(4, 4, false)};
}

TransformerEncoderLayerParams EncoderLayer() {
  return TransformerEncoderLayerParams{.self_attn = Attention(),
                                       .linear1 = Linear(4, 8, true),
                                       .dropout = Dropout(0.1),
                                       .linear2 = Linear(8, 4, true),
                                       .norm1 = Norm(4),
                                       .norm2 = Norm(4),
                                       .dropout1 = Dropout(0.2),
                                       .dropout2 = Dropout(0.3),
                                       .activation_is_relu = false};
}

TransformerDecoderLayerParams DecoderLayer() {
  TransformerDecoderLayerParams layer;
  layer.self_attn = Attention();
  layer.multihead_attn = Attention();
  layer.linear1 = Linear(4, 8, true);
  layer.dropout = Dropout(0.1);
  layer.linear2 = Linear(8, 4, false);
  layer.norm1 = layer.norm2 = layer.norm3 = Norm(4);
  layer.dropout1 = layer.dropout2 = layer.dropout3 = Dropout(0.5);
  return layer;
}

TransformerParams Transformer(bool native) {
  TransformerParams transformer;
  transformer.native_stacks = native;
  transformer.encoder.layers = {EncoderLayer()};
  transformer.encoder.norm = Norm(4);
  transformer.decoder.layers = {DecoderLayer(), DecoderLayer()};
  return transformer;
}

CallValue Nested() {
  CallValue tuple = CallValue::Tuple(
      {CallValue::Tensor({1, 3}), CallValue::None(), CallValue::Scalar("int")});
  tuple.type = "torch.return_types.max";
  return CallValue::List(
      {tuple, CallValue::Mapping(
                  "dict", {CallValue::Tensor({}), CallValue::Object("a.B")})});
}

ModuleCall Call() {
  return ModuleCall{.inputs = {CallValue::Tensor({1, 3, 8, 8}), Nested()},
                    .output = CallValue::Tensor({1, 4, 8, 8})};
}

// One description of each kind of params, the family's own.
std::vector<ModuleDescription> Descriptions() {
  ConvParams conv{.in_channels = 3,
                  .kernel_size = HyperParameter::Tuple({3, 3}),
                  .padding = HyperParameter::String("same"),
                  .groups = 3,
                  .bias = false};
  PoolParams max_pool{.kernel_size = HyperParameter::Int(2),
                      .stride = HyperParameter::Tuple({2, 1}),
                      .dilation = HyperParameter::Int(1)};
  BatchNormParams batch_norm{.num_features = 8,
                             .momentum = std::nullopt,
                             .running_mean_numel = 8,
                             .bias_numel = 8};
  return {
      {.type = "Embedding", .family = ModuleFamily::kUnsupported},
      {.type = "Linear",
       .family = ModuleFamily::kLinear,
       .params = Linear(8, 4, true),
       .parameter_count = 36},
      {.type = "ReLU",
       .family = ModuleFamily::kReLU,
       .params = ActivationParams{.inplace = true}},
      {.type = "Conv2d",
       .family = ModuleFamily::kConv,
       .params = conv,
       .parameter_count = 81},
      {.type = "BatchNorm2d",
       .family = ModuleFamily::kBatchNorm,
       .params = batch_norm},
      {.type = "MaxPool2d",
       .family = ModuleFamily::kMaxPool,
       .params = max_pool},
      {.type = "AvgPool2d",
       .family = ModuleFamily::kAvgPool,
       .params = PoolParams{}},
      {.type = "Dropout",
       .family = ModuleFamily::kDropout,
       .params = Dropout(0.5)},
      {.type = "LayerNorm",
       .family = ModuleFamily::kLayerNorm,
       .params = Norm(4)},
      {.type = "MultiheadAttention",
       .family = ModuleFamily::kMultiheadAttention,
       .params = Attention(),
       .parameter_count = 80},
      {.type = "Transformer",
       .family = ModuleFamily::kTransformer,
       .params = Transformer(true),
       .parameter_count = 1000},
  };
}

// Object -> JSON -> object, for the records with codecs of their own; an
// extra key is refused after the fields, with the path named.
TEST(ModuleJsonFields, ADescriptionRoundTrips) {
  for (const ModuleDescription& module : Descriptions()) {
    const report::Json written = report::ToJson(module);
    absl::StatusOr<ModuleDescription> read =
        report::FromJson<ModuleDescription>(report::JsonValue(written, "m"));
    ASSERT_TRUE(read.ok()) << read.status() << " in "
                           << report::DumpJson(written);
    EXPECT_TRUE(*read == module) << report::DumpJson(written);
    EXPECT_EQ(report::DumpJson(written),
              report::DumpJson(report::ToJson(*read)));

    report::Json extra = written;
    extra["extra"] = 1;
    EXPECT_EQ(report::FromJson<ModuleDescription>(report::JsonValue(extra, "m"))
                  .status()
                  .message(),
              "m.extra: is not a field of this object");
    for (const auto& [key, value] : written.items()) {
      report::Json without = written;
      without.erase(key);
      // A PoolParams' dilation is optional; every other key is required.
      if (key == "dilation") continue;
      EXPECT_EQ(
          report::FromJson<ModuleDescription>(report::JsonValue(without, "m"))
              .status()
              .message(),
          "m." + key + ": is missing");
    }
  }
}

TEST(ModuleJsonFields, AValueRoundTrips) {
  for (const CallValue& value :
       {Nested(), CallValue::Tensor({2, 0}), CallValue::None(),
        CallValue::Object("a.B"), CallValue::Tuple({})}) {
    const report::Json written = report::ToJson(value);
    absl::StatusOr<CallValue> read =
        report::FromJson<CallValue>(report::JsonValue(written, "v"));
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_TRUE(*read == value) << report::DumpJson(written);
    EXPECT_EQ(report::DumpJson(written),
              report::DumpJson(report::ToJson(*read)));

    report::Json extra = written;
    extra["extra"] = 1;
    EXPECT_EQ(report::FromJson<CallValue>(report::JsonValue(extra, "v"))
                  .status()
                  .message(),
              "v.extra: is not a field of this object");
  }
}

// A nested object of a description refuses its unread keys in the same
// words as the description (module_description.h's UnreadKeysRefused).
TEST(ModuleJsonFields, NestedObjectsRefuseUnreadKeys) {
  ModuleDescription module = Descriptions()[9];
  report::Json written = report::ToJson(module);
  written["out_proj"]["extra"] = true;
  EXPECT_EQ(
      report::FromJson<ModuleDescription>(report::JsonValue(written, "module"))
          .status()
          .message(),
      "module.out_proj.extra: is not a field of this object");
}

}  // namespace
}  // namespace torchscan::formulas

namespace torchscan::report {

using formulas::ActivationParams;
using formulas::BatchNormParams;
using formulas::CapturedModuleCall;
using formulas::ConvParams;
using formulas::DropoutParams;
using formulas::HyperParameter;
using formulas::LayerNormParams;
using formulas::LinearParams;
using formulas::ModuleCall;
using formulas::MultiheadAttentionParams;
using formulas::PoolParams;
using formulas::TransformerDecoderLayerParams;
using formulas::TransformerEncoderLayerParams;
using formulas::TransformerParams;
using formulas::TransformerStack;

// Samples from the descriptions above: each params alternative of theirs.
template <typename Params>
std::vector<Params> ParamsSamples() {
  std::vector<Params> samples;
  for (const formulas::ModuleDescription& module : formulas::Descriptions()) {
    if (const auto* params = std::get_if<Params>(&module.params)) {
      samples.push_back(*params);
    }
  }
  return samples;
}

template <>
struct FieldTableSamples<LinearParams> {
  static std::vector<LinearParams> Get() {
    return ParamsSamples<LinearParams>();
  }
};
template <>
struct FieldTableSamples<ActivationParams> {
  static std::vector<ActivationParams> Get() {
    return ParamsSamples<ActivationParams>();
  }
};
template <>
struct FieldTableSamples<ConvParams> {
  static std::vector<ConvParams> Get() { return ParamsSamples<ConvParams>(); }
};
template <>
struct FieldTableSamples<BatchNormParams> {
  static std::vector<BatchNormParams> Get() {
    std::vector<BatchNormParams> samples = ParamsSamples<BatchNormParams>();
    samples.push_back(BatchNormParams{.momentum = 0.5, .weight_numel = 3});
    return samples;
  }
};
template <>
struct FieldTableSamples<PoolParams> {
  static std::vector<PoolParams> Get() { return ParamsSamples<PoolParams>(); }
};
template <>
struct FieldTableSamples<DropoutParams> {
  static std::vector<DropoutParams> Get() {
    return ParamsSamples<DropoutParams>();
  }
};
template <>
struct FieldTableSamples<LayerNormParams> {
  static std::vector<LayerNormParams> Get() {
    return ParamsSamples<LayerNormParams>();
  }
};
template <>
struct FieldTableSamples<MultiheadAttentionParams> {
  static std::vector<MultiheadAttentionParams> Get() {
    return ParamsSamples<MultiheadAttentionParams>();
  }
};
template <>
struct FieldTableSamples<TransformerEncoderLayerParams> {
  static std::vector<TransformerEncoderLayerParams> Get() {
    return {formulas::EncoderLayer()};
  }
};
template <>
struct FieldTableSamples<TransformerDecoderLayerParams> {
  static std::vector<TransformerDecoderLayerParams> Get() {
    return {formulas::DecoderLayer()};
  }
};
template <>
struct FieldTableSamples<TransformerStack<TransformerEncoderLayerParams>> {
  static std::vector<TransformerStack<TransformerEncoderLayerParams>> Get() {
    return {formulas::Transformer(true).encoder, {}};
  }
};
template <>
struct FieldTableSamples<TransformerStack<TransformerDecoderLayerParams>> {
  static std::vector<TransformerStack<TransformerDecoderLayerParams>> Get() {
    return {formulas::Transformer(true).decoder};
  }
};
// Native stacks require both; others keep the ones they have.
template <>
struct FieldTableSamples<TransformerParams> {
  static std::vector<TransformerParams> Get() {
    TransformerParams encoder_only = formulas::Transformer(false);
    encoder_only.decoder = {};
    return {formulas::Transformer(true), formulas::Transformer(false),
            encoder_only, TransformerParams{.native_stacks = false}};
  }
};
template <>
struct FieldTableSamples<ModuleCall> {
  static std::vector<ModuleCall> Get() {
    return {formulas::Call(), ModuleCall{}};
  }
};
template <>
struct FieldTableSamples<CapturedModuleCall> {
  static std::vector<CapturedModuleCall> Get() {
    std::vector<CapturedModuleCall> samples;
    for (const formulas::ModuleDescription& module : formulas::Descriptions()) {
      samples.push_back({.path = "features." + module.type,
                         .module = module,
                         .call = formulas::Call()});
    }
    return samples;
  }
};

using ModuleRecords = ::testing::Types<
    LinearParams, ActivationParams, ConvParams, BatchNormParams, PoolParams,
    DropoutParams, LayerNormParams, MultiheadAttentionParams,
    TransformerEncoderLayerParams, TransformerDecoderLayerParams,
    TransformerStack<TransformerEncoderLayerParams>,
    TransformerStack<TransformerDecoderLayerParams>, TransformerParams,
    ModuleCall, CapturedModuleCall>;
INSTANTIATE_TYPED_TEST_SUITE_P(ModuleJson, FieldTableRoundTrip, ModuleRecords);

}  // namespace torchscan::report
