#include "report/render/repeated_blocks.h"

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace torchscan::report::render {
namespace {

// One past the last row of the block starting at `row`.
std::size_t BlockEnd(absl::Span<const BlockRow> rows, std::size_t row) {
  std::size_t end = row + 1;
  while (end < rows.size() && rows[end].depth > rows[row].depth) ++end;
  return end;
}

// `path` relative to the block path `base`: "attn.c_attn" of
// "h.3.attn.c_attn" in "h.3"; "" for the block itself. A path outside the
// block (a shared module called from it) stays whole, marked so that it
// cannot equal a relative one.
std::string RelativePath(absl::string_view path, absl::string_view base) {
  if (path == base) return "";
  if (base.empty()) return std::string(path);
  if (path.size() > base.size() && absl::StartsWith(path, base) &&
      path[base.size()] == '.') {
    return std::string(path.substr(base.size() + 1));
  }
  return absl::StrCat("/", path);
}

bool SameBlock(absl::Span<const BlockRow> rows, std::size_t a, std::size_t b,
               std::size_t length) {
  for (std::size_t i = 0; i < length; ++i) {
    const BlockRow& x = rows[a + i];
    const BlockRow& y = rows[b + i];
    if (x.depth - rows[a].depth != y.depth - rows[b].depth ||
        x.type != y.type || x.content != y.content ||
        RelativePath(x.path, rows[a].path) !=
            RelativePath(y.path, rows[b].path)) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::vector<RepeatedBlocks> FindRepeatedBlocks(
    absl::Span<const BlockRow> rows) {
  std::vector<RepeatedBlocks> runs;
  // `covered[i]`: row i is the start of a block already counted in a run of
  // its siblings, so it starts no run of its own.
  std::vector<bool> covered(rows.size(), false);
  for (std::size_t row = 0; row < rows.size(); ++row) {
    if (covered[row]) continue;
    const std::size_t length = BlockEnd(rows, row) - row;
    std::size_t count = 1;
    for (std::size_t next = row + length;
         next + length <= rows.size() && rows[next].depth == rows[row].depth &&
         BlockEnd(rows, next) - next == length &&
         SameBlock(rows, row, next, length);
         next += length) {
      covered[next] = true;
      ++count;
    }
    if (count >= 2 && length * (count - 1) >= 2) {
      runs.push_back({row, length, count});
    }
  }
  return runs;
}

}  // namespace torchscan::report::render
