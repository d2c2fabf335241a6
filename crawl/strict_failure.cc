#include "crawl/strict_failure.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/optional.h"
#include "report/strict.h"

namespace torchscan::crawl {
namespace {

constexpr char kReportPayload[] = "type.torchscan/IncompleteAnalysisReport";

// NOTE: carrying a typed report in an absl::Status. A status carries data
// only as byte payloads (absl::Cord). Writing the report into one would
// turn it into JSON and parse it back inside one process; instead the
// payload is a token naming the report in this registry. The token's bytes
// are memory of the Cord's own (absl::MakeCordFromExternal), so they live
// exactly as long as some copy of the status does, and the releaser that
// frees them also drops the registry entry. A token whose entry is gone (a
// payload copied byte for byte into a new Cord, or forged) reads as no
// report, never as a dangling one.
class CarriedReports {
 public:
  static CarriedReports& Get() {
    static CarriedReports* reports = new CarriedReports();
    return *reports;
  }

  std::uint64_t Add(report::AnalysisReport report) {
    absl::MutexLock lock(&mu_);
    const std::uint64_t token = next_token_++;
    reports_.emplace(token, std::make_shared<const report::AnalysisReport>(
                                std::move(report)));
    return token;
  }

  void Remove(std::uint64_t token) {
    absl::MutexLock lock(&mu_);
    reports_.erase(token);
  }

  std::shared_ptr<const report::AnalysisReport> Find(std::uint64_t token) {
    absl::MutexLock lock(&mu_);
    auto it = reports_.find(token);
    return it == reports_.end() ? nullptr : it->second;
  }

 private:
  absl::Mutex mu_;
  std::uint64_t next_token_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<std::uint64_t, std::shared_ptr<const report::AnalysisReport>>
      reports_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

absl::Status StrictFailure(report::AnalysisReport report) {
  absl::Status status =
      absl::FailedPreconditionError(report::IncompleteAnalysisMessage(report));
  const std::uint64_t token = CarriedReports::Get().Add(std::move(report));
  auto* bytes = new std::string(absl::StrCat(token));
  status.SetPayload(kReportPayload,
                    absl::MakeCordFromExternal(*bytes, [bytes, token] {
                      CarriedReports::Get().Remove(token);
                      delete bytes;
                    }));
  return status;
}

std::optional<report::AnalysisReport> StrictFailureReport(
    const absl::Status& status) {
  absl::optional<absl::Cord> payload = status.GetPayload(kReportPayload);
  std::uint64_t token = 0;
  if (!payload || !absl::SimpleAtoi(std::string(*payload), &token)) {
    return std::nullopt;
  }
  std::shared_ptr<const report::AnalysisReport> report =
      CarriedReports::Get().Find(token);
  if (report == nullptr) return std::nullopt;
  return *report;
}

}  // namespace torchscan::crawl
