// Merging the per-rank traces of a PP job (SPEC 8, 9.7).
#include <tbb/task_arena.h>

#include <set>

#include "test_support.hpp"

using namespace tracelane;
using namespace tracelane::testing;

namespace {

const std::string kPpGroup40 = R"({"pg_name": "5", "pg_desc": "mesh_pp", "ranks": [4, 0]})";

// A rank's trace: distributedInfo with `rank` (and pg_config groups when given) and
// baseTimeNanoseconds when `base` is set.
std::string rank_trace(int64_t rank, std::optional<int64_t> base, const std::vector<std::string>& events,
                       const std::string& pg_config = "", const std::string& extra_top = "") {
  std::string top =
      R"("distributedInfo": {"backend": "nccl", "rank": )" + std::to_string(rank) + R"(, "world_size": 8)";
  if (!pg_config.empty()) top += R"(, "pg_config": [)" + pg_config + "]";
  top += "}";
  if (base) top += R"(, "baseTimeNanoseconds": )" + std::to_string(*base);
  if (!extra_top.empty()) top += ", " + extra_top;
  return trace_json(events, top);
}

MergeInput input(const std::string& name, const std::string& json) {
  return MergeInput{name, compact_trace(parse_trace(json, name), {.pp_flows = false})};
}

// Merges (name, json) pairs given in file order.
MergeResult merge(const std::vector<std::pair<std::string, std::string>>& files) {
  std::vector<MergeInput> inputs;
  for (const auto& [name, json] : files) inputs.push_back(input(name, json));
  return merge_ranks(std::move(inputs));
}

// A small rank: a CPU op on pid 100, one kernel named k_<rank> on GPU pid 0 stream 7.
std::vector<std::string> small_rank(int64_t rank) {
  return {R"({"ph": "X", "cat": "cpu_op", "name": "op_)" + std::to_string(rank) +
              R"(", "pid": 100, "tid": 100, "ts": 1, "dur": 1})",
          kernel(0, 7, "10", "5", "k_" + std::to_string(rank))};
}

size_t position_of(const Output& out, std::string_view name) {
  for (size_t i = 0; i < out.events.size(); ++i)
    if (Output::string_of(out.events[i], "name") == name) return i;
  return SIZE_MAX;
}

// process_name labels by pid (integer pids only).
std::map<int64_t, std::vector<std::string>> process_names(const Output& out) {
  std::map<int64_t, std::vector<std::string>> names;
  for (auto e : out.named("process_name")) {
    int64_t pid = Output::int_of(e, "pid");
    if (pid != INT64_MIN) names[pid].push_back(Output::string_of(e["args"], "name"));
  }
  return names;
}

bool has(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

}  // namespace

// --- PP order ---------------------------------------------------------------------------

TEST(MergeRanks, APpGroupInPgConfigGivesThePpOrder) {
  auto result = merge({{"rank0_trace.json", rank_trace(0, 1000, small_rank(0), kPpGroup40)},
                       {"rank4_trace.json", rank_trace(4, 1000, small_rank(4), kPpGroup40)}});
  EXPECT_EQ(result.summary.pp_order_source, "pg_config");
  EXPECT_EQ(result.summary.pp_ranks, (std::vector<std::pair<int, int64_t>>{{0, 4}, {1, 0}}));
  Output out(result.json);
  simdjson::dom::element info = out.root["distributedInfo"];
  EXPECT_EQ(Output::string_of(info, "backend"), "nccl");
  EXPECT_EQ(Output::int_of(info, "pp_rank_count"), 2);
  std::vector<int64_t> ranks;
  for (auto r : info["ranks"].get_array()) ranks.push_back(int64_t(r));
  EXPECT_EQ(ranks, (std::vector<int64_t>{4, 0}));
  // Ranks are stacked in PP order: global rank 4 first.
  EXPECT_LT(position_of(out, "k_4"), position_of(out, "k_0"));
  EXPECT_EQ(Output::int_of(out.one("k_4"), "pid"), 2);
  EXPECT_EQ(Output::int_of(out.one("k_0"), "pid"), 4);
}

TEST(MergeRanks, TheTorchtitanPpGroupNameAlsoCounts) {
  const std::string group = R"({"pg_name": "torchtitan_real_pp", "pg_desc": "x", "ranks": [4, 0]})";
  auto result = merge({{"rank0_trace.json", rank_trace(0, 1000, small_rank(0), group)},
                       {"rank4_trace.json", rank_trace(4, 1000, small_rank(4))}});
  EXPECT_EQ(result.summary.pp_order_source, "pg_config");
  EXPECT_EQ(result.summary.pp_ranks, (std::vector<std::pair<int, int64_t>>{{0, 4}, {1, 0}}));
}

TEST(MergeRanks, APpGroupMissingAnInputRankIsSkipped) {
  const std::string groups = R"({"pg_desc": "mesh_pp", "ranks": [0, 99]}, {"pg_desc": "mesh_dp", "ranks": [4, 0]}, )" +
                             kPpGroup40 + R"(, {"pg_desc": "mesh_pp", "ranks": [0, 4]})";
  auto result = merge({{"rank0_trace.json", rank_trace(0, 1000, small_rank(0), groups)},
                       {"rank4_trace.json", rank_trace(4, 1000, small_rank(4), groups)}});
  EXPECT_EQ(result.summary.pp_ranks, (std::vector<std::pair<int, int64_t>>{{0, 4}, {1, 0}}));
}

TEST(MergeRanks, WithoutAPpGroupPpRanksFollowSortedGlobalRanks) {
  // File rank0 holds global rank 8 and file rank1 global rank 2.
  auto result = merge({{"rank0_trace.json", rank_trace(8, 1000, small_rank(8))},
                       {"rank1_trace.json", rank_trace(2, 1000, small_rank(2))}});
  EXPECT_EQ(result.summary.pp_order_source, "sorted global ranks");
  EXPECT_EQ(result.summary.pp_ranks, (std::vector<std::pair<int, int64_t>>{{0, 2}, {1, 8}}));
  EXPECT_EQ(result.summary.inputs, (std::vector<std::string>{"rank0_trace.json", "rank1_trace.json"}));
  ASSERT_EQ(result.summary.per_rank.size(), 2u);
  EXPECT_EQ(result.summary.per_rank[0].first, 8);  // file order
  EXPECT_EQ(result.summary.per_rank[1].first, 2);
  Output out(result.json);
  EXPECT_LT(position_of(out, "k_2"), position_of(out, "k_8"));
}

// --- time alignment ----------------------------------------------------------------------

TEST(MergeRanks, EventsMoveByTheirRanksBaseTimeOffset) {
  // Rank 0's clock starts 3.5 µs after rank 1's: rank 0 moves by +3.5 µs, rank 1 not at all.
  std::vector<std::string> rank0 = {
      kernel(0, 7, "10", "5.250", "k_0"),
      R"({"ph": "i", "cat": "marker", "name": "instant_0", "pid": 100, "tid": 100, "ts": 20.001, "s": "t"})",
      R"({"name": "process_name", "ph": "M", "ts": 0, "pid": 100, "tid": 0, "args": {"name": "python"}})",
  };
  auto result = merge({{"rank0_trace.json", rank_trace(0, 1003500, rank0)},
                       {"rank1_trace.json", rank_trace(1, 1000000, small_rank(1))}});
  EXPECT_EQ(result.summary.time_alignment, "baseTimeNanoseconds");
  EXPECT_EQ(result.summary.time_offsets_ns, (std::vector<std::pair<int64_t, Ns>>{{0, 3500}, {1, 0}}));
  Output out(result.json);
  EXPECT_EQ(Output::int_of(out.root, "baseTimeNanoseconds"), 1000000);
  EXPECT_TRUE(out.contains(R"("ts": 13.5, "dur": 5.250,)")) << "dur keeps its text; ts moves";
  EXPECT_TRUE(out.contains(R"("ts": 23.501, "s": "t")"));
  EXPECT_TRUE(out.contains(R"("name": "process_name", "ph": "M", "ts": 3.5,)"));
  // Rank 1 keeps its times.
  EXPECT_EQ(Output::number_of(out.one("k_1"), "ts"), 10);
  simdjson::dom::element merge_key = out.root["cuda_graph_pp_merge"];
  EXPECT_EQ(Output::string_of(merge_key, "time_alignment"), "baseTimeNanoseconds");
  EXPECT_EQ(Output::number_of(merge_key["time_offsets_us"], "0"), 3.5);
  EXPECT_EQ(Output::number_of(merge_key["time_offsets_us"], "1"), 0);
}

TEST(MergeRanks, ALanesMetadataTsIsItsPidsFirstMetadataTsAsRead) {
  // Rank 0 moves by +3.5 µs. Its GPU pid's process_name moves with it, but the lanes'
  // metadata events take the ts that process_name was read with (section 9.14), as they
  // did before the merge moved it.
  std::vector<std::string> rank0 = {
      R"({"name": "process_name", "ph": "M", "ts": 2, "pid": 0, "tid": 0, "args": {"name": "GPU 0"}})",
      kernel(0, 7, "10", "5", "k_0"),
  };
  auto result = merge({{"rank0_trace.json", rank_trace(0, 1003500, rank0)},
                       {"rank1_trace.json", rank_trace(1, 1000000, small_rank(1))}});
  Output out(result.json);
  int64_t gpu_pid = Output::int_of(out.one("k_0"), "pid");
  EXPECT_TRUE(out.contains(R"("name": "process_name", "ph": "M", "ts": 5.5,)"));
  size_t lane_metadata = 0;
  for (auto e : out.with_ph("M")) {
    std::string name = Output::string_of(e, "name");
    if (Output::int_of(e, "pid") != gpu_pid || (name != "thread_name" && name != "thread_sort_index")) continue;
    ++lane_metadata;
    EXPECT_EQ(Output::number_of(e, "ts"), 2) << name << " on tid " << Output::int_of(e, "tid");
  }
  EXPECT_GE(lane_metadata, 2u);
}

TEST(MergeRanks, WithoutBaseTimesTheMergeUsesAbsoluteTimestamps) {
  auto result = merge({{"rank0_trace.json", rank_trace(0, std::nullopt, small_rank(0))},
                       {"rank1_trace.json", rank_trace(1, std::nullopt, {kernel(0, 7, "10.125", "5", "k_1")})}});
  EXPECT_EQ(result.summary.time_alignment, "absolute timestamps");
  EXPECT_EQ(result.summary.time_offsets_ns, (std::vector<std::pair<int64_t, Ns>>{{0, 0}, {1, 0}}));
  Output out(result.json);
  simdjson::dom::element base;
  EXPECT_NE(out.root["baseTimeNanoseconds"].get(base), simdjson::SUCCESS);
  EXPECT_TRUE(out.contains(R"("ts": 10.125, "dur": 5,)"));
  EXPECT_EQ(Output::string_of(out.root["cuda_graph_pp_merge"], "time_alignment"), "absolute timestamps");
}

TEST(MergeRanks, BaseTimesOnSomeRanksOnlyIsAnErrorNamingTheOthers) {
  auto message = error_message([] {
    merge({{"rank0_trace.json", rank_trace(0, 1000, small_rank(0))},
           {"rank1_trace.json", rank_trace(1, std::nullopt, small_rank(1))},
           {"rank2_trace.json", rank_trace(2, std::nullopt, small_rank(2))}});
  });
  EXPECT_NE(message.find("rank1_trace.json"), std::string::npos) << message;
  EXPECT_NE(message.find("rank2_trace.json"), std::string::npos) << message;
  EXPECT_NE(message.find("baseTimeNanoseconds"), std::string::npos) << message;
}

// --- input checks ------------------------------------------------------------------------

TEST(MergeRanks, DuplicateGlobalRanksAreAnError) {
  auto message = error_message([] {
    merge({{"rank0_trace.json", rank_trace(3, 1000, small_rank(3))},
           {"rank1_trace.json", rank_trace(3, 1000, small_rank(3))}});
  });
  EXPECT_NE(message.find("3"), std::string::npos) << message;
}

TEST(MergeRanks, ARankWithoutDistributedInfoRankIsAnErrorNamingTheFile) {
  auto message = error_message([] {
    merge({{"rank0_trace.json", rank_trace(0, 1000, small_rank(0))},
           {"rank1_trace.json", trace_json(small_rank(1), R"("baseTimeNanoseconds": 1000)")}});
  });
  EXPECT_NE(message.find("rank1_trace.json"), std::string::npos) << message;
}

TEST(MergeRanks, OneRankIsNotEnough) {
  error_message([] { merge({{"rank0_trace.json", rank_trace(0, 1000, small_rank(0))}}); });
}

// --- pids, names and ids -------------------------------------------------------------------

TEST(MergeRanks, IntegerPidsAreRenumberedNonGpuFirstThenGpuPerRank) {
  std::vector<std::string> rank0 = {
      R"({"ph": "X", "cat": "cpu_op", "name": "cpu_1234", "pid": 1234, "tid": 1, "ts": 1, "dur": 1})",
      R"({"ph": "X", "cat": "cpu_op", "name": "cpu_77", "pid": 77, "tid": 1, "ts": 1, "dur": 1})",
      R"({"ph": "X", "cat": "user", "name": "spans_0", "pid": "Spans", "tid": "PyTorch Profiler", "ts": 1, "dur": 1})",
      kernel(1, 7, "10", "5", "gpu1_0"),
      kernel(0, 7, "10", "5", "gpu0_0"),
  };
  std::vector<std::string> rank1 = {
      R"({"ph": "X", "cat": "cpu_op", "name": "cpu_5", "pid": 5, "tid": 1, "ts": 1, "dur": 1})",
      kernel(0, 7, "10", "5", "gpu0_1"),
  };
  auto result =
      merge({{"rank0_trace.json", rank_trace(0, 1000, rank0)}, {"rank1_trace.json", rank_trace(1, 1000, rank1)}});
  Output out(result.json);
  EXPECT_EQ(Output::int_of(out.one("cpu_77"), "pid"), 1);
  EXPECT_EQ(Output::int_of(out.one("cpu_1234"), "pid"), 2);
  EXPECT_EQ(Output::int_of(out.one("gpu0_0"), "pid"), 3);
  EXPECT_EQ(Output::int_of(out.one("gpu1_0"), "pid"), 4);
  EXPECT_EQ(Output::int_of(out.one("cpu_5"), "pid"), 5);
  EXPECT_EQ(Output::int_of(out.one("gpu0_1"), "pid"), 6);
  EXPECT_EQ(Output::string_of(out.one("spans_0"), "pid"), "Spans");

  auto names = process_names(out);
  EXPECT_TRUE(has(names[1], "PP rank 0 (global rank 0) | process 77"));
  EXPECT_TRUE(has(names[2], "PP rank 0 (global rank 0) | process 1234"));
  EXPECT_TRUE(has(names[3], "PP rank 0 (global rank 0) | GPU"));
  EXPECT_TRUE(has(names[4], "PP rank 0 (global rank 0) | GPU"));
  EXPECT_TRUE(has(names[5], "PP rank 1 (global rank 1) | process 5"));
  EXPECT_TRUE(has(names[6], "PP rank 1 (global rank 1) | GPU"));

  std::map<int64_t, int64_t> sort_index;
  for (auto e : out.named("process_sort_index"))
    sort_index[Output::int_of(e, "pid")] = Output::int_of(e["args"], "sort_index");
  EXPECT_EQ(sort_index, (std::map<int64_t, int64_t>{{1, 0}, {2, 1}, {3, 2}, {4, 3}, {5, 1000}, {6, 1001}}));
}

TEST(MergeRanks, ProcessAndThreadNamesGetThePpRankPrefixAndOldSortIndicesGo) {
  std::vector<std::string> rank1 = {
      metadata("process_name", 100, 0, R"({"name": "python"})"),
      metadata("process_sort_index", 100, 0, R"({"sort_index": 4242})"),
      metadata("thread_name", 100, 100, R"({"name": "main thread"})"),
      R"({"name": "process_name", "ph": "M", "pid": "Spans", "tid": 0, "args": {"name": "Spans"}})",
      kernel(0, 7, "10", "5", "k_1"),
  };
  auto result = merge(
      {{"rank0_trace.json", rank_trace(0, 1000, small_rank(0))}, {"rank1_trace.json", rank_trace(1, 1000, rank1)}});
  Output out(result.json);
  // Rank 1: CPU pid 100 -> 3, GPU pid 0 -> 4.
  auto names = process_names(out);
  EXPECT_TRUE(has(names[3], "PP rank 1 | python"));
  EXPECT_EQ(out.label(3, 100), "PP rank 1 | main thread");
  EXPECT_EQ(out.label(4, lane_tid("compute")), "PP rank 1 | Compute");
  EXPECT_EQ(out.label(2, lane_tid("compute")), "PP rank 0 | Compute");
  bool spans_prefixed = false;
  for (auto e : out.named("process_name"))
    if (Output::string_of(e, "pid") == "Spans")
      spans_prefixed = Output::string_of(e["args"], "name") == "PP rank 1 | Spans";
  EXPECT_TRUE(spans_prefixed);
  for (auto e : out.named("process_sort_index")) EXPECT_NE(Output::int_of(e["args"], "sort_index"), 4242);
}

TEST(MergeRanks, FlowIdsAreRenumberedPerRankWithDistinctIdTexts) {
  std::vector<std::string> rank0 = small_rank(0), rank1 = small_rank(1);
  rank0.push_back(flow("s", "async", "5", 100, 100, "1", "int_5"));
  rank0.push_back(flow("s", "async", "5.0", 100, 100, "1", "float_5"));
  rank0.push_back(flow("s", "async", "\"5\"", 100, 100, "1", "string_5"));
  rank0.push_back(flow("f", "ac2g", "5", 0, 7, "10", "int_5_again"));
  rank0.push_back(flow("t", "user", "77", 100, 100, "1", "int_77"));
  // 0 and -0 are two texts of one value; a nonzero integer's one text is found by value.
  rank0.push_back(flow("s", "async", "0", 100, 100, "1", "int_0"));
  rank0.push_back(flow("s", "async", "-0", 100, 100, "1", "int_minus_0"));
  rank0.push_back(flow("f", "async", "0", 100, 100, "2", "int_0_again"));
  rank0.push_back(flow("f", "async", "-0", 100, 100, "2", "int_minus_0_again"));
  rank0.push_back(flow("f", "async", "77", 100, 100, "2", "int_77_again"));
  rank1.push_back(flow("s", "async", "5", 100, 100, "1", "rank1_5"));
  auto result =
      merge({{"rank0_trace.json", rank_trace(0, 1000, rank0)}, {"rank1_trace.json", rank_trace(1, 1000, rank1)}});
  Output out(result.json);
  EXPECT_EQ(Output::int_of(out.one("int_5"), "id"), 1000000000);
  EXPECT_EQ(Output::int_of(out.one("float_5"), "id"), 1000000001);
  EXPECT_EQ(Output::int_of(out.one("string_5"), "id"), 1000000002);
  EXPECT_EQ(Output::int_of(out.one("int_5_again"), "id"), 1000000000);
  EXPECT_EQ(Output::int_of(out.one("int_77"), "id"), 1000000003);
  EXPECT_EQ(Output::int_of(out.one("int_0"), "id"), 1000000004);
  EXPECT_EQ(Output::int_of(out.one("int_minus_0"), "id"), 1000000005);
  EXPECT_EQ(Output::int_of(out.one("int_0_again"), "id"), 1000000004);
  EXPECT_EQ(Output::int_of(out.one("int_minus_0_again"), "id"), 1000000005);
  EXPECT_EQ(Output::int_of(out.one("int_77_again"), "id"), 1000000003);
  EXPECT_EQ(Output::int_of(out.one("rank1_5"), "id"), 2000000000);
  // The moved GPU endpoint is on its lane and renumbered pid.
  EXPECT_EQ(Output::int_of(out.one("int_5_again"), "pid"), 2);
  EXPECT_EQ(Output::int_of(out.one("int_5_again"), "tid"), lane_tid("compute"));
}

// --- top level and arrows -----------------------------------------------------------------

TEST(MergeRanks, TheTopLevelIsPpRankZerosWithMergeKeys) {
  auto result = merge(
      {{"rank0_trace.json", rank_trace(0, 2000, small_rank(0), kPpGroup40, R"("deviceProperties": [{"id": 0}])")},
       {"rank4_trace.json", rank_trace(4, 1000, small_rank(4), kPpGroup40, R"("deviceProperties": [{"id": 4}])")}});
  Output out(result.json);
  EXPECT_EQ(Output::string_of(out.root, "traceName"), "Merged pipeline-parallel CUDA graph trace");
  EXPECT_TRUE(out.contains(R"("deviceProperties": [{"id": 4}])"));
  EXPECT_FALSE(out.contains(R"("deviceProperties": [{"id": 0}])"));
  EXPECT_EQ(Output::int_of(out.root, "baseTimeNanoseconds"), 1000);
  simdjson::dom::element key;
  EXPECT_EQ(out.root["cuda_graph_stream_compaction"].get(key), simdjson::SUCCESS);
  EXPECT_NE(out.root["cuda_graph_pp_local_flows"].get(key), simdjson::SUCCESS);
  ASSERT_EQ(out.root["cuda_graph_pp_merge"].get(key), simdjson::SUCCESS);
  simdjson::dom::array pp_ranks;
  ASSERT_EQ(key["pp_ranks"].get_array().get(pp_ranks), simdjson::SUCCESS);
  ASSERT_EQ(pp_ranks.size(), 2u);
  EXPECT_EQ(Output::int_of(pp_ranks.at(0), "pp_rank"), 0);
  EXPECT_EQ(Output::int_of(pp_ranks.at(0), "global_rank"), 4);
  EXPECT_EQ(Output::int_of(key, "pp_send_recv_pairs"), 0);
  EXPECT_EQ(Output::int_of(key["per_rank_compaction"]["0"], "measured_slices"), 1);
}

TEST(MergeRanks, AMergeWithoutPpAnnotationsStillWorks) {
  auto result = merge({{"rank0_trace.json", rank_trace(0, 1000, small_rank(0))},
                       {"rank1_trace.json", rank_trace(1, 1000, small_rank(1))}});
  const PpCounts& pp = result.summary.pp;
  EXPECT_EQ(pp.send_recv_pairs + pp.send_recv_unmatched + pp.compute_dependency_pairs +
                pp.compute_dependency_unmatched + pp.unshard_compute_pairs + pp.unshard_compute_unmatched,
            0u);
  Output out(result.json);
  EXPECT_EQ(out.named("k_0").size(), 1u);
  EXPECT_EQ(out.named("k_1").size(), 1u);
  EXPECT_EQ(out.named("op_0").size(), 1u);
  EXPECT_TRUE(out.with_ph("s", "pp_send_recv").empty());
}

TEST(MergeRanks, SendRecvArrowsConnectRanksOnTheAlignedTimeline) {
  // Rank 1's clock starts 50 µs later: its RECV at local 100 is at 150 merged.
  std::vector<std::string> rank0 = {kernel(0, 7, "0", "1000", "k_0"), annotation(0, 7, "100", "10", "PP:0SEND_F0")};
  std::vector<std::string> rank1 = {kernel(0, 7, "0", "1000", "k_1"), annotation(0, 7, "100", "50", "PP:1RECV_F0")};
  auto result =
      merge({{"rank0_trace.json", rank_trace(0, 1000000, rank0)}, {"rank1_trace.json", rank_trace(1, 1050000, rank1)}});
  EXPECT_EQ(result.summary.pp.send_recv_pairs, 1u);
  EXPECT_EQ(result.summary.pp.send_recv_unmatched, 0u);
  Output out(result.json);
  auto starts = out.with_ph("s", "pp_send_recv");
  auto ends = out.with_ph("f", "pp_send_recv");
  ASSERT_EQ(starts.size(), 1u);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(Output::string_of(starts[0], "name"), "0SEND_F0 -> 1RECV_F0");
  EXPECT_EQ(Output::int_of(starts[0], "pid"), 1);  // rank 0's GPU (no other pids)
  EXPECT_EQ(Output::int_of(ends[0], "pid"), 2);    // rank 1's GPU
  EXPECT_EQ(Output::number_of(starts[0], "ts"), 100);
  EXPECT_EQ(Output::number_of(ends[0], "ts"), 150);
  EXPECT_EQ(Output::int_of(starts[0], "id"), Output::int_of(ends[0], "id"));
  EXPECT_EQ(Output::int_of(starts[0], "id"), 1000000000000) << "synthetic ids are not renumbered";
  EXPECT_EQ(Output::int_of(starts[0]["args"], "source_pp_rank"), 0);
  EXPECT_EQ(Output::int_of(starts[0]["args"], "destination_pp_rank"), 1);
  EXPECT_EQ(Output::int_of(out.root["cuda_graph_pp_merge"], "pp_send_recv_pairs"), 1);
}

TEST(MergeRanks, ABackendMissingFromRankZeroIsWrittenAsNull) {
  auto result = merge({{"rank0_trace.json", trace_json(small_rank(0), R"("distributedInfo": {"rank": 0})")},
                       {"rank1_trace.json", trace_json(small_rank(1), R"("distributedInfo": {"rank": 1})")}});
  Output out(result.json);
  simdjson::dom::element backend;
  ASSERT_EQ(out.root["distributedInfo"]["backend"].get(backend), simdjson::SUCCESS);
  EXPECT_TRUE(backend.is_null());
}

TEST(MergeRanks, DurationsNeverChange) {
  auto result = merge({{"rank0_trace.json", rank_trace(0, 1000, {kernel(0, 7, "10", "5.125", "k_0")})},
                       {"rank1_trace.json", rank_trace(1, 999000, {kernel(0, 7, "10", "7.5", "k_1")})}});
  Output out(result.json);
  EXPECT_TRUE(out.contains(R"("ts": 10, "dur": 5.125,)")) << "rank 0 has the smallest base";
  EXPECT_TRUE(out.contains(R"("ts": 1008, "dur": 7.5,)")) << out.text;
}

TEST(MergeRanks, ABaseTimeThatIsNotAnIntegerIsAnErrorNamingTheFile) {
  auto message = error_message([] {
    merge({{"rank0_trace.json", rank_trace(0, 1000, small_rank(0))},
           {"rank1_trace.json",
            trace_json(small_rank(1), R"("distributedInfo": {"rank": 1}, "baseTimeNanoseconds": "1000")")}});
  });
  EXPECT_NE(message.find("rank1_trace.json"), std::string::npos) << message;
}

// --- flow ids: one id space per merged file ------------------------------------------------

namespace {

// The PP rank of each renumbered integer pid, from the process_name labels the merge adds.
std::map<int64_t, int64_t> pp_rank_of_pid(const Output& out) {
  std::map<int64_t, int64_t> ranks;
  for (const auto& [pid, names] : process_names(out))
    for (const std::string& name : names)
      if (name.rfind("PP rank ", 0) == 0 && name.find("(global rank") != std::string::npos)
        ranks[pid] = std::stoll(name.substr(8));
  return ranks;
}

// Every flow id of a merged file belongs to one pair: the events sharing it are all one
// rank's own flows (that rank's input may pair several under one id) or all one PP arrow.
void expect_each_flow_id_is_one_pair(const Output& out) {
  auto rank_of = pp_rank_of_pid(out);
  std::map<int64_t, std::set<std::string>> owners;
  for (auto e : out.events) {
    std::string ph = Output::string_of(e, "ph");
    if (ph != "s" && ph != "t" && ph != "f") continue;
    int64_t id = Output::int_of(e, "id");
    ASSERT_NE(id, INT64_MIN) << "merged flow ids are integers";
    std::string cat = Output::string_of(e, "cat");
    bool pp = cat.rfind("pp_", 0) == 0;
    int64_t pid = Output::int_of(e, "pid");
    owners[id].insert(pp ? "PP arrow " + Output::string_of(e, "name")
                         : "rank " + std::to_string(rank_of.count(pid) ? rank_of[pid] : -1));
  }
  for (const auto& [id, who] : owners) {
    std::string all;
    for (const auto& w : who) all += w + "; ";
    EXPECT_EQ(who.size(), 1u) << "id " << id << " is shared by: " << all;
  }
}

// `count` filler ranks, then the input ranks: a PP group that puts rank r at index count + r.
std::string pp_group_after(int count, const std::vector<int64_t>& ranks) {
  std::string list;
  for (int k = 0; k < count; ++k) list += std::to_string(100000 + k) + ", ";
  for (size_t k = 0; k < ranks.size(); ++k) list += (k ? ", " : "") + std::to_string(ranks[k]);
  return R"({"pg_name": "9", "pg_desc": "mesh_pp", "ranks": [)" + list + "]}";
}

}  // namespace

TEST(MergeRanks, RankFlowIdsNeverMeetPpArrowIdsWhenPpRanksReachAThousand) {
  // PP ranks 999 and 1000 (as a merge of 1,001 ranks has them): SPEC 8's (p + 1) * 1e9
  // gave rank 999's first flow the id 1e12, the first PP arrow's.
  std::string group = pp_group_after(999, {0, 1});
  std::vector<std::string> rank0 = {kernel(0, 7, "0", "1000", "k_0"), annotation(0, 7, "100", "10", "PP:0SEND_F0"),
                                    flow("s", "ac2g", "5", 100, 100, "1", "launch_0"),
                                    flow("f", "ac2g", "5", 0, 7, "0", "launch_0")};
  std::vector<std::string> rank1 = {kernel(0, 7, "0", "1000", "k_1"), annotation(0, 7, "200", "50", "PP:1RECV_F0"),
                                    flow("s", "ac2g", "5", 100, 100, "1", "launch_1"),
                                    flow("f", "ac2g", "5", 0, 7, "0", "launch_1")};
  rank0.push_back(R"({"ph": "X", "cat": "cpu_op", "name": "op", "pid": 100, "tid": 100, "ts": 1, "dur": 1})");
  rank1.push_back(R"({"ph": "X", "cat": "cpu_op", "name": "op", "pid": 100, "tid": 100, "ts": 1, "dur": 1})");
  auto result = merge({{"rank0_trace.json", rank_trace(0, 1000, rank0, group)},
                       {"rank1_trace.json", rank_trace(1, 1000, rank1, group)}});
  EXPECT_EQ(result.summary.pp.send_recv_pairs, 1u);
  Output out(result.json);
  expect_each_flow_id_is_one_pair(out);
  EXPECT_EQ(Output::int_of(out.named("launch_0").at(0), "id"), 1000000000000) << "from the shared counter";
  EXPECT_EQ(Output::int_of(out.named("launch_1").at(0), "id"), 1000000000001);
  EXPECT_EQ(Output::int_of(out.with_ph("s", "pp_send_recv").at(0), "id"), 1000000000002) << "PP ids follow";
}

TEST(MergeRanks, EveryMergedFileOfThisSuiteHasOneFlowIdPerPair) {
  // The shapes above with flows on both ranks and arrows: ids stay SPEC 8's, and apart.
  std::vector<std::string> rank0 = {kernel(0, 7, "0", "1000", "k_0"), annotation(0, 7, "100", "10", "PP:0SEND_F0"),
                                    annotation(0, 7, "20", "10", "PP:0F0"), flow("s", "ac2g", "7", 100, 100, "1", "a"),
                                    flow("f", "ac2g", "7", 0, 7, "0", "a")};
  std::vector<std::string> rank1 = {kernel(0, 7, "0", "1000", "k_1"), annotation(0, 7, "200", "50", "PP:1RECV_F0"),
                                    flow("s", "ac2g", "7", 100, 100, "1", "b"), flow("f", "ac2g", "7", 0, 7, "0", "b")};
  auto result =
      merge({{"rank0_trace.json", rank_trace(0, 1000, rank0)}, {"rank1_trace.json", rank_trace(1, 1000, rank1)}});
  Output out(result.json);
  expect_each_flow_id_is_one_pair(out);
  EXPECT_EQ(Output::int_of(out.named("a").at(0), "id"), 1000000000);
  EXPECT_EQ(Output::int_of(out.named("b").at(0), "id"), 2000000000);
  EXPECT_EQ(Output::int_of(out.with_ph("s", "pp_send_recv").at(0), "id"), 1000000000000);
}

TEST(MergeFlowIds, ARanksIdsBeyondItsBillionComeFromTheSharedCounterNotTheNextRanksRange) {
  MergeFlowIds ids;
  EXPECT_EQ(ids.id(0, 0), 1000000000);
  EXPECT_EQ(ids.id(0, 999999999), 1999999999);
  EXPECT_EQ(ids.id(0, 1000000000), 1000000000000) << "not 2e9, rank 1's first id";
  EXPECT_EQ(ids.id(1, 0), 2000000000);
  EXPECT_EQ(ids.id(998, 999999999), 999999999999);
  EXPECT_EQ(ids.id(999, 0), 1000000000001) << "rank 999's range would start at 1e12";
  EXPECT_EQ(ids.id(1000000, 5), 1000000000002);
  EXPECT_EQ(ids.next_shared, 1000000000003) << "the first PP arrow id";
}

TEST(MergeRanks, APpGroupPlacingARankBeyondAMillionIsAnErrorNamingTheFile) {
  // The index in a pg_config group is the pp_rank; a hostile group must not overflow it.
  std::string group = pp_group_after(1000000, {0, 1});
  std::string message = error_message([&] {
    merge({{"rank0_trace.json", rank_trace(0, 1000, small_rank(0), group)},
           {"rank1_trace.json", rank_trace(1, 1000, small_rank(1), group)}});
  });
  EXPECT_NE(message.find("rank0_trace.json"), std::string::npos) << message;
  EXPECT_NE(message.find("index 1000000"), std::string::npos) << message;
}

TEST(MergeRanks, BaseTimesMissingFromThousandsOfRanksNameAFewThenACount) {
  std::vector<MergeInput> inputs;
  inputs.push_back(input("rank0_trace.json", rank_trace(0, 1000, small_rank(0))));
  for (int64_t r = 1; r <= 2000; ++r)
    inputs.push_back(input("rank" + std::to_string(r) + "_trace.json", rank_trace(r, std::nullopt, small_rank(r))));
  std::string message = error_message([&] { merge_ranks(std::move(inputs)); });
  EXPECT_NE(message.find("rank1_trace.json"), std::string::npos) << message;
  EXPECT_NE(message.find("rank6_trace.json"), std::string::npos) << message;
  EXPECT_EQ(message.find("rank7_trace.json"), std::string::npos) << message;
  EXPECT_NE(message.find("and 1994 more"), std::string::npos) << message;
  EXPECT_LT(message.size(), 400u);
}

// --- Ranks renumbered concurrently ---------------------------------------------------------

// Each rank's events are moved concurrently; when several ranks fail, the one reported is
// the first in PP order, as when they are moved one after another, whatever the threads.
TEST(MergeRanks, TheFirstRankInPpOrderThatFailsIsTheOneReportedForAnyThreads) {
  // Ranks 1 and 2 are 2e18 ns after rank 0: their kernels at 2e15 us move beyond 3e15 us.
  auto far_rank = [](int64_t rank) {
    return std::vector<std::string>{kernel(0, 7, "2000000000000000", "5", "k_" + std::to_string(rank))};
  };
  for (int threads : {1, 2, 4}) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    std::string message;
    tbb::task_arena(threads).execute([&] {
      try {
        merge({{"rank0_trace.json", rank_trace(0, 0, small_rank(0))},
               {"rank1_trace.json", rank_trace(1, 2000000000000000000, far_rank(1))},
               {"rank2_trace.json", rank_trace(2, 2000000000000000000, far_rank(2))}});
      } catch (const Error& e) {
        message = e.what();
      }
    });
    EXPECT_EQ(message.rfind("rank1_trace.json: event #", 0), 0u) << message;
    EXPECT_NE(message.find("ts moved by the clock offset beyond"), std::string::npos) << message;
  }
}
