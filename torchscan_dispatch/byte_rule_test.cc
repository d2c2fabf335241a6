#include "torchscan_dispatch/byte_rule.h"

#include <vector>

#include "gtest/gtest.h"

namespace torchscan::dispatch {
namespace {

SchemaValueFacts Tensor() { return {.holds_tensors = true}; }
SchemaValueFacts View(const char* set) {
  return {.holds_tensors = true, .aliases = true, .alias_sets = {set}};
}
SchemaValueFacts Written(const char* set, bool is_out = false) {
  return {.holds_tensors = true,
          .aliases = true,
          .writes = true,
          .is_out = is_out,
          .alias_sets = {set}};
}
SchemaValueFacts NotTensor() { return {}; }

using A = ArgumentBytes;
using R = ResultBytes;

TEST(StridedTensorBytes, CountsTheElementsATensorAddresses) {
  // A contiguous float32 (4, 8): 32 elements of 4 bytes.
  EXPECT_EQ(StridedTensorBytes(4, {4, 8}, {8, 1}), 128);
  // Its transpose addresses the same 32 elements.
  EXPECT_EQ(StridedTensorBytes(4, {8, 4}, {1, 8}), 128);
  // A (3,) bias expanded to (5, 3) is still 3 elements: stride 0 repeats.
  EXPECT_EQ(StridedTensorBytes(4, {5, 3}, {0, 1}), 12);
  // A scalar expanded to (2, 2): one element.
  EXPECT_EQ(StridedTensorBytes(2, {2, 2}, {0, 0}), 2);
  // A 0-d tensor is one element.
  EXPECT_EQ(StridedTensorBytes(8, {}, {}), 8);
  // Any empty dimension: nothing, even with others expanded.
  EXPECT_EQ(StridedTensorBytes(4, {0, 7}, {7, 0}), 0);
  // Overflow and nonsense are unknown, not wrapped.
  EXPECT_EQ(StridedTensorBytes(4, {int64_t{1} << 40, int64_t{1} << 30},
                               {int64_t{1} << 30, 1}),
            std::nullopt);
  EXPECT_EQ(StridedTensorBytes(4, {-1}, {1}), std::nullopt);
}

TEST(DecideByteRule, PlainOperatorReadsArgumentsAndWritesResults) {
  // aten::addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta,
  // Scalar alpha) -> Tensor
  const std::vector<SchemaValueFacts> arguments = {Tensor(), Tensor(), Tensor(),
                                                   NotTensor(), NotTensor()};
  const ByteRule rule = DecideByteRule("aten::addmm", arguments, {Tensor()});
  EXPECT_FALSE(rule.moves_nothing);
  EXPECT_EQ(rule.arguments,
            (std::vector<A>{A::kRead, A::kRead, A::kRead, A::kNone, A::kNone}));
  EXPECT_EQ(rule.results, (std::vector<R>{R::kWritten}));
}

TEST(DecideByteRule, ViewsMoveNothing) {
  // aten::transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)
  EXPECT_TRUE(DecideByteRule("aten::transpose",
                             {View("a"), NotTensor(), NotTensor()}, {View("a")})
                  .moves_nothing);
  // aten::split.Tensor(Tensor(a -> *) self, ...) -> Tensor(a)[]
  EXPECT_TRUE(
      DecideByteRule("aten::split", {View("a"), NotTensor()}, {View("a")})
          .moves_nothing);
}

TEST(DecideByteRule, MetadataOperatorsMoveNothingUnlessTheyReadData) {
  // aten::sym_size.int(Tensor self, int dim) -> SymInt
  EXPECT_TRUE(
      DecideByteRule("aten::sym_size", {Tensor(), NotTensor()}, {NotTensor()})
          .moves_nothing);
  // aten::equal(Tensor self, Tensor other) -> bool reads both.
  const ByteRule equal =
      DecideByteRule("aten::equal", {Tensor(), Tensor()}, {NotTensor()});
  EXPECT_FALSE(equal.moves_nothing);
  EXPECT_EQ(equal.arguments, (std::vector<A>{A::kRead, A::kRead}));
  // aten::_local_scalar_dense(Tensor self) -> Scalar reads its element.
  SchemaValueFacts scalar;
  scalar.is_scalar = true;
  EXPECT_FALSE(DecideByteRule("aten::_local_scalar_dense", {Tensor()}, {scalar})
                   .moves_nothing);
  // Allocation writes nothing.
  EXPECT_TRUE(
      DecideByteRule("aten::empty_like", {Tensor()}, {Tensor()}).moves_nothing);
}

TEST(DecideByteRule, InPlaceReadsItsDestinationAndWritesItOnce) {
  // aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha)
  //   -> Tensor(a!)
  const ByteRule rule = DecideByteRule(
      "aten::add_", {Written("a"), Tensor(), NotTensor()}, {Written("a")});
  EXPECT_FALSE(rule.moves_nothing);
  EXPECT_EQ(rule.arguments, (std::vector<A>{A::kRead, A::kRead, A::kNone}));
  // The write is the returned destination's, counted once.
  EXPECT_EQ(rule.results, (std::vector<R>{R::kWritten}));
}

TEST(DecideByteRule, OutDestinationIsWrittenNotRead) {
  // aten::add.out(Tensor self, Tensor other, *, Scalar alpha,
  //   Tensor(a!) out) -> Tensor(a!)
  const ByteRule rule = DecideByteRule(
      "aten::add",
      {Tensor(), Tensor(), NotTensor(), Written("a", /*is_out=*/true)},
      {Written("a")});
  EXPECT_EQ(rule.arguments,
            (std::vector<A>{A::kRead, A::kRead, A::kNone, A::kNone}));
  EXPECT_EQ(rule.results, (std::vector<R>{R::kWritten}));
}

TEST(DecideByteRule, WrittenArgumentsNotReturnedCountThemselves) {
  // aten::_foreach_add_.List(Tensor(a!)[] self, Tensor[] other, *,
  //   Scalar alpha) -> ()
  const ByteRule rule = DecideByteRule(
      "aten::_foreach_add_", {Written("a"), Tensor(), NotTensor()}, {});
  EXPECT_FALSE(rule.moves_nothing);
  EXPECT_EQ(rule.arguments,
            (std::vector<A>{A::kReadAndWritten, A::kRead, A::kNone}));
  // An out= destination not returned: written only.
  const ByteRule out = DecideByteRule(
      "aten::_foreach_add", {Tensor(), Tensor(), Written("a", true)}, {});
  EXPECT_EQ(out.arguments, (std::vector<A>{A::kRead, A::kRead, A::kWritten}));
}

}  // namespace
}  // namespace torchscan::dispatch
