#include "base/status_macros.h"

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"

namespace {

absl::Status Check(bool ok) {
  return ok ? absl::OkStatus() : absl::InvalidArgumentError("not ok");
}

absl::StatusOr<int> Half(int value) {
  if (value % 2 != 0) return absl::InvalidArgumentError("odd");
  return value / 2;
}

absl::Status ChecksInOrder(bool first, bool second, int& reached) {
  reached = 0;
  TS_RETURN_IF_ERROR(Check(first));
  reached = 1;
  TS_RETURN_IF_ERROR(Check(second));
  reached = 2;
  return absl::OkStatus();
}

absl::StatusOr<std::string> Quarter(int value) {
  TS_ASSIGN_OR_RETURN(int half, Half(value));
  TS_ASSIGN_OR_RETURN(const int quarter, Half(half));
  return std::to_string(quarter);
}

TEST(StatusMacrosTest, ReturnIfErrorStopsAtTheFirstError) {
  int reached = -1;
  EXPECT_TRUE(ChecksInOrder(true, true, reached).ok());
  EXPECT_EQ(reached, 2);
  EXPECT_EQ(ChecksInOrder(true, false, reached).message(), "not ok");
  EXPECT_EQ(reached, 1);
  EXPECT_EQ(ChecksInOrder(false, true, reached).message(), "not ok");
  EXPECT_EQ(reached, 0);
}

TEST(StatusMacrosTest, AssignOrReturnDeclaresOrReturnsTheError) {
  EXPECT_EQ(*Quarter(12), "3");
  EXPECT_EQ(Quarter(6).status().message(), "odd");  // 6 / 2 is odd
  EXPECT_EQ(Quarter(5).status().message(), "odd");
}

}  // namespace
