// A compile-time table of entries keyed by an operator packet name
// ("aten::mm"), and its lookup. The operator formula table and the ignore list
// are both such tables: sorted by packet so that a lookup is a binary search,
// with the order checked by the compiler.
//
//   constexpr auto kTable = std::to_array<Entry>({{"aten::mm", ...}, ...});
//   static_assert(IsSortedByPacket(kTable), "...");
//   const Entry* entry = FindByPacket(kTable, "aten::mm");
//
// Entry is any struct with an `absl::string_view packet` member.

#ifndef TORCHSCAN_FORMULAS_PACKET_TABLE_H_
#define TORCHSCAN_FORMULAS_PACKET_TABLE_H_

#include <algorithm>
#include <array>
#include <cstddef>

#include "absl/strings/string_view.h"

namespace torchscan::formulas {

// True when the packets strictly increase: sorted and without duplicates.
template <typename Entry, std::size_t N>
constexpr bool IsSortedByPacket(const std::array<Entry, N>& table) {
  for (std::size_t i = 1; i < N; ++i) {
    if (!(table[i - 1].packet < table[i].packet)) return false;
  }
  return true;
}

// The entry of `packet`, or nullptr when the table has none.
template <typename Entry, std::size_t N>
const Entry* FindByPacket(const std::array<Entry, N>& table,
                          absl::string_view packet) {
  auto it = std::lower_bound(table.begin(), table.end(), packet,
                             [](const Entry& entry, absl::string_view name) {
                               return entry.packet < name;
                             });
  if (it == table.end() || it->packet != packet) return nullptr;
  return &*it;
}

}  // namespace torchscan::formulas

#endif  // TORCHSCAN_FORMULAS_PACKET_TABLE_H_
