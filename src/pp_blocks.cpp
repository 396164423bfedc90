// PP blocks: every action of the spans, sorted by block key, and the blocks each key's
// actions make: compute actions chained where they overlap and counted on the main
// compute track, UNSHARD on the all-gather lanes' tracks, the others as they are.
#include "pp_blocks.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <span>
#include <tuple>
#include <unordered_map>

#include "parallel_ranges.hpp"

namespace tracelane {

namespace {

// The PP operations in the order of their names: ordering by index orders by name.
constexpr std::array<std::string_view, 11> kOpsInOrder = {
    "B", "F", "I", "RECV_B", "RECV_F", "REDUCE_GRAD", "RESHARD", "SEND_B", "SEND_F", "UNSHARD", "W"};
static_assert(std::is_sorted(kOpsInOrder.begin(), kOpsInOrder.end()));
constexpr uint8_t kReduceGrad = 5, kReshard = 6;
static_assert(kOpsInOrder[kReduceGrad] == "REDUCE_GRAD" && kOpsInOrder[kReshard] == "RESHARD");
uint8_t op_index(std::string_view op) {  // parse_pp_actions makes only these operations
  return uint8_t(std::lower_bound(kOpsInOrder.begin(), kOpsInOrder.end(), op) - kOpsInOrder.begin());
}

using PidTracksByPid = std::map<int64_t, const PidTracks*>;
using SortedTracksByPid = std::map<int64_t, std::pair<std::vector<int64_t>, std::vector<int64_t>>>;  // main, unshard

// One action of one span, which blocks are made of. Its key is (pid, stage, op by name,
// microbatch); it sorts by key, then by (start, length), then in input order.
// Made unwritten, so that the merge sizes its output without touching it (sorted_uses
// writes every field).
struct Use {
  Use() {}
  int64_t pid, stage, microbatch;  // -1: none
  Ns start, length;
  uint32_t span;   // spans are numbered in 32 bits (sorted_uses)
  uint8_t action;  // its place among the span's actions (one or two)
  uint8_t op;      // in kOpsInOrder
  bool has_microbatch;

  bool same_key(const Use& other) const {
    return pid == other.pid && stage == other.stage && op == other.op && microbatch == other.microbatch;
  }
  friend bool operator<(const Use& a, const Use& b) {
    return std::tie(a.pid, a.stage, a.op, a.microbatch, a.start, a.length, a.span, a.action) <
           std::tie(b.pid, b.stage, b.op, b.microbatch, b.start, b.length, b.span, b.action);
  }
};

// Every action of the spans that makes blocks, in block-key order and, within a key, by
// (start, length), ties in input order: ranges of spans are read and sorted concurrently,
// then merged; on one thread, or for one range, all are read into one vector and sorted
// there (the same order: no two uses are equal), which holds the uses once, not twice.
std::vector<Use> sorted_uses(const std::vector<AnnotationSpan>& spans, const Rules& rules) {
  using Part = std::vector<Use>;
  if (spans.size() > UINT32_MAX) throw Error("more than 2^32 annotation spans: too many to pair PP blocks");
  // A name's actions are parsed once per range: a trace repeats each stage, operation and
  // microbatch's name in every step. The names remembered are bounded (a trace of distinct
  // names starts over every kNamesRemembered).
  constexpr size_t kNamesRemembered = 4096;
  auto read = [&](size_t begin, size_t end, Part& part) {
    std::unordered_map<std::string_view, std::vector<PpAction>> parsed;
    for (size_t i = begin; i < end; ++i) {
      if (parsed.size() == kNamesRemembered) parsed.clear();
      auto [known, fresh] = parsed.try_emplace(spans[i].name);
      if (fresh) known->second = rules.pp_actions(spans[i].name);
      const std::vector<PpAction>& actions = known->second;
      for (size_t k = 0; k < actions.size(); ++k) {
        const PpAction& action = actions[k];
        const uint8_t op = op_index(action.op);
        if (op == kReshard || op == kReduceGrad) continue;  // no blocks (SPEC 9.5)
        Use use;
        use.pid = spans[i].pid, use.stage = action.stage;
        use.has_microbatch = action.microbatch.has_value();
        use.microbatch = action.microbatch.value_or(-1);
        use.start = spans[i].start, use.length = spans[i].end - spans[i].start;
        use.span = uint32_t(i), use.action = uint8_t(k), use.op = op;
        part.push_back(use);
      }
    }
  };
  if (range_count(spans.size()) <= 1 || tbb::this_task_arena::max_concurrency() <= 1) {
    Part uses;
    uses.reserve(spans.size() + spans.size() / 4);  // most spans are one action; pages never written cost nothing
    read(0, spans.size(), uses);
    std::sort(uses.begin(), uses.end());
    return uses;
  }
  std::vector<Part> parts = gather_ranges<Part>(spans.size(), [&](size_t begin, size_t end, Part& part) {
    part.reserve(end - begin);  // most spans are one action; held with no room to spare
    read(begin, end, part);
    std::sort(part.begin(), part.end());
  });
  return merge_sorted_parts(std::move(parts));
}

// The blocks `uses` make: whole keys, in key order.
std::vector<Block> blocks_of(std::span<const Use> uses, const std::vector<AnnotationSpan>& spans,
                             const PidTracksByPid& tracks_of, const SortedTracksByPid& sorted_tracks) {
  std::vector<Block> blocks;
  for (size_t first = 0, last = 0; first < uses.size(); first = last) {
    last = first + 1;
    while (last < uses.size() && uses[last].same_key(uses[first])) ++last;
    const std::span<const Use> key_uses(uses.data() + first, last - first);
    const int64_t pid = uses[first].pid, stage = uses[first].stage;
    const std::string op(kOpsInOrder[uses[first].op]);
    auto tracks_it = tracks_of.find(pid);
    const PidTracks* tracks = tracks_it == tracks_of.end() ? nullptr : tracks_it->second;
    auto make = [&](const Use& use) {
      const AnnotationSpan& span = spans[use.span];
      Block b;
      b.pid = pid, b.start = span.start, b.end = span.end;
      b.stage = stage, b.op = op;
      if (use.has_microbatch) b.microbatch = use.microbatch;
      b.pp_rank = tracks ? tracks->pp_rank : 0;
      b.members.push_back({span.start, span.end, span.tid});
      return b;
    };
    if (is_pp_compute_op(op)) {
      if (!tracks || !tracks->main_compute_track) continue;
      const std::vector<int64_t>& main_tracks = sorted_tracks.at(pid).first;
      auto on_main = [&](int64_t tid) { return std::binary_search(main_tracks.begin(), main_tracks.end(), tid); };
      size_t k = 0;
      while (k < key_uses.size()) {
        Ns chain_end = spans[key_uses[k].span].end;
        size_t next = k + 1;
        while (next < key_uses.size() && spans[key_uses[next].span].start <= chain_end) {
          chain_end = std::max(chain_end, spans[key_uses[next].span].end);
          ++next;
        }
        std::optional<Block> block;
        for (size_t m = k; m < next; ++m) {
          const auto& span = spans[key_uses[m].span];
          if (!on_main(span.tid)) continue;
          if (!block) {
            block = make(key_uses[m]);
          } else {
            block->start = std::min(block->start, span.start);
            block->end = std::max(block->end, span.end);
            block->members.push_back({span.start, span.end, span.tid});
          }
        }
        if (block) blocks.push_back(std::move(*block));
        k = next;
      }
    } else if (op == "UNSHARD") {
      if (!tracks) continue;
      const std::vector<int64_t>& u = sorted_tracks.at(pid).second;
      for (const Use& use : key_uses)
        if (std::binary_search(u.begin(), u.end(), spans[use.span].tid)) blocks.push_back(make(use));
    } else {
      for (const Use& use : key_uses) blocks.push_back(make(use));
    }
  }
  return blocks;
}

}  // namespace

BlockParts build_blocks(const std::vector<AnnotationSpan>& spans, const std::vector<PidTracks>& pids,
                        const Rules& rules) {
  PidTracksByPid tracks_of;
  // Sorted once per pid, not per key: a trace can split its main track into as many
  // sub-tracks as it has spans, and have as many keys.
  SortedTracksByPid sorted_tracks;
  for (const auto& t : pids) {
    tracks_of[t.pid] = &t;
    auto& [main_tracks, unshard_tracks] = sorted_tracks[t.pid];
    main_tracks = t.main_compute_subtracks;
    if (t.main_compute_track) main_tracks.push_back(*t.main_compute_track);
    std::sort(main_tracks.begin(), main_tracks.end());
    unshard_tracks = t.unshard_tracks;
    std::sort(unshard_tracks.begin(), unshard_tracks.end());
  }
  const std::vector<Use> uses = sorted_uses(spans, rules);
  // Parts of whole keys: a range's part starts at the first key that starts in it.
  std::vector<size_t> starts;
  for (size_t r = 0; r < range_count(uses.size()); ++r) {
    size_t at = r * events_per_range;
    while (at > 0 && at < uses.size() && uses[at].same_key(uses[at - 1])) ++at;
    if (at < uses.size() && (starts.empty() || at > starts.back())) starts.push_back(at);
  }
  starts.push_back(uses.size());
  BlockParts parts(starts.size() - 1);
  for_each_index(parts.size(), [&](size_t k) {
    const std::span<const Use> part(uses.data() + starts[k], starts[k + 1] - starts[k]);
    parts[k] = blocks_of(part, spans, tracks_of, sorted_tracks);
  });
  return parts;
}

}  // namespace tracelane
