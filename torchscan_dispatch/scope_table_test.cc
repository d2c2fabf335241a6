#include "torchscan_dispatch/scope_table.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace torchscan::dispatch {
namespace {

using Labels = std::vector<std::string>;

TEST(ScopeTableTest, IdZeroIsTheEmptySet) {
  ScopeTable table;
  EXPECT_EQ(0u, table.Intern({}));
  EXPECT_EQ(Labels{}, table.Labels(0));
  EXPECT_EQ(1u, table.scope_count());
  EXPECT_EQ(0u, table.label_count());
}

TEST(ScopeTableTest, SetsAreInternedRegardlessOfOrderAndDuplicates) {
  ScopeTable table;
  const std::uint32_t ab = table.Intern({"b", "a", "b"});
  EXPECT_NE(0u, ab);
  EXPECT_EQ(ab, table.Intern({"a", "b"}));
  EXPECT_EQ((Labels{"a", "b"}), table.Labels(ab));
  EXPECT_NE(ab, table.Intern({"a"}));
}

TEST(ScopeTableTest, SetsByLabelIdAreTheSetsByLabel) {
  ScopeTable table;
  const std::uint32_t a = table.LabelId("a");
  const std::uint32_t b = table.LabelId("b");
  const std::uint32_t ab = table.InternIds({b, a, b});
  EXPECT_EQ(table.Intern({"a", "b"}), ab);
  EXPECT_EQ((Labels{"a", "b"}), table.Labels(ab));
  EXPECT_EQ(0u, table.InternIds({}));
}

TEST(ScopeTableTest, FindingALabelInternsNothing) {
  ScopeTable table;
  const std::uint32_t a = table.LabelId("a");
  EXPECT_EQ(std::optional<std::uint32_t>(a), table.FindLabelId("a"));
  EXPECT_EQ(std::nullopt, table.FindLabelId("b"));
  EXPECT_EQ(1u, table.label_count());
}

TEST(ScopeTableTest, ChangeAddsAndRemovesLabelsAsASet) {
  ScopeTable table;
  const std::uint32_t net = table.LabelId("net");
  const std::uint32_t fc = table.LabelId("net.fc");
  const std::uint32_t in_net = table.Change(0, net, /*present=*/true);
  const std::uint32_t in_fc = table.Change(in_net, fc, /*present=*/true);
  EXPECT_EQ((Labels{"net"}), table.Labels(in_net));
  EXPECT_EQ((Labels{"net", "net.fc"}), table.Labels(in_fc));
  // Adding a present label or removing an absent one changes nothing.
  EXPECT_EQ(in_fc, table.Change(in_fc, net, /*present=*/true));
  EXPECT_EQ(0u, table.Change(0, fc, /*present=*/false));
  // Leaving in another order than entering reaches the same sets.
  const std::uint32_t only_fc = table.Change(in_fc, net, /*present=*/false);
  EXPECT_EQ((Labels{"net.fc"}), table.Labels(only_fc));
  EXPECT_EQ(0u, table.Change(only_fc, fc, /*present=*/false));
  EXPECT_EQ(in_fc, table.Intern({"net.fc", "net"}));
}

TEST(ScopeTableTest, LabelsKeepTheirIdsAndText) {
  ScopeTable table;
  const std::uint32_t a = table.LabelId("a");
  const std::string& text = table.Label(a);
  for (int i = 0; i < 1000; ++i) table.LabelId("label " + std::to_string(i));
  EXPECT_EQ(a, table.LabelId("a"));
  EXPECT_EQ("a", text);  // still valid after the table grew
  EXPECT_EQ(1001u, table.label_count());
}

TEST(ScopeTableTest, ForEachLabelVisitsTheLabelsOfAScope) {
  ScopeTable table;
  const std::uint32_t scope = table.Intern({"net.fc", "net", "net.fc"});
  Labels visited;
  ASSERT_TRUE(table
                  .ForEachLabel(scope,
                                [&](const std::string& label) {
                                  visited.push_back(label);
                                  return absl::OkStatus();
                                })
                  .ok());
  std::sort(visited.begin(), visited.end());
  EXPECT_EQ((Labels{"net", "net.fc"}), visited);
  EXPECT_TRUE(table
                  .ForEachLabel(7,
                                [](const std::string&) {
                                  return absl::InternalError("visited");
                                })
                  .ok());
}

TEST(ScopeTableTest, ForEachLabelStopsAtTheFirstError) {
  ScopeTable table;
  const std::uint32_t scope = table.Intern({"a", "b"});
  int visits = 0;
  const absl::Status status =
      table.ForEachLabel(scope, [&](const std::string& label) {
        ++visits;
        return absl::InvalidArgumentError(label);
      });
  EXPECT_EQ(absl::StatusCode::kInvalidArgument, status.code());
  EXPECT_EQ(1, visits);
}

TEST(ScopeTableTest, UnknownScopeIdsAreNotHandedOut) {
  ScopeTable table;
  EXPECT_TRUE(table.HasScope(0));
  EXPECT_FALSE(table.HasScope(1));
  EXPECT_EQ(Labels{}, table.Labels(7));
}

}  // namespace
}  // namespace torchscan::dispatch
