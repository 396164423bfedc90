// Annotation coalescing, per-kernel annotation runs and lane metadata (SPEC 5).
#include <map>
#include <random>
#include <tuple>

#include "annotations.hpp"
#include "parallel_ranges.hpp"
#include "test_support.hpp"

using namespace tracelane;
using namespace tracelane::testing;

namespace {

// Streams 7 and 8 hold touching kernels, so both land on one Compute lane with its
// annotation track.
std::vector<std::string> one_lane_two_streams() { return {kernel(0, 7, "0", "10"), kernel(0, 8, "10", "10")}; }

std::vector<std::string> with(std::vector<std::string> events, const std::vector<std::string>& more) {
  events.insert(events.end(), more.begin(), more.end());
  return events;
}

// Index in traceEvents of the first event named `name`.
size_t position_of(const Output& out, std::string_view name) {
  for (size_t i = 0; i < out.events.size(); ++i)
    if (Output::string_of(out.events[i], "name") == name) return i;
  return SIZE_MAX;
}

}  // namespace

// --- coalescing ------------------------------------------------------------------------

TEST(CoalesceAnnotations, TouchingIdenticalAnnotationsFromTwoStreamsBecomeOne) {
  auto result = compact_text(trace_json(with(one_lane_two_streams(), {
                                                                         annotation(0, 7, "0", "10", "fwd"),
                                                                         annotation(0, 8, "10", "10", "fwd"),
                                                                     })));
  ASSERT_EQ(result.lanes.size(), 1u);
  EXPECT_EQ(result.summary.gpu_annotations_mapped, 2u);
  EXPECT_EQ(result.summary.gpu_annotations_coalesced, 1u);
  EXPECT_EQ(result.summary.gpu_annotations_retained, 1u);
  Output out(write_compacted(result));
  auto fwd = out.one("fwd");
  EXPECT_EQ(Output::int_of(fwd, "tid"), annotation_tid("compute"));
  EXPECT_EQ(Output::number_of(fwd, "ts"), 0);
  EXPECT_EQ(Output::number_of(fwd, "dur"), 20);
}

TEST(CoalesceAnnotations, AnnotationsWithDifferentArgsStaySeparate) {
  auto result =
      compact_text(trace_json(with(one_lane_two_streams(), {
                                                               annotation(0, 7, "0", "10", "fwd", R"({"a": 1})"),
                                                               annotation(0, 8, "5", "10", "fwd", R"({"a": 2})"),
                                                           })));
  EXPECT_EQ(result.summary.gpu_annotations_coalesced, 0u);
  EXPECT_EQ(result.summary.gpu_annotations_retained, 2u);
  EXPECT_EQ(Output(write_compacted(result)).named("fwd").size(), 2u);
}

TEST(CoalesceAnnotations, AnnotationsWithDifferentNamesStaySeparate) {
  auto result = compact_text(trace_json(with(one_lane_two_streams(), {
                                                                         annotation(0, 7, "0", "10", "fwd"),
                                                                         annotation(0, 8, "5", "10", "bwd"),
                                                                     })));
  EXPECT_EQ(result.summary.gpu_annotations_coalesced, 0u);
  EXPECT_EQ(result.summary.gpu_annotations_retained, 2u);
}

TEST(CoalesceAnnotations, IdenticalAnnotationsWithAGapStaySeparate) {
  auto result = compact_text(trace_json(with(one_lane_two_streams(), {
                                                                         annotation(0, 7, "0", "9.999", "fwd"),
                                                                         annotation(0, 8, "10", "10", "fwd"),
                                                                     })));
  EXPECT_EQ(result.summary.gpu_annotations_coalesced, 0u);
  EXPECT_EQ(Output(write_compacted(result)).named("fwd").size(), 2u);
}

TEST(CoalesceAnnotations, IdenticalAnnotationsOnDifferentLanesStaySeparate) {
  // Overlapping kernels on streams 7 and 8: two lanes, two annotation tracks.
  auto result = compact_text(trace_json({
      kernel(0, 7, "0", "20"),
      kernel(0, 8, "5", "20"),
      annotation(0, 7, "0", "20", "fwd"),
      annotation(0, 8, "5", "20", "fwd"),
  }));
  ASSERT_EQ(result.lanes.size(), 2u);
  EXPECT_EQ(result.summary.gpu_annotations_coalesced, 0u);
  EXPECT_EQ(result.summary.gpu_annotations_retained, 2u);
}

TEST(CoalesceAnnotations, AChainSpansAllItsMembersAndStaysWhereItsEarliestMemberWas) {
  // Listed out of order: B [5,12], marker, A [0,10], C [12,15]. The chain A-B-C becomes
  // one event [0,15] at A's position, after the marker.
  auto result = compact_text(trace_json({
      kernel(0, 7, "0", "20"),
      annotation(0, 7, "5", "7", "step"),
      R"({"ph": "i", "cat": "marker", "name": "marker", "pid": 0, "tid": 300, "ts": 1, "s": "t"})",
      annotation(0, 7, "0.000", "10", "step"),
      annotation(0, 7, "12", "3", "step"),
  }));
  EXPECT_EQ(result.summary.gpu_annotations_coalesced, 2u);
  EXPECT_EQ(result.summary.gpu_annotations_retained, 1u);
  Output out(write_compacted(result));
  auto step = out.one("step");
  EXPECT_EQ(Output::number_of(step, "ts"), 0);
  EXPECT_EQ(Output::number_of(step, "dur"), 15);
  EXPECT_GT(position_of(out, "step"), position_of(out, "marker"));
  // The kept event keeps its own ts text.
  EXPECT_TRUE(out.contains(R"("ts": 0.000, "dur": 15,)")) << out.text;
}

TEST(CoalesceAnnotations, AContainedAnnotationDoesNotShortenTheChain) {
  auto result = compact_text(trace_json({
      kernel(0, 7, "0", "50"),
      annotation(0, 7, "0", "30", "step"),
      annotation(0, 7, "5", "5", "step"),
      annotation(0, 7, "29", "2", "step"),
  }));
  EXPECT_EQ(result.summary.gpu_annotations_coalesced, 2u);
  Output out(write_compacted(result));
  EXPECT_EQ(Output::number_of(out.one("step"), "dur"), 31);
}

TEST(CoalesceAnnotations, AnnotationsThatWereNotMovedCoalesceToo) {
  // Two identical CPU-side annotations on a thread that is no old stream.
  auto result = compact_text(trace_json({
      kernel(0, 7, "0", "10"),
      annotation(5, 300, "0", "10", "cpu"),
      annotation(5, 300, "10", "1", "cpu"),
  }));
  EXPECT_EQ(result.summary.gpu_annotations_mapped, 0u);
  EXPECT_EQ(result.summary.gpu_annotations_coalesced, 1u);
  Output out(write_compacted(result));
  EXPECT_EQ(Output::number_of(out.one("cpu"), "dur"), 11);
  EXPECT_EQ(Output::int_of(out.one("cpu"), "tid"), 300);
}

TEST(CoalesceAnnotations, OnlyCompleteEventsCoalesce) {
  auto result = compact_text(trace_json({
      kernel(0, 7, "0", "10"),
      R"({"ph": "i", "cat": "gpu_user_annotation", "name": "mark", "pid": 5, "tid": 300, "ts": 1, "s": "t"})",
      R"({"ph": "i", "cat": "gpu_user_annotation", "name": "mark", "pid": 5, "tid": 300, "ts": 1, "s": "t"})",
  }));
  EXPECT_EQ(result.summary.gpu_annotations_coalesced, 0u);
  EXPECT_EQ(Output(write_compacted(result)).named("mark").size(), 2u);
}

TEST(CoalesceAnnotations, IdentityIsByMeaningNotByTextLayout) {
  // SPEC 5: "events identical in every key except ts and dur (same pid, tid, name, args,
  // ...)". These three differ only in JSON layout (spacing inside args, key order).
  auto result = compact_text(trace_json({
      kernel(0, 7, "0", "10"),
      kernel(0, 8, "10", "20"),
      R"({"ph": "X", "cat": "gpu_user_annotation", "name": "fwd", "pid": 0, "tid": 7, "ts": 0, "dur": 10, "args": {"a": 1}})",
      R"({"ph": "X", "cat": "gpu_user_annotation", "name": "fwd", "pid": 0, "tid": 8, "ts": 10, "dur": 10, "args": {"a":1}})",
      R"({"cat": "gpu_user_annotation", "ph": "X", "name": "fwd", "pid": 0, "tid": 8, "ts": 12, "dur": 10, "args": {"a": 1}})",
  }));
  EXPECT_EQ(result.summary.gpu_annotations_coalesced, 2u);
  EXPECT_EQ(result.summary.gpu_annotations_retained, 1u);
}

TEST(CoalesceAnnotations, NestedArgsCompareByMeaningAtEveryDepth) {
  // Key order and number spelling differ at every depth, inside arrays too: one identity.
  const char* nested = R"({"a": {"x": 1, "y": [{"p": 1, "q": 2}, {"r": 3}]}, "b": 2})";
  const char* reordered = R"({"b": 2.0, "a": {"y": [{"q": 2, "p": 1}, {"r": 3}], "x": 1}})";
  auto same = compact_text(trace_json(with(one_lane_two_streams(), {
                                                                       annotation(0, 7, "0", "10", "fwd", nested),
                                                                       annotation(0, 8, "10", "10", "fwd", reordered),
                                                                   })));
  EXPECT_EQ(same.summary.gpu_annotations_coalesced, 1u);

  // A difference after a nested object, or deep inside an array, keeps them apart.
  for (const char* other : {R"({"a": {"x": 1, "y": [{"p": 1, "q": 2}, {"r": 3}]}, "b": 3})",
                            R"({"a": {"x": 1, "y": [{"p": 1, "q": 2}, {"r": 4}]}, "b": 2})",
                            R"({"a": {"x": 1, "y": [{"p": 1, "q": 2}, {"r": 3}], "z": 0}, "b": 2})"}) {
    auto apart = compact_text(trace_json(with(one_lane_two_streams(), {
                                                                          annotation(0, 7, "0", "10", "fwd", nested),
                                                                          annotation(0, 8, "10", "10", "fwd", other),
                                                                      })));
    EXPECT_EQ(apart.summary.gpu_annotations_coalesced, 0u) << other;
  }
}

TEST(CoalesceAnnotations, AStringThatSpellsOtherFieldsIsNotThoseFields) {
  // Against two args a = "x" and b = "y": one arg whose value reads `x",b:"y`, and one
  // whose key reads `a:"x",b`. Different events, which a canonical form writing strings
  // and keys bare would spell alike.
  for (const char* other : {R"({"a": "x\",b:\"y"})", R"({"a:\"x\",b": "y"})"}) {
    auto apart = compact_text(
        trace_json(with(one_lane_two_streams(), {
                                                    annotation(0, 7, "0", "10", "fwd", R"({"a": "x", "b": "y"})"),
                                                    annotation(0, 8, "10", "10", "fwd", other),
                                                })));
    EXPECT_EQ(apart.summary.gpu_annotations_coalesced, 0u) << other;
  }
}

namespace {

// The annotations of a random trace, coalesced as SPEC 5 says, by a reference that knows
// each one's identity from how it was made: whether each is dropped, and each one's dur.
struct MadeAnnotation {
  bool eligible = false;  // a gpu_user_annotation X: coalescing considers it
  int pid = 0, final_tid = 0, args_class = 0;
  std::string name;  // unescaped
  Ns start = 0, end = 0;
};

std::pair<std::vector<bool>, std::vector<Ns>> reference_coalescing(const std::vector<MadeAnnotation>& made) {
  std::vector<bool> dropped(made.size(), false);
  std::vector<Ns> dur(made.size());
  std::map<std::tuple<int, int, int, std::string>, std::vector<size_t>> groups;
  for (size_t i = 0; i < made.size(); ++i) {
    dur[i] = made[i].end - made[i].start;
    if (made[i].eligible) groups[{made[i].pid, made[i].final_tid, made[i].args_class, made[i].name}].push_back(i);
  }
  for (auto& [identity, members] : groups) {
    std::sort(members.begin(), members.end(), [&](size_t a, size_t b) {
      return std::tuple(made[a].start, made[a].end, a) < std::tuple(made[b].start, made[b].end, b);
    });
    for (size_t k = 0; k < members.size();) {
      size_t next = k + 1;
      Ns end = made[members[k]].end;
      for (; next < members.size() && made[members[next]].start <= end; ++next) {
        end = std::max(end, made[members[next]].end);
        dropped[members[next]] = true;
      }
      dur[members[k]] = end - made[members[k]].start;
      k = next;
    }
  }
  return {dropped, dur};
}

}  // namespace

TEST(CoalesceAnnotations, ANameWhoseKeyIsEscapedIsStillTheName) {
  // The reader takes a field as the name by its key as written; an identity reads keys
  // unescaped, so these two are one annotation.
  auto result = compact_text(trace_json(with(
      one_lane_two_streams(),
      {
          annotation(0, 7, "0", "10", "fwd"),
          R"({"ph": "X", "cat": "gpu_user_annotation", "na\u006de": "fwd", "pid": 0, "tid": 8, "ts": 10, "dur": 10, "args": {}})",
      })));
  EXPECT_EQ(result.summary.gpu_annotations_coalesced, 1u);
  EXPECT_EQ(result.summary.gpu_annotations_retained, 1u);
}

TEST(CoalesceAnnotations, DropsAndStretchesWhatAReferenceGivenEveryIdentityDoes) {
  // Few names, tids and args, short spans on a short timeline: many touch and overlap,
  // across identities too. Names and args are spelt in several ways per identity (the name's
  // key too: "na\u006de" is the name to the identity, not to the reader), and some
  // annotations are moved (a new tid or ts) after they were read, as remapping does.
  const std::vector<std::vector<std::string>> args_spellings = {
      {R"({"a": 1})", R"({ "a":1.0 })"},
      {R"({"a": 2})"},
      {R"({"a": 1, "b": [1, {"c": "x"}]})", R"({"b": [1.0, {"c": "x"}], "a": 1})"},
      {R"({})", R"({ })"}};
  const std::vector<std::pair<std::string, std::string>> names = {
      {"fwd", "fwd"}, {"f\\u0077d", "fwd"}, {"bwd", "bwd"}, {"step", "step"}};
  const size_t saved_range = events_per_range;
  events_per_range = 5;  // several ranges, gathered concurrently
  std::mt19937 random(25);
  for (int round = 0; round < 1500; ++round) {
    const size_t count = 2 + random() % 40;
    std::vector<MadeAnnotation> made(count);
    std::vector<std::string> texts;
    for (MadeAnnotation& m : made) {
      const int kind = int(random() % 10);
      const auto& [spelt, name] = names[random() % names.size()];
      m.eligible = kind != 0;
      m.pid = int(random() % 2);
      m.final_tid = 7 + int(random() % 2);
      m.args_class = int(random() % args_spellings.size());
      m.name = name;
      m.start = Ns(random() % 60) * 1000;
      m.end = m.start + Ns(random() % 12) * 1000;
      const auto& spellings = args_spellings[size_t(m.args_class)];
      const std::string name_key = random() % 8 == 0 ? "\"na\\u006de\"" : "\"name\"";
      texts.push_back("{\"ph\": \"" + std::string(kind == 0 ? "i" : "X") + "\", \"cat\": \"gpu_user_annotation\", " +
                      name_key + ": \"" + spelt + "\", \"pid\": " + std::to_string(m.pid) +
                      ", \"tid\": " + std::to_string(m.final_tid) + ", \"ts\": " + std::to_string(m.start / 1000) +
                      ", \"dur\": " + std::to_string((m.end - m.start) / 1000) +
                      ", \"args\": " + spellings[random() % spellings.size()] + "}");
    }
    Trace trace = parse_trace(trace_json(texts), "random.json");
    ASSERT_EQ(trace.events.size(), count);
    for (size_t i = 0; i < count; ++i) {
      Event& event = trace.events[i];
      if (random() % 4 == 0) {  // moved to a tid that the text may or may not spell alike
        made[i].final_tid = 7 + int(random() % 2);
        event.set_tid(made[i].final_tid);
      }
      if (random() % 4 == 0) {  // shifted
        const Ns dur = made[i].end - made[i].start;
        made[i].start = Ns(random() % 60) * 1000;
        made[i].end = made[i].start + dur;
        event.set_ts(made[i].start);
      }
    }
    const auto [dropped, dur] = reference_coalescing(made);
    const size_t removed = coalesce_annotations(trace);
    EXPECT_EQ(removed, size_t(std::count(dropped.begin(), dropped.end(), true))) << "round " << round;
    for (size_t i = 0; i < count; ++i) {
      ASSERT_EQ(trace.events[i].dropped, bool(dropped[i])) << "round " << round << ", event " << i;
      ASSERT_EQ(trace.events[i].final_dur(), dur[i]) << "round " << round << ", event " << i;
    }
  }
  events_per_range = saved_range;
}

// --- annotation sub-tracks -----------------------------------------------------------------

TEST(AnnotationSubtracks, SpansThatTouchExactlyButOverlapAsPerfettoReadsThemAreSplit) {
  // At epoch timestamps a double steps by 0.25 us: Perfetto reads "...000.2" as ...000.25,
  // so the first span ends at ...001.05 in its eyes, past the next one's start, though
  // the two touch exactly. The first span is written as read; in the second case it is a
  // chain of two coalesced, and its dur (0.8) is written new.
  const std::vector<std::vector<std::string>> firsts = {
      {annotation(0, 7, "1700000000000000.2", "0.8", "a")},
      {annotation(0, 7, "1700000000000000.2", "0.5", "a"), annotation(0, 7, "1700000000000000.5", "0.5", "a")}};
  for (const auto& first : firsts) {
    std::vector<std::string> events = {kernel(0, 7, "1700000000000000", "2")};
    events.insert(events.end(), first.begin(), first.end());
    events.push_back(annotation(0, 7, "1700000000000001", "0.5", "b"));
    auto result = compact_text(trace_json(events));
    ASSERT_EQ(result.lanes.size(), 1u);
    ASSERT_EQ(result.lanes[0].annotation_subtracks.size(), 1u) << first.size();
    Output out(write_compacted(result));
    EXPECT_EQ(Output::int_of(out.one("a"), "tid"), result.lanes[0].annotation_tid);
    EXPECT_EQ(Output::int_of(out.one("b"), "tid"), result.lanes[0].annotation_subtracks[0]);
    EXPECT_EQ(Output::number_of(out.one("a"), "dur"), 0.8);
  }
}

// --- per-kernel annotations ---------------------------------------------------------------

TEST(KernelAnnotations, RunsOfOneArgsNameBecomeSpansOnTheLaneAnnotationTrack) {
  auto result = compact_text(trace_json({
      kernel(0, 7, "0", "10", "k1", R"("name": "fwd")"),
      kernel(0, 7, "10", "10", "k2", R"("name": "fwd")"),
      kernel(0, 7, "20", "10", "k3"),
      kernel(0, 7, "30", "10", "k4", R"("name": "fwd")"),
      kernel(0, 7, "40", "10", "k5", R"("name": "bwd")"),
      kernel(0, 7, "50", "5", "k6", R"("name": "bwd")"),
  }));
  EXPECT_EQ(result.summary.kernel_annotations_converted, 5u);
  EXPECT_EQ(result.summary.kernel_annotation_blocks, 3u);
  EXPECT_EQ(result.summary.gpu_annotations_retained, 3u);
  Output out(write_compacted(result));
  auto fwd = out.named("fwd");
  auto bwd = out.named("bwd");
  ASSERT_EQ(fwd.size(), 2u);
  ASSERT_EQ(bwd.size(), 1u);
  std::vector<std::pair<double, double>> fwd_spans;
  for (auto e : fwd) {
    EXPECT_EQ(Output::string_of(e, "cat"), "gpu_user_annotation");
    EXPECT_EQ(Output::string_of(e, "ph"), "X");
    EXPECT_EQ(Output::int_of(e, "pid"), 0);
    EXPECT_EQ(Output::int_of(e, "tid"), annotation_tid("compute"));
    fwd_spans.push_back({Output::number_of(e, "ts"), Output::number_of(e, "dur")});
  }
  std::sort(fwd_spans.begin(), fwd_spans.end());
  EXPECT_EQ(fwd_spans, (std::vector<std::pair<double, double>>{{0, 20}, {30, 10}}));
  EXPECT_EQ(Output::number_of(bwd[0], "ts"), 40);
  EXPECT_EQ(Output::number_of(bwd[0], "dur"), 15);
  EXPECT_EQ(Output::int_of(bwd[0], "tid"), annotation_tid("compute"));
  simdjson::dom::object args;
  ASSERT_EQ(bwd[0]["args"].get_object().get(args), simdjson::SUCCESS);
  EXPECT_EQ(args.size(), 0u);
  EXPECT_EQ(out.label(0, annotation_tid("compute")), "Compute annotations");
}

TEST(KernelAnnotations, SlicesKeepTheirArgsName) {
  const std::string k1 = kernel(0, 7, "0", "10", "k1", R"("name": "fwd")");
  auto out = compact_output(trace_json({k1}));
  simdjson::dom::element k = out.one("k1");
  EXPECT_EQ(Output::string_of(k["args"], "name"), "fwd");
}

TEST(KernelAnnotations, AnUnnamedSliceEndsTheRunAtTheLastNamedSlice) {
  // The unnamed slice [10,50] closes the run; the run ends at 10, not at 50.
  auto result = compact_text(trace_json({
      kernel(0, 7, "0", "10", "k1", R"("name": "fwd")"),
      kernel(0, 7, "10", "40", "k2"),
      kernel(0, 7, "50", "10", "k3", R"("name": "fwd")"),
  }));
  EXPECT_EQ(result.summary.kernel_annotation_blocks, 2u);
  Output out(write_compacted(result));
  auto fwd = out.named("fwd");
  ASSERT_EQ(fwd.size(), 2u);
  std::vector<std::pair<double, double>> spans;
  for (auto e : fwd) spans.push_back({Output::number_of(e, "ts"), Output::number_of(e, "dur")});
  std::sort(spans.begin(), spans.end());
  EXPECT_EQ(spans, (std::vector<std::pair<double, double>>{{0, 10}, {50, 10}}));
}

TEST(KernelAnnotations, TouchingRunsOfOneNameAreNotCoalesced) {
  // A zero-length unnamed kernel at 10 splits two touching "fwd" runs; they stay two.
  auto result = compact_text(trace_json({
      kernel(0, 7, "0", "10", "k1", R"("name": "fwd")"),
      kernel(0, 7, "10", "0", "k2"),
      kernel(0, 7, "10", "10", "k3", R"("name": "fwd")"),
  }));
  ASSERT_EQ(result.lanes.size(), 1u);
  EXPECT_EQ(result.summary.kernel_annotation_blocks, 2u);
  EXPECT_EQ(result.summary.gpu_annotations_coalesced, 0u);
  EXPECT_EQ(Output(write_compacted(result)).named("fwd").size(), 2u);
}

TEST(KernelAnnotations, EmptyAndNonStringNamesDoNotCount) {
  auto result = compact_text(trace_json({
      kernel(0, 7, "0", "10", "k1", R"("name": "")"),
      kernel(0, 7, "10", "10", "k2", R"("name": 5)"),
      kernel(0, 7, "20", "10", "k3", R"("name": null)"),
  }));
  EXPECT_EQ(result.summary.kernel_annotations_converted, 0u);
  EXPECT_EQ(result.summary.kernel_annotation_blocks, 0u);
  EXPECT_EQ(result.summary.gpu_annotations_retained, 0u);
}

TEST(KernelAnnotations, RunsArePerLane) {
  // Overlapping kernels with one name on two lanes make one run per lane.
  auto result = compact_text(trace_json({
      kernel(0, 7, "0", "20", "k1", R"("name": "fwd")"),
      kernel(0, 8, "5", "20", "k2", R"("name": "fwd")"),
  }));
  ASSERT_EQ(result.lanes.size(), 2u);
  EXPECT_EQ(result.summary.kernel_annotations_converted, 2u);
  EXPECT_EQ(result.summary.kernel_annotation_blocks, 2u);
  Output out(write_compacted(result));
  std::vector<int64_t> tids;
  for (auto e : out.named("fwd")) tids.push_back(Output::int_of(e, "tid"));
  std::sort(tids.begin(), tids.end());
  EXPECT_EQ(tids, (std::vector<int64_t>{result.lanes[0].annotation_tid, result.lanes[1].annotation_tid}));
}

TEST(KernelAnnotations, ANameWithEscapesIsCopiedAsValidJson) {
  auto out = compact_output(trace_json({kernel(0, 7, "0", "10", "k1", R"("name": "a \"quoted\" name")")}));
  auto spans = out.named("a \"quoted\" name");
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(Output::string_of(spans[0], "cat"), "gpu_user_annotation");
}

// A run is of one name as JSON reads it, however its args.name is spelled: "fw\u0064" is
// "fwd". Names with escapes are unescaped when read (Event::arg_name), in any range.
TEST(KernelAnnotations, ANameSpelledWithEscapesIsTheNameItSpells) {
  auto result = compact_text(trace_json({
      kernel(0, 7, "0", "10", "k1", R"("name": "fw\u0064")"),
      kernel(0, 7, "10", "10", "k2", R"("name": "fwd")"),
      kernel(0, 7, "20", "10", "k3", R"("name": "b\u0077d")"),
      kernel(0, 7, "30", "10", "k4", R"("name": "bw\u0064")"),
      kernel(0, 7, "40", "10", "k5", R"("name": "x\u0041")"),  // two runs, each name unescaped
      kernel(0, 7, "50", "10", "k6", R"("name": "y\u0042")"),
  }));
  EXPECT_EQ(result.summary.kernel_annotations_converted, 6u);
  EXPECT_EQ(result.summary.kernel_annotation_blocks, 4u);
  Output out(write_compacted(result));
  ASSERT_EQ(out.named("fwd").size(), 1u);  // the run's span, written with k1's text
  EXPECT_TRUE(out.contains(R"({"name": "fw\u0064", "cat": "gpu_user_annotation", "ph": "X", "pid": 0, "tid": )" +
                           std::to_string(annotation_tid("compute")) + R"(, "ts": 0, "dur": 20,)"))
      << out.text;
  std::vector<double> bwd_durs;
  for (auto e : out.named("bwd"))
    if (Output::string_of(e, "cat") == "gpu_user_annotation") bwd_durs.push_back(Output::number_of(e, "dur"));
  EXPECT_EQ(bwd_durs, std::vector<double>{20});
  // The spans' names, as later passes read them (the PP pass), once the walk is over.
  std::vector<std::string> names;
  for (const Event& event : result.trace.events)
    if (event.synthesised && event.cat == "gpu_user_annotation") names.emplace_back(event.name.view());
  EXPECT_EQ(names, (std::vector<std::string>{"fwd", "bwd", "xA", "yB"}));
}

// PP actions spelled with escapes in kernels' args.name pair as the names they spell: the
// PP pass reads the runs' spans' names after the runs are gone.
TEST(KernelAnnotations, PpActionsSpelledWithEscapesStillPair) {
  auto result = compact_text(trace_json({
      kernel(0, 7, "0", "10", "k1", R"("name": "PP:0\u0052ECV_F000000000000")"),
      kernel(0, 7, "20", "10", "k2", R"("name": "PP:0\u0046000000000000")"),
      kernel(0, 7, "40", "10", "k3", R"("name": "PP:0\u0053END_F000000000000")"),
  }));
  EXPECT_EQ(result.summary.kernel_annotation_blocks, 3u);
  EXPECT_EQ(result.summary.pp.compute_dependency_pairs, 2u);
  EXPECT_EQ(result.summary.pp.compute_dependency_unmatched, 0u);
}

// --- lane metadata -------------------------------------------------------------------------

namespace {

struct Meta {
  std::string name;
  int64_t tid;
  std::string label;   // thread_name's args.name
  int64_t sort_index;  // thread_sort_index's args.sort_index
};

std::vector<Meta> thread_metadata(const Output& out) {
  std::vector<Meta> metas;
  for (auto e : out.events) {
    if (Output::string_of(e, "ph") != "M") continue;
    std::string name = Output::string_of(e, "name");
    if (name != "thread_name" && name != "thread_sort_index") continue;
    metas.push_back({name, Output::int_of(e, "tid"), Output::string_of(e["args"], "name"),
                     Output::int_of(e["args"], "sort_index", -1)});
  }
  return metas;
}

}  // namespace

TEST(LaneMetadata, EachLaneGetsANameAndASortIndexAndAnnotatedTracksSortDirectlyAbove) {
  // Two compute lanes and one memcpy lane; only Compute 2 and the memcpy lane have
  // annotations (Compute 1's annotation track stays empty).
  const int64_t compute1 = lane_tid("compute", 0), compute2 = lane_tid("compute", 1), memcpy = lane_tid("memcpy");
  const int64_t compute2_annotations = annotation_tid("compute", 1), memcpy_annotations = annotation_tid("memcpy");
  auto out = compact_output(trace_json({
      kernel(0, 7, "0", "20"),
      kernel(0, 8, "5", "20"),
      slice_event("gpu_memcpy", "Memcpy HtoD", 0, 7, "50", "5"),
      annotation(0, 8, "6", "1", "on_compute_2"),
      annotation(0, 7, "51", "1", "on_memcpy"),
  }));
  EXPECT_EQ(Output::int_of(out.one("on_compute_2"), "tid"), compute2_annotations);
  EXPECT_EQ(Output::int_of(out.one("on_memcpy"), "tid"), memcpy_annotations);
  std::vector<Meta> metas = thread_metadata(out);
  std::vector<std::tuple<std::string, int64_t, std::string, int64_t>> got,
      want = {
          {"thread_name", compute1, "Compute 1", -1},
          {"thread_sort_index", compute1, "", 0},
          {"thread_name", compute2_annotations, "Compute 2 annotations", -1},
          {"thread_sort_index", compute2_annotations, "", 1},
          {"thread_name", compute2, "Compute 2", -1},
          {"thread_sort_index", compute2, "", 2},
          {"thread_name", memcpy_annotations, "GPU memcpy annotations", -1},
          {"thread_sort_index", memcpy_annotations, "", 3},
          {"thread_name", memcpy, "GPU memcpy", -1},
          {"thread_sort_index", memcpy, "", 4},
      };
  for (const auto& m : metas) got.emplace_back(m.name, m.tid, m.label, m.sort_index);
  EXPECT_EQ(got, want);
}

TEST(LaneMetadata, AnAnnotationTrackWithoutAnnotationsGetsNoMetadata) {
  auto result = compact_text(trace_json({kernel(0, 7, "0", "10")}));
  Output out(write_compacted(result));
  EXPECT_EQ(out.label(0, result.lanes[0].annotation_tid), "");
  EXPECT_EQ(out.label(0, result.lanes[0].tid), "Compute");
  EXPECT_EQ(out.named("thread_name").size(), 1u);
  EXPECT_EQ(out.named("thread_sort_index").size(), 1u);
}

TEST(LaneMetadata, SortIndicesCountOverTheWholeTraceAcrossPids) {
  auto out = compact_output(trace_json({kernel(1, 7, "0", "10"), kernel(0, 7, "0", "10")}));
  std::vector<std::pair<int64_t, int64_t>> got;  // (pid, sort index)
  for (auto e : out.named("thread_sort_index"))
    got.push_back({Output::int_of(e, "pid"), Output::int_of(e["args"], "sort_index")});
  EXPECT_EQ(got, (std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {1, 1}}));
}

TEST(LaneMetadata, OldStreamThreadMetadataIsDroppedAndOtherMetadataKept) {
  const std::string cpu_name = metadata("thread_name", 0, 300, R"({"name": "python main"})");
  const std::string process = metadata("process_name", 0, 0, R"({"name": "GPU 0"})");
  auto out = compact_output(trace_json({
      metadata("thread_name", 0, 7, R"({"name": "stream 7"})"),
      metadata("thread_sort_index", 0, 7, R"({"sort_index": 7})"),
      metadata("thread_name", 1, 7, R"({"name": "stream 7 of a CPU-only pid"})"),
      cpu_name,
      process,
      kernel(0, 7, "0", "10"),
  }));
  EXPECT_EQ(out.label(0, 7), "");
  EXPECT_EQ(out.label(1, 7), "stream 7 of a CPU-only pid");
  EXPECT_EQ(out.label(0, 300), "python main");
  EXPECT_TRUE(out.contains(cpu_name));
  EXPECT_TRUE(out.contains(process));
  for (auto e : out.named("thread_sort_index")) EXPECT_NE(Output::int_of(e["args"], "sort_index"), 7);
}

TEST(LaneMetadata, TakesTheTsOfThePidsFirstMetadataEventEvenOneThatIsASlice) {
  // A measured slice is known by its cat alone, so a kernel written with ph "M" is both a
  // slice and the pid's first metadata event with a ts: the lanes' metadata takes its ts,
  // not the lane's first slice's start.
  auto out = compact_output(trace_json({
      R"({"ph": "M", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 5, "dur": 1, "args": {"stream": 7}})",
      kernel(0, 7, "0", "2"),
      R"({"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "ts": 3, "args": {"name": "GPU 0"}})",
  }));
  ASSERT_FALSE(out.named("thread_name").empty());
  for (auto e : out.named("thread_name")) EXPECT_EQ(Output::number_of(e, "ts"), 5);
}

TEST(LaneMetadata, TheCompactionKeyDescribesTheAlgorithm) {
  auto out = compact_output(trace_json({kernel(0, 7, "0", "10")}));
  simdjson::dom::element key;
  ASSERT_EQ(out.root["cuda_graph_stream_compaction"].get(key), simdjson::SUCCESS);
  EXPECT_EQ(Output::string_of(key, "algorithm"), "semantic interval partitioning");
  EXPECT_EQ(Output::string_of(key, "measurement_policy"), kMeasurementPolicy);
  EXPECT_EQ(Output::string_of(key, "source").rfind("tracelane ", 0), 0u);
}
