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
//                                    first, in document order)
//   "<path>.<key>: is missing"       a required field is absent
//   "<path>.<key>[2]: expected a string, got integer", ...
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
//   records with kFields               a nested object
//   anything else                      specialize JsonCodec<T> with
//                                      `static Json Write(const T&)` and
//                                      `static absl::StatusOr<T> Read(const
//                                      JsonValue&)` (a value whose JSON is
//                                      not an object of fixed keys: a tagged
//                                      union, a tuple written as an array)
//
// A record may also check what no single field can (one member of several
// set, two lengths that must agree) with a member
//   absl::Status Validate(absl::string_view path) const;
// called after its fields are read, with the record's path, for errors
// through FieldError(MemberPath(path, "key"), ...).
//
// The table is a static constexpr member named kFields: a std::tuple of
// Field values. Records with a table also get the round-trip tests of
// report/field_table_testing.h for free.

#ifndef TORCHSCAN_REPORT_FIELD_TABLE_H_
#define TORCHSCAN_REPORT_FIELD_TABLE_H_

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
#include "absl/strings/string_view.h"
#include "base/status_macros.h"
#include "report/count.h"
#include "report/json_io.h"
#include "report/json_reader.h"

namespace torchscan::report {

enum class Presence { kRequired, kOptional };
inline constexpr Presence kRequired = Presence::kRequired;
inline constexpr Presence kOptional = Presence::kOptional;

// One row of a field table: the JSON key of member `member` of T.
template <typename T, typename M>
struct Field {
  constexpr Field(const char* name, M T::*member, Presence presence = kRequired)
      : name(name), member(member), presence(presence) {}

  const char* name;
  M T::*member;
  Presence presence;
};

// JSON null as a member: a value that is only its key ({"none": null}).
struct JsonNull {
  bool operator==(const JsonNull&) const = default;
};

// Whether T declares a field table.
template <typename T>
concept HasFieldTable = requires {
  T::kFields;
};

// The JSON names of T's table, in table order.
template <HasFieldTable T>
constexpr auto FieldNames() {
  return std::apply(
      [](const auto&... field) {
        return std::array<absl::string_view, sizeof...(field)>{
            absl::string_view(field.name)...};
      },
      T::kFields);
}

// The names of T's required fields, in table order.
template <HasFieldTable T>
std::vector<absl::string_view> RequiredFieldNames() {
  std::vector<absl::string_view> names;
  std::apply(
      [&](const auto&... field) {
        ((field.presence == kRequired ? names.push_back(field.name) : void()),
         ...);
      },
      T::kFields);
  return names;
}

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
  } else {
    return value == M{};
  }
}

template <typename T, typename M>
void WriteField(const Field<T, M>& field, const T& record, Json& object) {
  const M& value = record.*field.member;
  if (field.presence == kOptional && IsUnset(value)) return;
  if constexpr (IsOptional<M>::value) {
    object[field.name] = value ? ToJson(*value) : Json(nullptr);
  } else {
    object[field.name] = ToJson(value);
  }
}

template <typename T, typename M>
absl::Status ReadField(const Field<T, M>& field, const JsonObject& object,
                       T& record) {
  std::optional<JsonValue> member = object.OptionalMember(field.name);
  if (!member) {
    if (field.presence == kRequired) {
      return FieldError(object.PathOf(field.name), "is missing");
    }
    return absl::OkStatus();
  }
  if constexpr (IsOptional<M>::value) {
    if (field.presence == kRequired) {
      TS_ASSIGN_OR_RETURN(record.*field.member, FromJson<M>(*member));
    } else {
      TS_ASSIGN_OR_RETURN(record.*field.member,
                          FromJson<typename M::value_type>(*member));
    }
  } else {
    TS_ASSIGN_OR_RETURN(record.*field.member, FromJson<M>(*member));
  }
  return absl::OkStatus();
}

}  // namespace field_table_internal

template <HasFieldTable T>
struct JsonCodec<T> {
  static Json Write(const T& record) {
    Json object = Json::object();
    std::apply(
        [&](const auto&... field) {
          (field_table_internal::WriteField(field, record, object), ...);
        },
        T::kFields);
    return object;
  }
  static absl::StatusOr<T> Read(const JsonValue& node) {
    static constexpr auto kNames = FieldNames<T>();
    TS_ASSIGN_OR_RETURN(JsonObject object, node.Object());
    TS_RETURN_IF_ERROR(object.RejectUnknownKeys(kNames));
    T record{};
    absl::Status status;
    // Fields in table order, stopping at the first error.
    std::apply(
        [&](const auto&... field) {
          static_cast<void>(
              ((status = field_table_internal::ReadField(field, object, record),
                status.ok()) &&
               ...));
        },
        T::kFields);
    TS_RETURN_IF_ERROR(status);
    if constexpr (requires { record.Validate(node.path()); }) {
      TS_RETURN_IF_ERROR(record.Validate(node.path()));
    }
    return record;
  }
};

}  // namespace torchscan::report

#endif  // TORCHSCAN_REPORT_FIELD_TABLE_H_
