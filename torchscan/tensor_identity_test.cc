#include "torchscan/tensor_identity.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/ones.h>
#include <gtest/gtest.h>

namespace torchscan {
namespace {

TEST(SeenTensorsTest, TheSameTensorObjectIsSeenOnce) {
  SeenTensors seen;
  const at::Tensor weight = at::ones({4, 3});
  EXPECT_TRUE(seen.Insert(weight));
  EXPECT_FALSE(seen.Insert(weight));
}

TEST(SeenTensorsTest, TwoEqualViewsOfOneStorageAreOneTensor) {
  // What loading a saved model with tied weights gives: one storage, one
  // view per name.
  SeenTensors seen;
  const at::Tensor storage = at::ones({12});
  const at::Tensor embedding = storage.as_strided({4, 3}, {3, 1}, 0);
  const at::Tensor head = storage.as_strided({4, 3}, {3, 1}, 0);
  EXPECT_TRUE(seen.Insert(embedding));
  EXPECT_FALSE(seen.Insert(head));
}

TEST(SeenTensorsTest, DifferentViewsOfOneStorageAreTwoTensors) {
  SeenTensors seen;
  const at::Tensor storage = at::ones({12});
  const at::Tensor rows = storage.as_strided({4, 3}, {3, 1}, 0);
  const at::Tensor transposed = storage.as_strided({3, 4}, {1, 3}, 0);
  const at::Tensor second_half = storage.as_strided({2, 3}, {3, 1}, 6);
  EXPECT_TRUE(seen.Insert(rows));
  EXPECT_TRUE(seen.Insert(transposed));
  EXPECT_TRUE(seen.Insert(second_half));
}

TEST(SeenTensorsTest, EqualTensorsWithTheirOwnStoragesAreTwoTensors) {
  SeenTensors seen;
  const at::Tensor first = at::ones({4, 3});
  const at::Tensor second = at::ones({4, 3});
  EXPECT_TRUE(seen.Insert(first));
  EXPECT_TRUE(seen.Insert(second));
}

TEST(SeenTensorsTest, MetaTensorsAreToldApartByObjectOnly) {
  SeenTensors seen;
  const at::Tensor first = at::empty({4, 3}, at::device(at::kMeta));
  const at::Tensor second = at::empty({4, 3}, at::device(at::kMeta));
  EXPECT_TRUE(seen.Insert(first));
  EXPECT_TRUE(seen.Insert(second));
  EXPECT_FALSE(seen.Insert(first));
}

}  // namespace
}  // namespace torchscan
