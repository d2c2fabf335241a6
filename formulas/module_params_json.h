// Each module family's hyper-parameters read from the JSON object of a module
// description (module_json.h), under torch's own attribute names. The module
// family table (module_families.h) names the reader of each family.
//
// Descriptions come from our own front ends, so errors name only the kind of
// a wrong value ("got string") and say "must not be negative" without
// repeating the number. Each reader reads only its own members; the caller
// rejects the members nothing read (nested objects reject their own).

#ifndef TORCHSCAN_FORMULAS_MODULE_PARAMS_JSON_H_
#define TORCHSCAN_FORMULAS_MODULE_PARAMS_JSON_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "formulas/module_description.h"
#include "report/json_reader.h"

namespace torchscan::formulas::params_json {

// An array of integers; `non_negative` rejects negative items.
absl::StatusOr<std::vector<std::int64_t>> IntArray(
    const report::JsonValue& node, bool non_negative);

absl::StatusOr<LinearParams> ReadLinear(const report::JsonObject& object);
absl::StatusOr<ActivationParams> ReadActivation(
    const report::JsonObject& object);
absl::StatusOr<ConvParams> ReadConv(const report::JsonObject& object);
absl::StatusOr<BatchNormParams> ReadBatchNorm(const report::JsonObject& object);
absl::StatusOr<PoolParams> ReadPool(const report::JsonObject& object);
absl::StatusOr<DropoutParams> ReadDropout(const report::JsonObject& object);
absl::StatusOr<LayerNormParams> ReadLayerNorm(const report::JsonObject& object);
// Nested out_proj / layers / norms are objects of their own, each with its
// unread members rejected.
absl::StatusOr<MultiheadAttentionParams> ReadMultiheadAttention(
    const report::JsonObject& object);
absl::StatusOr<TransformerParams> ReadTransformer(
    const report::JsonObject& object);

}  // namespace torchscan::formulas::params_json

#endif  // TORCHSCAN_FORMULAS_MODULE_PARAMS_JSON_H_
