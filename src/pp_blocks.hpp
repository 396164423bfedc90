// Internal: the blocks PP arrows join (SPEC 7), made from PP:<action> annotation spans.
#pragma once

#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tracelane/pp_spans.hpp"
#include "tracelane/rules.hpp"

namespace tracelane {

// A span of a block, on the (sub-)track where it really is.
struct Member {
  Ns start = 0, end = 0;
  int64_t tid = 0;
};

// The PP operations in the order of their names: ordering by index orders by name.
inline constexpr std::array<std::string_view, 11> kPpOpsInOrder = {
    "B", "F", "I", "RECV_B", "RECV_F", "REDUCE_GRAD", "RESHARD", "SEND_B", "SEND_F", "UNSHARD", "W"};

// 64 bytes and a 24-byte member in its part's pool, for each of a trace's (tens of
// thousands of) blocks: the operation is an index, not a string, and the members are not
// a vector of their own.
struct Block {
  int64_t pid = 0;
  Ns start = 0, end = 0;
  int64_t stage = 0;
  int64_t microbatch_value = 0;  // when has_microbatch (microbatch())
  int pp_rank = 0;
  uint8_t op_index = 0;  // in kPpOpsInOrder
  bool has_microbatch = false;
  std::span<const Member> members;  // in its part's pool, in (start, end) order; arrows touch only these
  std::string_view op() const { return kPpOpsInOrder[op_index]; }
  std::optional<int64_t> microbatch() const {
    return has_microbatch ? std::optional<int64_t>(microbatch_value) : std::nullopt;
  }
  void set_microbatch(int64_t value) { microbatch_value = value, has_microbatch = true; }
  std::string label() const {
    return std::to_string(stage) + std::string(op()) + (has_microbatch ? std::to_string(microbatch_value) : "");
  }
  // The member span at or nearest to `t`, and `t` moved into it: an arrow end must lie
  // inside a slice on its own track (SPEC 9.6), also when a bridged block has a gap.
  // Members are in start order, so at or before the first start the first member wins:
  // every source end and every unshard end (any number of them into one block) is
  // placed in O(1), and a block with many members costs its length once per pairing.
  std::pair<int64_t, Ns> place(Ns t) const {
    if (t <= members.front().start) return {members.front().tid, members.front().start};
    const Member* best = &members.front();
    Ns best_distance = INT64_MAX;
    for (const Member& m : members) {
      Ns distance = t < m.start ? m.start - t : (t > m.end ? t - m.end : 0);
      if (distance < best_distance) best = &m, best_distance = distance;
    }
    // std::clamp's result, written out: a span with a negative dur (end < start) is
    // outside std::clamp's contract.
    return {best->tid, t < best->start ? best->start : best->end < t ? best->end : t};
  }
};

static_assert(sizeof(Block) <= 64, "a Block is held for each PP block of a trace");

// Blocks made together, and the members their spans view.
struct BlockPart {
  std::vector<Block> blocks;
  std::vector<Member> members;
};

// The blocks, in order of their key (pid, stage, op by name, microbatch) and, within a
// key, of their first span's (start, length): in parts, one after another, each part
// made concurrently.
using BlockParts = std::vector<BlockPart>;
// The spans are freed once the blocks' uses are read from them.
BlockParts build_blocks(std::vector<AnnotationSpan> spans, const std::vector<PidTracks>& pids, const Rules& rules);

}  // namespace tracelane
