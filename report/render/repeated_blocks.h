// Repeated identical blocks of a layer table, for folding them into one row
// ("24 x GPT2Block, identical") on the HTML page (html_report.h).
//
// The rows are layer calls in call order, each with its module depth; a
// row's block is the row and every row after it that is deeper, up to the
// next row at its depth or shallower (its submodules' calls, as the table
// indents them). Blocks are siblings when one starts where the other ends
// at the same depth.
//
// Two sibling blocks are identical when they have the same number of rows
// and their rows match one for one: the same type, the same path relative to
// the block's own path ("attn.c_attn" in "h.3" and in "h.4"; a path outside
// the block compares whole), and the same `content` (the caller puts there
// everything else a row shows: call number, output shape, parameters, bytes,
// and each metric's value and status). The block rows' own names and paths
// differ, as they must.

#ifndef TORCHSCAN_REPORT_RENDER_REPEATED_BLOCKS_H_
#define TORCHSCAN_REPORT_RENDER_REPEATED_BLOCKS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/span.h"

namespace torchscan::report::render {

struct BlockRow {
  std::string path;
  std::int64_t depth = 0;
  std::string type;
  std::string content;
};

// A run of `count` (>= 2) consecutive identical sibling blocks, the first
// starting at row `first_row`, each `rows_per_block` rows long.
struct RepeatedBlocks {
  std::size_t first_row = 0;
  std::size_t rows_per_block = 0;
  std::size_t count = 0;

  bool operator==(const RepeatedBlocks&) const = default;
};

// Every maximal run, at every depth (runs inside a repeated block too), in
// the order of their first rows. A run is maximal: the block after it, if
// any, differs from its blocks. A run whose folding would hide a single row
// (two identical one-row blocks) is left out: its fold row would only take
// the hidden row's place.
std::vector<RepeatedBlocks> FindRepeatedBlocks(absl::Span<const BlockRow> rows);

}  // namespace torchscan::report::render

#endif  // TORCHSCAN_REPORT_RENDER_REPEATED_BLOCKS_H_
