// Field tables: each record's JSON form declared once, next to its members.
//
// A record declares its fields in one table: the JSON name, the member, and
// whether the member may be absent. Writing JSON, reading it back with the
// path of every error named, and refusing keys the table does not list are
// all derived from that table, so adding a field is one line:
//
//   struct Symbol {
//     std::uint64_t index = 0;
//     std::optional<std::string> name;
//
//     bool operator==(const Symbol&) const = default;
//     static constexpr auto kFields =
//         std::make_tuple(report::Field("index", &Symbol::index),
//                         report::Field("name", &Symbol::name, kOptional));
//   };
//
//   Json json = report::ToJson(symbol);               // {"index":3,"name":"s"}
//   TS_ASSIGN_OR_RETURN(Symbol read,
//                       report::FromJson<Symbol>(JsonValue(json, "symbol")));
//
// Reading follows json_reader.h, whose words the errors use:
//   "<path>.<key>: unknown field"    a key the table does not list (checked
//                                    first, in document order), or one whose
//                                    row's condition does not hold (When;
//                                    checked after the fields)
//   "<path>.<key>: is missing"       a required field is absent
//   "<path>: needs exactly one of 'a' and 'b'"
//                                    none, or several, of a tag's keys
//                                    (FieldKeyedBy)
//   "<path>.<key>[2]: expected a string, got integer", ...
//   "<path>.<key>: does not match the collectives listed (expected 3)"
//                                    a derived key (Derived, Recomputed)
//                                    that the record read does not imply
// where <path> is the reader's own ("spec.calls[3].arguments[1]").
//
// Presence:
//   kRequired  the key must be present; it is always written. A
//              std::optional member so declared is nullable: null reads as
//              nullopt, and nullopt is written as null.
//   kOptional  the key may be absent: a std::optional member reads as
//              nullopt and is written only when set; any other member reads
//              as its default value (T{} or the member's initializer) and is
//              written only when it differs from T{} (false, 0, "", empty
//              containers). A present key is read as the member's type, so an
//              optional field holding JSON null is an error unless the type
//              reads null (JsonNull).
//
// Member types (JsonCodec<T> below):
//   bool, std::string                  JSON booleans and strings
//   std::int64_t                       an integer that fits in 64 bits
//   std::uint64_t                      a non-negative integer within 64 bits
//   Count                              any integer of Count size (json_io.h)
//   double                             a number, or the string "inf", "-inf"
//                                      or "nan": JSON has no non-finite
//                                      numbers, so they are written so
//   JsonNull                           JSON null ({"none": null})
//   enums                              by name: an ADL-visible
//                                      `EnumNames(E)` returns the (value,
//                                      name) pairs, e.g. a span of a constexpr
//                                      array; an unknown name is "expected
//                                      \"a\", \"b\" or \"c\", got string"
//   std::vector<T>                     an array
//   std::optional<T> (as an item)      T, or null for nullopt
//   std::map<std::string, T>           an object, keys in map order
//   std::map<std::int64_t, T>          an object whose keys are decimal
//                                      integers, in numeric order
//   std::vector<std::pair<std::string, T>>
//                                      an object, keys in document order
//   records with kFields               a nested object
//   anything else                      specialize JsonCodec<T> with
//                                      `static Json Write(const T&)` and
//                                      `static absl::StatusOr<T> Read(const
//                                      JsonValue&)` (a value whose JSON is
//                                      not an object of fixed keys: a tagged
//                                      union, a tuple written as an array)
//
// Further rows and record options, for wire forms a plain table cannot say:
//   FieldAs<Codec>(name, &T::member, presence)
//                        the member written and read by Codec (a struct with
//                        static Write and Read) instead of JsonCodec<M>: a
//                        range check (IndexCodec, NonNegativeCountCodec), an
//                        item codec (ArrayOf<C>, MapOf<C>), or the record's
//                        existing functions (JsonFunctions<ToJson, FromJson>)
//   Field(...).When(&HasShape)
//                        a field that belongs to the record only when
//                        HasShape(record) holds, for tagged records whose
//                        keys depend on a tag read before (a value's
//                        "kind"): when it does not hold the key is neither
//                        written nor accepted ("unknown field"); when it
//                        holds, the presence above applies. Two rows may
//                        share a name when their conditions are disjoint.
//   FieldKeyedBy(&T::kind, &T::subject)
//                        a member whose key is the name of another member,
//                        its tag, for tagged records whose one value sits
//                        under a key naming its kind ({"path": "a.b"} or
//                        {"operator": "aten.sin"}). The tag is an enum whose
//                        EnumNames are the keys: `subject` is written under
//                        the name of `kind`'s value, and read from the one
//                        of those keys present, which sets `kind`. No key,
//                        or more than one, is "<path>: needs exactly one of
//                        'path' and 'operator'" (the tag's keys are not
//                        among RequiredFieldNames: none of them alone is).
//   FieldsOf(&T::member)
//                        a member record (a type with its own table) whose
//                        keys sit in the record's own object, beside the
//                        record's other keys, not nested under a key of their
//                        own: {"status": ..., "unit": ..., "by_module": ...}
//                        for a record holding a MetricResult `total`. Its
//                        rows are written and read where the row stands in
//                        the table, its Validate (below) runs after them with
//                        the record's path, and its keys count as the
//                        record's (unknown-key rejection, RequiredFieldNames,
//                        the round-trip tests). The member's table must not
//                        keep unknown keys.
//                        A record chosen at run time (a module description's
//                        family parameters) is read and written in another's
//                        object by ReadFieldsIn and WriteFieldsIn instead
//                        (NOTE [Rows read in another's object]).
//   FieldGroup("context", Field("torch_version", &T::torch_version),
//              Field("method", &T::method))
//                        members of the record itself written and read
//                        together as one nested object under a key of
//                        their own: {"context": {"torch_version": ...,
//                        "method": ...}}. The key is required; inside it,
//                        each row's presence applies, and a key no row
//                        lists is "<path>.context.<key>: unknown field".
//                        Its rows are plain Field and FieldAs rows
//                        (without When).
//   Derived("total", &T::TotalJson)
//                        a key no member holds: its value is a function of
//                        the record (a report's totals, its status, a
//                        diagnostic per entry), `Json TotalJson(const T&)`,
//                        written from it. The key is required; on reading
//                        the rows are read and Validate has run, then the
//                        value is computed from the record read and must be
//                        the document's: else "<path>.total: does not match
//                        <what> (expected <its JSON>)", <what> being the
//                        record's `static constexpr const char* kDerivedFrom`
//                        ("the collectives listed").
//   Field(...).Recomputed()
//                        a member whose JSON holds derived values beside
//                        what its codec reads (bus bytes beside payload
//                        bytes): read by its codec, then written again and
//                        checked as a Derived row is. Derived and recomputed
//                        rows are checked in table order.
//   static constexpr Json T::*kUnknownKeys = &T::extra;
//                        keys the table does not list are kept, in document
//                        order, in that Json object member instead of being
//                        refused, and written after the table's own keys
//   static constexpr bool kAcceptsUnknownKeys = true;
//                        keys the table does not list are accepted and
//                        dropped: for a document others extend with keys of
//                        their own, which its reader neither knows nor
//                        writes back (a rank's FlopReport carries
//                        "distributed" and "communication"). Nested records
//                        still refuse theirs.
//   static constexpr int kMaxNesting = 200;
//                        a recursive record read more than this many levels
//                        inside itself is refused ("<path>: nesting deeper
//                        than 200 levels"), so that a hostile document built
//                        in memory cannot exhaust the stack
//
// A record may also check what no single field can (one member of several
// set, two lengths that must agree) with a member
//   absl::Status Validate(absl::string_view path) const;
// called after its fields are read, with the record's path, for errors
// through FieldError(MemberPath(path, "key"), ...). A Validate that is not
// const may also complete the record from what was read (a complete
// MetricResult's known_value is its value, whether the document wrote it or
// null): reading is then the table's rows and that one step. A record whose
// checks depend on which keys the document holds (an optional member
// written empty, which a reader must check, against one not written at
// all, which it must not) declares instead
//   absl::Status Validate(const JsonObject& object) const;
// called with the record's object (its path is object.path()).
//
// The table is a static constexpr member named kFields: a std::tuple of
// Field values. Records with a table also get the round-trip tests of
// report/field_table_testing.h for free. The same tables write a record as
// Python objects and read it back from them, with these rules and errors
// (python/operators/report_objects.h and report_from_objects.h, above
// report/, which stays free of Python); a new kind of row or a new record
// option needs its overloads there too, and
// tests/python/test_report_from_objects.py holds the readers equal.

#ifndef TORCHSCAN_REPORT_FIELD_TABLE_H_
#define TORCHSCAN_REPORT_FIELD_TABLE_H_

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "base/status_macros.h"
#include "report/count.h"
#include "report/json_io.h"
#include "report/json_reader.h"

namespace torchscan::report {

enum class Presence { kRequired, kOptional };
inline constexpr Presence kRequired = Presence::kRequired;
inline constexpr Presence kOptional = Presence::kOptional;

// The codec of a row whose member is read by JsonCodec<M> (the default).
struct DefaultCodec {};

// One row of a field table: the JSON key of member `member` of T, written
// and read by Codec (DefaultCodec: JsonCodec<M>).
template <typename T, typename M, typename Codec = DefaultCodec>
struct Field {
  constexpr Field(const char* name, M T::*member, Presence presence = kRequired)
      : name(name), member(member), presence(presence) {}

  // This row with the condition `when` (see the file comment).
  constexpr Field When(bool (*condition)(const T&)) const {
    Field field = *this;
    field.when = condition;
    field.conditional = true;
    return field;
  }
  // This row, written again after reading and checked against the
  // document (see the file comment).
  constexpr Field Recomputed() const {
    Field field = *this;
    field.recomputed = true;
    return field;
  }

  const char* name;
  M T::*member;
  Presence presence;
  // nullptr: the field always belongs to the record.
  bool (*when)(const T&) = nullptr;
  // Whether `when` is set. NOTE [Conditions in constant expressions]: GCC
  // does not evaluate a function pointer's comparison with nullptr in a
  // constant expression under -fsanitize=address, so whether a table has
  // conditional rows is asked of this flag instead.
  bool conditional = false;
  // Whether the row is checked after reading (Recomputed).
  bool recomputed = false;
};

// A row whose member is written and read by Codec.
template <typename Codec, typename T, typename M>
constexpr Field<T, M, Codec> FieldAs(const char* name, M T::*member,
                                     Presence presence = kRequired) {
  return Field<T, M, Codec>(name, member, presence);
}

// A row whose member `member` of T is keyed by the name of its tag `tag`, an
// enum with EnumNames (see the file comment); written and read by
// JsonCodec<M>.
template <typename T, typename E, typename M>
struct KeyedField {
  E T::*tag;
  M T::*member;
};

template <typename T, typename E, typename M>
constexpr KeyedField<T, E, M> FieldKeyedBy(E T::*tag, M T::*member) {
  return KeyedField<T, E, M>{tag, member};
}

// A row whose member record `member` of T writes and reads its own table's
// fields in T's object (see the file comment).
template <typename T, typename M>
struct InlineField {
  M T::*member;
};

template <typename T, typename M>
constexpr InlineField<T, M> FieldsOf(M T::*member) {
  return InlineField<T, M>{member};
}

// A row whose rows `rows`, members of T, are written and read as one
// nested object under the key `name` (see the file comment).
template <typename T, typename... Rows>
struct GroupField {
  const char* name;
  std::tuple<Rows...> rows;
};

template <typename T, typename M, typename C, typename... Rows>
constexpr GroupField<T, Field<T, M, C>, Rows...> FieldGroup(
    const char* name, Field<T, M, C> first, Rows... rows) {
  return GroupField<T, Field<T, M, C>, Rows...>{name,
                                                std::tuple(first, rows...)};
}

// A row whose key `name` holds `derive(record)`, no member (see the file
// comment).
template <typename T>
struct DerivedField {
  const char* name;
  Json (*derive)(const T&);
};

template <typename T>
constexpr DerivedField<T> Derived(const char* name, Json (*derive)(const T&)) {
  return DerivedField<T>{name, derive};
}

// JSON null as a member: a value that is only its key ({"none": null}).
struct JsonNull {
  bool operator==(const JsonNull&) const = default;
};

// Whether T declares a field table.
template <typename T>
concept HasFieldTable = requires {
  T::kFields;
};

namespace field_table_internal {

template <typename T, typename M, typename C>
void AddNames(const Field<T, M, C>& field,
              std::vector<absl::string_view>& names) {
  names.push_back(field.name);
}

template <typename T, typename E, typename M>
void AddNames(const KeyedField<T, E, M>&,
              std::vector<absl::string_view>& names) {
  for (const auto& [tag, key] : EnumNames(E{})) names.push_back(key);
}

template <typename T, typename... Rows>
void AddNames(const GroupField<T, Rows...>& field,
              std::vector<absl::string_view>& names) {
  names.push_back(field.name);
}

template <typename T>
void AddNames(const DerivedField<T>& field,
              std::vector<absl::string_view>& names) {
  names.push_back(field.name);
}

// NOTE [FieldsOf overloads come last]
// A FieldsOf row calls the overload of each of its member's rows, found by
// lookup where it is defined (argument-dependent lookup does not reach this
// namespace): its overloads follow those of every other kind of row, so a
// member record may hold a FieldGroup or a Derived row.
template <typename T, typename M>
void AddNames(const InlineField<T, M>&, std::vector<absl::string_view>& names) {
  std::apply([&](const auto&... field) { (AddNames(field, names), ...); },
             M::kFields);
}

// Adds a row's name when it is required of `record` (nullptr: of every
// record).
template <typename T, typename M, typename C>
void AddRequired(const Field<T, M, C>& field, const T* record,
                 std::vector<absl::string_view>& names) {
  if (field.presence == kRequired &&
      (record == nullptr || field.when == nullptr || field.when(*record))) {
    names.push_back(field.name);
  }
}

template <typename T, typename E, typename M>
void AddRequired(const KeyedField<T, E, M>&, const T*,
                 std::vector<absl::string_view>&) {
  // One of its keys is required, but no key alone.
}

template <typename T, typename... Rows>
void AddRequired(const GroupField<T, Rows...>& field, const T*,
                 std::vector<absl::string_view>& names) {
  names.push_back(field.name);
}

template <typename T>
void AddRequired(const DerivedField<T>& field, const T*,
                 std::vector<absl::string_view>& names) {
  names.push_back(field.name);
}

template <typename T, typename M>
void AddRequired(const InlineField<T, M>& field, const T* record,
                 std::vector<absl::string_view>& names) {
  const M* member = record == nullptr ? nullptr : &(record->*field.member);
  std::apply(
      [&](const auto&... row) { (AddRequired(row, member, names), ...); },
      M::kFields);
}

template <typename T>
std::vector<absl::string_view> RequiredNames(const T* record) {
  std::vector<absl::string_view> names;
  std::apply(
      [&](const auto&... field) { (AddRequired(field, record, names), ...); },
      T::kFields);
  return names;
}

template <typename T, typename M, typename C>
void AddTagKeys(const Field<T, M, C>&,
                std::vector<std::vector<absl::string_view>>&) {}

template <typename T, typename E, typename M>
void AddTagKeys(const KeyedField<T, E, M>& field,
                std::vector<std::vector<absl::string_view>>& keys) {
  AddNames(field, keys.emplace_back());
}

template <typename T, typename... Rows>
void AddTagKeys(const GroupField<T, Rows...>&,
                std::vector<std::vector<absl::string_view>>&) {}

template <typename T>
void AddTagKeys(const DerivedField<T>&,
                std::vector<std::vector<absl::string_view>>&) {}

template <typename T, typename M>
void AddTagKeys(const InlineField<T, M>&,
                std::vector<std::vector<absl::string_view>>& keys) {
  std::apply([&](const auto&... row) { (AddTagKeys(row, keys), ...); },
             M::kFields);
}

}  // namespace field_table_internal

// The JSON names of T's table, in table order (a FieldKeyedBy row's keys in
// the order of its tag's EnumNames).
template <HasFieldTable T>
std::vector<absl::string_view> FieldNames() {
  std::vector<absl::string_view> names;
  std::apply(
      [&](const auto&... field) {
        (field_table_internal::AddNames(field, names), ...);
      },
      T::kFields);
  return names;
}

// The names of T's required fields, in table order.
template <HasFieldTable T>
std::vector<absl::string_view> RequiredFieldNames() {
  return field_table_internal::RequiredNames<T>(nullptr);
}

// The names of the fields `record` requires: the required ones whose
// condition (When) holds for it, in table order.
template <HasFieldTable T>
std::vector<absl::string_view> RequiredFieldNames(const T& record) {
  return field_table_internal::RequiredNames<T>(&record);
}

// The keys of each FieldKeyedBy row of T's table, in table order.
template <HasFieldTable T>
std::vector<std::vector<absl::string_view>> TagKeys() {
  std::vector<std::vector<absl::string_view>> keys;
  std::apply(
      [&](const auto&... field) {
        (field_table_internal::AddTagKeys(field, keys), ...);
      },
      T::kFields);
  return keys;
}

// Whether T keeps the keys its table does not list (kUnknownKeys).
template <typename T>
concept KeepsUnknownKeys = requires {
  T::kUnknownKeys;
};

// Whether T accepts and drops the keys its table does not list
// (kAcceptsUnknownKeys).
template <typename T>
concept AcceptsUnknownKeys = requires {
  requires T::kAcceptsUnknownKeys;
};

// How values of type T are written and read. Specialized below for the
// types listed in the file comment; specialize it for a type of your own.
template <typename T>
struct JsonCodec;

template <typename T>
Json ToJson(const T& value) {
  return JsonCodec<T>::Write(value);
}

template <typename T>
absl::StatusOr<T> FromJson(const JsonValue& node) {
  return JsonCodec<T>::Read(node);
}

// ParseJson + FromJson, with `path` naming the document's root ("spec").
template <typename T>
absl::StatusOr<T> FromJsonText(absl::string_view text, std::string path) {
  absl::StatusOr<Json> document = ParseJson(text);
  if (!document.ok()) return FieldError(path, document.status().message());
  return FromJson<T>(JsonValue(*document, std::move(path)));
}

// --- Scalars (field_table.cc).

template <>
struct JsonCodec<bool> {
  static Json Write(bool value) { return value; }
  static absl::StatusOr<bool> Read(const JsonValue& node) {
    return node.Bool();
  }
};

template <>
struct JsonCodec<std::string> {
  static Json Write(const std::string& value) { return value; }
  static absl::StatusOr<std::string> Read(const JsonValue& node) {
    return node.String();
  }
};

template <>
struct JsonCodec<std::int64_t> {
  static Json Write(std::int64_t value) { return value; }
  static absl::StatusOr<std::int64_t> Read(const JsonValue& node) {
    return node.Int64();
  }
};

template <>
struct JsonCodec<std::uint64_t> {
  static Json Write(std::uint64_t value) { return value; }
  static absl::StatusOr<std::uint64_t> Read(const JsonValue& node);
};

template <>
struct JsonCodec<Count> {
  static Json Write(Count value) { return CountToJson(value); }
  static absl::StatusOr<Count> Read(const JsonValue& node) {
    return node.Integer();
  }
};

template <>
struct JsonCodec<double> {
  static Json Write(double value);
  static absl::StatusOr<double> Read(const JsonValue& node);
};

template <>
struct JsonCodec<JsonNull> {
  static Json Write(JsonNull) { return nullptr; }
  static absl::StatusOr<JsonNull> Read(const JsonValue& node);
};

// --- Enums by name.

// "expected \"a\", \"b\" or \"c\", got <kind>" for `node`.
absl::Status ExpectedOneOf(const JsonValue& node,
                           const std::vector<absl::string_view>& names);

// "<path>: needs exactly one of 'a', 'b' and 'c'" for `object`, whose keys
// `keys` are exclusive (FieldKeyedBy).
absl::Status NeedsExactlyOneOf(const JsonObject& object,
                               const std::vector<absl::string_view>& keys);

template <typename E>
concept NamedEnum = std::is_enum_v<E> && requires(E value) {
  EnumNames(value);
};

template <NamedEnum E>
struct JsonCodec<E> {
  static Json Write(E value) {
    for (const auto& [known, name] : EnumNames(value)) {
      if (known == value) return std::string(name);
    }
    return nullptr;  // a value without a name: a bug of its names table
  }
  static absl::StatusOr<E> Read(const JsonValue& node) {
    std::vector<absl::string_view> names;
    for (const auto& [value, name] : EnumNames(E{})) {
      if (node.node().is_string() &&
          node.node().template get_ref<const std::string&>() == name) {
        return value;
      }
      names.push_back(name);
    }
    return ExpectedOneOf(node, names);
  }
};

// --- Containers.

template <typename T>
struct JsonCodec<std::vector<T>> {
  static Json Write(const std::vector<T>& values) {
    Json array = Json::array();
    for (const auto& value : values) array.push_back(ToJson<T>(value));
    return array;
  }
  static absl::StatusOr<std::vector<T>> Read(const JsonValue& node) {
    TS_ASSIGN_OR_RETURN(JsonArray items, node.Array());
    std::vector<T> values;
    values.reserve(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) {
      TS_ASSIGN_OR_RETURN(T value, FromJson<T>(items.Item(i)));
      values.push_back(std::move(value));
    }
    return values;
  }
};

template <typename T>
struct JsonCodec<std::optional<T>> {
  static Json Write(const std::optional<T>& value) {
    return value ? ToJson<T>(*value) : Json(nullptr);
  }
  static absl::StatusOr<std::optional<T>> Read(const JsonValue& node) {
    if (node.is_null()) return std::optional<T>();
    TS_ASSIGN_OR_RETURN(T value, FromJson<T>(node));
    return std::optional<T>(std::move(value));
  }
};

template <typename T>
struct JsonCodec<std::map<std::string, T>> {
  static Json Write(const std::map<std::string, T>& values) {
    Json object = Json::object();
    for (const auto& [key, value] : values) object[key] = ToJson<T>(value);
    return object;
  }
  static absl::StatusOr<std::map<std::string, T>> Read(const JsonValue& node) {
    TS_ASSIGN_OR_RETURN(JsonObject object, node.Object());
    std::map<std::string, T> values;
    for (const auto& [key, member] : object.Members()) {
      TS_ASSIGN_OR_RETURN(T value, FromJson<T>(member));
      values.emplace(key, std::move(value));
    }
    return values;
  }
};

// An object whose keys are integers in decimal ("0", "12", "-3"; ranks),
// in numeric order; another key is "<path>.<key>: is not an integer key".
template <typename T>
struct JsonCodec<std::map<std::int64_t, T>> {
  static Json Write(const std::map<std::int64_t, T>& values) {
    Json object = Json::object();
    for (const auto& [key, value] : values) {
      object[absl::StrCat(key)] = ToJson<T>(value);
    }
    return object;
  }
  static absl::StatusOr<std::map<std::int64_t, T>> Read(const JsonValue& node) {
    TS_ASSIGN_OR_RETURN(JsonObject object, node.Object());
    std::map<std::int64_t, T> values;
    for (const auto& [key, member] : object.Members()) {
      // Only the text StrCat writes, so that no two keys read as one.
      std::int64_t number = 0;
      if (!absl::SimpleAtoi(key, &number) || absl::StrCat(number) != key) {
        return member.Error("is not an integer key");
      }
      TS_ASSIGN_OR_RETURN(T value, FromJson<T>(member));
      values.emplace(number, std::move(value));
    }
    return values;
  }
};

// An object whose keys keep their order (Python's dict): a vector of
// (key, value) pairs, duplicate keys being refused by ParseJson.
template <typename T>
struct JsonCodec<std::vector<std::pair<std::string, T>>> {
  static Json Write(const std::vector<std::pair<std::string, T>>& values) {
    Json object = Json::object();
    for (const auto& [key, value] : values) object[key] = ToJson<T>(value);
    return object;
  }
  static absl::StatusOr<std::vector<std::pair<std::string, T>>> Read(
      const JsonValue& node) {
    TS_ASSIGN_OR_RETURN(JsonObject object, node.Object());
    std::vector<std::pair<std::string, T>> values;
    for (const auto& [key, member] : object.Members()) {
      TS_ASSIGN_OR_RETURN(T value, FromJson<T>(member));
      values.emplace_back(key, std::move(value));
    }
    return values;
  }
};

// --- Codecs for rows (FieldAs).

// A non-negative integer that fits in 64 bits (indexes, depths, shapes).
struct IndexCodec {
  static Json Write(std::int64_t value) { return value; }
  static absl::StatusOr<std::int64_t> Read(const JsonValue& node) {
    return node.Index();
  }
};

// A non-negative integer of any Count size (counts, sizes).
struct NonNegativeCountCodec {
  static Json Write(Count value) { return CountToJson(value); }
  static absl::StatusOr<Count> Read(const JsonValue& node) {
    return node.NonNegativeCount();
  }
};

// A schema version: an integer that must be kVersion, else
// "<path>: unsupported schema version: <n>".
template <int kVersion>
struct SchemaVersionCodec {
  static Json Write(int value) { return value; }
  static absl::StatusOr<int> Read(const JsonValue& node) {
    TS_ASSIGN_OR_RETURN(Count version, node.Integer());
    if (version != kVersion) {
      return node.Error(
          absl::StrCat("unsupported schema version: ", CountToString(version)));
    }
    return kVersion;
  }
};

// An array whose items Codec writes and reads.
template <typename Codec>
struct ArrayOf {
  template <typename V>
  static Json Write(const std::vector<V>& values) {
    Json array = Json::array();
    for (const auto& value : values) array.push_back(Codec::Write(value));
    return array;
  }
  static auto Read(const JsonValue& node) -> absl::StatusOr<
      std::vector<typename decltype(Codec::Read(node))::value_type>> {
    using V = typename decltype(Codec::Read(node))::value_type;
    TS_ASSIGN_OR_RETURN(JsonArray items, node.Array());
    std::vector<V> values;
    values.reserve(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) {
      TS_ASSIGN_OR_RETURN(V value, Codec::Read(items.Item(i)));
      values.push_back(std::move(value));
    }
    return values;
  }
};

// An object whose values Codec writes and reads, keys in map order.
template <typename Codec>
struct MapOf {
  template <typename V>
  static Json Write(const std::map<std::string, V>& values) {
    Json object = Json::object();
    for (const auto& [key, value] : values) object[key] = Codec::Write(value);
    return object;
  }
  static auto Read(const JsonValue& node) -> absl::StatusOr<
      std::map<std::string, typename decltype(Codec::Read(node))::value_type>> {
    using V = typename decltype(Codec::Read(node))::value_type;
    TS_ASSIGN_OR_RETURN(JsonObject object, node.Object());
    std::map<std::string, V> values;
    for (const auto& [key, member] : object.Members()) {
      TS_ASSIGN_OR_RETURN(V value, Codec::Read(member));
      values.emplace(key, std::move(value));
    }
    return values;
  }
};

// A record written and read by its own functions `Json ToJson(const V&)` and
// `absl::StatusOr<V> FromJson(const Json& node, absl::string_view path)`: a
// record without a table inside one with a table.
template <auto kWrite, auto kRead>
struct JsonFunctions {
  template <typename V>
  static Json Write(const V& value) {
    return kWrite(value);
  }
  static auto Read(const JsonValue& node) {
    return kRead(node.node(), node.path());
  }
};

// --- Records.

namespace field_table_internal {

template <typename M>
struct IsOptional : std::false_type {};
template <typename M>
struct IsOptional<std::optional<M>> : std::true_type {};

// Whether an optional field holds its "absent" value, so is not written.
template <typename M>
bool IsUnset(const M& value) {
  if constexpr (IsOptional<M>::value) {
    return !value.has_value();
  } else if constexpr (std::is_default_constructible_v<M>) {
    return value == M{};
  } else {
    return false;  // no "absent" value: always written
  }
}

// The codec of a row's member: Codec, or JsonCodec<V> by default.
template <typename Codec, typename V>
using CodecOf = std::conditional_t<std::is_same_v<Codec, DefaultCodec>,
                                   JsonCodec<V>, Codec>;

template <typename T, typename M, typename C>
bool Belongs(const Field<T, M, C>& field, const T& record) {
  return field.when == nullptr || field.when(record);
}

template <typename T, typename M, typename C>
void WriteField(const Field<T, M, C>& field, const T& record, Json& object) {
  if (!Belongs(field, record)) return;
  const M& value = record.*field.member;
  if (field.presence == kOptional && IsUnset(value)) return;
  if constexpr (IsOptional<M>::value) {
    using Codec = CodecOf<C, typename M::value_type>;
    object[field.name] = value ? Codec::Write(*value) : Json(nullptr);
  } else {
    object[field.name] = CodecOf<C, M>::Write(value);
  }
}

template <typename T, typename M, typename C>
absl::Status ReadField(const Field<T, M, C>& field, const JsonObject& object,
                       T& record) {
  std::optional<JsonValue> member = object.OptionalMember(field.name);
  if (!Belongs(field, record)) {
    // A key of the same name may belong to another row (When).
    return absl::OkStatus();
  }
  if (!member) {
    if (field.presence == kRequired) {
      return FieldError(object.PathOf(field.name), "is missing");
    }
    return absl::OkStatus();
  }
  if constexpr (IsOptional<M>::value) {
    using Codec = CodecOf<C, typename M::value_type>;
    if (field.presence == kRequired && member->is_null()) {
      record.*field.member = std::nullopt;
    } else {
      TS_ASSIGN_OR_RETURN(record.*field.member, Codec::Read(*member));
    }
  } else {
    using Codec = CodecOf<C, M>;
    TS_ASSIGN_OR_RETURN(record.*field.member, Codec::Read(*member));
  }
  return absl::OkStatus();
}

// The key of `tag`: its name in EnumNames.
template <typename E>
absl::string_view TagKey(E tag) {
  for (const auto& [known, key] : EnumNames(tag)) {
    if (known == tag) return key;
  }
  return "";  // a value without a name: a bug of its names table
}

template <typename T, typename E, typename M>
void WriteField(const KeyedField<T, E, M>& field, const T& record,
                Json& object) {
  object[std::string(TagKey(record.*field.tag))] =
      JsonCodec<M>::Write(record.*field.member);
}

template <typename T, typename E, typename M>
absl::Status ReadField(const KeyedField<T, E, M>& field,
                       const JsonObject& object, T& record) {
  std::optional<JsonValue> member;
  int present = 0;
  for (const auto& [tag, key] : EnumNames(E{})) {
    if (std::optional<JsonValue> value = object.OptionalMember(key)) {
      ++present;
      record.*field.tag = tag;
      member = std::move(value);
    }
  }
  if (present != 1) {
    std::vector<absl::string_view> keys;
    AddNames(field, keys);
    return NeedsExactlyOneOf(object, keys);
  }
  TS_ASSIGN_OR_RETURN(record.*field.member, JsonCodec<M>::Read(*member));
  return absl::OkStatus();
}

template <typename T, typename... Rows>
void WriteField(const GroupField<T, Rows...>& field, const T& record,
                Json& object) {
  Json group = Json::object();
  std::apply([&](const auto&... row) { (WriteField(row, record, group), ...); },
             field.rows);
  object[field.name] = std::move(group);
}

template <typename T, typename... Rows>
absl::Status ReadField(const GroupField<T, Rows...>& field,
                       const JsonObject& object, T& record) {
  TS_ASSIGN_OR_RETURN(JsonObject group, object.Object(field.name));
  std::vector<absl::string_view> names;
  std::apply([&](const auto&... row) { (AddNames(row, names), ...); },
             field.rows);
  TS_RETURN_IF_ERROR(group.RejectUnknownKeys(names));
  absl::Status status;
  std::apply(
      [&](const auto&... row) {
        static_cast<void>(
            ((status = ReadField(row, group, record), status.ok()) && ...));
      },
      field.rows);
  return status;
}

template <typename T>
void WriteField(const DerivedField<T>& field, const T& record, Json& object) {
  object[field.name] = field.derive(record);
}

// Nothing to read: the key is checked once the record is read (CheckRows),
// where a missing one is named.
template <typename T>
absl::Status ReadField(const DerivedField<T>&, const JsonObject&, T&) {
  return absl::OkStatus();
}

// Whether row `field` writes and reads `key` for `record`.
template <typename T, typename M, typename C>
bool HasKey(const Field<T, M, C>& field, const T& record,
            absl::string_view key) {
  return key == field.name && Belongs(field, record);
}

template <typename T, typename E, typename M>
bool HasKey(const KeyedField<T, E, M>& field, const T& record,
            absl::string_view key) {
  return key == TagKey(record.*field.tag);
}

template <typename T, typename... Rows>
bool HasKey(const GroupField<T, Rows...>& field, const T&,
            absl::string_view key) {
  return key == field.name;
}

template <typename T>
bool HasKey(const DerivedField<T>& field, const T&, absl::string_view key) {
  return key == field.name;
}

// Whether a row has a condition (When). A FieldKeyedBy row has none: its
// reading checks its keys itself.
template <typename T, typename M, typename C>
constexpr bool IsConditional(const Field<T, M, C>& field) {
  return field.conditional;
}

template <typename T, typename E, typename M>
constexpr bool IsConditional(const KeyedField<T, E, M>&) {
  return false;
}

template <typename T, typename... Rows>
constexpr bool IsConditional(const GroupField<T, Rows...>&) {
  return false;
}

template <typename T>
constexpr bool IsConditional(const DerivedField<T>&) {
  return false;
}

// A FieldsOf row: conditional when one of its member's rows is.
template <typename T, typename M>
constexpr bool IsConditional(const InlineField<T, M>&) {
  return std::apply(
      [](const auto&... row) { return (IsConditional(row) || ...); },
      M::kFields);
}

// The FieldsOf rows, defined below the helpers they use.
template <typename T, typename M>
void WriteField(const InlineField<T, M>& field, const T& record, Json& object);
template <typename T, typename M>
absl::Status ReadField(const InlineField<T, M>& field, const JsonObject& object,
                       T& record);
template <typename T, typename M>
bool HasKey(const InlineField<T, M>& field, const T& record,
            absl::string_view key);

// Whether a row named `key` belongs to `record`.
template <typename T>
bool AnyRowBelongs(const T& record, absl::string_view key) {
  return std::apply(
      [&](const auto&... field) { return (HasKey(field, record, key) || ...); },
      T::kFields);
}

// Writes the rows of `record`'s table into `object`.
template <typename T>
void WriteRows(const T& record, Json& object) {
  std::apply(
      [&](const auto&... field) { (WriteField(field, record, object), ...); },
      T::kFields);
}

// Reads the rows of `record`'s table from `object`, in table order,
// stopping at the first error.
template <typename T>
absl::Status ReadRows(const JsonObject& object, T& record) {
  absl::Status status;
  std::apply(
      [&](const auto&... field) {
        static_cast<void>(
            ((status = ReadField(field, object, record), status.ok()) && ...));
      },
      T::kFields);
  return status;
}

// Runs the record's Validate, when it has one, with its object or path.
template <typename T>
absl::Status Validated(T& record, const JsonObject& object) {
  if constexpr (requires { record.Validate(object); }) {
    return record.Validate(object);
  } else if constexpr (requires { record.Validate(object.path()); }) {
    return record.Validate(object.path());
  } else {
    return absl::OkStatus();
  }
}

// What a derived key of T must match, in its error.
template <typename T>
constexpr const char* DerivedFrom() {
  if constexpr (requires { T::kDerivedFrom; }) {
    return T::kDerivedFrom;
  } else {
    return "the record's other fields";
  }
}

// `value` is `expected`, or the error that says what it should be.
template <typename T>
absl::Status CheckDerived(const JsonValue& value, const Json& expected) {
  if (value.node() == expected) return absl::OkStatus();
  return value.Error(absl::StrCat("does not match ", DerivedFrom<T>(),
                                  " (expected ", DumpJson(expected), ")"));
}

template <typename T, typename M, typename C>
absl::Status CheckField(const Field<T, M, C>& field, const JsonObject& object,
                        const T& record) {
  if (!field.recomputed || !Belongs(field, record)) return absl::OkStatus();
  const std::optional<JsonValue> value = object.OptionalMember(field.name);
  if (!value) return absl::OkStatus();
  Json written = Json::object();
  WriteField(field, record, written);
  return CheckDerived<T>(
      *value, written.contains(field.name) ? written[field.name] : Json());
}

template <typename T, typename E, typename M>
absl::Status CheckField(const KeyedField<T, E, M>&, const JsonObject&,
                        const T&) {
  return absl::OkStatus();
}

template <typename T, typename... Rows>
absl::Status CheckField(const GroupField<T, Rows...>&, const JsonObject&,
                        const T&) {
  return absl::OkStatus();
}

template <typename T>
absl::Status CheckField(const DerivedField<T>& field, const JsonObject& object,
                        const T& record) {
  TS_ASSIGN_OR_RETURN(const JsonValue value, object.Member(field.name));
  return CheckDerived<T>(value, field.derive(record));
}

template <typename T, typename M>
absl::Status CheckField(const InlineField<T, M>& field,
                        const JsonObject& object, const T& record);

// Checks the derived and recomputed rows of `record`'s table against
// `object`, in table order, stopping at the first error.
template <typename T>
absl::Status CheckRows(const JsonObject& object, const T& record) {
  absl::Status status;
  std::apply(
      [&](const auto&... field) {
        static_cast<void>(
            ((status = CheckField(field, object, record), status.ok()) && ...));
      },
      T::kFields);
  return status;
}

template <typename T, typename M>
absl::Status CheckField(const InlineField<T, M>& field,
                        const JsonObject& object, const T& record) {
  return CheckRows(object, record.*field.member);
}

template <typename T, typename M>
void WriteField(const InlineField<T, M>& field, const T& record, Json& object) {
  WriteRows(record.*field.member, object);
}

template <typename T, typename M>
absl::Status ReadField(const InlineField<T, M>& field, const JsonObject& object,
                       T& record) {
  static_assert(!KeepsUnknownKeys<M>,
                "the keys of a FieldsOf member are the record's own");
  M& member = record.*field.member;
  TS_RETURN_IF_ERROR(ReadRows(object, member));
  return Validated(member, object);
}

template <typename T, typename M>
bool HasKey(const InlineField<T, M>& field, const T& record,
            absl::string_view key) {
  return AnyRowBelongs(record.*field.member, key);
}

// Guards the reading depth of a recursive record (kMaxNesting).
template <typename T>
class NestingGuard {
 public:
  NestingGuard() { ++Depth(); }
  ~NestingGuard() { --Depth(); }
  NestingGuard(const NestingGuard&) = delete;
  NestingGuard& operator=(const NestingGuard&) = delete;

  // The levels of T being read outside this one.
  static int Outer() { return Depth() - 1; }

 private:
  static int& Depth() {
    thread_local int depth = 0;
    return depth;
  }
};

}  // namespace field_table_internal

template <HasFieldTable T>
struct JsonCodec<T> {
  static Json Write(const T& record) {
    Json object = Json::object();
    field_table_internal::WriteRows(record, object);
    if constexpr (KeepsUnknownKeys<T>) {
      const Json& others = record.*T::kUnknownKeys;
      if (others.is_object()) {
        for (const auto& [key, value] : others.items()) {
          if (!object.contains(key)) object[key] = value;
        }
      }
    }
    return object;
  }
  static absl::StatusOr<T> Read(const JsonValue& node) {
    // NOTE [Nesting of recursive records]
    // A record that holds itself (a value's items) is read recursively. A
    // document from text is bounded by ParseJson's depth, but one built in
    // memory is not: kMaxNesting bounds the recursion, as the depth of a
    // real value (Python's own recursion limit) is far below it.
    [[maybe_unused]] field_table_internal::NestingGuard<T> guard;
    if constexpr (requires { T::kMaxNesting; }) {
      if (guard.Outer() > T::kMaxNesting) {
        return node.Error(
            absl::StrCat("nesting deeper than ", T::kMaxNesting, " levels"));
      }
    }
    static const std::vector<absl::string_view> kNames = FieldNames<T>();
    TS_ASSIGN_OR_RETURN(JsonObject object, node.Object());
    if constexpr (!KeepsUnknownKeys<T> && !AcceptsUnknownKeys<T>) {
      TS_RETURN_IF_ERROR(object.RejectUnknownKeys(kNames));
    }
    T record{};
    TS_RETURN_IF_ERROR(field_table_internal::ReadRows(object, record));
    // A key whose every row has a condition that does not hold (When).
    static constexpr bool kConditional = std::apply(
        [](const auto&... field) {
          return (field_table_internal::IsConditional(field) || ...);
        },
        T::kFields);
    if (!kConditional && !KeepsUnknownKeys<T>) return Finish(object, record);
    for (const auto& [key, value] : node.node().items()) {
      if (std::find(kNames.begin(), kNames.end(), key) == kNames.end()) {
        if constexpr (KeepsUnknownKeys<T>)
          (record.*T::kUnknownKeys)[key] = value;
      } else if (!field_table_internal::AnyRowBelongs(record, key)) {
        return FieldError(object.PathOf(key), "unknown field");
      }
    }
    return Finish(object, record);
  }

 private:
  static absl::StatusOr<T> Finish(const JsonObject& object, T& record) {
    TS_RETURN_IF_ERROR(field_table_internal::Validated(record, object));
    TS_RETURN_IF_ERROR(field_table_internal::CheckRows(object, record));
    return std::move(record);
  }
};

// NOTE [Rows read in another's object]
// FieldsOf puts a member record's keys in its record's object when the
// member is known at compile time. A record chosen at run time (a module
// description's hyper-parameters, by its family: formulas/module_json.h)
// is read and written with the two functions below instead: its rows are
// read from `object` through its own reads, so they are marked read, and
// the caller refuses the keys nothing read (JsonObject::RejectUnreadKeys).
// A key of a row whose condition (When) does not hold is refused here, as
// FromJson refuses it; Validate and the derived rows run as in FromJson.
template <HasFieldTable T>
absl::StatusOr<T> ReadFieldsIn(const JsonObject& object) {
  static_assert(!KeepsUnknownKeys<T> && !AcceptsUnknownKeys<T>,
                "the caller decides which other keys the object may hold");
  T record{};
  TS_RETURN_IF_ERROR(field_table_internal::ReadRows(object, record));
  for (absl::string_view name : FieldNames<T>()) {
    if (object.Contains(name) &&
        !field_table_internal::AnyRowBelongs(record, name)) {
      return FieldError(object.PathOf(name), "unknown field");
    }
  }
  TS_RETURN_IF_ERROR(field_table_internal::Validated(record, object));
  TS_RETURN_IF_ERROR(field_table_internal::CheckRows(object, record));
  return record;
}

// The rows of `record`'s table written into `object`, beside its other keys.
template <HasFieldTable T>
void WriteFieldsIn(const T& record, Json& object) {
  field_table_internal::WriteRows(record, object);
}

}  // namespace torchscan::report

#endif  // TORCHSCAN_REPORT_FIELD_TABLE_H_
