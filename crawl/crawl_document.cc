#include "crawl/crawl_document.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "base/status_macros.h"
#include "report/count.h"

namespace torchscan::crawl {
namespace {

using report::Json;
using report::JsonValue;

constexpr std::int64_t kMaxLayers = std::int64_t{1} << 31;

}  // namespace

Json CrawlModeCodec::Write(CrawlMode mode) {
  return mode == CrawlMode::kFull ? "full" : "structure";
}

absl::StatusOr<CrawlMode> CrawlModeCodec::Read(const JsonValue& node) {
  if (node.node() == "full") return CrawlMode::kFull;
  if (node.node() == "structure") return CrawlMode::kStructure;
  return node.Error("must be 'full' or 'structure'");
}

Json LayerCallFlopsByLayerCodec::Write(const Map& calls) {
  Json object = Json::object();
  for (const auto& [index, call] : calls) {
    object[std::to_string(index)] = report::LayerCallFlopsToJson(call);
  }
  return object;
}

absl::StatusOr<LayerCallFlopsByLayerCodec::Map>
LayerCallFlopsByLayerCodec::Read(const JsonValue& node) {
  TS_ASSIGN_OR_RETURN(report::JsonObject object, node.Object());
  Map calls;
  for (const auto& [label, value] : object.Members()) {
    const std::optional<report::Count> index = report::ParseCount(label);
    if (!index || *index < 0 || *index >= kMaxLayers) {
      return value.Error("is not a layer index");
    }
    TS_ASSIGN_OR_RETURN(
        calls[static_cast<std::int64_t>(*index)],
        report::LayerCallFlopsFromJson(value.node(), value.path()));
  }
  return calls;
}

absl::Status CrawlDocument::Validate(absl::string_view path) const {
  if (layer_count < 0 || layer_count > kMaxLayers) {
    return report::FieldError(report::MemberPath(path, "layer_count"),
                              "is not a layer count");
  }
  const std::string leaf_path = report::MemberPath(path, "leaf_calls");
  for (std::size_t i = 0; i < leaf_calls.size(); ++i) {
    if (leaf_calls[i].layer >= layer_count) {
      return report::FieldError(
          report::MemberPath(report::IndexPath(leaf_path, i), "layer"),
          "is not a layer index");
    }
  }
  for (const auto& [index, call] : layer_call_flops) {
    if (index >= layer_count) {
      return report::FieldError(
          report::MemberPath(report::MemberPath(path, "layer_call_flops"),
                             std::to_string(index)),
          "is not a layer index");
    }
  }
  return absl::OkStatus();
}

namespace {

// Everything but the operator FLOPs.
CrawlRecord RecordWithoutFlops(CrawlDocument& document) {
  CrawlRecord record;
  record.parts.layers.resize(static_cast<std::size_t>(document.layer_count));
  if (document.torch_version) {
    record.parts.context.torch_version = *std::move(document.torch_version);
  }
  record.parts.model = std::move(document.model);
  record.parts.module_diagnostics = std::move(document.diagnostics);
  record.leaf_calls.reserve(document.leaf_calls.size());
  for (LeafCallDocument& leaf : document.leaf_calls) {
    record.leaf_calls.push_back(CapturedLeafCall{
        static_cast<std::size_t>(leaf.layer), std::move(leaf.call)});
  }
  return record;
}

}  // namespace

absl::StatusOr<CrawlRecord> CrawlRecordOf(CrawlDocument document) {
  if (document.mode == CrawlMode::kFull && !document.operator_flops) {
    return report::FieldError("crawl.operator_flops", "is missing");
  }
  CrawlRecord record = RecordWithoutFlops(document);
  record.operator_flops = std::move(document.operator_flops);
  for (auto& [index, call] : document.layer_call_flops) {
    record.layer_call_flops[static_cast<std::size_t>(index)] = std::move(call);
  }
  return record;
}

absl::Status CheckMeasuredDocument(const CrawlDocument& document) {
  if (document.mode != CrawlMode::kFull) {
    return report::FieldError("crawl.mode", "a measured crawl must be 'full'");
  }
  // NOTE [Measured FLOPs are not sent]
  // The measurement is the one source of a measured crawl's operator FLOPs:
  // a document carrying its own as well would be two answers to one
  // question, so it is refused rather than one of them silently dropped.
  constexpr absl::string_view kMeasured =
      "comes from the measurement, not from the crawl record";
  if (document.operator_flops) {
    return report::FieldError("crawl.operator_flops", kMeasured);
  }
  if (!document.layer_call_flops.empty()) {
    return report::FieldError("crawl.layer_call_flops", kMeasured);
  }
  return absl::OkStatus();
}

absl::StatusOr<CrawlRecord> MeasuredCrawlRecordOf(
    CrawlDocument document, report::FlopReport operator_flops,
    std::map<std::size_t, report::LayerOperatorFlops> layer_call_flops) {
  TS_RETURN_IF_ERROR(CheckMeasuredDocument(document));
  const std::size_t layer_count =
      static_cast<std::size_t>(document.layer_count);
  CrawlRecord record = RecordWithoutFlops(document);
  for (auto& [index, flops] : layer_call_flops) {
    if (index >= layer_count) {
      return absl::InvalidArgumentError(absl::StrCat(
          "crawl.layer_call_flops.", index, ": is not a layer index"));
    }
    record.layer_call_flops[index] = std::move(flops);
  }
  record.operator_flops = std::move(operator_flops);
  return record;
}

absl::StatusOr<CrawlRecord> CrawlRecordFromJson(const Json& node) {
  TS_ASSIGN_OR_RETURN(CrawlDocument document, report::FromJson<CrawlDocument>(
                                                  JsonValue(node, "crawl")));
  return CrawlRecordOf(std::move(document));
}

}  // namespace torchscan::crawl
