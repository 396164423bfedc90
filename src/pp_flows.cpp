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
#include <regex>
#include <tuple>

#include "tracelane/decimal_time.hpp"
#include "tracelane/event_writer.hpp"

namespace tracelane {

std::optional<PpAction> parse_pp_action(std::string_view name) {
  if (name.size() < 4 || name.substr(0, 3) != "PP:") return std::nullopt;
  static const std::regex action(R"(PP:(\d+)(SEND_F|RECV_F|SEND_B|RECV_B|F|B)(\d+))");
  static const std::regex unshard(R"(PP:(\d+)UNSHARD)");
  std::match_results<std::string_view::const_iterator> m;
  auto to_int = [](const auto& sub) {
    int64_t v = 0;
    for (auto it = sub.first; it != sub.second; ++it) {
      v = v * 10 + (*it - '0');
      if (v > (int64_t(1) << 40)) return int64_t(-1);
    }
    return v;
  };
  if (std::regex_match(name.begin(), name.end(), m, action)) {
    PpAction a;
    a.stage = to_int(m[1]);
    a.op = m[2].str();
    a.microbatch = to_int(m[3]);
    if (a.stage < 0 || *a.microbatch < 0) return std::nullopt;
    return a;
  }
  if (std::regex_match(name.begin(), name.end(), m, unshard)) {
    PpAction a;
    a.stage = to_int(m[1]);
    a.op = "UNSHARD";
    if (a.stage < 0) return std::nullopt;
    return a;
  }
  return std::nullopt;
}

namespace {

struct Block {
  int64_t pid = 0, tid = 0;
  Ns start = 0, end = 0;
  int64_t stage = 0;
  std::string op;
  std::optional<int64_t> microbatch;
  int pp_rank = 0;
  std::string label() const {
    return std::to_string(stage) + op + (microbatch ? std::to_string(*microbatch) : std::string());
  }
};

bool is_compute_op(const std::string& op) { return op == "F" || op == "B"; }

using BlockKey = std::tuple<int64_t, int64_t, std::string, int64_t>;  // pid, stage, op, microbatch (-1: none)

std::vector<Block> build_blocks(const std::vector<AnnotationSpan>& spans, const std::vector<PidTracks>& pids) {
  std::map<int64_t, const PidTracks*> tracks_of;
  for (const auto& t : pids) tracks_of[t.pid] = &t;
  std::map<BlockKey, std::vector<size_t>> by_key;  // span indices in input order
  std::vector<PpAction> actions(spans.size());
  for (size_t i = 0; i < spans.size(); ++i) {
    auto action = parse_pp_action(spans[i].name);
    if (!action) continue;
    actions[i] = *action;
    by_key[{spans[i].pid, action->stage, action->op, action->microbatch.value_or(-1)}].push_back(i);
  }
  std::vector<Block> blocks;
  for (auto& [key, members] : by_key) {
    const auto& [pid, stage, op, microbatch] = key;
    auto tracks_it = tracks_of.find(pid);
    const PidTracks* tracks = tracks_it == tracks_of.end() ? nullptr : tracks_it->second;
    std::stable_sort(members.begin(), members.end(), [&](size_t a, size_t b) {
      const auto &x = spans[a], &y = spans[b];
      return x.start != y.start ? x.start < y.start : (x.end - x.start) < (y.end - y.start);
    });
    auto make = [&](const AnnotationSpan& span) {
      Block b;
      b.pid = pid, b.tid = span.tid, b.start = span.start, b.end = span.end;
      b.stage = stage, b.op = op, b.microbatch = actions[&span - spans.data()].microbatch;
      b.pp_rank = tracks ? tracks->pp_rank : 0;
      return b;
    };
    if (is_compute_op(op)) {
      if (!tracks || !tracks->main_compute_track) continue;
      int64_t main = *tracks->main_compute_track;
      size_t k = 0;
      while (k < members.size()) {
        Ns chain_end = spans[members[k]].end;
        size_t next = k + 1;
        while (next < members.size() && spans[members[next]].start <= chain_end) {
          chain_end = std::max(chain_end, spans[members[next]].end);
          ++next;
        }
        std::optional<Block> block;
        for (size_t m = k; m < next; ++m) {
          const auto& span = spans[members[m]];
          if (span.tid != main) continue;
          if (!block) {
            block = make(span);
          } else {
            block->start = std::min(block->start, span.start);
            block->end = std::max(block->end, span.end);
          }
        }
        if (block) blocks.push_back(*block);
        k = next;
      }
    } else if (op == "UNSHARD") {
      if (!tracks) continue;
      for (size_t m : members) {
        const auto& u = tracks->unshard_tracks;
        if (std::find(u.begin(), u.end(), spans[m].tid) != u.end()) blocks.push_back(make(spans[m]));
      }
    } else {
      for (size_t m : members) blocks.push_back(make(spans[m]));
    }
  }
  return blocks;
}

// Greedy nearest-midpoint matching; returns (source, destination) index pairs in the
// order taken. Indices refer to the given vectors.
std::vector<std::pair<size_t, size_t>> pair_by_nearest_midpoint(const std::vector<const Block*>& sources,
                                                                const std::vector<const Block*>& destinations) {
  struct Candidate {
    __int128 distance;
    size_t source, destination;
  };
  std::vector<Candidate> candidates;
  candidates.reserve(sources.size() * destinations.size());
  for (size_t s = 0; s < sources.size(); ++s)
    for (size_t d = 0; d < destinations.size(); ++d) {
      __int128 a = (__int128)sources[s]->start + sources[s]->end;
      __int128 b = (__int128)destinations[d]->start + destinations[d]->end;
      candidates.push_back({a > b ? a - b : b - a, s, d});
    }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& x, const Candidate& y) { return x.distance < y.distance; });
  std::vector<bool> source_taken(sources.size()), destination_taken(destinations.size());
  std::vector<std::pair<size_t, size_t>> pairs;
  for (const auto& c : candidates) {
    if (source_taken[c.source] || destination_taken[c.destination]) continue;
    source_taken[c.source] = destination_taken[c.destination] = true;
    pairs.push_back({c.source, c.destination});
  }
  return pairs;
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
    flow.source_pid = s.pid, flow.source_tid = s.tid, flow.source_ts = s.start;
    flow.destination_pid = d.pid, flow.destination_tid = d.tid, flow.destination_ts = end;
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
                        bool cross_rank) {
  PpResult result;
  std::vector<Block> blocks = build_blocks(spans, pids);
  FlowMaker maker(result);
  PpCounts& counts = result.counts;
  auto select = [&](auto&& predicate) {
    std::vector<const Block*> out;
    for (const Block& b : blocks)
      if (predicate(b)) out.push_back(&b);
    return out;
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
      auto sources = select([&](const Block& b) {
        return b.op == op && b.stage == stage && b.microbatch.value_or(-1) == microbatch;
      });
      auto destinations = select([&](const Block& b) {
        return b.op == recv_op && b.stage == recv_stage && b.microbatch.value_or(-1) == microbatch;
      });
      auto pairs = pair_by_nearest_midpoint(sources, destinations);
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
    const auto& [pid, stage, microbatch] = key;
    for (const char* x : {"F", "B"}) {
      std::string compute = x, recv = std::string("RECV_") + x, send = std::string("SEND_") + x;
      auto of_op = [&](const std::string& op) {
        return select([&](const Block& b) {
          return b.pid == pid && b.stage == stage && b.op == op && b.microbatch.value_or(-1) == microbatch;
        });
      };
      auto computes = of_op(compute);
      for (const auto& [sources, destinations] :
           {std::pair{of_op(recv), computes}, std::pair{computes, of_op(send)}}) {
        if (sources.empty() || destinations.empty()) continue;
        auto pairs = pair_by_nearest_midpoint(sources, destinations);
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
  for (const Block& u : blocks) {
    if (u.op != "UNSHARD") continue;
    const Block* first = nullptr;
    for (const Block& b : blocks) {
      if (b.pid != u.pid || b.stage != u.stage || !is_compute_op(b.op) || b.start < u.start) continue;
      if (!first || b.start < first->start || (b.start == first->start && b.end < first->end)) first = &b;
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
      event.pid = Id{Id::Kind::integer, pid, {}};
      event.tid = Id{Id::Kind::integer, tid, {}};
      event.id = Id{Id::Kind::integer, flow.id, {}};
      event.ts = Time{true, true, ts};
      trace.events.push_back(event);
    }
  }
}

}  // namespace tracelane
