// The sweep's memory budget (src/cli/memory_budget.hpp): sizes as people write them, the
// budget and thread counts a job gets by default, and Admission, which starts rank jobs in
// queue order while their estimated cost fits and never deadlocks on one that does not.
#include <gtest/gtest.h>
#include <sched.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "cli/memory_budget.hpp"

using namespace tracelane::cli;

TEST(SweepMemory, ParsesSizesWithBinarySuffixes) {
  EXPECT_EQ(parse_byte_size("512M"), 512ull << 20);
  EXPECT_EQ(parse_byte_size("4G"), 4ull << 30);
  EXPECT_EQ(parse_byte_size("4GiB"), 4ull << 30);
  EXPECT_EQ(parse_byte_size("4gb"), 4ull << 30);
  EXPECT_EQ(parse_byte_size("1.5K"), 1536u);
  EXPECT_EQ(parse_byte_size("1000"), 1000u);
  EXPECT_FALSE(parse_byte_size("0"));
  EXPECT_FALSE(parse_byte_size("G"));
  EXPECT_FALSE(parse_byte_size("4X"));
  EXPECT_FALSE(parse_byte_size(""));
}

TEST(SweepAdmission, StartsJobsInOrderWhileTheyFit) {
  Admission admission(100);
  for (size_t id = 0; id < 4; ++id) admission.enqueue({id, SIZE_MAX, 40, 0});
  EXPECT_EQ(admission.admit(), (std::vector<size_t>{0, 1}));
  admission.finish_job(0);
  EXPECT_EQ(admission.admit(), (std::vector<size_t>{2}));
  EXPECT_EQ(admission.in_flight(), 80u);
}

TEST(SweepAdmission, AJobLargerThanTheBudgetRunsAlone) {
  Admission admission(100);
  admission.enqueue({0, SIZE_MAX, 10, 0});
  admission.enqueue({1, SIZE_MAX, 500, 0});
  admission.enqueue({2, SIZE_MAX, 10, 0});
  EXPECT_EQ(admission.admit(), (std::vector<size_t>{0}));
  admission.finish_job(0);
  EXPECT_EQ(admission.admit(), (std::vector<size_t>{1}));
  EXPECT_TRUE(admission.admit().empty());
  admission.finish_job(1);
  EXPECT_EQ(admission.admit(), (std::vector<size_t>{2}));
}

TEST(SweepAdmission, AMergeGroupLargerThanTheBudgetProgressesOneJobAtATime) {
  Admission admission(100);
  for (size_t id = 0; id < 3; ++id) admission.enqueue({id, 7, 30, 200});
  admission.enqueue({3, SIZE_MAX, 10, 0});
  std::vector<size_t> started;
  for (int step = 0; step < 3; ++step) {
    auto now = admission.admit();
    ASSERT_EQ(now.size(), 1u);
    started.push_back(now[0]);
    admission.finish_job(now[0]);
  }
  EXPECT_EQ(started, (std::vector<size_t>{0, 1, 2}));
  EXPECT_TRUE(admission.admit().empty());  // the merge holds the reserve
  admission.finish_group(7);
  EXPECT_EQ(admission.admit(), (std::vector<size_t>{3}));
  admission.finish_job(3);
  EXPECT_TRUE(admission.idle());
  EXPECT_EQ(admission.in_flight(), 0u);
}

TEST(SweepAdmission, ARequeuedJobWaitsAtTheHeadOfTheQueueUntilItsLargerCostFits) {
  Admission admission(100);
  admission.enqueue({0, SIZE_MAX, 40, 0});
  admission.enqueue({1, SIZE_MAX, 40, 0});
  admission.enqueue({2, SIZE_MAX, 20, 0});
  EXPECT_EQ(admission.admit(), (std::vector<size_t>{0, 1, 2}));
  admission.requeue(0, 90, 0);  // job 0 found it needs 90
  EXPECT_EQ(admission.in_flight(), 60u);
  EXPECT_TRUE(admission.admit().empty());
  admission.finish_job(1);
  EXPECT_TRUE(admission.admit().empty());  // 20 + 90 > 100: still waits
  admission.finish_job(2);
  EXPECT_EQ(admission.admit(), (std::vector<size_t>{0}));
  EXPECT_EQ(admission.in_flight(), 90u);
  admission.finish_job(0);
  EXPECT_TRUE(admission.idle());
}

TEST(SweepAdmission, ARequeueGrowsItsGroupsReserveBeforeTheJobStartsAgain) {
  Admission admission(100);
  admission.enqueue({0, 7, 10, 30});
  admission.enqueue({1, 7, 10, 30});
  EXPECT_EQ(admission.admit(), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(admission.in_flight(), 50u);
  admission.requeue(1, 20, 60);  // its file is larger: the group will retain more
  EXPECT_EQ(admission.in_flight(), 40u);
  EXPECT_EQ(admission.admit(), (std::vector<size_t>{1}));
  EXPECT_EQ(admission.in_flight(), 90u);  // 10 + 20 + the reserve of 60
  admission.finish_job(0);
  admission.finish_job(1);
  admission.finish_group(7);
  EXPECT_EQ(admission.in_flight(), 0u);
  EXPECT_TRUE(admission.idle());
}

TEST(SweepMemory, ReadsTheSizesItsHeaderGivesAsExamples) {
  EXPECT_EQ(parse_byte_size("1.5GiB"), uint64_t(1536) << 20);
  EXPECT_EQ(parse_byte_size("1073741824"), uint64_t(1) << 30);
  EXPECT_EQ(parse_byte_size("2T"), uint64_t(2) << 40);
  EXPECT_EQ(parse_byte_size("3k"), uint64_t(3) << 10);
  EXPECT_FALSE(parse_byte_size("1.5.5G"));
  EXPECT_FALSE(parse_byte_size("-4G"));
}

TEST(SweepMemory, TheDefaultBudgetIsHalfTheMemoryThisJobMayUse) {
  const uint64_t limit = memory_limit();
  EXPECT_GT(limit, 0u);
  if (limit >= (uint64_t(128) << 20)) {
    EXPECT_EQ(default_memory_budget(), limit / 2);
  }
}

TEST(SweepMemory, ThreadsAreAtLeastOneAndAtMostTheCoresThisProcessMayUse) {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  ASSERT_EQ(::sched_getaffinity(0, sizeof cpus, &cpus), 0);
  const int cores = CPU_COUNT(&cpus);
  EXPECT_EQ(arena_threads(0), 1);
  EXPECT_EQ(arena_threads(-3), 1);
  EXPECT_EQ(arena_threads(1), 1);
  EXPECT_GE(arena_threads(1 << 20), 1);
  EXPECT_LE(arena_threads(1 << 20), cores);
}

TEST(SweepMemory, SlurmsCpusPerTaskSetsTheDefaultJobs) {
  const char* saved = std::getenv("SLURM_CPUS_PER_TASK");
  const std::string before = saved ? saved : "";
  ::setenv("SLURM_CPUS_PER_TASK", "3", 1);
  EXPECT_EQ(default_jobs(), 3);
  ::unsetenv("SLURM_CPUS_PER_TASK");
  const int unset = default_jobs();
  EXPECT_GE(unset, 1);
  ::setenv("SLURM_CPUS_PER_TASK", "none", 1);  // not a number: as if unset
  EXPECT_EQ(default_jobs(), unset);
  if (saved)
    ::setenv("SLURM_CPUS_PER_TASK", before.c_str(), 1);
  else
    ::unsetenv("SLURM_CPUS_PER_TASK");
}

TEST(SweepAdmission, AGroupHoldsItsReserveFromItsFirstJobUntilItsMergeIsDone) {
  Admission admission(100);
  admission.enqueue({0, 5, 10, 50});
  admission.enqueue({1, 5, 10, 50});
  EXPECT_EQ(admission.admit(), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(admission.in_flight(), 70u);  // two jobs and the group's one reserve
  EXPECT_EQ(admission.running(), 2u);
  admission.finish_job(0);
  admission.finish_job(1);
  EXPECT_EQ(admission.in_flight(), 50u);  // the merge still needs the reserve
  EXPECT_FALSE(admission.idle());
  admission.finish_group(5);
  EXPECT_EQ(admission.in_flight(), 0u);
  EXPECT_TRUE(admission.idle());
}
