// Round-trip tests generated from field tables (field_table.h).
//
// Every record type with a field table gets the same tests, derived from its
// table and a few samples, so a field added to the table is tested without
// a test written for it:
//   - each sample survives object -> JSON -> object unchanged, and writes
//     the same JSON again;
//   - the samples' JSON, together, holds every key of the table (so the
//     samples exercise every field);
//   - each key of each sample's JSON, renamed to one the table does not
//     list, is refused: "<path>.<renamed key>: unknown field" (kept by a
//     record that keeps unknown keys; read as if absent by one that
//     accepts them);
//   - each required field, removed, is named: "<path>.<key>: is missing"
//     (a field with a condition, When, only where the condition holds);
//   - a tag's key (FieldKeyedBy), removed or joined by another of the tag's
//     keys, is refused: "<path>: needs exactly one of 'a' and 'b'".
//
// To use it, give the samples and instantiate the suite, both in namespace
// torchscan::report (where gtest looks for the suite):
//
//   namespace torchscan::report {
//   template <>
//   struct FieldTableSamples<MyRecord> {
//     static std::vector<MyRecord> Get() { return {...}; }
//   };
//   using MyRecords = ::testing::Types<MyRecord, MyOtherRecord>;
//   INSTANTIATE_TYPED_TEST_SUITE_P(My, FieldTableRoundTrip, MyRecords);
//   }  // namespace torchscan::report
//
// Samples set the optional fields too (the key-coverage test fails when a
// key is never written). Records hold no NaN (NaN != NaN); field_table_test
// checks it separately.

#ifndef TORCHSCAN_REPORT_FIELD_TABLE_TESTING_H_
#define TORCHSCAN_REPORT_FIELD_TABLE_TESTING_H_

#include <algorithm>
#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "report/field_table.h"
#include "report/json_io.h"
#include "report/json_reader.h"

namespace torchscan::report {

// Specialize with `static std::vector<T> Get()`.
template <typename T>
struct FieldTableSamples;

namespace field_table_testing {

// Reading `document` as a T at path "record": "" when it reads, else the
// error's message.
template <typename T>
std::string ReadError(const Json& document) {
  absl::StatusOr<T> read = FromJson<T>(JsonValue(document, "record"));
  return read.ok() ? "" : std::string(read.status().message());
}

// `object` with key `from` renamed to `to`, in place (the order kept).
inline Json Renamed(const Json& object, const std::string& from,
                    const std::string& to) {
  Json renamed = Json::object();
  for (const auto& [key, value] : object.items()) {
    renamed[key == from ? to : key] = value;
  }
  return renamed;
}

// "needs exactly one of 'a', 'b' and 'c'" for `keys`.
inline std::string NeedsExactlyOneOf(
    const std::vector<absl::string_view>& keys) {
  std::string text = "needs exactly one of ";
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (i > 0) text += i + 1 == keys.size() ? " and " : ", ";
    text += "'" + std::string(keys[i]) + "'";
  }
  return text;
}

}  // namespace field_table_testing

template <typename T>
class FieldTableRoundTrip : public ::testing::Test {};

TYPED_TEST_SUITE_P(FieldTableRoundTrip);

TYPED_TEST_P(FieldTableRoundTrip, ObjectToJsonToObjectIsTheObject) {
  for (const TypeParam& sample : FieldTableSamples<TypeParam>::Get()) {
    const Json written = ToJson(sample);
    absl::StatusOr<TypeParam> read =
        FromJson<TypeParam>(JsonValue(written, "record"));
    ASSERT_TRUE(read.ok()) << read.status() << " in " << DumpJson(written);
    EXPECT_TRUE(*read == sample) << DumpJson(written);
    EXPECT_EQ(DumpJson(written), DumpJson(ToJson(*read)));
  }
}

TYPED_TEST_P(FieldTableRoundTrip, TheSamplesWriteEveryKeyOfTheTable) {
  std::set<std::string> written;
  for (const TypeParam& sample : FieldTableSamples<TypeParam>::Get()) {
    const Json json = ToJson(sample);
    for (const auto& [key, value] : json.items()) written.insert(key);
  }
  for (absl::string_view name : FieldNames<TypeParam>()) {
    EXPECT_TRUE(written.contains(std::string(name)))
        << "no sample writes \"" << name << "\"";
  }
}

// A record that keeps unknown keys (kUnknownKeys) keeps the renamed one
// instead, and writes it back; one that accepts them (kAcceptsUnknownKeys)
// drops it; either way, a renamed required field is then missing.
TYPED_TEST_P(FieldTableRoundTrip, ARenamedKeyIsAnUnknownFieldNamedByPath) {
  for (const TypeParam& sample : FieldTableSamples<TypeParam>::Get()) {
    const Json written = ToJson(sample);
    const std::vector<absl::string_view> required = RequiredFieldNames(sample);
    for (const auto& [key, value] : written.items()) {
      const std::string renamed = key + "_renamed";
      const Json document = field_table_testing::Renamed(written, key, renamed);
      if constexpr (KeepsUnknownKeys<TypeParam>) {
        if (std::find(required.begin(), required.end(), key) !=
            required.end()) {
          EXPECT_EQ("record." + key + ": is missing",
                    field_table_testing::ReadError<TypeParam>(document));
          continue;
        }
        absl::StatusOr<TypeParam> read =
            FromJson<TypeParam>(JsonValue(document, "record"));
        ASSERT_TRUE(read.ok()) << read.status();
        EXPECT_EQ(value, ToJson(*read)[renamed]) << renamed;
      } else if constexpr (AcceptsUnknownKeys<TypeParam>) {
        // Dropped: read as the document without the key.
        Json without = written;
        without.erase(key);
        absl::StatusOr<TypeParam> read =
            FromJson<TypeParam>(JsonValue(document, "record"));
        absl::StatusOr<TypeParam> read_without =
            FromJson<TypeParam>(JsonValue(without, "record"));
        EXPECT_EQ(read_without.status(), read.status()) << renamed;
        if (read.ok() && read_without.ok()) {
          EXPECT_EQ(DumpJson(ToJson(*read_without)), DumpJson(ToJson(*read)));
        }
      } else {
        EXPECT_EQ("record." + renamed + ": unknown field",
                  field_table_testing::ReadError<TypeParam>(document));
      }
    }
  }
}

// Required fields whose condition (When) holds for the sample.
TYPED_TEST_P(FieldTableRoundTrip, AMissingRequiredFieldIsNamedByPath) {
  for (const TypeParam& sample : FieldTableSamples<TypeParam>::Get()) {
    for (absl::string_view name : RequiredFieldNames(sample)) {
      Json written = ToJson(sample);
      ASSERT_TRUE(written.contains(std::string(name))) << name;
      written.erase(std::string(name));
      EXPECT_EQ("record." + std::string(name) + ": is missing",
                field_table_testing::ReadError<TypeParam>(written));
    }
  }
}

// Each sample writes one key of each tag (FieldKeyedBy); without it, or with
// another of the tag's keys beside it, the record is refused.
TYPED_TEST_P(FieldTableRoundTrip, ATagNeedsExactlyOneOfItsKeys) {
  for (const std::vector<absl::string_view>& keys : TagKeys<TypeParam>()) {
    const std::string expected =
        "record: " + field_table_testing::NeedsExactlyOneOf(keys);
    for (const TypeParam& sample : FieldTableSamples<TypeParam>::Get()) {
      const Json written = ToJson(sample);
      std::vector<std::string> present;
      for (absl::string_view key : keys) {
        if (written.contains(std::string(key))) present.emplace_back(key);
      }
      ASSERT_EQ(1u, present.size()) << DumpJson(written);
      Json without = written;
      without.erase(present[0]);
      EXPECT_EQ(expected, field_table_testing::ReadError<TypeParam>(without));
      for (absl::string_view key : keys) {
        if (key == present[0]) continue;
        Json both = written;
        both[std::string(key)] = written[present[0]];
        EXPECT_EQ(expected, field_table_testing::ReadError<TypeParam>(both))
            << key;
      }
    }
  }
}

REGISTER_TYPED_TEST_SUITE_P(FieldTableRoundTrip,
                            ObjectToJsonToObjectIsTheObject,
                            TheSamplesWriteEveryKeyOfTheTable,
                            ARenamedKeyIsAnUnknownFieldNamedByPath,
                            AMissingRequiredFieldIsNamedByPath,
                            ATagNeedsExactlyOneOfItsKeys);

}  // namespace torchscan::report

#endif  // TORCHSCAN_REPORT_FIELD_TABLE_TESTING_H_
