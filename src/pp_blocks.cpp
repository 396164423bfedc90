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

static_assert(std::is_sorted(kPpOpsInOrder.begin(), kPpOpsInOrder.end()));
constexpr uint8_t kReduceGrad = 5, kReshard = 6, kUnshard = 9;
static_assert(kPpOpsInOrder[kReduceGrad] == "REDUCE_GRAD" && kPpOpsInOrder[kReshard] == "RESHARD" &&
              kPpOpsInOrder[kUnshard] == "UNSHARD");
uint8_t op_index(std::string_view op) {  // parse_pp_actions makes only these operations
  return uint8_t(std::lower_bound(kPpOpsInOrder.begin(), kPpOpsInOrder.end(), op) - kPpOpsInOrder.begin());
}

using PidTracksByPid = std::map<int64_t, const PidTracks*>;
using SortedTracksByPid = std::map<int64_t, std::pair<std::vector<int64_t>, std::vector<int64_t>>>;  // main, unshard

// One action of one span, which blocks are made of. Its key is (pid, stage, op by name,
// microbatch); it sorts by key, then by (start, length), then in input order. It holds
// what the blocks need of its span, so the spans go before the blocks are made.
struct Use {
  int64_t pid = 0, stage = 0, microbatch = -1;  // -1: none
  Ns start = 0, length = 0;
  int64_t tid = 0;
  uint32_t span = 0;   // spans are numbered in 32 bits (sorted_uses)
  uint8_t action = 0;  // its place among the span's actions (one or two)
  uint8_t op = 0;      // in kPpOpsInOrder
  bool has_microbatch = false;

  bool same_key(const Use& other) const {
    return pid == other.pid && stage == other.stage && op == other.op && microbatch == other.microbatch;
  }
  friend bool operator<(const Use& a, const Use& b) {
    return std::tie(a.pid, a.stage, a.op, a.microbatch, a.start, a.length, a.span, a.action) <
           std::tie(b.pid, b.stage, b.op, b.microbatch, b.start, b.length, b.span, b.action);
  }
};

// Every action of the spans that makes blocks, in block-key order and, within a key, by
// (start, length), ties in input order (no two uses are equal, so any sort gives this one
// order). The uses are read into one vector with room for two a span, the most a span has
// (parse_pp_actions), so it never grows: pages never written cost nothing. They are
// sorted by sort_distinct: in place on one thread, on more in ranges merged into one copy.
// Ranges read apart, sorted and merged in rounds held them up to 3.5x at --jobs 2, their
// vectors grown by doubling (gen600: 57 MiB). (tbb::parallel_sort, in place, hands its
// ranges between threads inside oneTBB, which TSan cannot see: tests/tsan.supp.)
std::vector<Use> sorted_uses(const std::vector<AnnotationSpan>& spans, const Rules& rules) {
  if (spans.size() > UINT32_MAX) throw Error("more than 2^32 annotation spans: too many to pair PP blocks");
  // A name's actions are parsed once: a trace repeats each stage, operation and
  // microbatch's name in every step. The names remembered are bounded (a trace of distinct
  // names starts over every kNamesRemembered).
  constexpr size_t kNamesRemembered = 4096;
  constexpr size_t kMostActionsOfASpan = 2;
  std::vector<Use> uses;
  uses.reserve(spans.size() * kMostActionsOfASpan);
  // A name's uses as they are made, less the span's own fields: the operation's index is
  // looked up once a name, not once a span (a search among the operations' names).
  struct Parsed {
    std::array<Use, kMostActionsOfASpan> uses;
    size_t count = 0;
  };
  std::unordered_map<std::string_view, Parsed> parsed;
  for (size_t i = 0; i < spans.size(); ++i) {
    if (parsed.size() == kNamesRemembered) parsed.clear();
    auto [known, fresh] = parsed.try_emplace(spans[i].name);
    if (fresh) {
      const std::vector<PpAction> actions = rules.pp_actions(spans[i].name);
      if (actions.size() > kMostActionsOfASpan) throw Error("internal: a PP annotation of more than two actions");
      for (size_t k = 0; k < actions.size(); ++k) {
        const PpAction& action = actions[k];
        const uint8_t op = op_index(action.op);
        if (op == kReshard || op == kReduceGrad) continue;  // no blocks (SPEC 9.5)
        Use& use = known->second.uses[known->second.count++];
        use.stage = action.stage;
        use.has_microbatch = action.microbatch.has_value();
        use.microbatch = action.microbatch.value_or(-1);
        use.action = uint8_t(k), use.op = op;
      }
    }
    const Parsed& name = known->second;
    for (size_t k = 0; k < name.count; ++k) {
      Use use = name.uses[k];
      use.pid = spans[i].pid;
      use.start = spans[i].start, use.length = spans[i].end - spans[i].start, use.tid = spans[i].tid;
      use.span = uint32_t(i);
      uses.push_back(use);
    }
  }
  sort_distinct(uses, std::less<Use>());
  return uses;
}

// The blocks `uses` make: whole keys, in key order. Each block's members are added to the
// part's pool as it is made (a block is finished before the next is begun); the pool has
// room for a member a use from the start, so it never moves and a block views its members
// from when it is begun.
BlockPart blocks_of(std::span<const Use> uses, const PidTracksByPid& tracks_of,
                    const SortedTracksByPid& sorted_tracks) {
  BlockPart part;
  part.blocks.reserve(uses.size());  // at most a block and a member a use
  part.members.reserve(uses.size());
  auto add_member = [&](const Use& use) {
    if (part.members.size() == part.members.capacity()) throw Error("internal: more PP block members than uses");
    part.members.push_back({use.start, use.start + use.length, use.tid});
  };
  for (size_t first = 0, last = 0; first < uses.size(); first = last) {
    last = first + 1;
    while (last < uses.size() && uses[last].same_key(uses[first])) ++last;
    const std::span<const Use> key_uses(uses.data() + first, last - first);
    const int64_t pid = uses[first].pid, stage = uses[first].stage;
    const uint8_t op = uses[first].op;
    auto tracks_it = tracks_of.find(pid);
    const PidTracks* tracks = tracks_it == tracks_of.end() ? nullptr : tracks_it->second;
    // A block of one member; extend_block() gives it more before the next is begun.
    auto begin_block = [&](const Use& use) {
      Block b;
      b.pid = pid, b.start = use.start, b.end = use.start + use.length;
      b.stage = stage, b.op_index = op;
      if (use.has_microbatch) b.set_microbatch(use.microbatch);
      b.pp_rank = tracks ? tracks->pp_rank : 0;
      add_member(use);
      b.members = std::span<const Member>(&part.members.back(), 1);
      part.blocks.push_back(b);
    };
    auto extend_block = [&](const Use& use) {
      Block& block = part.blocks.back();
      block.start = std::min(block.start, use.start);
      block.end = std::max(block.end, use.start + use.length);
      add_member(use);
      block.members = std::span<const Member>(block.members.data(), block.members.size() + 1);
    };
    if (is_pp_compute_op(kPpOpsInOrder[op])) {
      if (!tracks || !tracks->main_compute_track) continue;
      const std::vector<int64_t>& main_tracks = sorted_tracks.at(pid).first;
      auto on_main = [&](int64_t tid) { return std::binary_search(main_tracks.begin(), main_tracks.end(), tid); };
      size_t k = 0;
      while (k < key_uses.size()) {
        Ns chain_end = key_uses[k].start + key_uses[k].length;
        size_t next = k + 1;
        while (next < key_uses.size() && key_uses[next].start <= chain_end) {
          chain_end = std::max(chain_end, key_uses[next].start + key_uses[next].length);
          ++next;
        }
        bool begun = false;
        for (size_t m = k; m < next; ++m) {
          if (!on_main(key_uses[m].tid)) continue;
          if (!begun)
            begin_block(key_uses[m]);
          else
            extend_block(key_uses[m]);
          begun = true;
        }
        k = next;
      }
    } else if (op == kUnshard) {
      if (!tracks) continue;
      const std::vector<int64_t>& u = sorted_tracks.at(pid).second;
      for (const Use& use : key_uses)
        if (std::binary_search(u.begin(), u.end(), use.tid)) begin_block(use);
    } else {
      for (const Use& use : key_uses) begin_block(use);
    }
  }
  return part;
}

}  // namespace

BlockParts build_blocks(std::vector<AnnotationSpan> spans, const std::vector<PidTracks>& pids, const Rules& rules) {
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
  std::vector<AnnotationSpan>().swap(spans);  // the uses hold what the blocks need of them
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
    parts[k] = blocks_of(part, tracks_of, sorted_tracks);
  });
  return parts;
}

}  // namespace tracelane
