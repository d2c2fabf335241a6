#include "formulas/module_json.h"

#include <string>

#include "gtest/gtest.h"
#include "report/field_table.h"
#include "report/json_io.h"
#include "report/json_reader.h"

namespace torchscan::formulas {
namespace {

using report::Json;

Json Parse(absl::string_view text) {
  absl::StatusOr<Json> json = report::ParseJson(text);
  EXPECT_TRUE(json.ok()) << json.status();
  return json.ok() ? *json : Json();
}

absl::StatusOr<ModuleDescription> ReadDescription(const Json& json) {
  return report::FromJson<ModuleDescription>(report::JsonValue(json, "module"));
}

absl::StatusOr<ModuleCall> ReadCall(const Json& json) {
  return report::FromJson<ModuleCall>(report::JsonValue(json, "call"));
}

absl::StatusOr<CapturedModuleCall> ReadCaptured(const Json& json) {
  return report::FromJson<CapturedModuleCall>(
      report::JsonValue(json, "captured_call"));
}

std::string DescriptionError(absl::string_view text) {
  absl::StatusOr<ModuleDescription> module = ReadDescription(Parse(text));
  EXPECT_FALSE(module.ok());
  return std::string(module.status().message());
}

std::string CallError(absl::string_view text) {
  absl::StatusOr<ModuleCall> call = ReadCall(Parse(text));
  EXPECT_FALSE(call.ok());
  return std::string(call.status().message());
}

TEST(ModuleJson, ReadsAConvolutionAndItsCall) {
  absl::StatusOr<ModuleDescription> module = ReadDescription(Parse(R"({
      "type": "Conv2d", "family": "conv", "parameter_count": 224,
      "in_channels": 3, "kernel_size": [3, 3], "stride": [1, 1],
      "padding": "same", "dilation": [1, 1], "groups": 1, "bias": true})"));
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_EQ(module->type, "Conv2d");
  EXPECT_EQ(module->family, ModuleFamily::kConv);
  EXPECT_EQ(module->parameter_count, 224);
  const ConvParams& conv = std::get<ConvParams>(module->params);
  EXPECT_EQ(conv.kernel_size, HyperParameter::Tuple({3, 3}));
  EXPECT_EQ(conv.padding, HyperParameter::String("same"));

  absl::StatusOr<ModuleCall> call = ReadCall(Parse(R"({
      "inputs": [{"kind": "tensor", "shape": [1, 3, 8, 8], "dtype": "torch.float32",
                  "device": "cpu", "requires_grad": false},
                 {"kind": "none"}, {"kind": "scalar", "type": "bool"}],
      "output": {"kind": "tuple", "items": [
                 {"kind": "mapping", "type": "dict", "items": [
                    {"key_type": "str", "value": {"kind": "object", "type": "A.B"}},
                    {"key": "x", "key_type": "str",
                     "value": {"kind": "tensor", "shape": [1, 4, 8, 8]}}]}]}})"));
  ASSERT_TRUE(call.ok()) << call.status();
  ASSERT_EQ(call->inputs.size(), 3u);
  EXPECT_TRUE(call->inputs[1].is_none());
  EXPECT_EQ(PythonTypeName(call->inputs[2]), "bool");
  // The crawler's depth-first search finds the tensor inside the mapping.
  const CallValue* first = FirstTensor(call->output);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->shape, (Dims{1, 4, 8, 8}));
}

TEST(ModuleJson, PoolsKeepIntsAndTuplesApart) {
  absl::StatusOr<ModuleDescription> module = ReadDescription(Parse(R"({
      "type": "MaxPool2d", "family": "max_pool", "parameter_count": 0,
      "kernel_size": 2, "stride": [2, 1], "padding": 0, "dilation": 1})"));
  ASSERT_TRUE(module.ok()) << module.status();
  const PoolParams& pool = std::get<PoolParams>(module->params);
  EXPECT_EQ(pool.kernel_size, HyperParameter::Int(2));
  EXPECT_EQ(pool.stride, HyperParameter::Tuple({2, 1}));
  ASSERT_TRUE(pool.dilation.has_value());
  // AvgPool has no dilation attribute: the field is left out.
  module = ReadDescription(Parse(R"({
      "type": "AvgPool2d", "family": "avg_pool", "parameter_count": 0,
      "kernel_size": [2, 2], "stride": [2, 2], "padding": 0})"));
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_FALSE(std::get<PoolParams>(module->params).dilation.has_value());
}

TEST(ModuleJson, ErrorsNameTheFieldPath) {
  EXPECT_EQ(DescriptionError(R"({"type": "Linear", "family": "linear",
      "parameter_count": 36, "in_features": 8, "bias": true})"),
            "module.out_features: is missing");
  EXPECT_EQ(DescriptionError(R"({"type": "Linear", "family": "linear",
      "parameter_count": 36, "in_features": "8", "out_features": 4, "bias": true})"),
            "module.in_features: expected an integer, got string");
  EXPECT_EQ(DescriptionError(R"({"type": "ReLU", "family": "relu",
      "parameter_count": 0, "inplace": false, "negative_slope": 0.1})"),
            "module.negative_slope: is not a field of this object");
  EXPECT_EQ(DescriptionError(
                R"({"type": "GELU", "family": "gelu", "parameter_count": 0})"),
            "module.family: unknown family 'gelu' (expected one of "
            "unsupported, identity, "
            "flatten, linear, relu, elu, leaky_relu, relu6, tanh, sigmoid, "
            "conv_transpose, "
            "conv, batch_norm, max_pool, avg_pool, adaptive_max_pool, "
            "adaptive_avg_pool, "
            "dropout, multihead_attention, layer_norm, transformer)");
  EXPECT_EQ(DescriptionError(R"({"type": "Identity", "family": "identity",
      "parameter_count": -1})"),
            "module.parameter_count: must not be negative");
  EXPECT_EQ(DescriptionError(R"({"type": "MaxPool2d", "family": "max_pool",
      "parameter_count": 0, "kernel_size": "2", "stride": 2, "padding": 0})"),
            "module.kernel_size: expected an integer or an array of integers, "
            "got string");
  EXPECT_EQ(DescriptionError(
                R"({"type": "Conv1d", "family": "conv", "parameter_count": 0,
      "in_channels": 1, "kernel_size": 3, "stride": [1], "padding": [0],
      "dilation": [1], "groups": 1, "bias": true})"),
            "module: kernel_size: torch never stores an int here");
  EXPECT_EQ(DescriptionError(R"({"type": "MultiheadAttention",
      "family": "multihead_attention", "parameter_count": 80, "embed_dim": 4,
      "num_heads": 2, "head_dim": 2, "batch_first": true, "in_proj_bias": true,
      "bias_k": false, "bias_v": false, "add_zero_attn": false, "dropout": 0.0,
      "training": false, "out_proj": {"in_features": 4, "out_features": 4}})"),
            "module.out_proj.bias: is missing");
  EXPECT_EQ(DescriptionError("[]"), "module: expected an object, got array");

  EXPECT_EQ(CallError(R"({"inputs": [{"kind": "tensor", "shape": [1, -3]}],
      "output": {"kind": "none"}})"),
            "call.inputs[0].shape[1]: must not be negative");
  EXPECT_EQ(CallError(R"({"inputs": [{"kind": "none"}, {"kind": "pending"}],
      "output": {"kind": "none"}})"),
            "call.inputs[1].kind: unknown value kind 'pending' (expected "
            "tensor, none, "
            "tuple, list, mapping, scalar or object)");
  EXPECT_EQ(CallError(R"({"inputs": []})"), "call.output: is missing");
}

TEST(ModuleJson, TransformerStacksAndNonNativeStacks) {
  const std::string mha = R"({"embed_dim": 4, "num_heads": 2, "head_dim": 2,
      "batch_first": false, "in_proj_bias": true, "bias_k": false, "bias_v": false,
      "add_zero_attn": false, "dropout": 0.0, "training": false,
      "out_proj": {"in_features": 4, "out_features": 4, "bias": true}})";
  const std::string linear1 =
      R"({"in_features": 4, "out_features": 8, "bias": true})";
  const std::string linear2 =
      R"({"in_features": 8, "out_features": 4, "bias": true})";
  const std::string dropout =
      R"({"p": 0.1, "inplace": false, "training": false})";
  const std::string norm =
      R"({"normalized_shape": [4], "weight": true, "bias": true})";
  const std::string encoder_layer = absl::StrCat(
      R"({"self_attn": )", mha, R"(, "linear1": )", linear1, R"(, "dropout": )",
      dropout, R"(, "linear2": )", linear2, R"(, "norm1": )", norm,
      R"(, "norm2": )", norm, R"(, "dropout1": )", dropout, R"(, "dropout2": )",
      dropout, R"(, "activation_is_relu": true})");
  absl::StatusOr<ModuleDescription> module = ReadDescription(Parse(absl::StrCat(
      R"({"type": "Transformer", "family": "transformer", "parameter_count": 1,
          "native_stacks": true, "encoder": {"layers": [)",
      encoder_layer, R"(], "norm": )", norm,
      R"(}, "decoder": {"layers": [], "norm": null}})")));
  ASSERT_TRUE(module.ok()) << module.status();
  const TransformerParams& transformer =
      std::get<TransformerParams>(module->params);
  ASSERT_EQ(transformer.encoder.layers.size(), 1u);
  EXPECT_EQ(transformer.encoder.layers[0].linear1.out_features, 8);
  EXPECT_TRUE(transformer.encoder.norm.has_value());
  EXPECT_FALSE(transformer.decoder.norm.has_value());

  EXPECT_EQ(
      DescriptionError(absl::StrCat(
          R"({"type": "Transformer", "family": "transformer", "parameter_count": 1,
                    "native_stacks": true, "encoder": {"layers": [)",
          encoder_layer.substr(0, encoder_layer.size() - 1),
          R"(, "activation": "gelu"}], "norm": null}, "decoder": {"layers": [], "norm": null}})")),
      "module.encoder.layers[0].activation: is not a field of this object");

  // A custom encoder is rejected by the formula before anything is read.
  module = ReadDescription(Parse(R"({"type": "Transformer",
      "family": "transformer", "parameter_count": 0, "native_stacks": false})"));
  ASSERT_TRUE(module.ok()) << module.status();
}

TEST(ModuleJson, ReadsACapturedCall) {
  absl::StatusOr<CapturedModuleCall> captured = ReadCaptured(Parse(R"({
      "path": "features.0",
      "module": {"type": "Identity", "family": "identity", "parameter_count": 0},
      "call": {"inputs": [{"kind": "tensor", "shape": [2]}],
               "output": {"kind": "tensor", "shape": [2]}}})"));
  ASSERT_TRUE(captured.ok()) << captured.status();
  EXPECT_EQ(captured->path, "features.0");
  EXPECT_EQ(captured->module.family, ModuleFamily::kIdentity);
  absl::StatusOr<CapturedModuleCall> bad = ReadCaptured(Parse(R"({
      "path": "", "module": {"type": "Identity", "family": "identity",
      "parameter_count": 0}, "call": {"inputs": 3, "output": {"kind": "none"}}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "captured_call.call.inputs: expected an array, got integer");
}

}  // namespace
}  // namespace torchscan::formulas
