// The checks of `tracelane check` (check.hpp lists them), on the two documents as
// document.cpp reads them.
//
// Checking. Multisets keyed by canonical text (slices by identity without tid and
// args.stream; flows without tid; other events whole), an exact sweep per track for
// overlaps, and a sorted-starts / prefix-maximum-end index for "this ts lies in some X
// event of its track". Nothing here calls the compactor's code.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "check.hpp"
#include "document.hpp"

namespace tracelane::check {

namespace {

const std::set<std::string, std::less<>> kMeasuredCats = {"kernel",     "Kernel", "gpu_memcpy",
                                                          "gpu_memset", "Memcpy", "Memset"};

bool measured(const Event& e) { return kMeasuredCats.count(e.cat) > 0; }
bool cuda_sync_x(const Event& e) { return e.cat == "cuda_sync" && e.ph == "X"; }
bool slice(const Event& e) { return measured(e) || cuda_sync_x(e); }
bool annotation(const Event& e) { return e.cat == "gpu_user_annotation"; }
bool thread_metadata(const Event& e) {
  return e.ph == "M" && (e.name == "thread_name" || e.name == "thread_sort_index");
}
std::string track_key(const Event& e) { return e.pid + '\x1f' + e.tid; }
std::string identity(const Event& e) {
  return e.name + '\x1f' + e.cat + '\x1f' + e.ph + '\x1f' + e.pid + '\x1f' + e.ts_text + '\x1f' + e.dur_text + '\x1f' +
         e.args_no_stream;
}

// ---- Recording violations -----------------------------------------------------------------

class Recorder {
 public:
  Recorder(CheckReport& report, size_t max) : report_(report), max_(max) {}
  template <class Message>
  void add(ViolationKind kind, bool in_compacted, int64_t index, Message&& message) {
    ++report_.by_kind[size_t(kind)];
    if (report_.violations.size() < max_) report_.violations.push_back({kind, in_compacted, index, message()});
  }

 private:
  CheckReport& report_;
  size_t max_;
};

std::string shorten(std::string_view s, size_t max = 60) {
  return s.size() <= max ? std::string(s) : std::string(s.substr(0, max)) + "...";
}

std::string describe_slice(const Event& e) {
  return e.cat + " '" + shorten(e.name) + "' (pid " + e.pid + ", ts " + e.ts_text + ", dur " + e.dur_text + ")";
}

std::string describe_event(const Event& e) {
  if (!e.object) return "non-object event " + shorten(e.canon);
  std::string s = "ph " + (e.ph.empty() ? std::string("?") : e.ph);
  if (!e.cat.empty()) s += " cat " + shorten(e.cat, 30);
  s += " '" + shorten(e.name) + "' (pid " + (e.pid.empty() ? "-" : e.pid) + ", tid " + (e.tid.empty() ? "-" : e.tid);
  if (!e.ts_text.empty()) s += ", ts " + e.ts_text;
  return s + ")";
}

std::string span_text(Units start, Units end) { return "[" + units_text(start) + ", " + units_text(end) + "]"; }

// ---- The checks ---------------------------------------------------------------------------

struct Gpu {
  std::set<std::string> pids;         // canonical pids with measured slices (either file)
  std::set<std::string> old_streams;  // (pid, tid) of ORIGINAL's measured slices
};

// Every slice of ORIGINAL is in COMPACTED with the same identity, and no more.
void check_slices(const Document& original, const Document& compacted, CheckReport& report, Recorder& rec) {
  std::unordered_map<std::string, std::vector<uint32_t>> pool;  // identity -> ORIGINAL indices
  for (uint32_t i = 0; i < original.events.size(); ++i) {
    const Event& e = original.events[i];
    if (!slice(e)) continue;
    ++(measured(e) ? report.measured_slices : report.cuda_sync_events);
    pool[identity(e)].push_back(i);
  }
  for (auto& [key, indices] : pool) std::reverse(indices.begin(), indices.end());
  std::vector<uint32_t> extra;
  for (uint32_t j = 0; j < compacted.events.size(); ++j) {
    const Event& e = compacted.events[j];
    if (!slice(e)) continue;
    auto it = pool.find(identity(e));
    if (it == pool.end() || it->second.empty())
      extra.push_back(j);
    else
      it->second.pop_back();
  }
  std::vector<uint32_t> missing;
  for (const auto& [key, indices] : pool) missing.insert(missing.end(), indices.begin(), indices.end());
  std::sort(missing.begin(), missing.end());
  // A hint for each missing slice: an unmatched one of COMPACTED with its name, cat, pid and ts.
  std::unordered_multimap<std::string, uint32_t> near;
  for (uint32_t j : extra) {
    const Event& e = compacted.events[j];
    near.emplace(e.name + '\x1f' + e.cat + '\x1f' + e.pid + '\x1f' + e.ts_text, j);
  }
  for (uint32_t i : missing) {
    const Event& e = original.events[i];
    rec.add(ViolationKind::missing_slice, false, i, [&] {
      std::string m = describe_slice(e) + " has no identical slice in COMPACTED";
      auto it = near.find(e.name + '\x1f' + e.cat + '\x1f' + e.pid + '\x1f' + e.ts_text);
      if (it != near.end()) {
        const Event& c = compacted.events[it->second];
        m += "; COMPACTED #" + std::to_string(it->second) + " differs in";
        if (c.ph != e.ph) m += " ph";
        if (c.dur_text != e.dur_text) m += " dur (" + e.dur_text + " -> " + c.dur_text + ")";
        if (c.args_no_stream != e.args_no_stream) m += " args";
      }
      return m;
    });
  }
  for (uint32_t j : extra)
    rec.add(ViolationKind::extra_slice, true, j,
            [&] { return describe_slice(compacted.events[j]) + " is not a slice of ORIGINAL (or one too many)"; });
}

// No partial overlaps on GPU tracks of COMPACTED; no overlap at all between slices of a lane.
void check_tracks(const Document& compacted, CheckReport& report, Recorder& rec) {
  struct Item {
    Units start, end;
    uint32_t index;
    bool slice;
  };
  struct Track {
    std::vector<Item> items;
    bool has_slice = false, has_annotation = false;
    std::string pid, tid;
  };
  std::map<std::string, Track> tracks;
  for (uint32_t j = 0; j < compacted.events.size(); ++j) {
    const Event& e = compacted.events[j];
    if (!e.object || e.ph != "X" || !e.ts) continue;
    Track& track = tracks[track_key(e)];
    Units end = *e.ts + std::max<Units>(e.dur.value_or(0), 0);
    track.items.push_back({*e.ts, end, j, slice(e)});
    track.has_slice |= slice(e);
    track.has_annotation |= annotation(e);
    track.pid = e.pid;
    track.tid = e.tid;
  }
  for (auto& entry : tracks) {
    Track& track = entry.second;
    if (!track.has_slice && !track.has_annotation) continue;
    const bool lane = track.has_slice;
    std::string where = "(pid " + track.pid + ", tid " + track.tid + ")";
    if (track.has_slice) {
      ++report.lane_tracks;
      std::vector<Item> slices;
      for (const Item& item : track.items)
        if (item.slice) slices.push_back(item);
      std::sort(slices.begin(), slices.end(), [](const Item& a, const Item& b) {
        return std::tie(a.start, a.end, a.index) < std::tie(b.start, b.end, b.index);
      });
      const Item* reach = nullptr;  // the slice with the largest end so far
      for (const Item& item : slices) {
        if (reach && item.start < reach->end)
          rec.add(ViolationKind::lane_overlap, true, item.index, [&] {
            return "slices #" + std::to_string(reach->index) + " " + span_text(reach->start, reach->end) + " and #" +
                   std::to_string(item.index) + " " + span_text(item.start, item.end) + " overlap on lane " + where;
          });
        if (!reach || item.end > reach->end) reach = &item;
      }
    } else {
      ++report.annotation_tracks;
    }
    std::vector<Item>& items = track.items;
    std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
      return std::make_tuple(a.start, -a.end, a.index) < std::make_tuple(b.start, -b.end, b.index);
    });
    std::vector<const Item*> open;  // enclosing spans, innermost last
    for (const Item& item : items) {
      while (!open.empty() && open.back()->end <= item.start) open.pop_back();
      if (!open.empty() && item.end > open.back()->end) {
        const Item* other = open.back();
        if (lane && other->slice && item.slice) continue;  // reported as a lane overlap
        auto kind = lane ? ViolationKind::lane_partial_overlap : ViolationKind::annotation_partial_overlap;
        rec.add(kind, true, item.index, [&] {
          return "#" + std::to_string(other->index) + " " + span_text(other->start, other->end) + " and #" +
                 std::to_string(item.index) + " " + span_text(item.start, item.end) + " partially overlap on " +
                 (lane ? "lane track " : "annotation track ") + where;
        });
        continue;
      }
      open.push_back(&item);
    }
  }
}

// "ts lies within [start, end] of some X event of its (pid, tid)", in whole nanoseconds.
class Coverage {
 public:
  explicit Coverage(const Document& doc) {
    std::unordered_map<std::string, std::vector<std::pair<Units, Units>>> spans;
    for (const Event& e : doc.events)
      if (e.object && e.ph == "X" && e.ts)
        spans[track_key(e)].push_back({*e.ts, *e.ts + std::max<Units>(e.dur.value_or(0), 0)});
    for (auto& [key, list] : spans) {
      std::sort(list.begin(), list.end());
      Index& index = tracks_[key];
      Units reach = 0;
      for (size_t k = 0; k < list.size(); ++k) {
        reach = k == 0 ? list[k].second : std::max(reach, list[k].second);
        index.starts.push_back(list[k].first);
        index.reach.push_back(reach);
      }
    }
  }
  bool covers(const Event& e) const {
    if (!e.ts) return false;
    auto it = tracks_.find(track_key(e));
    if (it == tracks_.end()) return false;
    const Index& index = it->second;
    size_t k = size_t(std::upper_bound(index.starts.begin(), index.starts.end(), *e.ts) - index.starts.begin());
    return k > 0 && index.reach[k - 1] >= *e.ts;
  }

 private:
  struct Index {
    std::vector<Units> starts, reach;  // reach[k]: the largest end among the first k+1 spans
  };
  std::unordered_map<std::string, Index> tracks_;
};

void check_flows(const Document& original, const Document& compacted, const Gpu& gpu, CheckReport& report,
                 Recorder& rec) {
  Coverage before(original), after(compacted);
  std::unordered_map<std::string, std::vector<uint32_t>> flows;  // key -> ORIGINAL indices
  std::unordered_map<std::string, uint64_t> unbound_before;
  for (uint32_t i = 0; i < original.events.size(); ++i) {
    const Event& e = original.events[i];
    if (!flow(e) || !gpu.pids.count(e.pid)) continue;
    flows[e.flow_key].push_back(i);
    if (!before.covers(e)) ++unbound_before[e.flow_key];
  }
  for (auto& [key, indices] : flows) std::reverse(indices.begin(), indices.end());
  for (uint32_t j = 0; j < compacted.events.size(); ++j) {
    const Event& e = compacted.events[j];
    if (!flow(e) || !gpu.pids.count(e.pid)) continue;
    ++report.flows_checked;
    if (auto it = flows.find(e.flow_key); it != flows.end() && !it->second.empty()) it->second.pop_back();
    if (after.covers(e)) continue;
    if (auto it = unbound_before.find(e.flow_key); it != unbound_before.end() && it->second > 0) {
      --it->second;
      ++report.flows_unbound_preexisting;
      continue;
    }
    rec.add(ViolationKind::unbound_flow, true, j,
            [&] { return "flow " + describe_event(e) + " lies in no X event of its track"; });
  }
  std::vector<uint32_t> missing;
  for (const auto& [key, indices] : flows) missing.insert(missing.end(), indices.begin(), indices.end());
  std::sort(missing.begin(), missing.end());
  for (uint32_t i : missing)
    rec.add(ViolationKind::missing_flow, false, i, [&] {
      return "flow " + describe_event(original.events[i]) + " is not in COMPACTED (compared without tid)";
    });
}

// Every event of ORIGINAL that a compaction has no reason to touch is in COMPACTED unchanged.
void check_other_events(const Document& original, const Document& compacted, const Gpu& gpu, CheckReport& report,
                        Recorder& rec) {
  auto gpu_related = [&](const Event& e, bool in_original) {
    bool on_gpu_pid = gpu.pids.count(e.pid) > 0;
    bool sync_slice = cuda_sync_x(e) && (in_original ? gpu.old_streams.count(track_key(e)) > 0 : on_gpu_pid);
    return measured(e) || sync_slice || annotation(e) || (on_gpu_pid && (flow(e) || thread_metadata(e)));
  };
  std::unordered_map<std::string_view, std::vector<uint32_t>> pool;  // canonical -> COMPACTED indices
  for (uint32_t j = 0; j < compacted.events.size(); ++j) pool[compacted.events[j].canon].push_back(j);
  for (auto& [key, indices] : pool) std::reverse(indices.begin(), indices.end());
  std::vector<bool> used(compacted.events.size());
  for (uint32_t i = 0; i < original.events.size(); ++i) {
    const Event& e = original.events[i];
    if (gpu_related(e, true)) continue;
    ++report.other_events_checked;
    auto it = pool.find(e.canon);
    if (it != pool.end() && !it->second.empty()) {
      used[it->second.back()] = true;
      it->second.pop_back();
      continue;
    }
    rec.add(ViolationKind::missing_event, false, i,
            [&] { return describe_event(e) + " is not in COMPACTED unchanged"; });
  }
  for (uint32_t j = 0; j < compacted.events.size(); ++j)
    if (!used[j] && !gpu_related(compacted.events[j], false)) ++report.other_events_added;
}

void check_top_level(const Document& original, const Document& compacted, CheckReport& report, Recorder& rec) {
  std::map<std::string, std::string> after(compacted.top.begin(), compacted.top.end());
  for (const auto& entry : original.top) {  // not a structured binding: clang 14 cannot capture one
    const std::string& key = entry.first;
    ++report.top_level_keys_checked;
    auto it = after.find(key);
    if (it != after.end() && it->second == entry.second) continue;
    rec.add(ViolationKind::changed_top_level, false, -1, [&] {
      return "top-level key '" + shorten(key) +
             (it == after.end() ? "' is missing in COMPACTED" : "' changed in COMPACTED");
    });
  }
}

}  // namespace

CheckReport check_traces(std::string_view original_json, std::string_view compacted_json, const CheckOptions& options) {
  CheckReport report;
  Recorder rec(report, options.max_recorded);
  Document original = read_document(original_json, false, report.inexact_times);
  Document compacted = read_document(compacted_json, true, report.inexact_times);
  report.original_events = original.events.size();
  report.compacted_events = compacted.events.size();

  Gpu gpu;
  for (const Event& e : original.events)
    if (measured(e)) {
      gpu.pids.insert(e.pid);
      gpu.old_streams.insert(track_key(e));
    }
  for (const Event& e : compacted.events)
    if (measured(e)) gpu.pids.insert(e.pid);
  report.gpu_pids = gpu.pids.size();

  check_slices(original, compacted, report, rec);
  check_tracks(compacted, report, rec);
  check_flows(original, compacted, gpu, report, rec);
  check_other_events(original, compacted, gpu, report, rec);
  check_top_level(original, compacted, report, rec);
  return report;
}

}  // namespace tracelane::check
