// Pipeline-parallel arrows.
//
// torch.distributed.pipelining wraps each schedule action in a "PP:<action>" range; on
// the GPU these become annotation spans. Compute actions (F, B) can be split across
// tracks, so their spans are chained per (pid, stage, op, microbatch) and a chain counts
// only where it touches the main compute annotation track. SEND/RECV and UNSHARD spans
// are blocks as they are (pp_blocks.cpp makes the blocks).
//
// Repeated blocks of one key (several microbatch copies, retries) are paired by nearest
// midpoint: all (source, destination) pairs sorted by the distance of their midpoints,
// taking a pair whenever both sides are still free. This greedy matching keeps arrows
// short and deterministic.
#include "tracelane/pp_flows.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <map>
#include <numeric>
#include <queue>
#include <span>
#include <tuple>

#include "event_writer.hpp"
#include "parallel_ranges.hpp"
#include "pp_blocks.hpp"
#include "tracelane/decimal_time.hpp"
#include "tracelane/rules.hpp"

namespace tracelane {

namespace {

// Greedy nearest-midpoint matching; returns (source, destination) index pairs in the
// order taken. Indices refer to the given vectors.
//
// SPEC 7 defines it as: all pairs sorted by |midpoint difference|, ties by source then
// destination order, taken while both sides are free. Scanning that order and taking the
// free pairs is the same as taking, again and again, the smallest free pair by (distance,
// source, destination); this finds that pair among O(1) candidates per point, so the whole
// matching is O((n + m) log(n + m)) on every input (an earlier version walked each
// source's destinations outwards one by one, and n sources all left of n destinations
// made it walk n^2 taken ones).
//
// Points are grouped by midpoint into "places" on the line, kept in a list of the places
// that still hold a free point. The smallest free pair is:
// - at distance 0, when some place holds both a free source and a free destination: the
//   smallest such (first free source, first free destination) of one place;
// - otherwise between two places adjacent in the list: any place between the two sides
//   of a pair holds only sources or only destinations and so makes a shorter pair with
//   one side. Its sides are the first free source and the first free destination of the
//   two places.
// A min-heap holds these candidates. Taking a pair changes only the two places of its
// sides (their first free points, or the list when one empties), so each take pushes the
// few new candidates there; a popped candidate with a taken side is dropped, and one with
// both sides free is a real pair with its true key, so the smallest popped is the
// smallest free pair.
}  // namespace

std::vector<std::pair<size_t, size_t>> pair_by_nearest_midpoint(const std::vector<Ns>& source_sums,
                                                                const std::vector<Ns>& destination_sums) {
  using Wide = __int128;
  size_t n = source_sums.size(), m = destination_sums.size();
  std::vector<std::pair<size_t, size_t>> pairs;
  if (n == 0 || m == 0) return pairs;
  auto by_value = [](const std::vector<Ns>& sums) {
    std::vector<size_t> order(sums.size());
    std::iota(order.begin(), order.end(), size_t(0));
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return sums[a] < sums[b]; });
    return order;  // by value, equal values by index
  };
  std::vector<size_t> sources = by_value(source_sums), destinations = by_value(destination_sums);

  struct Place {
    Ns value = 0;
    size_t sources_begin = 0, sources_end = 0;            // free ones: [sources_begin, sources_end) of `sources`
    size_t destinations_begin = 0, destinations_end = 0;  // the same in `destinations`
    ptrdiff_t previous = -1, next = -1;                   // neighbours that still hold a free point
    bool has_source() const { return sources_begin < sources_end; }
    bool has_destination() const { return destinations_begin < destinations_end; }
  };
  std::vector<Place> places;
  std::vector<size_t> place_of_source(n), place_of_destination(m);
  for (size_t i = 0, j = 0; i < n || j < m;) {
    Ns value = j == m || (i < n && source_sums[sources[i]] <= destination_sums[destinations[j]])
                   ? source_sums[sources[i]]
                   : destination_sums[destinations[j]];
    Place p;
    p.value = value;
    p.sources_begin = i;
    while (i < n && source_sums[sources[i]] == value) place_of_source[sources[i++]] = places.size();
    p.sources_end = i;
    p.destinations_begin = j;
    while (j < m && destination_sums[destinations[j]] == value) place_of_destination[destinations[j++]] = places.size();
    p.destinations_end = j;
    p.previous = ptrdiff_t(places.size()) - 1;
    p.next = ptrdiff_t(places.size()) + 1;
    places.push_back(p);
  }
  places.back().next = -1;

  using Entry = std::tuple<Wide, size_t, size_t>;  // (distance, source, destination)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
  auto push_within = [&](const Place& p) {
    if (p.has_source() && p.has_destination())
      heap.emplace(Wide(0), sources[p.sources_begin], destinations[p.destinations_begin]);
  };
  auto push_between = [&](ptrdiff_t a, ptrdiff_t b) {
    if (a < 0 || b < 0) return;
    const Place &x = places[size_t(a)], &y = places[size_t(b)];
    Wide distance = Wide(x.value) - Wide(y.value);
    if (distance < 0) distance = -distance;
    if (x.has_source() && y.has_destination())
      heap.emplace(distance, sources[x.sources_begin], destinations[y.destinations_begin]);
    if (y.has_source() && x.has_destination())
      heap.emplace(distance, sources[y.sources_begin], destinations[x.destinations_begin]);
  };
  for (size_t k = 0; k < places.size(); ++k) {
    push_within(places[k]);
    push_between(ptrdiff_t(k), places[k].next);
  }
  // After a place lost its first free source or destination: new candidates there.
  auto changed = [&](size_t k) {
    Place& p = places[k];
    if (!p.has_source() && !p.has_destination()) {
      if (p.previous >= 0) places[size_t(p.previous)].next = p.next;
      if (p.next >= 0) places[size_t(p.next)].previous = p.previous;
      push_between(p.previous, p.next);
      return;
    }
    push_within(p);
    push_between(p.previous, ptrdiff_t(k));
    push_between(ptrdiff_t(k), p.next);
  };
  std::vector<bool> source_taken(n), destination_taken(m);
  size_t most = std::min(n, m);
  while (!heap.empty() && pairs.size() < most) {
    auto [distance, s, d] = heap.top();
    heap.pop();
    if (source_taken[s] || destination_taken[d]) continue;
    source_taken[s] = destination_taken[d] = true;
    pairs.push_back({s, d});
    // s and d are the first free points of their places (a later one would make a larger key).
    size_t ps = place_of_source[s], pd = place_of_destination[d];
    ++places[ps].sources_begin;
    ++places[pd].destinations_begin;
    changed(ps);
    if (pd != ps) changed(pd);
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
  FlowMaker(PpResult& result, int64_t first_id) : result_(result), next_id_(first_id) {}

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
    flow.source_operation = s.op(), flow.destination_operation = d.op();
    flow.microbatch = s.has_microbatch ? s.microbatch() : d.microbatch();
    result_.flows.push_back(std::move(flow));
    return true;
  }

 private:
  PpResult& result_;
  int64_t next_id_;  // SPEC 7: from 1e12, one per pair considered
};

// The blocks by key, each list in block order, so that no kind of arrow scans all blocks
// per key.
struct BlockIndex {
  // The operations are views of kPpOpsInOrder's static text (or of a caller's, to look up).
  using GlobalKey = std::tuple<int64_t, std::string_view, int64_t>;          // stage, op, mb
  using LocalKey = std::tuple<int64_t, int64_t, std::string_view, int64_t>;  // pid, stage, op, mb
  std::map<GlobalKey, std::vector<const Block*>> across_pids;
  std::map<LocalKey, std::vector<const Block*>> within_pid;
  // (pid, stage): its F/B/I blocks by (start, end)
  std::map<std::pair<int64_t, int64_t>, std::vector<const Block*>> compute_of_stage;

  explicit BlockIndex(const BlockParts& blocks) {
    for (const BlockPart& part : blocks)
      for (const Block& b : part.blocks) {
        across_pids[{b.stage, b.op(), b.microbatch().value_or(-1)}].push_back(&b);
        within_pid[{b.pid, b.stage, b.op(), b.microbatch().value_or(-1)}].push_back(&b);
        if (is_pp_compute_op(b.op())) compute_of_stage[{b.pid, b.stage}].push_back(&b);
      }
    for (auto& [key, list] : compute_of_stage)
      std::stable_sort(list.begin(), list.end(), [](const Block* a, const Block* b) {
        return a->start != b->start ? a->start < b->start : a->end < b->end;
      });
  }

  template <typename Index, typename Key>
  static std::vector<const Block*> of(const Index& index, const Key& key) {
    auto it = index.find(key);
    return it == index.end() ? std::vector<const Block*>{} : it->second;
  }
};

// Pairs `sources` with `destinations` (nearest midpoints) and writes an arrow for each
// pair; counts what stays unmatched.
void connect(const std::vector<const Block*>& sources, const std::vector<const Block*>& destinations, const char* cat,
             bool strictly_forward, FlowMaker& maker, size_t& paired, size_t& unmatched) {
  auto pairs = pair_blocks(sources, destinations);
  for (auto [s, d] : pairs) {
    if (maker.add(*sources[s], *destinations[d], cat, strictly_forward))
      ++paired;
    else
      unmatched += 2;
  }
  unmatched += sources.size() + destinations.size() - 2 * pairs.size();
}

// Across ranks: SEND_F s -> RECV_F s+1, SEND_B s -> RECV_B s-1, same microbatch.
void add_send_recv(const BlockParts& blocks, const BlockIndex& index, FlowMaker& maker, PpCounts& counts) {
  // Keys view static text: the blocks' operations and the literals here.
  std::map<std::tuple<int64_t, std::string_view, int64_t>, bool> recv_keys_looked_for;
  std::map<std::tuple<int64_t, std::string_view, int64_t>, int> send_keys;  // (stage, op, mb)
  for (const BlockPart& part : blocks)
    for (const Block& b : part.blocks)
      if (b.op() == "SEND_F" || b.op() == "SEND_B") send_keys[{b.stage, b.op(), b.microbatch().value_or(-1)}] = 0;
  for (const auto& [key, unused] : send_keys) {
    const auto& [stage, op, microbatch] = key;
    std::string_view recv_op = op == "SEND_F" ? "RECV_F" : "RECV_B";
    int64_t recv_stage = op == "SEND_F" ? stage + 1 : stage - 1;
    recv_keys_looked_for[{recv_stage, recv_op, microbatch}] = true;
    connect(BlockIndex::of(index.across_pids, BlockIndex::GlobalKey{stage, op, microbatch}),
            BlockIndex::of(index.across_pids, BlockIndex::GlobalKey{recv_stage, recv_op, microbatch}), "pp_send_recv",
            true, maker, counts.send_recv_pairs, counts.send_recv_unmatched);
  }
  for (const BlockPart& part : blocks)
    for (const Block& b : part.blocks)
      if ((b.op() == "RECV_F" || b.op() == "RECV_B") &&
          !recv_keys_looked_for.count({b.stage, b.op(), b.microbatch().value_or(-1)}))
        ++counts.send_recv_unmatched;
}

// Rank-local: RECV_x -> x and x -> SEND_x within one pid, same stage and microbatch.
void add_compute_dependencies(const BlockParts& blocks, const BlockIndex& index, FlowMaker& maker, PpCounts& counts) {
  std::map<std::tuple<int64_t, int64_t, int64_t>, bool> local_keys;  // (pid, stage, mb)
  for (const BlockPart& part : blocks)
    for (const Block& b : part.blocks)
      if (b.op() != "UNSHARD") local_keys[{b.pid, b.stage, b.microbatch().value_or(-1)}] = true;
  for (const auto& [key, unused] : local_keys) {
    const int64_t& pid = std::get<0>(key);  // not a binding: captured below (clang < 16)
    const int64_t& stage = std::get<1>(key);
    const int64_t& microbatch = std::get<2>(key);
    // I (input gradient, zero-bubble schedules) sits between RECV_B and SEND_B like B.
    for (const char* x : {"F", "B", "I"}) {
      std::string direction = x[0] == 'F' ? "F" : "B";
      std::string compute = x, recv = "RECV_" + direction, send = "SEND_" + direction;
      auto of_op = [&](const std::string& op) {
        return BlockIndex::of(index.within_pid, BlockIndex::LocalKey{pid, stage, op, microbatch});
      };
      auto computes = of_op(compute);
      for (const auto& [sources, destinations] : {std::pair{of_op(recv), computes}, std::pair{computes, of_op(send)}}) {
        if (sources.empty() || destinations.empty()) continue;
        connect(sources, destinations, "pp_compute_dependency", false, maker, counts.compute_dependency_pairs,
                counts.compute_dependency_unmatched);
      }
    }
  }
}

// Unshard: each UNSHARD block -> the first F/B block of its pid and stage starting at or
// after it.
void add_unshard(const BlockParts& blocks, const BlockIndex& index, FlowMaker& maker, PpCounts& counts) {
  for (const BlockPart& part : blocks)
    for (const Block& u : part.blocks) {
      if (u.op() != "UNSHARD") continue;
      const Block* first = nullptr;
      auto it = index.compute_of_stage.find({u.pid, u.stage});
      if (it != index.compute_of_stage.end()) {
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
}

}  // namespace

PpResult build_pp_flows(std::vector<AnnotationSpan> spans, const std::vector<PidTracks>& pids, bool cross_rank,
                        const Rules* rules, int64_t first_id) {
  PpResult result;
  const BlockParts blocks = build_blocks(std::move(spans), pids, rules ? *rules : Rules::defaults());
  BlockIndex index(blocks);
  FlowMaker maker(result, first_id);  // ids in this order: send/recv, compute, unshard
  if (cross_rank) add_send_recv(blocks, index, maker, result.counts);
  add_compute_dependencies(blocks, index, maker, result.counts);
  add_unshard(blocks, index, maker, result.counts);
  return result;
}

namespace {

// The unsigned values a viewer may take a flow id text for: Perfetto reads a number as an
// integer and a string as hex; others read strings as decimal. Values below `lowest` or
// above INT64_MAX cannot meet a synthetic id and are left out.
void add_id_readings(std::string_view text, int64_t lowest, std::vector<int64_t>& used) {
  auto add_digits = [&](std::string_view digits, int base) {
    if (digits.empty()) return;
    unsigned __int128 value = 0;
    for (char c : digits) {
      int digit = c >= '0' && c <= '9'   ? c - '0'
                  : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                         : 99;
      if (digit >= base) return;
      value = value * unsigned(base) + unsigned(digit);
      if (value > (unsigned __int128)INT64_MAX) return;
    }
    if (int64_t(value) >= lowest) used.push_back(int64_t(value));
  };
  if (text.size() >= 2 && text.front() == '"') {
    std::string_view inner = text.substr(1, text.size() - 2);
    add_digits(inner, 10);
    if (inner.size() > 2 && inner[0] == '0' && (inner[1] == 'x' || inner[1] == 'X')) inner.remove_prefix(2);
    add_digits(inner, 16);
    return;
  }
  // A JSON number: its integer part, also when written with a fraction or an exponent.
  long double value = std::strtold(std::string(text).c_str(), nullptr);
  if (value >= 0 && value < 9.2e18L && int64_t(value) >= lowest) used.push_back(int64_t(value));
}

}  // namespace

void append_pp_flow_events(std::vector<PpFlow> flows, Trace& trace) {
  if (flows.empty()) return;
  // The ids of the trace's own flow events, sorted and distinct: gathered and sorted over
  // ranges of events concurrently, then merged. Only those at or above the flows' first
  // id can move a flow's id (the flows' ids are increasing): a trace's own ids are most
  // often far below it (Kineto's correlation ids), and are not kept.
  const auto& events = trace.events;
  const int64_t lowest = flows.front().id;
  using Ids = std::vector<int64_t>;
  std::vector<Ids> found = gather_ranges<Ids>(events.size(), [&](size_t begin, size_t end, Ids& part) {
    for (size_t i = begin; i < end; ++i) {
      const Event& event = events[i];
      if (!event.is_flow() || event.dropped || !event.id.present()) continue;
      if ((event.changed & (1u << kId)) || event.id.is_int()) {
        if (event.final_id() >= lowest) part.push_back(event.final_id());
      } else {
        add_id_readings(event.id_text(kId), lowest, part);
      }
    }
    std::sort(part.begin(), part.end());
    part.erase(std::unique(part.begin(), part.end()), part.end());
  });
  std::vector<int64_t> used;
  std::vector<size_t> bounds = {0};  // the sorted runs in `used`, merged pairwise
  for (const auto& part : found) {
    used.insert(used.end(), part.begin(), part.end());
    bounds.push_back(used.size());
  }
  while (bounds.size() > 2) {
    std::vector<size_t> merged = {0};
    for (size_t k = 2; k < bounds.size(); k += 2) {
      std::inplace_merge(used.begin() + ptrdiff_t(bounds[k - 2]), used.begin() + ptrdiff_t(bounds[k - 1]),
                         used.begin() + ptrdiff_t(bounds[k]));
      merged.push_back(bounds[k]);
    }
    if (bounds.size() % 2 == 0) merged.push_back(bounds.back());  // an odd run out
    bounds = std::move(merged);
  }
  used.erase(std::unique(used.begin(), used.end()), used.end());
  // Flow ids are increasing (one per pair considered); each moves up by the used ids at
  // or below where it lands, so the flows keep their order and distinct ids.
  auto next_used = std::lower_bound(used.begin(), used.end(), flows.front().id);
  int64_t shift = 0;
  for (PpFlow& flow : flows) {
    int64_t id = flow.id + shift;
    while (next_used != used.end() && *next_used <= id) {
      if (*next_used == id) ++id, ++shift;
      ++next_used;
    }
    flow.id = id;
  }
  append_made_events(trace, flows.size(), 2, [&](size_t k, Trace& owner, Event* out) {
    const PpFlow& flow = flows[k];
    std::string args =
        "{\"source_pp_rank\": " + std::to_string(flow.source_pp_rank) +
        ", \"destination_pp_rank\": " + std::to_string(flow.destination_pp_rank) +
        ", \"source_stage\": " + std::to_string(flow.source_stage) +
        ", \"destination_stage\": " + std::to_string(flow.destination_stage) + ", \"source_operation\": \"" +
        flow.source_operation + "\", \"destination_operation\": \"" + flow.destination_operation +
        "\", \"microbatch\": " + (flow.microbatch ? std::to_string(*flow.microbatch) : std::string("null")) + "}";
    for (int end = 0; end < 2; ++end) {
      EventBuilder builder;
      builder.string("name", flow.name).string("cat", flow.cat).string("ph", end ? "f" : "s").string("bp", "e");
      int64_t pid = end ? flow.destination_pid : flow.source_pid;
      int64_t tid = end ? flow.destination_tid : flow.source_tid;
      Ns ts = end ? flow.destination_ts : flow.source_ts;
      builder.integer("pid", pid, kPid).integer("tid", tid, kTid).time("ts", ts, kTs).integer("id", flow.id, kId);
      builder.raw("args", args);
      Event event = builder.finish(owner);
      event.set_ph(end ? 'f' : 's');
      event.pp_flow = true;
      event.pid = Id{Id::Kind::integer, pid};
      event.tid = Id{Id::Kind::integer, tid};
      event.id = Id{Id::Kind::integer, flow.id};
      event.ts = Time{true, true, ts};
      out[end] = event;
    }
  });
}

}  // namespace tracelane
