// The compaction passes that walk the events over ranges concurrently (parallel_ranges.hpp,
// compact.cpp, annotations.cpp): with the ranges made small enough that a small trace has
// many, in arenas of 1, 2 and 4 threads, the written trace and the summary must be those
// of one walk over all the events, and a bad trace must fail with the first bad event's
// message, whichever range finishes first.
#include <tbb/task_arena.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <random>

#include "event_writer.hpp"
#include "parallel_ranges.hpp"
#include "test_support.hpp"
#include "tracelane/figures.hpp"
#include "tracelane/pp_flows.hpp"
#include "tracelane/summary.hpp"

namespace tracelane::testing {
namespace {

const std::vector<int> kThreads = {1, 2, 4};

// Sets how many events a range holds while in scope.
class RangeSize {
 public:
  explicit RangeSize(size_t events) { events_per_range = events; }
  ~RangeSize() { events_per_range = saved_; }

 private:
  size_t saved_ = events_per_range;
};

constexpr size_t kOneRange = std::numeric_limits<size_t>::max();

// `kernels` kernels on six streams of GPU 0 that overlap across streams (several lanes),
// with what every pass has work for: graph launches, cuda_sync slices on the streams,
// flows into kernels, identical overlapping annotations (coalesced), annotations that
// cross on one track (sub-tracks), runs of kernels named by args.name (kernel runs), and
// PP actions (local PP arrows, whose ids step over the trace's own flow ids), and two
// metadata events with a ts on the GPU's pid, far apart (the lanes' metadata takes the
// first one's).
std::string passes_trace(int kernels) {
  std::vector<std::string> events;
  for (int s = 0; s < 6; ++s)
    events.push_back(metadata("thread_name", 0, 7 + s, R"({"name": "stream )" + std::to_string(7 + s) + R"("})"));
  for (int i = 0; i < kernels; ++i) {
    int stream = 7 + i % 6;
    int start = 100 + 2 * i;
    std::string ts = std::to_string(start) + (i % 4 == 1 ? ".500" : i % 4 == 2 ? ".0" : "");
    if (i % 25 == 0) {
      events.push_back(annotation(0, stream, ts, "9", "step"));
      events.push_back(annotation(0, stream, std::to_string(start + 1), "9", "step"));
    }
    if (i % 40 == 3) {
      events.push_back(annotation(0, stream, ts, "5", "a" + std::to_string(i)));
      events.push_back(annotation(0, stream, std::to_string(start + 2) + ".25", "5", "b" + std::to_string(i)));
    }
    if (i % 7 == 0) {
      std::string id = std::to_string(i + 1);
      events.push_back(
          R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 100, "tid": 100, "ts": )" +
          std::to_string(start - 1) + R"(, "dur": 1})");
      events.push_back(flow("s", "ac2g", id, 100, 100, std::to_string(start - 1)));
      events.push_back(flow("f", "ac2g", id, 0, stream, ts));
    }
    if (i % 100 == 5) {  // stage 0's microbatch i / 100: received, computed, sent
      std::string microbatch = std::to_string(i / 100);
      events.push_back(annotation(0, stream, std::to_string(start), "1", "PP:0RECV_F" + microbatch));
      events.push_back(annotation(0, stream, std::to_string(start + 1), "2", "PP:0F" + microbatch));
      events.push_back(annotation(0, stream, std::to_string(start + 3), "1", "PP:0SEND_F" + microbatch));
    }
    if (i % 50 == 10) events.push_back(slice_event("cuda_sync", "cudaStreamSynchronize", 0, stream, ts, "0.5"));
    if (i == kernels / 3 || i == 2 * kernels / 3)
      events.push_back(R"({"name": "process_labels", "ph": "M", "pid": 0, "tid": 0, "ts": )" + std::to_string(60 + i) +
                       R"(, "args": {"labels": "GPU"}})");
    std::string args = "\"correlation\": " + std::to_string(i + 1);
    if (i % 10 < 6) args += ", \"name\": \"fwd" + std::to_string(i / 60) + "\"";
    events.push_back(kernel(0, stream, ts,
                            i % 5 == 0 ? "7.5"
                            : i % 3    ? "1.25"
                                       : "2",
                            "k" + std::to_string(i % 13), args));
  }
  return trace_json(events);
}

struct Compacted {
  std::string text, summary;
  CompactSummary counts;
  std::string figures;  // the GPU figures (worked out over lanes and groups concurrently)
};

Compacted compact_in_arena(const std::string& json, int threads) {
  std::optional<Compacted> result;
  tbb::task_arena(threads).execute([&] {
    CompactedTrace compacted = compact_trace(parse_trace(json, "test.json"), {});
    JsonValue figures = JsonValue::object();
    add_figures_json(figures, trace_figures(compacted, nullptr, 0, std::nullopt));
    result.emplace(Compacted{write_compacted(compacted), compaction_summary(compacted.summary, true).dump(-1),
                             compacted.summary, figures.dump(-1)});
  });
  return std::move(*result);
}

// What one walk over all the events writes: one range, one thread.
Compacted one_walk(const std::string& json) {
  RangeSize one(kOneRange);
  return compact_in_arena(json, 1);
}

// With ranges of each of `sizes` events (kBuiltInRanges: events_per_range as built), in
// arenas of 1, 2 and 4 threads: the reference's text, summary and figures.
constexpr size_t kBuiltInRanges = 0;
void expect_one_walks_output(const std::string& json, const Compacted& reference, const std::vector<size_t>& sizes) {
  for (size_t size : sizes) {
    std::optional<RangeSize> ranges;
    if (size != kBuiltInRanges) ranges.emplace(size);
    for (int threads : kThreads) {
      Compacted result = compact_in_arena(json, threads);
      std::string what = std::to_string(size) + " events a range, " + std::to_string(threads) + " threads";
      EXPECT_EQ(result.summary, reference.summary) << what;
      EXPECT_TRUE(result.text == reference.text) << what;
      EXPECT_EQ(result.figures, reference.figures) << what;
    }
  }
}

std::string error_in_arena(const std::string& json, int threads) {
  return error_message([&] { compact_in_arena(json, threads); });
}

TEST(ParallelPasses, ManyRangesWriteWhatOneWalkWrites) {
  std::string json = passes_trace(6000);
  Compacted reference = one_walk(json);
  // The trace gives every split pass work, so that the comparison means something.
  EXPECT_GT(reference.counts.compacted_lanes, 1u);
  EXPECT_GT(reference.counts.cuda_graph_launches, 0u);
  EXPECT_GT(reference.counts.gpu_flow_endpoints_mapped, 0u);
  EXPECT_GT(reference.counts.gpu_annotations_coalesced, 0u);
  EXPECT_GT(reference.counts.annotation_subtracks, 0u);
  EXPECT_GT(reference.counts.kernel_annotation_blocks, 0u);
  EXPECT_GT(reference.counts.slice_groups.count("sync"), 0u);
  EXPECT_GT(reference.counts.pp.compute_dependency_pairs, 0u);
  EXPECT_NE(reference.figures.find("\"group\": \"sync\""), std::string::npos) << reference.figures;  // two groups
  expect_one_walks_output(json, reference, {1, 97, 1000});
}

// Kernel runs on one lane, where a range may end inside a run, between two runs of one
// name parted by an unnamed kernel, or between two runs of different names: with ranges
// of every size up to the pattern's length, the spans are one walk's.
TEST(ParallelPasses, KernelRunsCutByRangesAreJoinedOnlyWhereOneWalkJoinsThem) {
  // A A _ A B B _ _ B A: "_" is a kernel without args.name.
  const std::vector<std::string> pattern = {"A", "A", "", "A", "B", "B", "", "", "B", "A"};
  std::vector<std::string> events;
  for (int i = 0; i < 40; ++i) {  // one stream, one after another: one lane
    const std::string& name = pattern[size_t(i) % pattern.size()];
    events.push_back(
        kernel(0, 7, std::to_string(100 + 10 * i), "5", "k",
               "\"correlation\": " + std::to_string(i + 1) + (name.empty() ? "" : ", \"name\": \"" + name + "\"")));
  }
  std::string json = trace_json(events);
  Compacted reference = one_walk(json);
  EXPECT_EQ(reference.counts.compacted_lanes, 1u);
  // AA, A, BB, B; then three times the last A joined with the next AA, A, BB, B; the last A.
  EXPECT_EQ(reference.counts.kernel_annotation_blocks, 17u);
  EXPECT_EQ(reference.counts.kernel_annotations_converted, 40u - 4u * 3u);
  std::vector<size_t> sizes;
  for (size_t size = 1; size <= pattern.size() + 1; ++size) sizes.push_back(size);
  expect_one_walks_output(json, reference, sizes);
}

// Events made concurrently (kernel runs' spans, PP arrows) are appended in the order of
// what they were made from, whatever range made them, and their text outlives the
// scratch traces that made it.
TEST(ParallelPasses, MadeEventsAreAppendedInOrderAndKeepTheirText) {
  for (int threads : kThreads) {
    Trace trace;
    trace.events.resize(3);      // already there: kept in front
    const size_t count = 20000;  // several ranges of those made
    tbb::task_arena(threads).execute([&] {
      append_made_events(trace, count, 2, [](size_t k, Trace& owner, Event* out) {
        for (size_t copy = 0; copy < 2; ++copy) {
          EventBuilder builder;
          builder.integer("k", int64_t(k)).integer("copy", int64_t(copy));
          out[copy] = builder.finish(owner);
        }
      });
    });
    std::vector<std::string> expected;
    for (size_t k = 0; k < count; ++k)
      for (size_t copy = 0; copy < 2; ++copy)
        expected.push_back("{\"k\": " + std::to_string(k) + ", \"copy\": " + std::to_string(copy) + "}");
    ASSERT_EQ(trace.events.size(), 3 + expected.size()) << threads << " threads";
    size_t wrong = 0;
    for (size_t i = 0; i < expected.size(); ++i) wrong += std::string_view(trace.events[3 + i].raw) != expected[i];
    EXPECT_EQ(wrong, 0u) << threads << " threads";
    // Every text lies in a block the trace owns, and the blocks hold the texts and no more.
    size_t outside = 0, text_bytes = 0, block_bytes = 0;
    for (size_t i = 0; i < expected.size(); ++i) {
      std::string_view raw = trace.events[3 + i].raw;
      text_bytes += raw.size();
      bool inside = false;
      for (const auto& block : trace.arena)
        inside = inside || (raw.data() >= block->data() && raw.data() + raw.size() <= block->data() + block->size());
      outside += !inside;
    }
    for (const auto& block : trace.arena) block_bytes += block->size();
    EXPECT_EQ(outside, 0u) << threads << " threads";
    EXPECT_EQ(block_bytes, text_bytes) << threads << " threads";
    EXPECT_LT(trace.arena.size(), expected.size() / 100) << threads << " threads: made texts share blocks";
  }
}

// At the built-in range size: a trace just large enough for two ranges.
TEST(ParallelPasses, BigTraceWritesWhatOneWalkWrites) {
  std::string json = passes_trace(50000);
  expect_one_walks_output(json, one_walk(json), {kBuiltInRanges});
}

// Two bad slices far apart: the first one in traceEvents order is reported, as a walk over
// all the events reports it, even when the later one's range fails first.
TEST(ParallelPasses, TheFirstBadSliceIsReportedWhicheverRangeFailsFirst) {
  std::vector<std::string> events;
  for (int i = 0; i < 5000; ++i) {
    if (i == 1500) events.push_back(kernel(0, 7, "3100", "-1"));  // negative dur
    if (i == 300)
      events.push_back(
          R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 700, "dur": 1, "args": {}})");
    events.push_back(kernel(0, 7 + i % 3, std::to_string(100 + 2 * i), "1"));
  }
  std::string json = trace_json(events);
  std::string reference;
  {
    RangeSize one(kOneRange);
    reference = error_in_arena(json, 1);
  }
  EXPECT_NE(reference.find("lacks args.stream"), std::string::npos) << reference;
  for (size_t size : {size_t(1), size_t(64), size_t(1000)}) {
    RangeSize ranges(size);
    for (int threads : kThreads)
      for (int repeat = 0; repeat < 5; ++repeat)
        EXPECT_EQ(error_in_arena(json, threads), reference) << size << " events a range, " << threads << " threads";
  }
}

// sort_distinct, with the item's index as its last key, gives the order of a stable sort
// by the other keys: with runs of every size from one item to all of them (merged in
// rounds of every shape, an odd run out included), in arenas of 1, 2 and 4 threads, on
// keys with many ties; from reversed items, from items already in order (which it leaves
// as they are), and from items in order but for their last two.
TEST(ParallelPasses, SortDistinctGivesTheStableSortsOrder) {
  std::mt19937 random(7);
  std::vector<int> keys(1000);
  for (int& key : keys) key = int(random() % 37);
  std::vector<uint32_t> expected(keys.size());
  for (uint32_t i = 0; i < expected.size(); ++i) expected[i] = i;
  std::stable_sort(expected.begin(), expected.end(), [&](uint32_t a, uint32_t b) { return keys[a] < keys[b]; });
  for (size_t size : {size_t(1), size_t(3), size_t(64), size_t(333), size_t(1000)}) {
    RangeSize ranges(size);
    std::vector<uint32_t> reversed(keys.size());
    for (uint32_t i = 0; i < reversed.size(); ++i) reversed[i] = uint32_t(reversed.size() - 1 - i);
    std::vector<uint32_t> last_two_swapped = expected;
    std::swap(last_two_swapped[last_two_swapped.size() - 2], last_two_swapped.back());
    for (const auto& start : {reversed, expected, last_two_swapped})
      for (int threads : kThreads) {
        std::vector<uint32_t> order = start;
        tbb::task_arena(threads).execute([&] {
          sort_distinct(order, [&](uint32_t a, uint32_t b) { return keys[a] != keys[b] ? keys[a] < keys[b] : a < b; });
        });
        EXPECT_TRUE(order == expected) << size << " items a run, " << threads << " threads";
      }
  }
}

// pick_in_order gives what one walk picks, in order, whatever the ranges and threads, and
// holds exactly that many (it exists to hold no more: bench/README.md, "Event records and the memory peak").
TEST(ParallelPasses, PickInOrderGivesWhatOneWalkPicks) {
  std::mt19937 random(11);
  std::vector<int> values(5000);
  for (int& value : values) value = int(random() % 100);
  auto pick = [&](size_t k) { return values[k] % 3 == 0; };
  auto make = [&](size_t k) { return std::pair<size_t, int>(k, values[k]); };
  std::vector<std::pair<size_t, int>> expected;
  for (size_t k = 0; k < values.size(); ++k)
    if (pick(k)) expected.push_back(make(k));
  for (size_t size : {size_t(1), size_t(7), size_t(1000), size_t(5000), size_t(9999)}) {
    RangeSize ranges(size);
    for (int threads : kThreads) {
      std::vector<std::pair<size_t, int>> picked;
      tbb::task_arena(threads).execute(
          [&] { picked = pick_in_order<std::pair<size_t, int>>(values.size(), pick, make); });
      EXPECT_TRUE(picked == expected) << size << " items a range, " << threads << " threads";
      EXPECT_EQ(picked.capacity(), expected.size()) << size << " items a range, " << threads << " threads";
    }
  }
  EXPECT_TRUE(pick_in_order<int>(0, pick, [](size_t) { return 1; }).empty());
}

// PP blocks of one key that start and end together keep the order of their spans: the
// first such SEND_F0 block is the one the F0 block's arrow goes to (equal distances go to
// the earlier destination), whichever range read the spans, however many threads.
TEST(ParallelPasses, PpBlocksThatTieKeepTheirSpansOrderAcrossRanges) {
  PidTracks tracks;
  tracks.pid = 1;
  tracks.main_compute_track = 100;
  for (int64_t first : {5, 7}) {
    const int64_t second = first == 5 ? 7 : 5;
    std::vector<AnnotationSpan> spans;
    for (int k = 0; k < 40; ++k) spans.push_back({1, 300, 1000 + k, 1001 + k, "not a PP action"});
    spans.push_back({1, 100, 0, 10, "PP:0F0"});
    spans.push_back({1, first, 20, 30, "PP:0SEND_F0"});
    for (int k = 0; k < 40; ++k) spans.push_back({1, 300, 2000 + k, 2001 + k, "PP:3B9"});
    spans.push_back({1, second, 20, 30, "PP:0SEND_F0"});
    for (size_t size : {size_t(1), size_t(7), size_t(64), kOneRange}) {
      RangeSize ranges(size);
      for (int threads : kThreads) {
        std::optional<PpResult> result;
        tbb::task_arena(threads).execute([&] { result = build_pp_flows(spans, {tracks}, false); });
        const std::string what = std::to_string(size) + " spans a range, " + std::to_string(threads) + " threads";
        ASSERT_EQ(result->flows.size(), 1u) << what;
        EXPECT_EQ(result->flows[0].destination_tid, first) << what;
        EXPECT_EQ(result->counts.compute_dependency_unmatched, 1u) << what;  // the other SEND_F0
      }
    }
  }
}

// Random PP spans of two pids (compute chains across the main track and sub-tracks, sends,
// recvs, unshards; keys with one use and keys with hundreds) give the arrows and counts of
// one walk whatever the ranges and threads: keys are never split between parts.
TEST(ParallelPasses, PpArrowsOfRandomSpansAreThoseOfOneWalk) {
  std::mt19937 random(5);
  const std::vector<std::string> actions = {"F", "B", "I", "W", "SEND_F", "RECV_F", "SEND_B", "RECV_B", "UNSHARD"};
  std::vector<PidTracks> pids(2);
  std::vector<AnnotationSpan> spans;
  std::vector<std::string> names;
  names.reserve(3000);
  for (int64_t pid = 0; pid < 2; ++pid) {
    pids[size_t(pid)].pid = pid, pids[size_t(pid)].pp_rank = int(pid);
    pids[size_t(pid)].main_compute_track = 100;
    pids[size_t(pid)].main_compute_subtracks = {101};
    pids[size_t(pid)].unshard_tracks = {200};
  }
  for (int k = 0; k < 1500; ++k) {
    const std::string& op = actions[random() % actions.size()];
    const int stage = int(random() % 3), microbatch = k % 5 == 0 ? 0 : int(random() % 4);
    names.push_back("PP:" + std::to_string(stage) + op + (random() % 7 == 0 ? "" : std::to_string(microbatch)));
    const int64_t tids[] = {100, 101, 102, 200};
    const Ns start = Ns(random() % 100000);
    spans.push_back({int64_t(random() % 2), tids[random() % 4], start, start + Ns(random() % 300), names.back()});
  }
  auto flows_of = [&](const PpResult& result) {
    std::vector<std::string> lines;
    for (const PpFlow& f : result.flows)
      lines.push_back(f.name + " " + std::to_string(f.id) + " " + std::to_string(f.source_pid) + ":" +
                      std::to_string(f.source_tid) + "@" + std::to_string(f.source_ts) + " -> " +
                      std::to_string(f.destination_pid) + ":" + std::to_string(f.destination_tid) + "@" +
                      std::to_string(f.destination_ts) + " " + f.source_operation + f.destination_operation);
    const PpCounts& c = result.counts;
    lines.push_back(std::to_string(c.send_recv_pairs) + " " + std::to_string(c.send_recv_unmatched) + " " +
                    std::to_string(c.compute_dependency_pairs) + " " + std::to_string(c.compute_dependency_unmatched) +
                    " " + std::to_string(c.unshard_compute_pairs) + " " + std::to_string(c.unshard_compute_unmatched));
    return lines;
  };
  std::vector<std::string> one_walk;
  {
    RangeSize ranges(kOneRange);
    one_walk = flows_of(build_pp_flows(spans, pids, true));
  }
  ASSERT_GT(one_walk.size(), 100u);  // arrows of every kind were made
  for (size_t size : {size_t(1), size_t(7), size_t(64), size_t(500)}) {
    RangeSize ranges(size);
    for (int threads : kThreads) {
      std::vector<std::string> lines;
      tbb::task_arena(threads).execute([&] { lines = flows_of(build_pp_flows(spans, pids, true)); });
      EXPECT_TRUE(lines == one_walk) << size << " spans a range, " << threads << " threads";
    }
  }
}

}  // namespace
}  // namespace tracelane::testing
