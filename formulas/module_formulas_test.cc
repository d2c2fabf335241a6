// Module formulas against the golden values of the reference (sections 6.1.1,
// 6.1.2 and 6.5, each asserted by an upstream test), with descriptions built
// in C++ the way the TorchScript and LibTorch front ends will build them.
// module_formula_goldens_test.cc covers many more configurations against
// numbers produced by running the released package.

#include "formulas/module_formulas.h"

#include <string>
#include <utility>
#include <vector>

#include "formulas/exact_count.h"
#include "gtest/gtest.h"

namespace torchscan::formulas {
namespace {

using report::MetricValue;

CallValue T(Dims shape) { return CallValue::Tensor(std::move(shape)); }

ModuleCall Call(std::vector<CallValue> inputs, CallValue output) {
  return ModuleCall{std::move(inputs), std::move(output)};
}
// A single-tensor call.
ModuleCall Call(Dims in, Dims out) {
  return Call({T(std::move(in))}, T(std::move(out)));
}

ModuleDescription Describe(std::string type, ModuleFamily family,
                           ModuleParams params = {}, Count parameters = 0) {
  return ModuleDescription{std::move(type), family, std::move(params),
                           parameters};
}

Count Value(const absl::StatusOr<FormulaOutcome<Count>>& outcome) {
  EXPECT_TRUE(outcome.ok()) << outcome.status();
  if (!outcome.ok()) return -1;
  EXPECT_FALSE(outcome->error.has_value()) << outcome->error->ToString();
  EXPECT_TRUE(outcome->warnings.empty());
  return outcome->value.value_or(-1);
}
Count Flops(const ModuleDescription& m, const ModuleCall& c) {
  return Value(ModuleFlops(m, c));
}
Count Macs(const ModuleDescription& m, const ModuleCall& c) {
  return Value(ModuleMacs(m, c));
}
Count Dmas(const ModuleDescription& m, const ModuleCall& c) {
  return Value(ModuleDmas(m, c));
}

FormulaError ErrorOf(const absl::StatusOr<FormulaOutcome<Count>>& outcome) {
  EXPECT_TRUE(outcome.ok()) << outcome.status();
  if (!outcome.ok() || !outcome->error) return {};
  return *outcome->error;
}

// The JSON text of a value tells 1 (int) from 1.0 (float) from "same".
std::string Text(const MetricValue& value) {
  return report::DumpJson(report::ToJson(value));
}
std::string FieldText(const ModuleDescription& m, const ModuleCall& c) {
  absl::StatusOr<FormulaOutcome<ReceptiveField>> field =
      ModuleReceptiveField(m, c);
  EXPECT_TRUE(field.ok()) << field.status();
  if (!field.ok() || !field->value) return "error";
  return Text(field->value->receptive_field) + " " +
         Text(field->value->effective_stride) + " " +
         Text(field->value->effective_padding);
}

ConvParams Conv(std::int64_t in_channels, std::vector<std::int64_t> kernel) {
  ConvParams conv;
  conv.in_channels = in_channels;
  const std::size_t dims = kernel.size();
  conv.kernel_size = HyperParameter::Tuple(std::move(kernel));
  conv.stride = HyperParameter::Tuple(std::vector<std::int64_t>(dims, 1));
  conv.padding = HyperParameter::Tuple(std::vector<std::int64_t>(dims, 0));
  conv.dilation = HyperParameter::Tuple(std::vector<std::int64_t>(dims, 1));
  return conv;
}

PoolParams Pool(HyperParameter kernel, bool max) {
  PoolParams pool;
  pool.kernel_size = kernel;
  pool.stride = kernel;  // torch's default stride is the kernel size
  pool.padding = HyperParameter::Int(0);
  if (max) pool.dilation = HyperParameter::Int(1);
  return pool;
}

TEST(ModuleFormulas, UnsupportedTypesWarnAndCountZero) {
  const ModuleDescription module =
      Describe("MyModule", ModuleFamily::kUnsupported);
  const ModuleCall call = Call({1}, {1});
  for (auto formula : {&ModuleFlops, &ModuleMacs, &ModuleDmas}) {
    absl::StatusOr<FormulaOutcome<Count>> outcome = formula(module, call);
    ASSERT_TRUE(outcome.ok());
    EXPECT_EQ(outcome->value, Count(0));
    EXPECT_EQ(outcome->warnings,
              std::vector<std::string>{"Module type not supported: MyModule"});
  }
  absl::StatusOr<FormulaOutcome<ReceptiveField>> field =
      ModuleReceptiveField(module, call);
  ASSERT_TRUE(field.ok());
  EXPECT_EQ(Text(field->value->receptive_field), "1.0");
  EXPECT_EQ(field->warnings,
            std::vector<std::string>{"Module type not supported: MyModule"});
}

TEST(ModuleFormulas, LinearGoldens) {
  const ModuleDescription linear =
      Describe("Linear", ModuleFamily::kLinear, LinearParams{8, 4, true}, 36);
  EXPECT_EQ(Flops(linear, Call({1, 8}, {1, 4})), 64);
  EXPECT_EQ(Macs(linear, Call({1, 8}, {1, 4})), 32);
  EXPECT_EQ(Dmas(linear, Call({1, 8}, {1, 4})), 48);
  EXPECT_EQ(Flops(linear, Call({1, 2, 8}, {1, 2, 4})), 128);
  EXPECT_EQ(Macs(linear, Call({1, 2, 8}, {1, 2, 4})), 64);
  EXPECT_EQ(Dmas(linear, Call({1, 2, 8}, {1, 2, 4})), 60);
  const ModuleDescription no_bias =
      Describe("Linear", ModuleFamily::kLinear, LinearParams{8, 4, false}, 32);
  EXPECT_EQ(Flops(no_bias, Call({1, 8}, {1, 4})), 60);
  EXPECT_EQ(FieldText(linear, Call({1, 8}, {1, 4})), "1.0 1.0 0.0");
}

TEST(ModuleFormulas, IdentityFlattenAndActivationGoldens) {
  const ModuleCall call = Call({1, 8}, {1, 8});
  EXPECT_EQ(Flops(Describe("Identity", ModuleFamily::kIdentity), call), 0);
  EXPECT_EQ(Dmas(Describe("Identity", ModuleFamily::kIdentity), call), 8);
  EXPECT_EQ(Flops(Describe("Flatten", ModuleFamily::kFlatten), call), 0);
  EXPECT_EQ(Dmas(Describe("Flatten", ModuleFamily::kFlatten), call), 16);

  const ModuleDescription relu =
      Describe("ReLU", ModuleFamily::kReLU, ActivationParams{false});
  EXPECT_EQ(Flops(relu, call), 8);
  EXPECT_EQ(Macs(relu, call), 0);
  EXPECT_EQ(Dmas(relu, call), 16);
  EXPECT_EQ(
      Dmas(Describe("ReLU", ModuleFamily::kReLU, ActivationParams{true}), call),
      8);
  const ModuleDescription elu =
      Describe("ELU", ModuleFamily::kELU, ActivationParams{false});
  EXPECT_EQ(Flops(elu, call), 48);
  EXPECT_EQ(Dmas(elu, call), 17);
  EXPECT_EQ(
      Flops(Describe("LeakyReLU", ModuleFamily::kLeakyReLU, ActivationParams{}),
            call),
      32);
  EXPECT_EQ(
      Flops(Describe("ReLU6", ModuleFamily::kReLU6, ActivationParams{}), call),
      16);
  EXPECT_EQ(Flops(Describe("Tanh", ModuleFamily::kTanh), call), 48);
  EXPECT_EQ(Dmas(Describe("Tanh", ModuleFamily::kTanh), call), 24);
  EXPECT_EQ(Flops(Describe("Sigmoid", ModuleFamily::kSigmoid), call), 32);
  EXPECT_EQ(Dmas(Describe("Sigmoid", ModuleFamily::kSigmoid), call), 16);
}

TEST(ModuleFormulas, BatchNormTrainingGolden) {
  BatchNormParams bn;
  bn.num_features = 8;
  bn.training = true;
  bn.running_mean_numel = bn.running_var_numel = bn.weight_numel =
      bn.bias_numel = 8;
  const ModuleDescription module =
      Describe("BatchNorm1d", ModuleFamily::kBatchNorm, bn, 16);
  const ModuleCall call = Call({1, 8, 4}, {1, 8, 4});
  EXPECT_EQ(Flops(module, call), 320);
  EXPECT_EQ(Macs(module, call), 176);
  EXPECT_EQ(Dmas(module, call), 115);
  EXPECT_EQ(FieldText(module, call), "1.0 1.0 0.0");
}

TEST(ModuleFormulas, PoolingGoldensKeepTheIntKernelQuirk) {
  const ModuleCall call = Call({1, 8, 4, 4}, {1, 8, 2, 2});
  const ModuleDescription max_tuple =
      Describe("MaxPool2d", ModuleFamily::kMaxPool,
               Pool(HyperParameter::Tuple({2, 2}), true));
  EXPECT_EQ(Flops(max_tuple, call), 96);
  EXPECT_EQ(Macs(max_tuple, call), 96);
  EXPECT_EQ(Dmas(max_tuple, call), 160);
  EXPECT_EQ(FieldText(max_tuple, call), "2 2 0");
  // MaxPool2d(2): the raw int in FLOPs and MACs, the expanded 2x2 in DMAs.
  const ModuleDescription max_int = Describe(
      "MaxPool2d", ModuleFamily::kMaxPool, Pool(HyperParameter::Int(2), true));
  EXPECT_EQ(Flops(max_int, call), 32);
  EXPECT_EQ(Macs(max_int, call), 32);
  EXPECT_EQ(Dmas(max_int, call), 160);
  const ModuleDescription avg_tuple =
      Describe("AvgPool2d", ModuleFamily::kAvgPool,
               Pool(HyperParameter::Tuple({2, 2}), false));
  EXPECT_EQ(Flops(avg_tuple, call), 160);
  EXPECT_EQ(Macs(avg_tuple, call), 160);
  const ModuleDescription adaptive_max =
      Describe("AdaptiveMaxPool2d", ModuleFamily::kAdaptiveMaxPool);
  EXPECT_EQ(Flops(adaptive_max, call), 96);
  EXPECT_EQ(Macs(adaptive_max, call), 96);
  EXPECT_EQ(Dmas(adaptive_max, call), 160);
  EXPECT_EQ(FieldText(adaptive_max, call), "2 2 0.0");
  const ModuleDescription adaptive_avg =
      Describe("AdaptiveAvgPool2d", ModuleFamily::kAdaptiveAvgPool);
  EXPECT_EQ(Flops(adaptive_avg, call), 160);
  EXPECT_EQ(Macs(adaptive_avg, call), 160);
  // 7 -> 1: kernel and stride 7, padding (7 - 49) / 2.
  EXPECT_EQ(FieldText(adaptive_avg, Call({1, 2, 7, 7}, {1, 2, 1, 1})),
            "7 7 -21.0");
}

TEST(ModuleFormulas, DropoutCountsWhateverTheTrainingMode) {
  const ModuleCall call = Call({1, 8}, {1, 8});
  const ModuleDescription dropout = Describe("Dropout", ModuleFamily::kDropout,
                                             DropoutParams{0.5, false, false});
  EXPECT_EQ(Flops(dropout, call), 8);
  EXPECT_EQ(Macs(dropout, call), 0);
  EXPECT_EQ(Dmas(dropout, call), 17);
  EXPECT_EQ(Flops(Describe("Dropout", ModuleFamily::kDropout,
                           DropoutParams{0, false, true}),
                  call),
            0);
}

TEST(ModuleFormulas, ConvolutionGoldens) {
  ConvParams conv = Conv(3, {3, 3});
  const ModuleDescription conv2d =
      Describe("Conv2d", ModuleFamily::kConv, conv, 224);
  const ModuleCall call = Call({1, 3, 32, 32}, {1, 8, 30, 30});
  EXPECT_EQ(Flops(conv2d, call), 388800);
  EXPECT_EQ(Macs(conv2d, call), 194400);
  EXPECT_EQ(Dmas(conv2d, call), 201824);
  EXPECT_EQ(FieldText(conv2d, call), "3 1 0");

  conv.dilation = HyperParameter::Tuple({2, 2});
  EXPECT_EQ(FieldText(Describe("Conv2d", ModuleFamily::kConv, conv, 224), call),
            "5 1 0");
  conv.padding = HyperParameter::String("same");
  EXPECT_EQ(FieldText(Describe("Conv2d", ModuleFamily::kConv, conv, 224), call),
            "5 1 \"same\"");

  const ModuleDescription transposed = Describe(
      "ConvTranspose2d", ModuleFamily::kConvTranspose, Conv(3, {3, 3}), 224);
  const ModuleCall up = Call({1, 3, 32, 32}, {1, 8, 34, 34});
  EXPECT_EQ(Flops(transposed, up), 499408);
  EXPECT_EQ(Macs(transposed, up), 249704);
  EXPECT_EQ(Dmas(transposed, up), 259178);
  EXPECT_EQ(FieldText(transposed, up), "-3 1.0 0.0");
}

TEST(ModuleFormulas, LayerNormGoldens) {
  const ModuleCall call = Call({2, 3, 4}, {2, 3, 4});
  EXPECT_EQ(Flops(Describe("LayerNorm", ModuleFamily::kLayerNorm,
                           LayerNormParams{{4}, true, true}),
                  call),
            204);
  EXPECT_EQ(Flops(Describe("LayerNorm", ModuleFamily::kLayerNorm,
                           LayerNormParams{{4}, true, false}),
                  call),
            180);
  EXPECT_EQ(Flops(Describe("LayerNorm", ModuleFamily::kLayerNorm,
                           LayerNormParams{{4}, false, false}),
                  call),
            156);
  // No MACs, DMAs or receptive field formula upstream.
  absl::StatusOr<FormulaOutcome<Count>> macs =
      ModuleMacs(Describe("LayerNorm", ModuleFamily::kLayerNorm,
                          LayerNormParams{{4}, true, true}),
                 call);
  ASSERT_TRUE(macs.ok());
  EXPECT_EQ(macs->warnings,
            std::vector<std::string>{"Module type not supported: LayerNorm"});
}

MultiheadAttentionParams Attention(bool bias, bool batch_first) {
  MultiheadAttentionParams mha;
  mha.embed_dim = 4;
  mha.num_heads = 2;
  mha.head_dim = 2;
  mha.batch_first = batch_first;
  mha.in_proj_bias = bias;
  mha.out_proj = LinearParams{4, 4, bias};
  return mha;
}

// (q, k, v, key_padding_mask, need_weights, attn_mask, average_attn_weights,
// is_causal): the ordered inputs of MultiheadAttention.forward.
std::vector<CallValue> AttentionInputs(Dims q, Dims kv,
                                       bool attn_mask = false) {
  return {T(q),
          T(kv),
          T(kv),
          CallValue::None(),
          CallValue::Scalar("bool"),
          attn_mask ? T({3, 5}) : CallValue::None(),
          CallValue::Scalar("bool"),
          CallValue::Scalar("bool")};
}

TEST(ModuleFormulas, MultiheadAttentionGoldens) {
  for (bool batch_first : {true, false}) {
    SCOPED_TRACE(batch_first ? "batch_first" : "sequence first");
    const Dims q = batch_first ? Dims{2, 3, 4} : Dims{3, 2, 4};
    const Dims kv = batch_first ? Dims{2, 5, 4} : Dims{5, 2, 4};
    const CallValue no_weights = CallValue::Tuple({T(q), CallValue::None()});
    for (bool bias : {false, true}) {
      const ModuleDescription mha =
          Describe("MultiheadAttention", ModuleFamily::kMultiheadAttention,
                   Attention(bias, batch_first));
      EXPECT_EQ(Flops(mha, Call(AttentionInputs(q, q), no_weights)),
                bias ? 1117 : 1021);
      EXPECT_EQ(Flops(mha, Call(AttentionInputs(q, kv), no_weights)),
                bias ? 1613 : 1485);
      // Averaged weights returned: + B*H*L*S.
      const CallValue weights = CallValue::Tuple({T(q), T({2, 3, 5})});
      EXPECT_EQ(Flops(mha, Call(AttentionInputs(q, kv), weights)),
                (bias ? 1613 : 1485) + 60);
      // An attn_mask at position 5: + B*H*L*S.
      EXPECT_EQ(Flops(mha, Call(AttentionInputs(q, kv, true), no_weights)),
                (bias ? 1613 : 1485) + 60);
    }
  }
}

TEST(ModuleFormulas, MultiheadAttentionRejectsWhatUpstreamRejects) {
  MultiheadAttentionParams params = Attention(true, true);
  params.add_zero_attn = true;
  const Dims q = {2, 3, 4};
  const CallValue out = CallValue::Tuple({T(q), CallValue::None()});
  EXPECT_EQ(
      ErrorOf(ModuleFlops(Describe("MultiheadAttention",
                                   ModuleFamily::kMultiheadAttention, params),
                          Call(AttentionInputs(q, q), out))),
      (FormulaError{"NotImplementedError",
                    "MultiheadAttention FLOPs do not support add_bias_kv or "
                    "add_zero_attn."}));
  const ModuleDescription mha =
      Describe("MultiheadAttention", ModuleFamily::kMultiheadAttention,
               Attention(true, true));
  EXPECT_EQ(
      ErrorOf(ModuleFlops(mha, Call(AttentionInputs({3, 4}, {3, 4}), out))),
      (FormulaError{
          "NotImplementedError",
          "MultiheadAttention FLOPs only support batched 3D inputs."}));
  EXPECT_EQ(ErrorOf(ModuleFlops(mha, Call({T(q), T(q)}, out))),
            (FormulaError{"ValueError",
                          "not enough values to unpack (expected 3, got 2)"}));
}

LayerNormParams Norm4() { return LayerNormParams{{4}, true, true}; }

TransformerEncoderLayerParams EncoderLayer(bool batch_first) {
  TransformerEncoderLayerParams layer;
  layer.self_attn = Attention(true, batch_first);
  layer.linear1 = LinearParams{4, 8, true};
  layer.linear2 = LinearParams{8, 4, true};
  layer.dropout = layer.dropout1 = layer.dropout2 =
      DropoutParams{0, false, false};
  layer.norm1 = layer.norm2 = Norm4();
  return layer;
}

TransformerDecoderLayerParams DecoderLayer(bool batch_first) {
  TransformerDecoderLayerParams layer;
  layer.self_attn = layer.multihead_attn = Attention(true, batch_first);
  layer.linear1 = LinearParams{4, 8, true};
  layer.linear2 = LinearParams{8, 4, true};
  layer.dropout = layer.dropout1 = layer.dropout2 = layer.dropout3 =
      DropoutParams{0, false, false};
  layer.norm1 = layer.norm2 = layer.norm3 = Norm4();
  return layer;
}

TransformerParams Transformer(bool batch_first) {
  TransformerParams transformer;
  transformer.encoder.layers = {EncoderLayer(batch_first)};
  transformer.encoder.norm = Norm4();
  transformer.decoder.layers = {DecoderLayer(batch_first)};
  transformer.decoder.norm = Norm4();
  return transformer;
}

TEST(ModuleFormulas, TransformerGoldens) {
  for (bool batch_first : {false, true}) {
    SCOPED_TRACE(batch_first ? "batch_first" : "sequence first");
    const Dims src = batch_first ? Dims{1, 3, 4} : Dims{3, 1, 4};
    const Dims tgt = batch_first ? Dims{1, 2, 4} : Dims{2, 1, 4};
    EXPECT_EQ(Value(TransformerEncoderLayerFlops(EncoderLayer(batch_first),
                                                 {T(src)})),
              1195);
    EXPECT_EQ(Value(TransformerDecoderLayerFlops(DecoderLayer(batch_first),
                                                 {T(tgt), T(src)})),
              1270);
    const ModuleDescription model = Describe(
        "Transformer", ModuleFamily::kTransformer, Transformer(batch_first));
    EXPECT_EQ(Flops(model, Call({T(src), T(tgt)}, T(tgt))), 2635);
    // src_mask, tgt_mask, memory_mask, then the three key padding masks.
    const std::vector<CallValue> masked = {T(src),    T(tgt),    T({3, 3}),
                                           T({2, 2}), T({2, 3}), T({1, 3}),
                                           T({1, 2}), T({1, 3})};
    EXPECT_EQ(Flops(model, Call(masked, T(tgt))), 2711);
  }
}

TEST(ModuleFormulas, TransformerRejectsWhatUpstreamRejects) {
  TransformerParams params = Transformer(true);
  params.decoder.layers[0].activation_is_relu = false;
  const ModuleCall call = Call({T({1, 3, 4}), T({1, 2, 4})}, T({1, 2, 4}));
  EXPECT_EQ(
      ErrorOf(ModuleFlops(
          Describe("Transformer", ModuleFamily::kTransformer, params), call)),
      (FormulaError{
          "NotImplementedError",
          "Transformer FLOPs only support the default ReLU activation."}));
  params.native_stacks = false;
  EXPECT_EQ(
      ErrorOf(ModuleFlops(
          Describe("Transformer", ModuleFamily::kTransformer, params), call)),
      (FormulaError{
          "NotImplementedError",
          "Transformer FLOPs only support the native encoder and decoder "
          "stacks."}));
}

TEST(ModuleFormulas, NonTensorArgumentsRaiseThePythonError) {
  const ModuleDescription relu =
      Describe("ReLU", ModuleFamily::kReLU, ActivationParams{});
  const CallValue x = T({1, 4});
  EXPECT_EQ(ErrorOf(ModuleFlops(relu, Call({CallValue::None(), x}, x))),
            (FormulaError{"AttributeError",
                          "'NoneType' object has no attribute 'numel'"}));
  EXPECT_EQ(ErrorOf(ModuleFlops(relu, Call({}, x))),
            (FormulaError{"IndexError", "tuple index out of range"}));
  const ModuleDescription linear =
      Describe("Linear", ModuleFamily::kLinear, LinearParams{4, 2, true}, 10);
  EXPECT_EQ(
      ErrorOf(ModuleFlops(linear, Call({CallValue::Scalar("int"), x}, x))),
      (FormulaError{"AttributeError",
                    "'int' object has no attribute 'shape'"}));
  // Objects print their own class name, cut at 50 characters as CPython does.
  EXPECT_EQ(ErrorOf(ModuleFlops(
                linear, Call({CallValue::Object("Outer.Inner"), x}, x))),
            (FormulaError{"AttributeError",
                          "'Inner' object has no attribute 'shape'"}));
  EXPECT_EQ(PythonTypeName(CallValue::Object(std::string(60, 'A'))),
            std::string(50, 'A'));
  // MACs read the first input tensor; a call without one fails like None.
  EXPECT_EQ(ErrorOf(ModuleMacs(linear, Call({}, CallValue::Scalar("str")))),
            (FormulaError{"AttributeError",
                          "'NoneType' object has no attribute 'shape'"}));
}

TEST(ModuleFormulas, MalformedDescriptionsAreStatuses) {
  const ModuleCall call = Call({1, 8}, {1, 4});
  absl::StatusOr<FormulaOutcome<Count>> flops =
      ModuleFlops(Describe("Linear", ModuleFamily::kLinear), call);
  ASSERT_FALSE(flops.ok());
  EXPECT_EQ(flops.status().message(),
            "module Linear of family linear needs LinearParams, got no "
            "hyper-parameters");
  ConvParams conv = Conv(3, {3, 3});
  conv.kernel_size = HyperParameter::Int(3);
  flops = ModuleFlops(Describe("Conv2d", ModuleFamily::kConv, conv), call);
  ASSERT_FALSE(flops.ok());
  EXPECT_EQ(flops.status().message(),
            "kernel_size: torch never stores an int here");
}

TEST(ModuleFormulas, CountsBeyond128BitsAreErrorsNotWrappedNumbers) {
  const std::int64_t big = std::int64_t{1} << 62;
  const ModuleDescription linear =
      Describe("Linear", ModuleFamily::kLinear, LinearParams{big, big, true});
  absl::StatusOr<FormulaOutcome<Count>> flops =
      ModuleFlops(linear, Call({T({big, big, big})}, T({1})));
  ASSERT_FALSE(flops.ok());
  EXPECT_EQ(flops.status().code(), absl::StatusCode::kOutOfRange);
  // Large but representable: exact.
  EXPECT_EQ(Flops(Describe("ReLU", ModuleFamily::kReLU, ActivationParams{}),
                  Call({big, 4}, {big, 4})),
            Count(big) * 4);
}

TEST(ExactCount, FollowsPythonIntegerDivision) {
  EXPECT_EQ(FloorDiv(7, 2).value(), 3);
  EXPECT_EQ(FloorDiv(-7, 2).value(), -4);
  EXPECT_EQ(FloorMod(-7, 2).value(), 1);
  EXPECT_EQ(FloorMod(7, -2).value(), -1);
  EXPECT_TRUE((ExactCount(std::numeric_limits<Count>::max()) + 1).overflowed());
  EXPECT_TRUE((ExactCount::Overflowed() * 0).overflowed());
  EXPECT_EQ(ExactProduct({}).value(), 1);
}

}  // namespace
}  // namespace torchscan::formulas
