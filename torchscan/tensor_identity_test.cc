#include "torchscan/tensor_identity.h"

#include <ATen/ATen.h>
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
  EXPECT_TRUE(seen.Insert(storage.as_strided({4, 3}, {3, 1}, 0)));
  EXPECT_FALSE(seen.Insert(storage.as_strided({4, 3}, {3, 1}, 0)));
}

TEST(SeenTensorsTest, DifferentViewsOfOneStorageAreTwoTensors) {
  SeenTensors seen;
  const at::Tensor storage = at::ones({12});
  EXPECT_TRUE(seen.Insert(storage.as_strided({4, 3}, {3, 1}, 0)));
  EXPECT_TRUE(seen.Insert(storage.as_strided({3, 4}, {1, 3}, 0)));
  EXPECT_TRUE(seen.Insert(storage.as_strided({2, 3}, {3, 1}, 6)));
}

TEST(SeenTensorsTest, EqualTensorsWithTheirOwnStoragesAreTwoTensors) {
  SeenTensors seen;
  EXPECT_TRUE(seen.Insert(at::ones({4, 3})));
  EXPECT_TRUE(seen.Insert(at::ones({4, 3})));
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
