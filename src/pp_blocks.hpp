// Internal: the blocks PP arrows join (SPEC 7), made from PP:<action> annotation spans.
#pragma once

#include <optional>
#include <string>
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

struct Block {
  int64_t pid = 0;
  Ns start = 0, end = 0;
  int64_t stage = 0;
  std::string op;
  std::optional<int64_t> microbatch;
  int pp_rank = 0;
  std::vector<Member> members;  // in (start, end) order; arrows touch only these
  std::string label() const {
    return std::to_string(stage) + op + (microbatch ? std::to_string(*microbatch) : std::string());
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

// The blocks, in order of their key (pid, stage, op by name, microbatch) and, within a
// key, of their first span's (start, length): in parts, one after another, each part
// made concurrently.
using BlockParts = std::vector<std::vector<Block>>;
BlockParts build_blocks(const std::vector<AnnotationSpan>& spans, const std::vector<PidTracks>& pids,
                        const Rules& rules);

}  // namespace tracelane
