// The steady state of a measurement allocates nothing per operator call or
// per module transition: the second and later measurements of the same work
// find their scopes in the model's ScopeTable and their per-(scope,
// operator) entries in the recycled thread stats (NOTE [Scopes kept per
// model] in scope_table.h, NOTE [Recycled thread stats] in
// counting_session.cc).
//
// Allocations are counted by the replaced global operator new of
// allocation_counting.h, on this thread inside the measured body only, so
// LibTorch's and gtest's allocations elsewhere do not count. Deterministic: no
// timings.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "report/flop_report.h"
#include "report/precision.h"
#include "torchscan_dispatch/allocation_counting.h"
#include "torchscan_dispatch/counting_session.h"
#include "torchscan_dispatch/operator_info.h"
#include "torchscan_dispatch/scope_table.h"
#include "torchscan_dispatch/thread_state.h"

namespace torchscan::dispatch {
namespace {

// A forward of a small model, as by_module's hooks and the counting fallback
// report it to the session: 4 blocks of (conv, batch norm, relu) modules,
// each calling one operator, in their block, the model and its Sequential.
class ForwardLoop {
 public:
  ForwardLoop()
      : conv_(*OperatorInfoForName("aten::convolution", "")),
        norm_(*OperatorInfoForName("aten::_native_batch_norm_legit_no_training",
                                   "")),
        relu_(*OperatorInfoForName("aten::relu", "")) {}

  void Run(CountingSession& session, SessionSlot& slot) {
    const std::uint32_t model = session.ModuleLabelId("Net");
    const std::uint32_t blocks = session.ModuleLabelId("Net.blocks");
    session.ChangeModuleLabel(model, true);
    session.ChangeModuleLabel(blocks, true);
    for (int block = 0; block < 4; ++block) {
      const std::string prefix = "Net.blocks." + std::to_string(block);
      const std::uint32_t block_id = session.ModuleLabelId(prefix);
      session.ChangeModuleLabel(block_id, true);
      Module(session, slot, prefix + ".0", conv_, 1000);
      Module(session, slot, prefix + ".1", norm_, 10);
      Module(session, slot, prefix + ".2", relu_, 0);
      session.ChangeModuleLabel(block_id, false);
    }
    session.ChangeModuleLabel(blocks, false);
    session.ChangeModuleLabel(model, false);
  }

 private:
  void Module(CountingSession& session, SessionSlot& slot,
              const std::string& label, const OperatorInfo& op,
              report::Count flops) {
    const std::uint32_t id = session.ModuleLabelId(label);
    session.ChangeModuleLabel(id, true);
    if (flops > 0) {
      session.RecordCounted(op, flops, report::Precision::kFp32, slot);
    } else {
      session.RecordCall(op, slot);
    }
    session.ChangeModuleLabel(id, false);
  }

  const OperatorInfo& conv_;
  const OperatorInfo& norm_;
  const OperatorInfo& relu_;
};

// One measurement of the loop with the model's table: the allocations of
// the loop after the session's first record (which registers the thread).
std::int64_t MeasureOnce(const std::shared_ptr<ScopeTable>& table,
                         ForwardLoop& loop) {
  auto session = std::make_shared<CountingSession>();
  EXPECT_TRUE(session->AdoptModuleScopes(table));
  SessionSlot slot;
  session->RecordCall(*OperatorInfoForName("aten::relu", ""), slot);
  return OperatorNewCallsOf([&] {
    for (int forward = 0; forward < 3; ++forward) loop.Run(*session, slot);
  });
}

TEST(SteadyStateAllocationTest, SecondMeasurementAllocatesNothingPerCall) {
  // Label strings of the loop are made outside the counted region too: the
  // hooks hold their labels already.
  ForwardLoop loop;
  const auto table = std::make_shared<ScopeTable>();
  // The first measurement fills the table and the thread's entries. The
  // loop itself builds its label strings (std::to_string), so the count is
  // compared with that of a measurement that finds everything in place.
  const std::int64_t first = MeasureOnce(table, loop);
  const std::int64_t second = MeasureOnce(table, loop);
  const std::int64_t third = MeasureOnce(table, loop);
  // What the loop's own strings cost: the same loop without a session call.
  const std::int64_t strings = OperatorNewCallsOf([] {
    for (int forward = 0; forward < 3; ++forward) {
      for (int block = 0; block < 4; ++block) {
        const std::string prefix = "Net.blocks." + std::to_string(block);
        const std::string labels[] = {prefix + ".0", prefix + ".1",
                                      prefix + ".2"};
        (void)labels;
      }
    }
  });
  EXPECT_GT(first, strings);  // the first measurement interns and adds
  EXPECT_EQ(strings, second);
  EXPECT_EQ(strings, third);
}

TEST(SteadyStateAllocationTest, ReportsOfARecycledSessionHoldOnlyItsOwnCalls) {
  ForwardLoop loop;
  const auto table = std::make_shared<ScopeTable>();
  {
    auto session = std::make_shared<CountingSession>();
    ASSERT_TRUE(session->AdoptModuleScopes(table));
    SessionSlot slot;
    loop.Run(*session, slot);
    absl::StatusOr<report::FlopReport> flop_report = session->BuildReport();
    ASSERT_TRUE(flop_report.ok()) << flop_report.status();
    // By hand: 4 blocks of a 1000-FLOP convolution and a 10-FLOP norm;
    // relu counts nothing (no module entry).
    std::map<std::string, report::Count> by_module = {
        {"Net", report::Count(4040)}, {"Net.blocks", report::Count(4040)}};
    for (int block = 0; block < 4; ++block) {
      const std::string prefix = "Net.blocks." + std::to_string(block);
      by_module[prefix] = report::Count(1010);
      by_module[prefix + ".0"] = report::Count(1000);
      by_module[prefix + ".1"] = report::Count(10);
    }
    EXPECT_EQ(by_module, flop_report->by_module);
    EXPECT_FALSE(flop_report->ignored_operators.empty() &&
                 flop_report->diagnostics.empty());
  }
  // The next session on this thread recycles the entries of the first; it
  // runs one convolution outside any module.
  auto session = std::make_shared<CountingSession>();
  ASSERT_TRUE(session->AdoptModuleScopes(table));
  SessionSlot slot;
  const OperatorInfo& conv = *OperatorInfoForName("aten::convolution", "");
  session->RecordCounted(conv, 7, report::Precision::kFp32, slot);
  absl::StatusOr<report::FlopReport> flop_report = session->BuildReport();
  ASSERT_TRUE(flop_report.ok()) << flop_report.status();
  const std::map<std::string, report::Count> by_operator = {
      {conv.report_name, report::Count(7)}};
  EXPECT_EQ(by_operator, flop_report->by_operator);
  EXPECT_EQ(report::MetricResult::Complete(report::Count(7),
                                           report::OperatorFlopsKind()),
            flop_report->total);
  EXPECT_TRUE(flop_report->by_module.empty());
  EXPECT_TRUE(flop_report->ignored_operators.empty());
  EXPECT_TRUE(flop_report->diagnostics.empty());
}

TEST(SteadyStateAllocationTest, AdoptionNeedsASessionWithoutModuleLabels) {
  const auto table = std::make_shared<ScopeTable>();
  CountingSession fresh;
  EXPECT_TRUE(fresh.AdoptModuleScopes(table));
  EXPECT_TRUE(fresh.AdoptModuleScopes(table));  // already its table
  CountingSession labelled;
  labelled.ChangeModuleLabel(labelled.ModuleLabelId("Net"), true);
  EXPECT_FALSE(labelled.AdoptModuleScopes(table));
  EXPECT_EQ(1u, table->scope_count());  // nothing of `labelled` went there
  EXPECT_FALSE(fresh.AdoptModuleScopes(nullptr));
}

}  // namespace
}  // namespace torchscan::dispatch
