// What a trace's distributedInfo says about its job (include/tracelane/distributed_info.hpp,
// SPEC 7 and 8): the global rank, the backend as written, and the pipeline-parallel groups
// (pg_name "torchtitan_real_pp" or pg_desc "mesh_pp"), from which a single trace's pp_rank
// is its index in the first such group that holds it.
#include "tracelane/distributed_info.hpp"
#include "test_support.hpp"

using namespace tracelane;
using namespace tracelane::testing;

namespace {

Trace with_info(const std::string& info) {
  return parse_trace(trace_json({metadata("process_name", 1, 0, R"({"name": "python"})")},
                                info.empty() ? "" : "\"distributedInfo\": " + info),
                     "rank_trace.json");
}

const char* kPgConfig = R"("pg_config": [
    {"pg_name": "0", "pg_desc": "default_pg", "ranks": [0, 1, 2, 3, 4, 5, 6, 7]},
    {"pg_name": "torchtitan_real_pp", "pg_desc": "x", "ranks": [1, 5]},
    {"pg_name": "3", "pg_desc": "mesh_pp", "ranks": [7, 3]},
    {"pg_name": "4", "pg_desc": "mesh_dp", "ranks": [3, 2]}])";

}  // namespace

TEST(DistributedInfo, ReadsTheRankTheBackendAndOnlyThePipelineGroups) {
  DistributedInfo info =
      read_distributed_info(with_info(std::string(R"({"backend": "nccl", "rank": 5, )") + kPgConfig + "}"));
  EXPECT_EQ(info.rank, std::optional<int64_t>(5));
  EXPECT_EQ(info.backend_raw, "\"nccl\"");
  EXPECT_EQ(info.pp_groups, (std::vector<std::vector<int64_t>>{{1, 5}, {7, 3}}));
}

TEST(DistributedInfo, ATracesPpRankIsItsIndexInTheFirstPipelineGroupThatHoldsIt) {
  auto pp_rank_of = [](int rank) {
    return single_trace_pp_rank(with_info(R"({"rank": )" + std::to_string(rank) + ", " + kPgConfig + "}"));
  };
  EXPECT_EQ(pp_rank_of(1), 0);
  EXPECT_EQ(pp_rank_of(5), 1);
  EXPECT_EQ(pp_rank_of(3), 1);  // in the mesh_pp group; its mesh_dp group is not a PP group
  EXPECT_EQ(pp_rank_of(2), 0);  // in no PP group
}

TEST(DistributedInfo, NoInfoOrNoIntegerRankIsRankUnknownAndPpRankZero) {
  Trace none = with_info("");
  DistributedInfo info = read_distributed_info(none);
  EXPECT_FALSE(info.rank.has_value());
  EXPECT_EQ(info.backend_raw, "");
  EXPECT_TRUE(info.pp_groups.empty());
  EXPECT_EQ(single_trace_pp_rank(none), 0);

  Trace text_rank = with_info(std::string(R"({"rank": "5", )") + kPgConfig + "}");
  EXPECT_FALSE(read_distributed_info(text_rank).rank.has_value());
  EXPECT_EQ(single_trace_pp_rank(text_rank), 0);
}
