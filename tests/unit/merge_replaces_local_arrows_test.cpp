// A rank compacted with its single-trace PP arrows (as `compact` and `sweep` write it)
// merges to exactly the same file as one compacted without them (SPEC 7, 8).
#include "test_support.hpp"

using namespace tracelane;
using namespace tracelane::testing;

namespace {

std::string rank_trace(int rank, const std::string& base_ns) {
  return trace_json(
      {kernel(0, 7, "100", "50", "k", R"("name": "PP:)" + std::to_string(rank) + R"(F0")"),
       R"({"ph": "X", "cat": "gpu_user_annotation", "name": "PP:)" + std::to_string(rank) +
           R"(RECV_F0", "pid": 0, "tid": 7, "ts": 90, "dur": 5, "args": {}})",
       R"({"ph": "X", "cat": "gpu_user_annotation", "name": "PP:)" + std::to_string(rank) +
           R"(SEND_F0", "pid": 0, "tid": 7, "ts": 160, "dur": 5, "args": {}})"},
      R"("distributedInfo": {"rank": )" + std::to_string(rank) + R"(}, "baseTimeNanoseconds": )" + base_ns);
}

std::string merged(bool local_arrows) {
  std::vector<MergeInput> inputs;
  for (int rank = 0; rank < 2; ++rank) {
    CompactOptions options;
    options.pp_flows = local_arrows;
    inputs.push_back({"rank" + std::to_string(rank) + "_trace.json",
                      compact_trace(parse_trace(rank_trace(rank, rank ? "1000" : "3000"), "r.json"), options)});
  }
  return merge_ranks(std::move(inputs)).json;
}

}  // namespace

TEST(MergeRanks, SingleTraceArrowsOfARankAreReplacedByTheMergedOnes) {
  std::string with_local = merged(true), without_local = merged(false);
  EXPECT_EQ(with_local, without_local);
  EXPECT_NE(without_local.find("\"pp_compute_dependency\""), std::string::npos) << "the merge has its own arrows";
}
