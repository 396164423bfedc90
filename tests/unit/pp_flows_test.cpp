// Pipeline-parallel arrows (SPEC 7): action names, blocks, nearest-midpoint pairing and
// the flow events.
#include <ctime>
#include <deque>
#include <numeric>
#include <optional>
#include <queue>
#include <random>
#include <set>

#include "test_support.hpp"

using namespace tracelane;
using namespace tracelane::testing;

namespace {

// Main compute annotation track 100, unshard tracks 200 and 201, on pid 1.
PidTracks tracks(int64_t pid = 1, int pp_rank = 0) {
  PidTracks t;
  t.pid = pid;
  t.pp_rank = pp_rank;
  t.main_compute_track = 100;
  t.unshard_tracks = {200, 201};
  return t;
}

AnnotationSpan span(int64_t pid, int64_t tid, Ns start, Ns end, std::string_view name) {
  return AnnotationSpan{pid, tid, start, end, name};
}

const PpFlow* flow_named(const PpResult& result, std::string_view name) {
  for (const auto& f : result.flows)
    if (f.name == name) return &f;
  return nullptr;
}

}  // namespace

// --- names ----------------------------------------------------------------------------

// An annotation name and the action parse_pp_action reads from it (SPEC 9.5:
// "PP:" + stage + op + optional microbatch).
struct ActionCase {
  const char* text;
  int stage;
  const char* op;
  std::optional<int64_t> microbatch;
};

class ParsePpActionReads : public ::testing::TestWithParam<ActionCase> {};

TEST_P(ParsePpActionReads, StageOpAndMicrobatch) {
  const ActionCase& c = GetParam();
  auto a = parse_pp_action(c.text);
  ASSERT_TRUE(a) << c.text;
  EXPECT_EQ(a->stage, c.stage) << c.text;
  EXPECT_EQ(a->op, c.op) << c.text;
  EXPECT_EQ(a->microbatch, c.microbatch) << c.text;
}

INSTANTIATE_TEST_SUITE_P(ComputeOps, ParsePpActionReads,
                         ::testing::Values(ActionCase{"PP:0F0", 0, "F", 0}, ActionCase{"PP:12B34", 12, "B", 34}));
INSTANTIATE_TEST_SUITE_P(LeadingZerosAsIntegers, ParsePpActionReads,
                         ::testing::Values(ActionCase{"PP:00F01", 0, "F", 1}));
INSTANTIATE_TEST_SUITE_P(SendAndRecvOps, ParsePpActionReads,
                         ::testing::Values(ActionCase{"PP:3SEND_F7", 3, "SEND_F", 7},
                                           ActionCase{"PP:3RECV_F7", 3, "RECV_F", 7},
                                           ActionCase{"PP:3SEND_B7", 3, "SEND_B", 7},
                                           ActionCase{"PP:3RECV_B7", 3, "RECV_B", 7}));
INSTANTIATE_TEST_SUITE_P(UnshardWithoutMicrobatch, ParsePpActionReads,
                         ::testing::Values(ActionCase{"PP:1UNSHARD", 1, "UNSHARD", std::nullopt}));
INSTANTIATE_TEST_SUITE_P(TheMicrobatchIsOptional, ParsePpActionReads,
                         ::testing::Values(ActionCase{"PP:0F", 0, "F", std::nullopt},
                                           ActionCase{"PP:2RECV_F", 2, "RECV_F", std::nullopt}));
INSTANTIATE_TEST_SUITE_P(ZeroBubbleAndFsdpOps, ParsePpActionReads,
                         ::testing::Values(ActionCase{"PP:1I3", 1, "I", 3}, ActionCase{"PP:1W3", 1, "W", 3},
                                           ActionCase{"PP:1B3", 1, "B", 3}, ActionCase{"PP:1F3", 1, "F", 3},
                                           ActionCase{"PP:4RESHARD", 4, "RESHARD", std::nullopt},
                                           ActionCase{"PP:4REDUCE_GRAD", 4, "REDUCE_GRAD", std::nullopt},
                                           ActionCase{"PP:4UNSHARD", 4, "UNSHARD", std::nullopt}));

TEST(ParsePpAction, RequiresAFullMatch) {
  for (const char* bad : {"PP:F0", "PP:0X0", "xPP:0F0", "PP:0F0 ", " PP:0F0", "pp:0F0", "PP:0SEND0", "PP:", "PP:-1F0",
                          "PP:0F0x", "PP:0UNSHARD1", "ProfilerStep#3", ""})
    EXPECT_FALSE(parse_pp_action(bad).has_value()) << "'" << bad << "'";
}

TEST(ParsePpActions, OverlapFormGivesBothSubActions) {
  auto actions = parse_pp_actions("PP:(0F1;1B0)OVERLAP_F_B");
  ASSERT_EQ(actions.size(), 2u);
  EXPECT_EQ(actions[0].stage, 0);
  EXPECT_EQ(actions[0].op, "F");
  EXPECT_EQ(*actions[0].microbatch, 1);
  EXPECT_EQ(actions[1].stage, 1);
  EXPECT_EQ(actions[1].op, "B");
  EXPECT_EQ(*actions[1].microbatch, 0);
  EXPECT_FALSE(parse_pp_action("PP:(0F1;1B0)OVERLAP_F_B").has_value());   // not a single action
  EXPECT_TRUE(parse_pp_actions("PP:(0F1;1SEND_B0)OVERLAP_F_B").empty());  // sub-actions are compute
  EXPECT_TRUE(parse_pp_actions("PP:(0F1)OVERLAP_F_B").empty());
}

// --- blocks and rank-local arrows -----------------------------------------------------

TEST(PpLocalFlows, RecvComputeAndSendChainIntoTwoArrows) {
  std::vector<AnnotationSpan> spans = {span(1, 100, 0, 10, "PP:0RECV_F0"), span(1, 100, 10, 50, "PP:0F0"),
                                       span(1, 100, 60, 70, "PP:0SEND_F0")};
  auto result = build_pp_flows(spans, {tracks()}, false);
  EXPECT_EQ(result.counts.compute_dependency_pairs, 2u);
  EXPECT_EQ(result.counts.compute_dependency_unmatched, 0u);
  ASSERT_EQ(result.flows.size(), 2u);
  const PpFlow* in = flow_named(result, "0RECV_F0 -> 0F0");
  const PpFlow* out = flow_named(result, "0F0 -> 0SEND_F0");
  ASSERT_TRUE(in && out);
  EXPECT_EQ(in->cat, "pp_compute_dependency");
  EXPECT_EQ(in->source_ts, 0);
  EXPECT_EQ(in->destination_ts, 10);
  EXPECT_EQ(in->source_tid, 100);
  EXPECT_EQ(in->destination_tid, 100);
  EXPECT_EQ(in->source_operation, "RECV_F");
  EXPECT_EQ(in->destination_operation, "F");
  EXPECT_EQ(in->microbatch, 0);
  EXPECT_EQ(out->source_ts, 10);
  EXPECT_EQ(out->destination_ts, 60);
  EXPECT_EQ(result.counts.send_recv_pairs + result.counts.send_recv_unmatched, 0u);
}

TEST(PpLocalFlows, ComputeBlocksOnlyCountOnTheMainComputeTrack) {
  // The F span sits on another compute lane's track (101): no F block, so RECV_F -> F is
  // skipped without unmatched counts.
  std::vector<AnnotationSpan> spans = {span(1, 100, 0, 10, "PP:0RECV_F0"), span(1, 101, 10, 50, "PP:0F0")};
  auto result = build_pp_flows(spans, {tracks()}, false);
  EXPECT_EQ(result.counts.compute_dependency_pairs, 0u);
  EXPECT_EQ(result.counts.compute_dependency_unmatched, 0u);
  EXPECT_TRUE(result.flows.empty());
}

TEST(PpLocalFlows, AComputeChainAcrossTracksSpansOnlyItsMainTrackMembers) {
  // F0 on the main track [10,20] chains with F0 on track 101 [15,40]; the block is
  // [10,20], so a RECV_F starting at 25 would end its arrow after the block: dropped.
  std::vector<AnnotationSpan> spans = {span(1, 100, 10, 20, "PP:0F0"), span(1, 101, 15, 40, "PP:0F0"),
                                       span(1, 100, 25, 30, "PP:0RECV_F0")};
  auto result = build_pp_flows(spans, {tracks()}, false);
  EXPECT_EQ(result.counts.compute_dependency_pairs, 0u);
  EXPECT_EQ(result.counts.compute_dependency_unmatched, 2u);
  EXPECT_TRUE(result.flows.empty());
}

TEST(PpLocalFlows, AChainBridgedByAnotherTrackIsOneBlock) {
  // Main-track spans [0,10] and [20,30] are joined through [5,25] on track 101: one F
  // block [0,30], so two SEND_F0 copies leave one unmatched.
  std::vector<AnnotationSpan> spans = {span(1, 100, 0, 10, "PP:0F0"), span(1, 101, 5, 25, "PP:0F0"),
                                       span(1, 100, 20, 30, "PP:0F0"), span(1, 100, 31, 32, "PP:0SEND_F0"),
                                       span(1, 100, 40, 41, "PP:0SEND_F0")};
  auto result = build_pp_flows(spans, {tracks()}, false);
  EXPECT_EQ(result.counts.compute_dependency_pairs, 1u);
  EXPECT_EQ(result.counts.compute_dependency_unmatched, 1u);
  ASSERT_EQ(result.flows.size(), 1u);
  EXPECT_EQ(result.flows[0].source_ts, 0);
  EXPECT_EQ(result.flows[0].destination_ts, 31);
}

TEST(PpLocalFlows, AnArrowEndingAfterItsDestinationIsDroppedAndCountsTwo) {
  // RECV_F [25,30] -> F [10,20]: the end max(25,10) lies after 20.
  std::vector<AnnotationSpan> spans = {span(1, 100, 10, 20, "PP:0F0"), span(1, 100, 25, 30, "PP:0RECV_F0")};
  auto result = build_pp_flows(spans, {tracks()}, false);
  EXPECT_EQ(result.counts.compute_dependency_pairs, 0u);
  EXPECT_EQ(result.counts.compute_dependency_unmatched, 2u);
  EXPECT_TRUE(result.flows.empty());
}

TEST(PpLocalFlows, RepeatedBlocksPairByNearestMidpoint) {
  // RECV a [0,10] and b [100,110]; one F [105,120]: b is nearer, a stays unmatched.
  std::vector<AnnotationSpan> spans = {span(1, 100, 0, 10, "PP:0RECV_F0"), span(1, 100, 100, 110, "PP:0RECV_F0"),
                                       span(1, 100, 105, 120, "PP:0F0")};
  auto result = build_pp_flows(spans, {tracks()}, false);
  EXPECT_EQ(result.counts.compute_dependency_pairs, 1u);
  EXPECT_EQ(result.counts.compute_dependency_unmatched, 1u);
  ASSERT_EQ(result.flows.size(), 1u);
  EXPECT_EQ(result.flows[0].source_ts, 100);
  EXPECT_EQ(result.flows[0].destination_ts, 105);
}

TEST(PpLocalFlows, EqualMidpointDistancesGoToTheEarlierSource) {
  // RECV a [0,10] (sum 10), b [40,50] (sum 90), F c [20,30] (sum 50): both 40 away.
  std::vector<AnnotationSpan> spans = {span(1, 100, 40, 50, "PP:0RECV_F0"), span(1, 100, 0, 10, "PP:0RECV_F0"),
                                       span(1, 100, 20, 30, "PP:0F0")};
  auto result = build_pp_flows(spans, {tracks()}, false);
  ASSERT_EQ(result.flows.size(), 1u);
  EXPECT_EQ(result.flows[0].source_ts, 0);
  EXPECT_EQ(result.flows[0].destination_ts, 20);
  EXPECT_EQ(result.counts.compute_dependency_unmatched, 1u);
}

TEST(PpLocalFlows, PairingIsGreedyOverAllPairsNotInSourceOrder) {
  // Sources a [0,10] (sum 10), b [20,30] (sum 50); destinations c [25,35] (sum 60),
  // d [200,210]. In source order a would take c; by distance b-c (10) comes first, so a
  // gets d.
  std::vector<AnnotationSpan> spans = {span(1, 100, 0, 10, "PP:0F0"), span(1, 100, 20, 30, "PP:0F0"),
                                       span(1, 100, 25, 35, "PP:0SEND_F0"), span(1, 100, 200, 210, "PP:0SEND_F0")};
  // F blocks [0,10] and [20,30] do not touch, so they are two blocks.
  auto result = build_pp_flows(spans, {tracks()}, false);
  EXPECT_EQ(result.counts.compute_dependency_pairs, 2u);
  ASSERT_EQ(result.flows.size(), 2u);
  std::vector<std::pair<Ns, Ns>> ends;
  for (const auto& f : result.flows) ends.push_back({f.source_ts, f.destination_ts});
  std::sort(ends.begin(), ends.end());
  EXPECT_EQ(ends, (std::vector<std::pair<Ns, Ns>>{{0, 200}, {20, 25}}));
}

TEST(PpLocalFlows, SendAndRecvAreBlocksOnAnyTrack) {
  std::vector<AnnotationSpan> spans = {span(1, 555, 0, 10, "PP:0RECV_B2"), span(1, 100, 10, 50, "PP:0B2"),
                                       span(1, 556, 60, 70, "PP:0SEND_B2")};
  auto result = build_pp_flows(spans, {tracks()}, false);
  EXPECT_EQ(result.counts.compute_dependency_pairs, 2u);
  const PpFlow* in = flow_named(result, "0RECV_B2 -> 0B2");
  ASSERT_TRUE(in);
  EXPECT_EQ(in->source_tid, 555);
  EXPECT_EQ(in->destination_tid, 100);
  EXPECT_EQ(in->microbatch, 2);
}

TEST(PpLocalFlows, DifferentMicrobatchesAndStagesDoNotPair) {
  std::vector<AnnotationSpan> spans = {span(1, 100, 0, 10, "PP:0RECV_F1"), span(1, 100, 10, 50, "PP:0F0"),
                                       span(1, 100, 60, 70, "PP:1SEND_F0")};
  auto result = build_pp_flows(spans, {tracks()}, false);
  EXPECT_EQ(result.counts.compute_dependency_pairs, 0u);
  EXPECT_EQ(result.counts.compute_dependency_unmatched, 0u);
}

TEST(PpLocalFlows, SendAndRecvDoNotPairWithinOneTrace) {
  std::vector<AnnotationSpan> spans = {span(1, 100, 0, 10, "PP:0SEND_F0"), span(1, 100, 20, 30, "PP:1RECV_F0")};
  auto result = build_pp_flows(spans, {tracks(1), tracks(1)}, false);
  EXPECT_TRUE(result.flows.empty());
  EXPECT_EQ(result.counts.send_recv_pairs, 0u);
  EXPECT_EQ(result.counts.send_recv_unmatched, 0u);
}

// --- unshard --------------------------------------------------------------------------

TEST(PpUnshardFlows, UnshardPointsAtTheFirstComputeBlockStartingAtOrAfterIt) {
  std::vector<AnnotationSpan> spans = {span(1, 200, 5, 10, "PP:0UNSHARD"), span(1, 100, 2, 4, "PP:0F0"),
                                       span(1, 100, 80, 90, "PP:0B3"), span(1, 100, 50, 60, "PP:0F1"),
                                       span(1, 100, 50, 70, "PP:0F2")};
  auto result = build_pp_flows(spans, {tracks()}, false);
  EXPECT_EQ(result.counts.unshard_compute_pairs, 1u);
  EXPECT_EQ(result.counts.unshard_compute_unmatched, 0u);
  const PpFlow* f = flow_named(result, "0UNSHARD -> 0F1");
  ASSERT_TRUE(f) << "flows: " << result.flows.size();
  EXPECT_EQ(f->cat, "pp_unshard_dependency");
  EXPECT_EQ(f->source_ts, 5);
  EXPECT_EQ(f->source_tid, 200);
  EXPECT_EQ(f->destination_ts, 50);
  EXPECT_EQ(f->destination_tid, 100);
  EXPECT_EQ(f->microbatch, 1) << "the destination's microbatch when the source has none";
  EXPECT_EQ(f->source_operation, "UNSHARD");
}

TEST(PpUnshardFlows, OnlyTheFirstTwoAllGatherTracksHoldUnshardBlocks) {
  std::vector<AnnotationSpan> spans = {span(1, 200, 5, 10, "PP:0UNSHARD"), span(1, 201, 6, 10, "PP:0UNSHARD"),
                                       span(1, 202, 7, 10, "PP:0UNSHARD"), span(1, 100, 1, 3, "PP:0UNSHARD"),
                                       span(1, 100, 50, 60, "PP:0F0")};
  auto result = build_pp_flows(spans, {tracks()}, false);
  EXPECT_EQ(result.counts.unshard_compute_pairs, 2u);
  EXPECT_EQ(result.counts.unshard_compute_unmatched, 0u);
}

TEST(PpUnshardFlows, AnUnshardWithNoLaterComputeCountsOneUnmatched) {
  std::vector<AnnotationSpan> spans = {span(1, 200, 70, 80, "PP:0UNSHARD"), span(1, 100, 50, 60, "PP:0F0"),
                                       span(1, 201, 0, 1, "PP:1UNSHARD")};
  auto result = build_pp_flows(spans, {tracks()}, false);
  EXPECT_EQ(result.counts.unshard_compute_pairs, 0u);
  EXPECT_EQ(result.counts.unshard_compute_unmatched, 2u);
  EXPECT_TRUE(result.flows.empty());
}

TEST(PpUnshardFlows, AnUnshardArrowThatCannotEndInsideItsDestinationCountsOne) {
  // A malformed F span with negative duration [50,45]: the arrow would end at 50, after
  // the block's end, so it is dropped and counts one (not two) unmatched.
  std::vector<AnnotationSpan> spans = {span(1, 200, 5, 10, "PP:0UNSHARD"), span(1, 100, 50, 45, "PP:0F0")};
  auto result = build_pp_flows(spans, {tracks()}, false);
  EXPECT_EQ(result.counts.unshard_compute_pairs, 0u);
  EXPECT_EQ(result.counts.unshard_compute_unmatched, 1u);
  EXPECT_TRUE(result.flows.empty());
}

// --- cross-rank arrows (merge only) -----------------------------------------------------

TEST(PpSendRecvFlows, SendFOfStageSGoesToRecvFOfStageSPlusOneAcrossPids) {
  std::vector<AnnotationSpan> spans = {span(1, 100, 100, 110, "PP:0SEND_F3"), span(2, 100, 150, 200, "PP:1RECV_F3"),
                                       span(2, 100, 300, 310, "PP:1SEND_B3"), span(1, 100, 350, 360, "PP:0RECV_B3")};
  auto result = build_pp_flows(spans, {tracks(1, 0), tracks(2, 1)}, true);
  EXPECT_EQ(result.counts.send_recv_pairs, 2u);
  EXPECT_EQ(result.counts.send_recv_unmatched, 0u);
  const PpFlow* f = flow_named(result, "0SEND_F3 -> 1RECV_F3");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->cat, "pp_send_recv");
  EXPECT_EQ(f->source_pid, 1);
  EXPECT_EQ(f->destination_pid, 2);
  EXPECT_EQ(f->source_ts, 100);
  EXPECT_EQ(f->destination_ts, 150);
  EXPECT_EQ(f->source_pp_rank, 0);
  EXPECT_EQ(f->destination_pp_rank, 1);
  EXPECT_EQ(f->source_stage, 0);
  EXPECT_EQ(f->destination_stage, 1);
  EXPECT_EQ(f->microbatch, 3);
  EXPECT_TRUE(flow_named(result, "1SEND_B3 -> 0RECV_B3"));
}

TEST(PpSendRecvFlows, AnEndAtTheSendStartMovesOneNanosecondLater) {
  std::vector<AnnotationSpan> spans = {span(1, 100, 100, 110, "PP:0SEND_F0"), span(2, 100, 50, 200, "PP:1RECV_F0")};
  auto result = build_pp_flows(spans, {tracks(1, 0), tracks(2, 1)}, true);
  ASSERT_EQ(result.flows.size(), 1u);
  EXPECT_EQ(result.flows[0].source_ts, 100);
  EXPECT_EQ(result.flows[0].destination_ts, 101);
}

TEST(PpSendRecvFlows, TheOneNanosecondNudgePastTheRecvEndDropsTheArrow) {
  // RECV [50,100]: the end would be 100 = S.start, moved to 101, after the RECV ends.
  std::vector<AnnotationSpan> spans = {span(1, 100, 100, 110, "PP:0SEND_F0"), span(2, 100, 50, 100, "PP:1RECV_F0")};
  auto result = build_pp_flows(spans, {tracks(1, 0), tracks(2, 1)}, true);
  EXPECT_TRUE(result.flows.empty());
  EXPECT_EQ(result.counts.send_recv_pairs, 0u);
  EXPECT_EQ(result.counts.send_recv_unmatched, 2u);
}

TEST(PpSendRecvFlows, UnpairedBlocksAndRecvsNobodySendsToCountAsUnmatched) {
  // Two SEND_F0 for one RECV_F0 (1 unmatched) and a RECV_F7 with no SEND_F7 (1 more).
  std::vector<AnnotationSpan> spans = {span(1, 100, 0, 10, "PP:0SEND_F0"), span(1, 100, 500, 510, "PP:0SEND_F0"),
                                       span(2, 100, 20, 30, "PP:1RECV_F0"), span(2, 100, 40, 50, "PP:1RECV_F7")};
  auto result = build_pp_flows(spans, {tracks(1, 0), tracks(2, 1)}, true);
  EXPECT_EQ(result.counts.send_recv_pairs, 1u);
  EXPECT_EQ(result.counts.send_recv_unmatched, 2u);
  ASSERT_EQ(result.flows.size(), 1u);
  EXPECT_EQ(result.flows[0].source_ts, 0);
}

TEST(PpSendRecvFlows, FlowIdsStartAt1e12AndAdvancePerPairConsideredEvenWhenDropped) {
  // The send->recv pair is considered first and dropped (id 1e12); the rank-local pair
  // gets 1e12 + 1.
  std::vector<AnnotationSpan> spans = {span(1, 100, 100, 110, "PP:0SEND_F0"), span(2, 100, 50, 100, "PP:1RECV_F0"),
                                       span(2, 100, 120, 130, "PP:1F0")};
  auto result = build_pp_flows(spans, {tracks(1, 0), tracks(2, 1)}, true);
  EXPECT_EQ(result.counts.send_recv_unmatched, 2u);
  ASSERT_EQ(result.flows.size(), 1u);
  EXPECT_EQ(result.flows[0].name, "1RECV_F0 -> 1F0");
  EXPECT_EQ(result.flows[0].id, 1000000000001);
}

// --- in a compacted trace --------------------------------------------------------------

namespace {

// A GPU with one compute lane (kernel on stream 7) whose annotation track is the main
// compute track.
std::string annotated_trace(const std::vector<std::string>& annotations, const std::string& extra_top = "") {
  std::vector<std::string> events = {kernel(0, 7, "0", "1000", "gemm")};
  events.insert(events.end(), annotations.begin(), annotations.end());
  return trace_json(events, extra_top);
}

}  // namespace

TEST(PpInCompaction, AnnotationsOnTheGpuStreamBecomeRankLocalArrows) {
  auto result =
      compact_text(annotated_trace({annotation(0, 7, "0", "10", "PP:0RECV_F0"), annotation(0, 7, "10", "40", "PP:0F0"),
                                    annotation(0, 7, "60", "10", "PP:0SEND_F0")}));
  ASSERT_TRUE(result.summary.has_pp);
  EXPECT_EQ(result.summary.pp_rank, 0);
  EXPECT_EQ(result.summary.pp.compute_dependency_pairs, 2u);
  EXPECT_EQ(result.summary.pp.compute_dependency_unmatched, 0u);
  Output out(write_compacted(result));
  int64_t track = result.lanes[0].annotation_tid;
  auto starts = out.with_ph("s", "pp_compute_dependency");
  auto ends = out.with_ph("f", "pp_compute_dependency");
  ASSERT_EQ(starts.size(), 2u);
  ASSERT_EQ(ends.size(), 2u);
  bool found = false;
  for (auto s : starts) {
    if (Output::string_of(s, "name") != "0RECV_F0 -> 0F0") continue;
    found = true;
    EXPECT_EQ(Output::int_of(s, "pid"), 0);
    EXPECT_EQ(Output::int_of(s, "tid"), track);
    EXPECT_EQ(Output::number_of(s, "ts"), 0);
    EXPECT_EQ(Output::string_of(s, "bp"), "e");
    simdjson::dom::element args = s["args"];
    EXPECT_EQ(Output::int_of(args, "source_pp_rank"), 0);
    EXPECT_EQ(Output::int_of(args, "destination_pp_rank"), 0);
    EXPECT_EQ(Output::int_of(args, "source_stage"), 0);
    EXPECT_EQ(Output::int_of(args, "destination_stage"), 0);
    EXPECT_EQ(Output::string_of(args, "source_operation"), "RECV_F");
    EXPECT_EQ(Output::string_of(args, "destination_operation"), "F");
    EXPECT_EQ(Output::int_of(args, "microbatch"), 0);
    int64_t id = Output::int_of(s, "id");
    bool paired = false;
    for (auto f : ends)
      if (Output::int_of(f, "id") == id) {
        paired = true;
        EXPECT_EQ(Output::number_of(f, "ts"), 10);
        EXPECT_EQ(Output::int_of(f, "tid"), track);
        EXPECT_EQ(Output::string_of(f, "bp"), "e");
      }
    EXPECT_TRUE(paired);
  }
  EXPECT_TRUE(found);
  simdjson::dom::element local;
  ASSERT_EQ(out.root["cuda_graph_pp_local_flows"].get(local), simdjson::SUCCESS);
  EXPECT_EQ(Output::int_of(local, "pp_rank"), 0);
  EXPECT_EQ(Output::int_of(local, "pp_compute_dependency_pairs"), 2);
  EXPECT_EQ(Output::int_of(local, "pp_compute_dependency_unmatched"), 0);
  EXPECT_EQ(Output::int_of(local, "pp_unshard_compute_pairs"), 0);
  EXPECT_EQ(Output::int_of(local, "pp_unshard_compute_unmatched"), 0);
}

TEST(PpInCompaction, ComputeAnnotationsOnASecondComputeLaneMakeNoBlocks) {
  // Streams 7 and 8 overlap: Compute 1 and Compute 2. The F annotation is on stream 8,
  // so it lands on Compute 2's track, which is not the main compute track.
  auto arrows = [](int f_stream) {
    auto result = compact_text(
        trace_json({kernel(0, 7, "0", "100"), kernel(0, 8, "10", "80"), annotation(0, 7, "0", "5", "PP:0RECV_F0"),
                    annotation(0, f_stream, "20", "10", "PP:0F0")}));
    return result.summary.pp.compute_dependency_pairs;
  };
  EXPECT_EQ(arrows(7), 1u);
  EXPECT_EQ(arrows(8), 0u);
}

TEST(PpInCompaction, UnshardBlocksComeOnlyFromTheFirstTwoAllGatherLanes) {
  // Three overlapping all-gather streams make three all-gather lanes; an UNSHARD on the
  // third lane's track makes no block.
  auto pairs = [](int unshard_stream) {
    auto result = compact_text(trace_json({
        kernel(0, 7, "0", "200", "gemm"),
        kernel(0, 20, "0", "100", "ncclDevKernel_AllGather"),
        kernel(0, 21, "1", "100", "ncclDevKernel_AllGather"),
        kernel(0, 22, "2", "100", "ncclDevKernel_AllGather"),
        annotation(0, unshard_stream, "5", "5", "PP:0UNSHARD"),
        annotation(0, 7, "50", "10", "PP:0F0"),
    }));
    return std::pair{result.summary.pp.unshard_compute_pairs, result.summary.pp.unshard_compute_unmatched};
  };
  EXPECT_EQ(pairs(20), (std::pair<size_t, size_t>{1, 0}));
  EXPECT_EQ(pairs(21), (std::pair<size_t, size_t>{1, 0}));
  EXPECT_EQ(pairs(22), (std::pair<size_t, size_t>{0, 0}));
}

TEST(PpInCompaction, PpRankComesFromTheTracesOwnPgConfig) {
  const std::string info =
      R"("distributedInfo": {"backend": "nccl", "rank": 4, "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "ranks": [0, 1, 2, 3, 4, 5, 6, 7]}, {"pg_name": "3", "pg_desc": "mesh_pp", "ranks": [0, 4]}]})";
  auto result = compact_text(
      annotated_trace({annotation(0, 7, "10", "40", "PP:1F0"), annotation(0, 7, "60", "10", "PP:1SEND_F0")}, info));
  EXPECT_EQ(result.summary.pp_rank, 1);
  EXPECT_EQ(result.summary.pp.compute_dependency_pairs, 1u);
  Output out(write_compacted(result));
  EXPECT_EQ(Output::int_of(out.root["cuda_graph_pp_local_flows"], "pp_rank"), 1);
  auto starts = out.with_ph("s", "pp_compute_dependency");
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(Output::int_of(starts[0]["args"], "source_pp_rank"), 1);
}

TEST(PpInCompaction, WithoutPpFlowsTheTraceGetsNoArrowsAndNoLocalFlowsKey) {
  auto result = compact_text(
      annotated_trace({annotation(0, 7, "10", "40", "PP:0F0"), annotation(0, 7, "60", "10", "PP:0SEND_F0")}),
      {.pp_flows = false});
  EXPECT_FALSE(result.summary.has_pp);
  Output out(write_compacted(result));
  EXPECT_TRUE(out.with_ph("s", "pp_compute_dependency").empty());
  simdjson::dom::element local;
  EXPECT_NE(out.root["cuda_graph_pp_local_flows"].get(local), simdjson::SUCCESS);
}

TEST(PpInCompaction, ATraceWithoutPpAnnotationsHasZeroCounts) {
  auto result = compact_text(annotated_trace({annotation(0, 7, "10", "40", "forward")}));
  EXPECT_TRUE(result.summary.has_pp);
  EXPECT_EQ(result.summary.pp.compute_dependency_pairs, 0u);
  EXPECT_EQ(result.summary.pp.compute_dependency_unmatched, 0u);
  EXPECT_EQ(result.summary.pp.unshard_compute_pairs, 0u);
  EXPECT_EQ(result.summary.pp.unshard_compute_unmatched, 0u);
}

// --- full grammar (SPEC 9.5) and endpoints inside member spans (SPEC 9.6) -------------

TEST(PpZeroBubble, InputGradientSitsBetweenRecvBAndSendBLikeB) {
  std::vector<AnnotationSpan> spans = {
      span(1, 300, 0, 10, "PP:1RECV_B0"),
      span(1, 100, 20, 40, "PP:1I0"),
      span(1, 100, 50, 70, "PP:1W0"),  // weight gradient: compute, but no send/recv
      span(1, 301, 80, 90, "PP:1SEND_B0"),
  };
  auto result = build_pp_flows(spans, {tracks()}, false);
  EXPECT_NE(flow_named(result, "1RECV_B0 -> 1I0"), nullptr);
  EXPECT_NE(flow_named(result, "1I0 -> 1SEND_B0"), nullptr);
  EXPECT_EQ(result.counts.compute_dependency_pairs, 2u);
  EXPECT_EQ(result.counts.compute_dependency_unmatched, 0u);
  for (const auto& f : result.flows) EXPECT_EQ(f.source_operation == "W" || f.destination_operation == "W", false);
}

TEST(PpZeroBubble, UnshardPointsAtAnInputOrWeightGradientBlockToo) {
  std::vector<AnnotationSpan> spans = {span(1, 200, 0, 5, "PP:0UNSHARD"), span(1, 100, 10, 20, "PP:0W3")};
  auto result = build_pp_flows(spans, {tracks()}, false);
  ASSERT_NE(flow_named(result, "0UNSHARD -> 0W3"), nullptr);
  EXPECT_EQ(result.counts.unshard_compute_pairs, 1u);
}

TEST(PpOverlap, EachSubActionOfAnOverlappedSpanIsAComputeBlock) {
  std::vector<AnnotationSpan> spans = {
      span(1, 300, 0, 10, "PP:0RECV_F1"),
      span(1, 100, 20, 60, "PP:(0F1;0B0)OVERLAP_F_B"),
      span(1, 301, 70, 80, "PP:0SEND_B0"),
  };
  auto result = build_pp_flows(spans, {tracks()}, false);
  const PpFlow* into_f = flow_named(result, "0RECV_F1 -> 0F1");
  const PpFlow* from_b = flow_named(result, "0B0 -> 0SEND_B0");
  ASSERT_NE(into_f, nullptr);
  ASSERT_NE(from_b, nullptr);
  EXPECT_EQ(into_f->destination_tid, 100);
  EXPECT_EQ(from_b->source_ts, 20);
}

TEST(PpReshard, ReshardAndReduceGradMakeNoBlocksArrowsOrCounts) {
  std::vector<AnnotationSpan> spans = {span(1, 200, 0, 5, "PP:0RESHARD"), span(1, 100, 10, 20, "PP:0REDUCE_GRAD"),
                                       span(1, 100, 30, 40, "PP:0F0")};
  auto result = build_pp_flows(spans, {tracks()}, false);
  EXPECT_TRUE(result.flows.empty());
  EXPECT_EQ(result.counts.unshard_compute_pairs + result.counts.unshard_compute_unmatched +
                result.counts.compute_dependency_pairs + result.counts.compute_dependency_unmatched,
            0u);
}

TEST(PpEndpoints, AnArrowIntoABridgedBlockEndsInsideAMemberSpanNotInTheGap) {
  // F0 on the main track at [0,10] and [30,40], bridged by a span on another track.
  // RECV_F0 starts at 15: max(S.start, D.start) = 15 lies in the gap; the end moves to
  // the nearest member's edge (10), on the member's own track.
  std::vector<AnnotationSpan> spans = {
      span(1, 100, 0, 10, "PP:0F0"),
      span(1, 555, 5, 35, "PP:0F0"),
      span(1, 100, 30, 40, "PP:0F0"),
      span(1, 300, 15, 16, "PP:0RECV_F0"),
  };
  auto result = build_pp_flows(spans, {tracks()}, false);
  const PpFlow* f = flow_named(result, "0RECV_F0 -> 0F0");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->destination_tid, 100);
  EXPECT_TRUE((f->destination_ts >= 0 && f->destination_ts <= 10) ||
              (f->destination_ts >= 30 && f->destination_ts <= 40))
      << f->destination_ts;
}

TEST(PpEndpoints, ArrowsLandOnTheSubTrackWhereTheMemberSpanIs) {
  PidTracks t = tracks();
  t.main_compute_subtracks = {150};
  std::vector<AnnotationSpan> spans = {span(1, 300, 0, 5, "PP:0RECV_F0"), span(1, 150, 10, 20, "PP:0F0")};
  auto result = build_pp_flows(spans, {t}, false);
  const PpFlow* f = flow_named(result, "0RECV_F0 -> 0F0");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->destination_tid, 150);
}

TEST(PairByNearestMidpoint, EqualsTheAllPairsGreedyDefinitionOnRandomInputsWithTies) {
  std::mt19937 random(1234);
  for (int round = 0; round < 400; ++round) {
    size_t n = random() % 9, m = random() % 9;
    std::vector<Ns> sources(n), destinations(m);
    for (auto& v : sources) v = Ns(random() % 12);  // small range: many equal distances
    for (auto& v : destinations) v = Ns(random() % 12);
    // The definition: every pair, stable-sorted by distance (ties: source, then destination).
    std::vector<std::tuple<Ns, size_t, size_t>> all;
    for (size_t s = 0; s < n; ++s)
      for (size_t d = 0; d < m; ++d) all.emplace_back(std::abs(sources[s] - destinations[d]), s, d);
    std::stable_sort(all.begin(), all.end(), [](auto& a, auto& b) { return std::get<0>(a) < std::get<0>(b); });
    std::vector<bool> s_taken(n), d_taken(m);
    std::vector<std::pair<size_t, size_t>> expected;
    for (auto& [distance, s, d] : all)
      if (!s_taken[s] && !d_taken[d]) s_taken[s] = d_taken[d] = true, expected.push_back({s, d});
    EXPECT_EQ(pair_by_nearest_midpoint(sources, destinations), expected) << "round " << round;
  }
}

// --- pairing: the same pairs on every shape, in O(n log n) ----------------------------------

namespace {

// The reference: SPEC 7's definition as written, every pair stable-sorted by distance
// (ties: source, then destination), taken while both sides are free.
std::vector<std::pair<size_t, size_t>> all_pairs_pairing(const std::vector<Ns>& sources,
                                                         const std::vector<Ns>& destinations) {
  std::vector<std::tuple<__int128, size_t, size_t>> all;
  for (size_t s = 0; s < sources.size(); ++s)
    for (size_t d = 0; d < destinations.size(); ++d) {
      __int128 distance = __int128(sources[s]) - destinations[d];
      all.emplace_back(distance < 0 ? -distance : distance, s, d);
    }
  std::stable_sort(all.begin(), all.end(), [](auto& a, auto& b) { return std::get<0>(a) < std::get<0>(b); });
  std::vector<bool> s_taken(sources.size()), d_taken(destinations.size());
  std::vector<std::pair<size_t, size_t>> pairs;
  for (auto& [distance, s, d] : all)
    if (!s_taken[s] && !d_taken[d]) s_taken[s] = d_taken[d] = true, pairs.push_back({s, d});
  return pairs;
}

// The previous implementation (lazy nearest-first cursors per source with a heap), kept as
// a second reference: it equals the definition, but n sources all left of n destinations
// made each cursor walk past every taken destination (quadratic).
std::vector<std::pair<size_t, size_t>> lazy_cursor_pairing(const std::vector<Ns>& source_sums,
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

// Midpoint sums of one adversarial shape: `n` sources and `m` destinations.
enum class Shape {
  random_small,
  sources_first,
  destinations_first,
  interleaved_runs,
  alternating,
  all_equal,
  far_apart,
  wide_values,
  count
};

std::pair<std::vector<Ns>, std::vector<Ns>> shape_sums(Shape shape, size_t n, size_t m, std::mt19937_64& random) {
  std::vector<Ns> sources(n), destinations(m);
  size_t run = 1 + random() % 4;
  for (size_t k = 0; k < n; ++k) {
    switch (shape) {
      case Shape::random_small:
        sources[k] = Ns(random() % 12);
        break;
      case Shape::sources_first:
        sources[k] = Ns(2 * k + random() % 2);
        break;
      case Shape::destinations_first:
        sources[k] = Ns(4 * m + 2 * k + random() % 2);
        break;
      case Shape::interleaved_runs:
        sources[k] = Ns(2 * run * (k / run) * 2 + k % run);
        break;
      case Shape::alternating:
        sources[k] = Ns(2 * k);
        break;
      case Shape::all_equal:
        sources[k] = 7;
        break;
      case Shape::far_apart:
        sources[k] = Ns(random() % 3) * 1000000;
        break;
      case Shape::wide_values:
        sources[k] = (random() % 2 ? INT64_MAX - Ns(random() % 5) : INT64_MIN + Ns(random() % 5));
        break;
      case Shape::count:
        break;
    }
  }
  for (size_t k = 0; k < m; ++k) {
    switch (shape) {
      case Shape::random_small:
        destinations[k] = Ns(random() % 12);
        break;
      case Shape::sources_first:
        destinations[k] = Ns(4 * n + 2 * k + random() % 2);
        break;
      case Shape::destinations_first:
        destinations[k] = Ns(2 * k + random() % 2);
        break;
      case Shape::interleaved_runs:
        destinations[k] = Ns(2 * run * (k / run) * 2 + 2 * run + k % run);
        break;
      case Shape::alternating:
        destinations[k] = Ns(2 * k + 1);
        break;
      case Shape::all_equal:
        destinations[k] = 7;
        break;
      case Shape::far_apart:
        destinations[k] = Ns(random() % 3) * 1000000 + Ns(random() % 3);
        break;
      case Shape::wide_values:
        destinations[k] = (random() % 2 ? INT64_MAX - Ns(random() % 5) : INT64_MIN + Ns(random() % 5));
        break;
      case Shape::count:
        break;
    }
  }
  // Block order is not midpoint order: shuffle some rounds.
  if (random() % 2) std::shuffle(sources.begin(), sources.end(), random);
  if (random() % 2) std::shuffle(destinations.begin(), destinations.end(), random);
  return {sources, destinations};
}

}  // namespace

TEST(PairByNearestMidpoint, GivesTheDefinitionsPairsInItsOrderOnRandomSmallInputsOfEveryShape) {
  std::mt19937_64 random(20261201);
  for (int shape = 0; shape < int(Shape::count); ++shape)
    for (int round = 0; round < 300; ++round) {
      auto [sources, destinations] = shape_sums(Shape(shape), random() % 13, random() % 13, random);
      EXPECT_EQ(pair_by_nearest_midpoint(sources, destinations), all_pairs_pairing(sources, destinations))
          << "shape " << shape << " round " << round;
    }
}

TEST(PairByNearestMidpoint, GivesThePreviousImplementationsPairsOnLargerInputsOfEveryShape) {
  std::mt19937_64 random(7);
  for (int shape = 0; shape < int(Shape::count); ++shape)
    for (int round = 0; round < 20; ++round) {
      auto [sources, destinations] = shape_sums(Shape(shape), random() % 300, random() % 300, random);
      EXPECT_EQ(pair_by_nearest_midpoint(sources, destinations), lazy_cursor_pairing(sources, destinations))
          << "shape " << shape << " round " << round;
    }
}

// CPU seconds of this process (not wall time: the test machine may be busy).
static double cpu_seconds() { return double(std::clock()) / CLOCKS_PER_SEC; }

TEST(PairByNearestMidpoint, AdversarialShapesOfTwoHundredThousandBlocksPairInUnderThirtyCpuSeconds) {
  // n sources left of n destinations took the previous implementation n^2 / 2 steps (over
  // two minutes at 100k); O(n log n) takes about a second, also in a sanitizer build.
  const size_t n = 200000;
  for (Shape shape : {Shape::sources_first, Shape::destinations_first, Shape::all_equal, Shape::interleaved_runs}) {
    std::mt19937_64 random(1);
    auto [sources, destinations] = shape_sums(shape, n, n, random);
    double begin = cpu_seconds();
    auto pairs = pair_by_nearest_midpoint(sources, destinations);
    EXPECT_EQ(pairs.size(), n);
    EXPECT_LT(cpu_seconds() - begin, 30.0) << "shape " << int(shape);
  }
}

TEST(PpBlocks, OneHundredThousandBlocksInEveryAdversarialLayoutBuildInUnderThirtyCpuSeconds) {
  // As a trace would hold them: n F blocks then n SEND_F blocks (and the mirror, RECV_F
  // after F); n UNSHARD blocks all before one F block bridged over n member spans; a main
  // compute track split into n sub-tracks with a key per microbatch.
  const int64_t n = 100000;
  std::deque<std::string> names;  // the spans' names point into it: it must not move them
  auto name = [&](std::string text) -> std::string_view { return names.emplace_back(std::move(text)); };
  std::vector<AnnotationSpan> spans;
  for (int64_t k = 0; k < n; ++k) spans.push_back(span(1, 100, 10 * k, 10 * k + 5, name("PP:0F0")));
  for (int64_t k = 0; k < n; ++k) spans.push_back(span(1, 300, 10 * (n + k), 10 * (n + k) + 5, name("PP:0SEND_F0")));
  for (int64_t k = 0; k < n; ++k) spans.push_back(span(1, 300, -10 * (n - k), -10 * (n - k) + 5, name("PP:0RECV_F0")));
  PidTracks t = tracks();
  double begin = cpu_seconds();
  auto result = build_pp_flows(spans, {t}, false);
  EXPECT_EQ(result.counts.compute_dependency_pairs, size_t(2 * n));

  // UNSHARD: one F1 block of n members (chained across tracks), n UNSHARDs before it.
  spans.clear();
  t.main_compute_subtracks.clear();
  for (int64_t k = 0; k < n; ++k) {
    spans.push_back(span(1, k % 2 ? 100 : 555, 10 * k, 10 * k + 12, name("PP:0F1")));
    spans.push_back(span(1, 200, -10 * n + k, -10 * n + k + 1, name("PP:0UNSHARD")));
  }
  result = build_pp_flows(spans, {t}, false);
  EXPECT_EQ(result.counts.unshard_compute_pairs, size_t(n));

  // n sub-tracks of the main track, one F block per microbatch on each.
  spans.clear();
  for (int64_t k = 0; k < n; ++k) {
    t.main_compute_subtracks.push_back(1000 + k);
    spans.push_back(span(1, 1000 + k, 10 * k, 10 * k + 5, name("PP:0F" + std::to_string(k))));
    spans.push_back(span(1, 300, 10 * k + 6, 10 * k + 7, name("PP:0SEND_F" + std::to_string(k))));
  }
  result = build_pp_flows(spans, {t}, false);
  EXPECT_EQ(result.counts.compute_dependency_pairs, size_t(n));
  EXPECT_LT(cpu_seconds() - begin, 30.0);
}

TEST(PpFlowIds, SingleTraceArrowIdsSkipEveryIdTheTracesOwnFlowsUse) {
  // compact keeps a trace's flow ids: an arrow must not take 1e12 when an ac2g pair has it,
  // nor 1e12 + 1 when a string id reads as it in hex (Perfetto) or decimal.
  std::string json = trace_json({
      kernel(0, 7, "100", "50", "k", R"("name": "PP:0F0")"),
      annotation(0, 7, "90", "5", "PP:0RECV_F0"),
      annotation(0, 7, "160", "5", "PP:0SEND_F0"),
      flow("s", "ac2g", "1000000000000", 100, 100, "1", "launch"),
      flow("f", "ac2g", "1000000000000", 0, 7, "100", "launch"),
      flow("s", "user", "\"0xE8D4A51001\"", 100, 100, "1", "hex"),
      flow("s", "user", "\"1000000000003\"", 100, 100, "1", "decimal_string"),
      flow("s", "user", "1000000000005.0", 100, 100, "1", "float"),
  });
  Output out(write_compacted(compact_text(json)));
  auto arrows = out.with_ph("s", "pp_compute_dependency");
  ASSERT_EQ(arrows.size(), 2u);
  std::set<int64_t> ids;
  for (auto arrow : arrows) ids.insert(Output::int_of(arrow, "id"));
  EXPECT_EQ(ids, (std::set<int64_t>{1000000000002, 1000000000004}));
}

TEST(PpFlowIds, SingleTraceArrowIdsStayFromTheFirstWhenTheTraceUsesNoneOfThem) {
  std::string json = trace_json(
      {kernel(0, 7, "100", "50", "k", R"("name": "PP:0F0")"), annotation(0, 7, "90", "5", "PP:0RECV_F0"),
       annotation(0, 7, "160", "5", "PP:0SEND_F0"), flow("s", "ac2g", "999999999999", 100, 100, "1", "launch")});
  Output out(write_compacted(compact_text(json)));
  std::set<int64_t> ids;
  for (auto arrow : out.with_ph("s", "pp_compute_dependency")) ids.insert(Output::int_of(arrow, "id"));
  EXPECT_EQ(ids, (std::set<int64_t>{1000000000000, 1000000000001}));
}
