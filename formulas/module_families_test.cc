// The module family table's attribute declarations (module_families.h): what
// a front end holding the live module reads for each family.

#include "formulas/module_families.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "gtest/gtest.h"

namespace torchscan::formulas {
namespace {

constexpr std::size_t kFamilies =
    static_cast<std::size_t>(ModuleFamily::kTransformer) + 1;

std::vector<std::string> AttributeNames(ModuleFamily family) {
  std::vector<std::string> names;
  for (const ModuleAttribute& attribute :
       Listed(ModuleFamilyRowFor(family).attributes)) {
    names.push_back(attribute.name);
  }
  return names;
}

TEST(ModuleFamilyRowsTest, EveryFamilyButUnsupportedNamesItsTorchClass) {
  EXPECT_EQ(nullptr,
            ModuleFamilyRowFor(ModuleFamily::kUnsupported).torch_class);
  for (std::size_t i = 1; i < kFamilies; ++i) {
    const char* torch_class =
        ModuleFamilyRowFor(static_cast<ModuleFamily>(i)).torch_class;
    ASSERT_NE(nullptr, torch_class) << i;
    EXPECT_EQ(0u, std::string(torch_class).rfind("torch.nn.modules.", 0)) << i;
  }
}

TEST(ModuleFamilyRowsTest, OnlyTheTransformerIsLeftToTheFrontEnd) {
  for (std::size_t i = 0; i < kFamilies; ++i) {
    const auto family = static_cast<ModuleFamily>(i);
    EXPECT_EQ(family != ModuleFamily::kTransformer,
              DescribedByAttributes(ModuleFamilyRowFor(family)))
        << ModuleFamilyName(family);
  }
}

TEST(ModuleFamilyRowsTest, ConvReadsTorchsAttributeNames) {
  EXPECT_EQ((std::vector<std::string>{"in_channels", "kernel_size", "stride",
                                      "padding", "dilation", "groups", "bias"}),
            AttributeNames(ModuleFamily::kConv));
}

TEST(ModuleFamilyRowsTest, BatchNormReadsItsTensorsByAttributeName) {
  EXPECT_EQ((std::vector<std::string>{
                "num_features", "affine", "track_running_stats", "training",
                "momentum", "running_mean", "running_var", "weight", "bias"}),
            AttributeNames(ModuleFamily::kBatchNorm));
}

TEST(ModuleFamilyRowsTest, StoringMakesTheParamsTheFamilysAlternative) {
  ModuleParams params;  // std::monostate
  const ModuleFamilyRow& conv = ModuleFamilyRowFor(ModuleFamily::kConv);
  conv.attributes[3].store(params, HyperParameter::String("same"));
  conv.attributes[5].store(params, std::int64_t{4});
  ASSERT_TRUE(std::holds_alternative<ConvParams>(params));
  EXPECT_EQ(HyperParameter::String("same"),
            std::get<ConvParams>(params).padding);
  EXPECT_EQ(4, std::get<ConvParams>(params).groups);
}

TEST(ModuleFamilyRowsTest, AnAbsentPoolDilationStaysUnset) {
  ModuleParams params;
  const ModuleFamilyRow& pool = ModuleFamilyRowFor(ModuleFamily::kAvgPool);
  ASSERT_EQ(std::string("dilation"), pool.attributes[3].name);
  EXPECT_EQ(AttributeKind::kHyperIfPresent, pool.attributes[3].kind);
  pool.attributes[3].store(params, std::optional<HyperParameter>());
  EXPECT_FALSE(std::get<PoolParams>(params).dilation.has_value());
}

TEST(ModuleFamilyRowsTest, MultiheadAttentionReadsOutProjAsALinear) {
  const ModuleFamilyRow& mha =
      ModuleFamilyRowFor(ModuleFamily::kMultiheadAttention);
  ModuleParams params;
  mha.attributes[10].store(
      params, LinearParams{.in_features = 8, .out_features = 8, .bias = false});
  EXPECT_EQ(std::string("out_proj"), mha.attributes[10].name);
  EXPECT_EQ(AttributeKind::kLinear, mha.attributes[10].kind);
  EXPECT_EQ((LinearParams{.in_features = 8, .out_features = 8, .bias = false}),
            std::get<MultiheadAttentionParams>(params).out_proj);
}

}  // namespace
}  // namespace torchscan::formulas
