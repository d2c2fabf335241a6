#include "torchscan_dispatch/compiled_graph_spec.h"

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace torchscan::dispatch {
namespace {

constexpr std::pair<CallForm, absl::string_view> kCallFormNames[] = {
    {CallForm::kDecomposedProduct, "decomposed_product"},
};

// The kind members a value has set; "dtype" and "dtypes" ride beside one.
int KindsSet(const SpecValue& value) {
  return value.tensor.has_value() + value.int_value.has_value() +
         value.ints.has_value() + value.bool_value.has_value() +
         value.bools.has_value() + value.float_value.has_value() +
         value.tensors.has_value() + value.str.has_value() +
         value.none.has_value() + value.unknown_tensor.has_value() +
         value.other.has_value();
}

}  // namespace

absl::Span<const std::pair<CallForm, absl::string_view>> EnumNames(CallForm) {
  return kCallFormNames;
}

absl::Status SpecValue::Validate(absl::string_view path) const {
  if (KindsSet(*this) != 1) {
    return report::FieldError(path, "a value is an object with one kind");
  }
  // A dtype beside anything but its tensor is a key this kind does not have.
  if (dtype && !tensor) {
    return report::FieldError(report::MemberPath(path, "dtype"),
                              "unknown field");
  }
  if (dtypes && !tensors) {
    return report::FieldError(report::MemberPath(path, "dtypes"),
                              "unknown field");
  }
  if (dtypes && dtypes->size() != tensors->size()) {
    return report::FieldError(
        report::MemberPath(path, "dtypes"),
        absl::StrCat("has ", dtypes->size(), " dtypes for ", tensors->size(),
                     " tensors"));
  }
  return absl::OkStatus();
}

absl::StatusOr<CompiledGraphSpec> ReadCompiledGraphSpec(
    absl::string_view text) {
  absl::StatusOr<report::Json> document = report::ParseJson(text);
  if (!document.ok()) {
    return report::FieldError("spec", document.status().message());
  }
  const report::JsonValue root(*document, "spec");
  // NOTE [Specs of another version]
  // Inductor's FX graph cache keeps a graph's code, spec included, across
  // processes, so a graph compiled under another release of this library
  // may run here. Its spec is not ours to read (its other members may have
  // other meanings): only its version is read, and the tally records its
  // work as unseen, named, while the workload runs on.
  if (document->is_object() && document->contains("version")) {
    TS_ASSIGN_OR_RETURN(report::JsonObject object, root.Object());
    TS_ASSIGN_OR_RETURN(std::int64_t version, object.Index("version"));
    if (version != kCompiledGraphSpecVersion) {
      CompiledGraphSpec other;
      other.version = static_cast<std::uint64_t>(version);
      return other;
    }
  }
  return report::FromJson<CompiledGraphSpec>(root);
}

}  // namespace torchscan::dispatch

namespace torchscan::report {

// NOTE [Reading a spec]
// The spec comes from our own graph pass (_tally_pass.py, _graph_spec.py), so
// an error here is our bug, and it names the path of the bad field. Integers
// are read as int64 or rejected: an integer outside that range (which the pass
// describes as "other") must never wrap to a negative size.
Json JsonCodec<dispatch::Dimension>::Write(
    const dispatch::Dimension& dimension) {
  if (const auto* symbol = std::get_if<std::size_t>(&dimension)) {
    return ToJson(dispatch::SpecSymbol{*symbol});
  }
  return std::get<std::int64_t>(dimension);
}

absl::StatusOr<dispatch::Dimension> JsonCodec<dispatch::Dimension>::Read(
    const JsonValue& node) {
  if (node.node().is_object()) {
    TS_ASSIGN_OR_RETURN(dispatch::SpecSymbol symbol,
                        FromJson<dispatch::SpecSymbol>(node));
    return dispatch::Dimension(static_cast<std::size_t>(symbol.symbol));
  }
  if (!node.node().is_number_integer()) {
    return node.Expected("an integer or {\"symbol\": i}");
  }
  TS_ASSIGN_OR_RETURN(std::int64_t size, node.Int64());
  return dispatch::Dimension(size);
}

Json JsonCodec<dispatch::ModuleEntry>::Write(
    const dispatch::ModuleEntry& entry) {
  return Json::array({entry.root, entry.path, entry.type});
}

absl::StatusOr<dispatch::ModuleEntry> JsonCodec<dispatch::ModuleEntry>::Read(
    const JsonValue& node) {
  TS_ASSIGN_OR_RETURN(JsonArray entry, node.Array());
  if (entry.size() != 3) {
    return node.Error("a module entry is [root, path, type]");
  }
  TS_ASSIGN_OR_RETURN(std::string root, entry.Item(0).String());
  TS_ASSIGN_OR_RETURN(std::string path, entry.Item(1).String());
  TS_ASSIGN_OR_RETURN(std::string type, entry.Item(2).String());
  return dispatch::ModuleEntry{std::move(root), std::move(path),
                               std::move(type)};
}

}  // namespace torchscan::report
