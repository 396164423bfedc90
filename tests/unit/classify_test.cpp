// Semantic groups (SPEC 3, include/tracelane/classify.hpp): which group a slice falls in by
// its cat and name, the groups in display order with their labels, and which cats are
// measured slices (SPEC 2, 9.4).
#include "tracelane/classify.hpp"
#include "test_support.hpp"

using namespace tracelane;

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
}

TEST(DefaultGroups, AGroupsIndexIsItsPlaceInTheDisplayOrder) {
  EXPECT_EQ(group_index("compute"), 0);
  EXPECT_EQ(group_index("nccl_all_gather"), 2);
  EXPECT_EQ(group_index("sync"), 8);
  EXPECT_EQ(group_index("flash_attention"), -1);
  EXPECT_EQ(classify_slice("gpu_memset", "Memset (Device)"), group_index("memset"));
}
