// FlopReport: operator FLOPs of one workload (TorchScan 0.2's FlopReport of
// measure_flops).

#ifndef TORCHSCAN_REPORT_FLOP_REPORT_H_
#define TORCHSCAN_REPORT_FLOP_REPORT_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "report/count.h"
#include "report/diagnostic.h"
#include "report/field_table.h"
#include "report/json_io.h"
#include "report/json_reader.h"
#include "report/metric_result.h"
#include "report/precision.h"

namespace torchscan::report {

inline constexpr int kSchemaVersion = 1;
// The counting convention our operator formulas follow, operator for operator.
inline constexpr absl::string_view kOperatorFlopsMethod =
    "torch.utils.flop_counter.FlopCounterMode";

MetricKind OperatorFlopsKind();

// The opt-in elementwise convention's method (docs/methodology.md,
// "Elementwise work"): the operator method, plus the elementwise work it
// leaves uncounted, counted per element by fixed rules. Reports of a
// measurement that asked for it carry this method instead of
// kOperatorFlopsMethod; a total is complete under it when every call was
// counted (by a formula or a rule) or ignored.
inline constexpr absl::string_view kElementwiseFlopsMethod =
    "torch.utils.flop_counter.FlopCounterMode, plus elementwise work: 1 FLOP "
    "per result element of a pointwise operator, 1 per input element of a "
    "reduction, a fixed number per element for softmax and normalisations";

// The mask-aware count's method: the operator method, with attention calls
// charged only for the (query, key) pairs their mask allows
// (docs/methodology.md).
inline constexpr absl::string_view kMaskAwareFlopsMethod =
    "torch.utils.flop_counter.FlopCounterMode, attention over allowed "
    "(query, key) pairs";
// The diagnostic of a call whose mask-aware count is not known.
inline constexpr absl::string_view kMaskNotRead = "attention_mask_not_read";

MetricKind MaskAwareFlopsKind();

// The mask-aware count's method under the elementwise convention.
inline constexpr absl::string_view kElementwiseMaskAwareFlopsMethod =
    "torch.utils.flop_counter.FlopCounterMode, plus elementwise work, "
    "attention over allowed (query, key) pairs";

// Bytes moved: what operator calls must read and write (NOTE [The bytes
// rule] in torchscan_dispatch/byte_rule.h, docs/methodology.md).
inline constexpr absl::string_view kBytesMethod =
    "each distinct input tensor read once, each output written once; views "
    "and metadata move nothing";
// The diagnostic of calls whose bytes are not known.
inline constexpr absl::string_view kBytesNotKnown = "bytes_not_known";
// The diagnostic of one compiled graph, whose fused kernels' traffic lies
// between its bounds (NOTE [Bytes of compiled graphs] in
// torchscan_dispatch/compiled_graph_tally.cc).
inline constexpr absl::string_view kCompiledRegionBytes =
    "compiled_region_bytes";
// The pseudo-operator that holds compiled graphs' lower bounds in
// bytes.by_operator: their own inputs read, outputs written.
inline constexpr absl::string_view kCompiledGraphOperator =
    "inductor.compiled_graph";
// The upper bound's method.
inline constexpr absl::string_view kUnfusedBytesMethod =
    "the bytes moved of the eager calls, plus each compiled graph's unfused "
    "sum: every operator call of its post-grad graph by the same rule, its "
    "tensors contiguous";

MetricKind BytesMovedKind();
MetricKind UnfusedBytesKind();

// One operator's bytes: read and written over its calls.
struct OperatorBytes {
  Count read = 0;
  Count written = 0;

  bool operator==(const OperatorBytes&) const = default;
  static constexpr auto kFields = std::make_tuple(
      FieldAs<NonNegativeCountCodec>("read", &OperatorBytes::read),
      FieldAs<NonNegativeCountCodec>("written", &OperatorBytes::written));
};

// Bytes moved beside the FLOPs, over the same calls: `total` is read +
// written, complete when every call's bytes were known; a call whose bytes
// are not (a sparse or nested tensor, unseen work) adds nothing to the known
// value and is named in `diagnostics`. A compiled graph adds its lower bound
// (its own inputs and outputs, under kCompiledGraphOperator), so the total
// is partial whenever one ran, with one kCompiledRegionBytes diagnostic per
// graph; `upper_bound`, set only then, is the eager calls' bytes plus each
// graph's unfused sum, complete when every one of those calls' bytes was
// known. `by_module` holds each module label's inclusive read + written
// bytes.
// Its JSON is the total's metric keys, then the members below.
struct BytesMoved {
  MetricResult total = MetricResult::Complete(Count(0), BytesMovedKind());
  Count read = 0;
  Count written = 0;
  std::map<std::string, OperatorBytes> by_operator;
  std::map<std::string, Count> by_module;
  std::vector<Diagnostic> diagnostics;
  std::optional<MetricResult> upper_bound;

  bool operator==(const BytesMoved&) const = default;
  // A count of bytes, read + written is its known value, and the upper
  // bound, when present, a count of bytes too.
  absl::Status Validate(absl::string_view path) const;
  static constexpr auto kFields = std::make_tuple(
      FieldsOf(&BytesMoved::total),
      FieldAs<NonNegativeCountCodec>("read", &BytesMoved::read),
      FieldAs<NonNegativeCountCodec>("written", &BytesMoved::written),
      Field("by_operator", &BytesMoved::by_operator),
      FieldAs<MapOf<NonNegativeCountCodec>>("by_module",
                                            &BytesMoved::by_module),
      Field("diagnostics", &BytesMoved::diagnostics),
      Field("upper_bound", &BytesMoved::upper_bound, kOptional));
};

// One compiled graph's bytes over its runs in a measurement: its bounds,
// each summed over the runs.
struct CompiledRegionBytes {
  // "compiled graph 0/0 (forward)": Dynamo's compile id and AOTAutograd's
  // graph.
  std::string name;
  Count runs = 0;
  // The lower bound: its own inputs read and outputs written, once a run.
  Count inputs_read = 0;
  Count outputs_written = 0;
  // Inputs and outputs whose bytes are not known (left out of the lower
  // bound, which stays one).
  Count unknown_values = 0;
  // The upper bound: the unfused sum of its calls' known bytes, and calls
  // whose bytes are not known, with the first one's reason.
  Count unfused = 0;
  Count unfused_unknown_calls = 0;
  std::string unfused_unknown_message;

  bool operator==(const CompiledRegionBytes&) const = default;
};

// Adds `from` (runs of the graph `into` names) to `into`.
absl::Status AddCompiledRegion(CompiledRegionBytes& into,
                               const CompiledRegionBytes& from);

struct IgnoredOperator {
  Count calls = 0;
  std::string reason;

  bool operator==(const IgnoredOperator&) const = default;
  static constexpr auto kFields = std::make_tuple(
      FieldAs<NonNegativeCountCodec>("calls", &IgnoredOperator::calls),
      Field("reason", &IgnoredOperator::reason));
};

// The second count beside the executed one: `total` with each attention
// call charged only for the (query, key) pairs its mask allows, every other
// operator as executed. Complete when the total is and every mask was read;
// a call whose mask could not be read contributes nothing to the known value
// (a lower bound) and is named in `diagnostics`. `by_module` as the report's.
// Its JSON is the total's metric keys, then by_module and diagnostics.
struct MaskAwareFlops {
  MetricResult total = MetricResult::Complete(Count(0), MaskAwareFlopsKind());
  std::map<std::string, Count> by_module;
  std::vector<Diagnostic> diagnostics;

  bool operator==(const MaskAwareFlops&) const = default;
  // A count of FLOPs.
  absl::Status Validate(absl::string_view path) const;
  static constexpr auto kFields =
      std::make_tuple(FieldsOf(&MaskAwareFlops::total),
                      FieldAs<MapOf<NonNegativeCountCodec>>(
                          "by_module", &MaskAwareFlops::by_module),
                      Field("diagnostics", &MaskAwareFlops::diagnostics));
};

// FLOPs by precision name: an object whose keys are PrecisionName values
// ("bf16", ..., "unknown"; another is "<path>.<key>: unknown precision
// 'fp4' (fp64, ...)") and whose values are non-negative counts.
struct PrecisionCountsCodec {
  static Json Write(const std::map<std::string, Count>& counts);
  static absl::StatusOr<std::map<std::string, Count>> Read(
      const JsonValue& node);
};

// Its JSON: {"schema_version", "context": {"torch_version", "method"},
// "total", "by_module", "by_operator", "by_precision"?,
// "by_operator_precision"?, "ignored_operators", "diagnostics",
// "mask_aware"?, "bytes"?} (docs/report-schema.md). Reading accepts and
// drops keys the table does not list: a rank's report adds "distributed"
// and "communication" (RankReport reads them), a FlopCounter's "formulas"
// and "recomputed".
struct FlopReport {
  int schema_version = kSchemaVersion;
  std::string torch_version;
  std::string method = std::string(kOperatorFlopsMethod);
  MetricResult total = MetricResult::Complete(Count(0), OperatorFlopsKind());
  // Inclusive FLOPs per module label ("Sequential", "Sequential.0", ...).
  std::map<std::string, Count> by_module;
  std::map<std::string, Count> by_operator;
  // Counted FLOPs per compute precision (PrecisionName: "bf16", "fp8", ...,
  // "unknown"), nonzero entries only; they sum to the total's known value.
  // Empty in a report read from JSON that has none (written before it
  // existed), and then not written either.
  std::map<std::string, Count> by_precision;
  // by_precision per operator: each counted operator with nonzero FLOPs,
  // its FLOPs by precision (nonzero entries; they sum to its by_operator
  // value, and over the operators to by_precision). What a roofline needs
  // to measure each operator's FLOPs against the peak of the precision they
  // ran in. Empty in a report read from JSON that has none (written before
  // it existed), and then not written either.
  std::map<std::string, std::map<std::string, Count>> by_operator_precision;
  std::map<std::string, IgnoredOperator> ignored_operators;
  std::vector<Diagnostic> diagnostics;
  // Set by BuildFlopReport; absent from reports of writers that predate it.
  std::optional<MaskAwareFlops> mask_aware;
  // Set by BuildFlopReport; absent from reports of writers that predate it.
  std::optional<BytesMoved> bytes;

  bool operator==(const FlopReport&) const = default;
  // The total is a count of FLOPs; by_precision, when written, sums to its
  // known value; by_operator_precision, when written, splits every operator
  // of by_operator with nonzero FLOPs, each split summing to its FLOPs and
  // the splits to by_precision.
  absl::Status Validate(const JsonObject& object) const;
  static constexpr bool kAcceptsUnknownKeys = true;
  static constexpr auto kFields = std::make_tuple(
      FieldAs<SchemaVersionCodec<kSchemaVersion>>("schema_version",
                                                  &FlopReport::schema_version),
      FieldGroup("context", Field("torch_version", &FlopReport::torch_version),
                 Field("method", &FlopReport::method)),
      Field("total", &FlopReport::total),
      FieldAs<MapOf<NonNegativeCountCodec>>("by_module",
                                            &FlopReport::by_module),
      FieldAs<MapOf<NonNegativeCountCodec>>("by_operator",
                                            &FlopReport::by_operator),
      FieldAs<PrecisionCountsCodec>("by_precision", &FlopReport::by_precision,
                                    kOptional),
      FieldAs<MapOf<PrecisionCountsCodec>>("by_operator_precision",
                                           &FlopReport::by_operator_precision,
                                           kOptional),
      Field("ignored_operators", &FlopReport::ignored_operators),
      Field("diagnostics", &FlopReport::diagnostics),
      Field("mask_aware", &FlopReport::mask_aware, kOptional),
      Field("bytes", &FlopReport::bytes, kOptional));
};

// What a counter saw of one operator packet ("aten.mm") during a workload.
struct OperatorObservation {
  std::string name;
  Count calls = 0;
  // Calls whose FLOPs a formula produced, and their sum.
  Count counted_calls = 0;
  Count flops = 0;
  // `flops` by the precision each call ran in; what these slots do not
  // account for is reported as Precision::kUnknown.
  PrecisionCounts flops_by_precision{};
  // Set when the operator has no formula but is explicitly zero-FLOP.
  std::optional<std::string> ignored_reason;
  // Calls whose formula failed, with the first failure's message.
  Count failed_calls = 0;
  std::string failure_message;
  // Set for a pseudo-operator standing for work that ran where no operator
  // call shows it (a CUDA-graph replay, a compiled graph without a tally):
  // why its FLOPs are missing.
  std::optional<std::string> unseen_reason;
  // Mask-aware attention: the executed FLOPs the masks of its calls did not
  // allow, plus the whole executed count of calls whose mask could not be
  // read (`mask_unread_calls`, the first one's reason).
  Count mask_excluded_flops = 0;
  Count mask_unread_calls = 0;
  std::string mask_unread_message;
  // Bytes its calls moved (the known ones), and calls whose bytes are not
  // known, with the first one's reason.
  Count bytes_read = 0;
  Count bytes_written = 0;
  Count bytes_unknown_calls = 0;
  std::string bytes_unknown_message;
};

// Assembles the report: formulas feed by_operator; ignored operators are
// listed with their reason; unseen work is an unseen_work diagnostic;
// anything else is an uncounted_operator diagnostic. Each diagnostic makes
// the total partial (a lower bound), never a silent zero. by_precision sums
// the observations' flops_by_precision, by_operator_precision each one's.
// `mask_aware` is the total less every
// observation's mask_excluded_flops, and its by_module `by_module` less
// `mask_excluded_by_module`. `bytes` sums the observations' bytes, by module
// `bytes_by_module`; `compiled_regions` are the compiled graphs that ran,
// whose lower bounds the observations hold (kCompiledGraphOperator's
// bytes): each is a kCompiledRegionBytes diagnostic, and together they give
// bytes.upper_bound.
absl::StatusOr<FlopReport> BuildFlopReport(
    std::string torch_version, std::vector<OperatorObservation> observations,
    std::map<std::string, Count> by_module,
    const std::map<std::string, Count>& mask_excluded_by_module = {},
    std::map<std::string, Count> bytes_by_module = {},
    const std::vector<CompiledRegionBytes>& compiled_regions = {});

// Makes the report's bytes partial with a diagnostic `message` (work the
// report's calls do not show: unseen threads), and its upper bound too.
void MarkBytesPartial(FlopReport& report, std::string message);

// Gives the report the elementwise convention's methods: `method` and its
// total's kind kElementwiseFlopsMethod, its mask-aware total's
// kElementwiseMaskAwareFlopsMethod. Values and statuses are unchanged.
void UseElementwiseMethod(FlopReport& report);

// Makes the report's mask-aware total partial at its known value (a caller
// that made `total` partial after BuildFlopReport: unseen threads).
void MarkMaskAwarePartial(FlopReport& report);

// ToJson(report) and FromJson<FlopReport> at path `field`: the names its
// callers (and the Bazel consumer) know.
Json FlopReportToJson(const FlopReport& report);
absl::StatusOr<FlopReport> FlopReportFromJson(
    const Json& node, absl::string_view field = "flop_report");

}  // namespace torchscan::report

#endif  // TORCHSCAN_REPORT_FLOP_REPORT_H_
