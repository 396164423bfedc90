// Pipeline-parallel arrows.
//
// torch.distributed.pipelining wraps each schedule action in a "PP:<action>" range; on
// the GPU these become annotation spans. Compute actions (F, B) can be split across
// tracks, so their spans are chained per (pid, stage, op, microbatch) and a chain counts
// only where it touches the main compute annotation track. SEND/RECV and UNSHARD spans
// are blocks as they are.
//
// Repeated blocks of one key (several microbatch copies, retries) are paired by nearest
// midpoint: all (source, destination) pairs sorted by the distance of their midpoints,
// taking a pair whenever both sides are still free. This greedy matching keeps arrows
// short and deterministic.
#include "tracelane/pp_flows.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <queue>
#include <tuple>

#include "tracelane/decimal_time.hpp"
#include "tracelane/event_writer.hpp"
#include "tracelane/rules.hpp"

namespace tracelane {

namespace {

// Reads digits at `pos`; false when there are none or too many to be a stage/microbatch.
bool read_number(std::string_view text, size_t& pos, int64_t& value, bool required) {
  size_t begin = pos;
  value = 0;
  while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
    if (pos - begin >= 12) return false;
    value = value * 10 + (text[pos] - '0');
    ++pos;
  }
  return pos > begin || !required;
}

// Parses "<stage><op>[<microbatch>]" that must fill `text` exactly.
std::optional<PpAction> parse_action_body(std::string_view text) {
  static const char* ops[] = {"SEND_F", "RECV_F", "SEND_B", "RECV_B", "UNSHARD", "RESHARD", "REDUCE_GRAD",
                              "F",      "I",      "W",      "B"};
  size_t pos = 0;
  PpAction action;
  if (!read_number(text, pos, action.stage, true)) return std::nullopt;
  for (const char* op : ops) {
    std::string_view candidate(op);
    if (text.substr(pos, candidate.size()) != candidate) continue;
    size_t after = pos + candidate.size();
    int64_t microbatch = 0;
    size_t end = after;
    if (!read_number(text, end, microbatch, false) || end != text.size()) continue;
    action.op = op;
    if (end > after) action.microbatch = microbatch;
    bool takes_microbatch = action.op != "UNSHARD" && action.op != "RESHARD" && action.op != "REDUCE_GRAD";
    if (!takes_microbatch && action.microbatch) return std::nullopt;
    return action;
  }
  return std::nullopt;
}

}  // namespace

bool is_pp_compute_op(std::string_view op) { return op == "F" || op == "I" || op == "W" || op == "B"; }

std::vector<PpAction> parse_pp_actions(std::string_view name) {
  if (name.substr(0, 3) != "PP:") return {};
  std::string_view body = name.substr(3);
  constexpr std::string_view kOverlap = ")OVERLAP_F_B";
  if (!body.empty() && body.front() == '(' && body.size() > kOverlap.size() + 1 &&
      body.substr(body.size() - kOverlap.size()) == kOverlap) {
    std::string_view inner = body.substr(1, body.size() - 1 - kOverlap.size());
    size_t semicolon = inner.find(';');
    if (semicolon == std::string_view::npos) return {};
    auto first = parse_action_body(inner.substr(0, semicolon));
    auto second = parse_action_body(inner.substr(semicolon + 1));
    if (!first || !second || !is_pp_compute_op(first->op) || !is_pp_compute_op(second->op)) return {};
    return {*first, *second};
  }
  auto action = parse_action_body(body);
  if (!action) return {};
  return {*action};
}

std::optional<PpAction> parse_pp_action(std::string_view name) {
  auto actions = parse_pp_actions(name);
  if (actions.size() != 1) return std::nullopt;
  return actions[0];
}

namespace {

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
  std::pair<int64_t, Ns> place(Ns t) const {
    const Member* best = &members.front();
    Ns best_distance = INT64_MAX;
    for (const Member& m : members) {
      Ns distance = t < m.start ? m.start - t : (t > m.end ? t - m.end : 0);
      if (distance < best_distance) best = &m, best_distance = distance;
    }
    return {best->tid, std::clamp(t, best->start, best->end)};
  }
};

using BlockKey = std::tuple<int64_t, int64_t, std::string, int64_t>;  // pid, stage, op, microbatch (-1: none)

std::vector<Block> build_blocks(const std::vector<AnnotationSpan>& spans, const std::vector<PidTracks>& pids,
                                const Rules& rules) {
  std::map<int64_t, const PidTracks*> tracks_of;
  for (const auto& t : pids) tracks_of[t.pid] = &t;
  struct Use {
    size_t span;
    PpAction action;
  };
  std::map<BlockKey, std::vector<Use>> by_key;  // in input order
  for (size_t i = 0; i < spans.size(); ++i) {
    for (PpAction& action : rules.pp_actions(spans[i].name)) {
      if (action.op == "RESHARD" || action.op == "REDUCE_GRAD") continue;  // no blocks (SPEC 9.5)
      BlockKey key{spans[i].pid, action.stage, action.op, action.microbatch.value_or(-1)};
      by_key[key].push_back({i, std::move(action)});
    }
  }
  std::vector<Block> blocks;
  for (auto& [key, uses] : by_key) {
    // Named references, not a structured binding: clang before 16 cannot capture bindings
    // in the lambdas below.
    const int64_t& pid = std::get<0>(key);
    const int64_t& stage = std::get<1>(key);
    const std::string& op = std::get<2>(key);
    auto tracks_it = tracks_of.find(pid);
    const PidTracks* tracks = tracks_it == tracks_of.end() ? nullptr : tracks_it->second;
    std::stable_sort(uses.begin(), uses.end(), [&](const Use& a, const Use& b) {
      const auto &x = spans[a.span], &y = spans[b.span];
      return x.start != y.start ? x.start < y.start : (x.end - x.start) < (y.end - y.start);
    });
    auto make = [&](const Use& use) {
      const AnnotationSpan& span = spans[use.span];
      Block b;
      b.pid = pid, b.start = span.start, b.end = span.end;
      b.stage = stage, b.op = op, b.microbatch = use.action.microbatch;
      b.pp_rank = tracks ? tracks->pp_rank : 0;
      b.members.push_back({span.start, span.end, span.tid});
      return b;
    };
    if (is_pp_compute_op(op)) {
      if (!tracks || !tracks->main_compute_track) continue;
      auto on_main = [&](int64_t tid) {
        return tid == *tracks->main_compute_track ||
               std::find(tracks->main_compute_subtracks.begin(), tracks->main_compute_subtracks.end(), tid) !=
                   tracks->main_compute_subtracks.end();
      };
      size_t k = 0;
      while (k < uses.size()) {
        Ns chain_end = spans[uses[k].span].end;
        size_t next = k + 1;
        while (next < uses.size() && spans[uses[next].span].start <= chain_end) {
          chain_end = std::max(chain_end, spans[uses[next].span].end);
          ++next;
        }
        std::optional<Block> block;
        for (size_t m = k; m < next; ++m) {
          const auto& span = spans[uses[m].span];
          if (!on_main(span.tid)) continue;
          if (!block) {
            block = make(uses[m]);
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
      for (const Use& use : uses) {
        const auto& u = tracks->unshard_tracks;
        if (std::find(u.begin(), u.end(), spans[use.span].tid) != u.end()) blocks.push_back(make(use));
      }
    } else {
      for (const Use& use : uses) blocks.push_back(make(use));
    }
  }
  return blocks;
}

// Greedy nearest-midpoint matching; returns (source, destination) index pairs in the
// order taken. Indices refer to the given vectors.
//
// SPEC 7 defines it as: all pairs sorted by |midpoint difference|, ties by source then
// destination order, taken while both sides are free. Materialising all pairs is
// quadratic, and a long capture repeats each key once per step, so this produces the
// same sequence lazily: each source walks its destinations outwards from its own
// midpoint (nearest first; equal distances by destination order), and a heap keyed
// (distance, source, destination) always holds each free source's next candidate. A
// popped candidate whose destination is taken is exactly a pair the full sort would skip.
}  // namespace

std::vector<std::pair<size_t, size_t>> pair_by_nearest_midpoint(const std::vector<Ns>& source_sums,
                                                                const std::vector<Ns>& destination_sums) {
  using Wide = __int128;
  size_t n = source_sums.size(), m = destination_sums.size();
  std::vector<std::pair<size_t, size_t>> pairs;
  if (n == 0 || m == 0) return pairs;
  std::vector<size_t> by_mid(m);
  std::iota(by_mid.begin(), by_mid.end(), size_t(0));
  std::stable_sort(by_mid.begin(), by_mid.end(),
                   [&](size_t a, size_t b) { return destination_sums[a] < destination_sums[b]; });
  std::vector<Wide> sorted_mid(m);
  for (size_t k = 0; k < m; ++k) sorted_mid[k] = destination_sums[by_mid[k]];

  struct Cursor {
    Wide mid = 0;
    ptrdiff_t left = -1, right = 0;  // next unvisited positions in by_mid on each side
    std::vector<size_t> group;       // destinations at the current distance, by index
    size_t next_in_group = 0;
    Wide group_distance = 0;
  };
  std::vector<Cursor> cursors(n);
  // Moves a source to its next candidate; false when it has none left.
  auto advance = [&](Cursor& c) {
    if (c.next_in_group < c.group.size()) return true;
    c.group.clear();
    c.next_in_group = 0;
    bool has_left = c.left >= 0, has_right = c.right < ptrdiff_t(m);
    if (!has_left && !has_right) return false;
    Wide left_distance = has_left ? c.mid - sorted_mid[size_t(c.left)] : 0;
    Wide right_distance = has_right ? sorted_mid[size_t(c.right)] - c.mid : 0;
    Wide d = !has_left ? right_distance : !has_right ? left_distance : std::min(left_distance, right_distance);
    while (c.left >= 0 && c.mid - sorted_mid[size_t(c.left)] == d) c.group.push_back(by_mid[size_t(c.left--)]);
    while (c.right < ptrdiff_t(m) && sorted_mid[size_t(c.right)] - c.mid == d)
      c.group.push_back(by_mid[size_t(c.right++)]);
    std::sort(c.group.begin(), c.group.end());
    c.group_distance = d;
    return true;
  };
  using Entry = std::tuple<Wide, size_t, size_t>;  // (distance, source, destination)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
  auto push_next = [&](size_t s) {
    Cursor& c = cursors[s];
    if (!advance(c)) return;
    heap.emplace(c.group_distance, s, c.group[c.next_in_group++]);
  };
  for (size_t s = 0; s < n; ++s) {
    Cursor& c = cursors[s];
    c.mid = source_sums[s];
    c.right = std::lower_bound(sorted_mid.begin(), sorted_mid.end(), c.mid) - sorted_mid.begin();
    c.left = c.right - 1;
    push_next(s);
  }
  std::vector<bool> destination_taken(m);
  while (!heap.empty() && pairs.size() < std::min(n, m)) {
    auto [distance, s, d] = heap.top();
    heap.pop();
    if (destination_taken[d]) {
      push_next(s);
      continue;
    }
    destination_taken[d] = true;
    pairs.push_back({s, d});
  }
  return pairs;
}

namespace {

std::vector<std::pair<size_t, size_t>> pair_blocks(const std::vector<const Block*>& sources,
                                                   const std::vector<const Block*>& destinations) {
  std::vector<Ns> source_sums, destination_sums;
  for (const Block* b : sources) source_sums.push_back(b->start + b->end);
  for (const Block* b : destinations) destination_sums.push_back(b->start + b->end);
  return pair_by_nearest_midpoint(source_sums, destination_sums);
}

class FlowMaker {
 public:
  explicit FlowMaker(PpResult& result) : result_(result) {}

  // Returns whether the flow was written; the caller counts unmatched.
  bool add(const Block& s, const Block& d, const char* cat, bool strictly_forward) {
    int64_t id = next_id_++;
    Ns end = std::max(s.start, d.start);
    if (strictly_forward && end == s.start) end += 1;
    if (end > d.end) return false;
    PpFlow flow;
    flow.cat = cat;
    flow.name = s.label() + " -> " + d.label();
    flow.id = id;
    auto [source_tid, source_ts] = s.place(s.start);
    auto [destination_tid, destination_ts] = d.place(end);
    flow.source_pid = s.pid, flow.source_tid = source_tid, flow.source_ts = source_ts;
    flow.destination_pid = d.pid, flow.destination_tid = destination_tid, flow.destination_ts = destination_ts;
    flow.source_pp_rank = s.pp_rank, flow.destination_pp_rank = d.pp_rank;
    flow.source_stage = s.stage, flow.destination_stage = d.stage;
    flow.source_operation = s.op, flow.destination_operation = d.op;
    flow.microbatch = s.microbatch ? s.microbatch : d.microbatch;
    result_.flows.push_back(std::move(flow));
    return true;
  }

 private:
  PpResult& result_;
  int64_t next_id_ = 1000000000000;  // 1e12, SPEC 7
};

}  // namespace

PpResult build_pp_flows(const std::vector<AnnotationSpan>& spans, const std::vector<PidTracks>& pids,
                        bool cross_rank, const Rules* rules) {
  PpResult result;
  std::vector<Block> blocks = build_blocks(spans, pids, rules ? *rules : Rules::defaults());
  FlowMaker maker(result);
  PpCounts& counts = result.counts;
  // Blocks by key, each list in block order, so no pass scans all blocks per key.
  using GlobalKey = std::tuple<int64_t, std::string, int64_t>;          // stage, op, mb
  using LocalKey = std::tuple<int64_t, int64_t, std::string, int64_t>;  // pid, stage, op, mb
  std::map<GlobalKey, std::vector<const Block*>> across_pids;
  std::map<LocalKey, std::vector<const Block*>> within_pid;
  std::map<std::pair<int64_t, int64_t>, std::vector<const Block*>> compute_of_stage;  // (pid, stage)
  for (const Block& b : blocks) {
    across_pids[{b.stage, b.op, b.microbatch.value_or(-1)}].push_back(&b);
    within_pid[{b.pid, b.stage, b.op, b.microbatch.value_or(-1)}].push_back(&b);
    if (is_pp_compute_op(b.op)) compute_of_stage[{b.pid, b.stage}].push_back(&b);
  }
  auto blocks_of = [](const auto& index, const auto& key) {
    auto it = index.find(key);
    return it == index.end() ? std::vector<const Block*>{} : it->second;
  };

  if (cross_rank) {
    // SEND_F s -> RECV_F s+1, SEND_B s -> RECV_B s-1, same microbatch, across pids.
    std::map<std::tuple<int64_t, std::string, int64_t>, bool> recv_keys_looked_for;
    std::map<std::tuple<int64_t, std::string, int64_t>, int> send_keys;  // (stage, op, mb)
    for (const Block& b : blocks)
      if (b.op == "SEND_F" || b.op == "SEND_B") send_keys[{b.stage, b.op, b.microbatch.value_or(-1)}] = 0;
    for (const auto& [key, unused] : send_keys) {
      const auto& [stage, op, microbatch] = key;
      std::string recv_op = op == "SEND_F" ? "RECV_F" : "RECV_B";
      int64_t recv_stage = op == "SEND_F" ? stage + 1 : stage - 1;
      recv_keys_looked_for[{recv_stage, recv_op, microbatch}] = true;
      auto sources = blocks_of(across_pids, GlobalKey{stage, op, microbatch});
      auto destinations = blocks_of(across_pids, GlobalKey{recv_stage, recv_op, microbatch});
      auto pairs = pair_blocks(sources, destinations);
      for (auto [s, d] : pairs) {
        if (maker.add(*sources[s], *destinations[d], "pp_send_recv", true))
          ++counts.send_recv_pairs;
        else
          counts.send_recv_unmatched += 2;
      }
      counts.send_recv_unmatched += sources.size() + destinations.size() - 2 * pairs.size();
    }
    for (const Block& b : blocks)
      if ((b.op == "RECV_F" || b.op == "RECV_B") &&
          !recv_keys_looked_for.count({b.stage, b.op, b.microbatch.value_or(-1)}))
        ++counts.send_recv_unmatched;
  }

  // Rank-local: RECV_x -> x and x -> SEND_x within one pid, same stage and microbatch.
  std::map<std::tuple<int64_t, int64_t, int64_t>, bool> local_keys;  // (pid, stage, mb)
  for (const Block& b : blocks)
    if (b.op != "UNSHARD") local_keys[{b.pid, b.stage, b.microbatch.value_or(-1)}] = true;
  for (const auto& [key, unused] : local_keys) {
    const int64_t& pid = std::get<0>(key);  // not a binding: captured below (clang < 16)
    const int64_t& stage = std::get<1>(key);
    const int64_t& microbatch = std::get<2>(key);
    // I (input gradient, zero-bubble schedules) sits between RECV_B and SEND_B like B.
    for (const char* x : {"F", "B", "I"}) {
      std::string direction = x[0] == 'F' ? "F" : "B";
      std::string compute = x, recv = "RECV_" + direction, send = "SEND_" + direction;
      auto of_op = [&](const std::string& op) { return blocks_of(within_pid, LocalKey{pid, stage, op, microbatch}); };
      auto computes = of_op(compute);
      for (const auto& [sources, destinations] :
           {std::pair{of_op(recv), computes}, std::pair{computes, of_op(send)}}) {
        if (sources.empty() || destinations.empty()) continue;
        auto pairs = pair_blocks(sources, destinations);
        for (auto [s, d] : pairs) {
          if (maker.add(*sources[s], *destinations[d], "pp_compute_dependency", false))
            ++counts.compute_dependency_pairs;
          else
            counts.compute_dependency_unmatched += 2;
        }
        counts.compute_dependency_unmatched += sources.size() + destinations.size() - 2 * pairs.size();
      }
    }
  }

  // Unshard: each UNSHARD block -> the first F/B block of its pid and stage starting at or after it.
  for (auto& [key, list] : compute_of_stage)
    std::stable_sort(list.begin(), list.end(), [](const Block* a, const Block* b) {
      return a->start != b->start ? a->start < b->start : a->end < b->end;
    });
  for (const Block& u : blocks) {
    if (u.op != "UNSHARD") continue;
    const Block* first = nullptr;
    auto it = compute_of_stage.find({u.pid, u.stage});
    if (it != compute_of_stage.end()) {
      auto at = std::lower_bound(it->second.begin(), it->second.end(), u.start,
                                 [](const Block* b, Ns start) { return b->start < start; });
      if (at != it->second.end()) first = *at;
    }
    if (!first) {
      ++counts.unshard_compute_unmatched;
      continue;
    }
    if (maker.add(u, *first, "pp_unshard_dependency", false))
      ++counts.unshard_compute_pairs;
    else
      ++counts.unshard_compute_unmatched;
  }
  return result;
}

void append_pp_flow_events(const std::vector<PpFlow>& flows, Trace& trace) {
  for (const PpFlow& flow : flows) {
    std::string args = "{\"source_pp_rank\": " + std::to_string(flow.source_pp_rank) +
                       ", \"destination_pp_rank\": " + std::to_string(flow.destination_pp_rank) +
                       ", \"source_stage\": " + std::to_string(flow.source_stage) +
                       ", \"destination_stage\": " + std::to_string(flow.destination_stage) +
                       ", \"source_operation\": \"" + flow.source_operation +
                       "\", \"destination_operation\": \"" + flow.destination_operation + "\", \"microbatch\": " +
                       (flow.microbatch ? std::to_string(*flow.microbatch) : std::string("null")) + "}";
    for (int end = 0; end < 2; ++end) {
      EventBuilder builder;
      builder.string("name", flow.name).string("cat", flow.cat).string("ph", end ? "f" : "s").string("bp", "e");
      int64_t pid = end ? flow.destination_pid : flow.source_pid;
      int64_t tid = end ? flow.destination_tid : flow.source_tid;
      Ns ts = end ? flow.destination_ts : flow.source_ts;
      builder.integer("pid", pid, kPid).integer("tid", tid, kTid).time("ts", ts, kTs).integer("id", flow.id, kId);
      builder.raw("args", args);
      Event event = builder.finish(trace);
      event.ph = end ? "f" : "s";
      event.pp_flow = true;
      event.pid = Id{Id::Kind::integer, pid};
      event.tid = Id{Id::Kind::integer, tid};
      event.id = Id{Id::Kind::integer, flow.id};
      event.ts = Time{true, true, ts};
      trace.events.push_back(event);
    }
  }
}

}  // namespace tracelane
