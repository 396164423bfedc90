// Semantic groups (SPEC 3, include/tracelane/classify.hpp): which group a slice falls in by
// its cat and name, the groups in display order with their labels, and which cats are
// measured slices (SPEC 2, 9.4).
#include <map>

#include "test_support.hpp"
#include "tracelane/classify.hpp"

using namespace tracelane;
using namespace tracelane::testing;

namespace {

std::string group_id(std::string_view cat, std::string_view name) {
  return default_groups()[classify_slice(cat, name)].id;
}

}  // namespace

// A slice's cat and name, and the default group it falls in.
struct ClassifyCase {
  const char* cat;
  const char* name;
  const char* group;
};

class ClassifySlice : public ::testing::TestWithParam<ClassifyCase> {};

TEST_P(ClassifySlice, FallsInItsSpec3Group) {
  const ClassifyCase& c = GetParam();
  EXPECT_EQ(group_id(c.cat, c.name), c.group) << c.cat << " / " << c.name;
}

INSTANTIATE_TEST_SUITE_P(MemcpyAndMemsetGoByCatBeforeName, ClassifySlice,
                         ::testing::Values(ClassifyCase{"gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", "memcpy"},
                                           ClassifyCase{"gpu_memset", "Memset (Device)", "memset"},
                                           ClassifyCase{"gpu_memcpy", "ncclAllGather copy", "memcpy"},
                                           ClassifyCase{"Memcpy", "legacy", "memcpy"},
                                           ClassifyCase{"Memset", "legacy", "memset"}));

INSTANTIATE_TEST_SUITE_P(
    NcclKernelsSplitByCollectiveIgnoringCase, ClassifySlice,
    ::testing::Values(ClassifyCase{"kernel", "ncclDevKernel_AllGather_RING_LL", "nccl_all_gather"},
                      ClassifyCase{"kernel", "ncclKernel_ReduceScatter_RING_LL_Sum_bf16", "nccl_reduce_scatter"},
                      ClassifyCase{"kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "nccl_all_reduce"},
                      ClassifyCase{"kernel", "NCCLKERNEL_ALLGATHER", "nccl_all_gather"},
                      ClassifyCase{"kernel", "ncclDevKernel_SendRecv", "nccl_other"},
                      // "all_gather" with an underscore is not "allgather".
                      ClassifyCase{"kernel", "nccl_all_gather_kernel", "nccl_other"}));

INSTANTIATE_TEST_SUITE_P(AllGatherWinsOverReduceScatterWhenANameHasBoth, ClassifySlice,
                         ::testing::Values(ClassifyCase{"kernel", "ncclAllGatherReduceScatter", "nccl_all_gather"},
                                           ClassifyCase{"kernel", "ncclReduceScatterAllReduce",
                                                        "nccl_reduce_scatter"}));

INSTANTIATE_TEST_SUITE_P(
    SymmetricMemoryBarrierNeedsBothWords, ClassifySlice,
    ::testing::Values(ClassifyCase{"kernel", "c10d::symmetric_memory::barrier_kernel", "symmetric_memory_barrier"},
                      ClassifyCase{"kernel", "Symmetric_Memory_BARRIER", "symmetric_memory_barrier"},
                      ClassifyCase{"kernel", "symmetric_memory::put_signal", "compute"},
                      ClassifyCase{"kernel", "barrier_kernel", "compute"}));

INSTANTIATE_TEST_SUITE_P(EverythingElseIsCompute, ClassifySlice,
                         ::testing::Values(ClassifyCase{"kernel", "sm90_xmma_gemm_bf16", "compute"},
                                           ClassifyCase{"Kernel", "volta_sgemm", "compute"}));

TEST(DefaultGroups, AreInSpecOrderWithSpecLabels) {
  std::vector<std::pair<std::string, std::string>> expected = {
      {"compute", "Compute"},
      {"symmetric_memory_barrier", "Symmetric-memory barrier"},
      {"nccl_all_gather", "NCCL all-gather"},
      {"nccl_reduce_scatter", "NCCL reduce-scatter"},
      {"nccl_all_reduce", "NCCL all-reduce"},
      {"nccl_other", "NCCL other"},
      {"memcpy", "GPU memcpy"},
      {"memset", "GPU memset"},
      {"sync", "GPU sync"},
  };
  const auto& groups = default_groups();
  ASSERT_EQ(groups.size(), expected.size());
  for (size_t i = 0; i < groups.size(); ++i) {
    EXPECT_EQ(groups[i].id, expected[i].first);
    EXPECT_EQ(groups[i].label, expected[i].second);
  }
}

// Rule 1 of SPEC 3 (with 9.3): the cat decides before any name.
INSTANTIATE_TEST_SUITE_P(CudaSyncIsTheSyncGroup, ClassifySlice,
                         ::testing::Values(ClassifyCase{"cuda_sync", "Stream Sync", "sync"},
                                           ClassifyCase{"cuda_sync", "ncclAllReduce wait", "sync"}));

// Rule 2 asks for "nccl" anywhere in the name, in any case; rule 3 comes after it.
INSTANTIATE_TEST_SUITE_P(
    NcclAnywhereInTheNameComesBeforeEveryLaterRule, ClassifySlice,
    ::testing::Values(ClassifyCase{"kernel", "void my_NCCL_allreduce_wrapper<float>", "nccl_all_reduce"},
                      ClassifyCase{"kernel", "ncclSymmetricKernel symmetric_memory barrier", "nccl_other"},
                      // The collective's word without "nccl" is not NCCL.
                      ClassifyCase{"kernel", "cutlass_ReduceScatter_fused", "compute"},
                      ClassifyCase{"kernel", "AllGatherMatmul", "compute"}));

TEST(MeasuredCat, IsTheCatsOfSpec2AndTheLegacyOnesOfSpec94) {
  for (const char* cat : {"kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset"})
    EXPECT_TRUE(is_measured_cat(cat)) << cat;
  // cuda_sync slices get lanes but are not measured (SPEC 9.3); the rest stay where they are.
  for (const char* cat : {"cuda_sync", "cpu_op", "gpu_user_annotation", "cuda_runtime", "ac2g", ""})
    EXPECT_FALSE(is_measured_cat(cat)) << cat;
  // Near misses of the same lengths.
  for (const char* cat : {"kernal", "memcpy", "MEMSET", "gpu_memcpz", "gpu-memset", "kernel "})
    EXPECT_FALSE(is_measured_cat(cat)) << cat;
}

// Compaction classifies each (cat, name) once per range of events and reuses the group:
// slices sharing a name under other cats, or a cat under other names, must each get the
// group classify gives their own pair.
TEST(CompactedGroups, AreThoseOfEachSlicesOwnCatAndName) {
  const std::vector<std::pair<std::string, std::string>> pairs = {{"kernel", "ncclDevKernel_AllGather"},
                                                                  {"gpu_memcpy", "ncclDevKernel_AllGather"},
                                                                  {"kernel", "Memcpy HtoD"},
                                                                  {"gpu_memset", "ncclDevKernel_AllGather"},
                                                                  {"Kernel", "ncclKernel_ReduceScatter"},
                                                                  {"kernel", "ncclKernel_ReduceScatter"},
                                                                  {"kernel", "gemm"},
                                                                  {"Memcpy", "gemm"}};
  std::vector<std::string> events;
  std::map<std::string, size_t> expected;
  for (int k = 0; k < 40; ++k) {
    const auto& [cat, name] = pairs[size_t(k * 5) % pairs.size()];
    events.push_back(slice_event(cat, name, 0, 7 + k % 3, std::to_string(10 * k), "5"));
    ++expected[group_id(cat, name)];
  }
  CompactedTrace result = compact_text(trace_json(events));
  EXPECT_EQ(result.summary.slice_groups, expected);
  EXPECT_GE(expected.size(), 5u);
}

TEST(DefaultGroups, AGroupsIndexIsItsPlaceInTheDisplayOrder) {
  EXPECT_EQ(group_index("compute"), 0);
  EXPECT_EQ(group_index("nccl_all_gather"), 2);
  EXPECT_EQ(group_index("sync"), 8);
  EXPECT_EQ(group_index("flash_attention"), -1);
  EXPECT_EQ(classify_slice("gpu_memset", "Memset (Device)"), group_index("memset"));
}
