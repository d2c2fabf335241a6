#include "report/render/repeated_blocks.h"

#include <vector>

#include "gtest/gtest.h"

namespace torchscan::report::render {
namespace {

// A GPT-2-like stack: h.0 .. h.<n-1>, each with ln and attn.proj, the
// projection's content given per block.
std::vector<BlockRow> Stack(const std::vector<std::string>& proj_contents) {
  std::vector<BlockRow> rows = {{"", 0, "Model", "out 1"}};
  for (std::size_t i = 0; i < proj_contents.size(); ++i) {
    const std::string block = "h." + std::to_string(i);
    rows.push_back({block, 2, "Block", "out 8"});
    rows.push_back({block + ".ln", 3, "LayerNorm", "out 8, 16 params"});
    rows.push_back({block + ".attn", 3, "Attention", "out 8"});
    rows.push_back({block + ".attn.proj", 4, "Linear", proj_contents[i]});
  }
  rows.push_back({"head", 1, "Linear", "out 1"});
  return rows;
}

TEST(FindRepeatedBlocksTest, FoldsIdenticalSiblingBlocks) {
  const std::vector<BlockRow> rows =
      Stack({"72 FLOPs", "72 FLOPs", "72 FLOPs"});
  EXPECT_EQ((std::vector<RepeatedBlocks>{{1, 4, 3}}), FindRepeatedBlocks(rows));
}

TEST(FindRepeatedBlocksTest, ADifferentNumberEndsTheRun) {
  // h.2's projection counted differently: h.0 and h.1 fold, h.2 and h.3 too.
  const std::vector<BlockRow> rows =
      Stack({"72 FLOPs", "72 FLOPs", "≥ 72 FLOPs", "≥ 72 FLOPs"});
  EXPECT_EQ((std::vector<RepeatedBlocks>{{1, 4, 2}, {9, 4, 2}}),
            FindRepeatedBlocks(rows));
}

TEST(FindRepeatedBlocksTest, ADifferentStructureOrTypeIsNotIdentical) {
  std::vector<BlockRow> rows = Stack({"72 FLOPs", "72 FLOPs"});
  rows[7].path = "h.1.attn.other";  // same type and numbers, another path
  EXPECT_TRUE(FindRepeatedBlocks(rows).empty());
  rows = Stack({"72 FLOPs", "72 FLOPs"});
  rows[6].type = "SelfAttention";
  EXPECT_TRUE(FindRepeatedBlocks(rows).empty());
  rows = Stack({"72 FLOPs", "72 FLOPs"});
  rows.insert(rows.begin() + 8, {"h.1.attn.drop", 4, "Dropout", "out 8"});
  EXPECT_TRUE(FindRepeatedBlocks(rows).empty());
}

TEST(FindRepeatedBlocksTest, FindsRunsInsideBlocksAndOfLeaves) {
  // A ResNet stage: block 0 differs (a downsample), blocks 1 and 2 fold;
  // inside each, three identical activation calls in a row fold too.
  std::vector<BlockRow> rows = {{"layer1", 1, "Sequential", ""},
                                {"layer1.0", 2, "Bottleneck", "a"},
                                {"layer1.0.down", 3, "Conv2d", "d"}};
  for (const std::string block : {"layer1.1", "layer1.2"}) {
    rows.push_back({block, 2, "Bottleneck", "b"});
    for (const std::string act : {".act0", ".act1", ".act2"}) {
      rows.push_back({block + act, 3, "ReLU", "r"});
    }
  }
  EXPECT_EQ((std::vector<RepeatedBlocks>{{3, 4, 2}, {4, 1, 3}, {8, 1, 3}}),
            FindRepeatedBlocks(rows));
}

TEST(FindRepeatedBlocksTest, TwoIdenticalLeavesAreNotFolded) {
  // Folding would hide one row behind one fold row.
  const std::vector<BlockRow> rows = {
      {"", 0, "Net", ""}, {"a", 1, "ReLU", "r"}, {"b", 1, "ReLU", "r"}};
  EXPECT_TRUE(FindRepeatedBlocks(rows).empty());
}

TEST(FindRepeatedBlocksTest, NoRowsNoRuns) {
  EXPECT_TRUE(FindRepeatedBlocks({}).empty());
}

}  // namespace
}  // namespace torchscan::report::render
