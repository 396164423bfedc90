// Discovery (src/cli/sweep/discovery.hpp), the sweep's walk of ROOT: iteration directories
// and their rank files at any depth and beyond PATH_MAX, never our own outputs, and every
// link, loop, FIFO or unreadable directory reported instead of followed blindly; and the
// uncompressed size it expects of each rank.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/filesystem.hpp>
#include <cstdlib>
#include <fstream>

#include "cli/sweep/discovery.hpp"

namespace fs = boost::filesystem;
using namespace tracelane::cli;

namespace {

// A scratch directory removed at the end of the test.
struct TempTree {
  fs::path root = fs::temp_directory_path() / fs::unique_path("tracelane-discovery-%%%%-%%%%");
  TempTree() { fs::create_directories(root); }
  ~TempTree() {
    // GNU rm walks with openat, so trees deeper than PATH_MAX go too.
    std::string command = "rm -rf '" + root.string() + "'";
    if (std::system(command.c_str()) != 0) ADD_FAILURE() << "could not remove " << root;
  }
  void file(const std::string& rel, const std::string& text = "{}") {
    fs::create_directories((root / rel).parent_path());
    std::ofstream(root / rel) << text;
  }
};

}  // namespace

TEST(SweepDiscovery, FindsRankFilesAtAnyDepthAndNeverOurOutputs) {
  TempTree tree;
  tree.file("runA/profile_trace/iteration_1/rank0_trace.json.gz");
  tree.file("runA/profile_trace/iteration_1/rank1_trace.json");
  tree.file("runA/profile_trace/iteration_1/rank0_trace_compacted.json.gz");
  tree.file("runA/profile_trace/iteration_1/pp_traces_merged_compacted.json.gz");
  tree.file("runA/profile_trace/iteration_1/notes.json");
  tree.file("deep/x/y/z/rank3_trace.json");
  tree.file("only_outputs/rank0_trace_compacted.json");

  Discovery found = discover(tree.root);
  ASSERT_EQ(found.iterations.size(), 2u);
  EXPECT_EQ(found.iterations[0].rel, "deep/x/y/z");
  EXPECT_EQ(found.iterations[0].run, "deep/x");
  EXPECT_EQ(found.iterations[0].iteration, "z");
  const IterationDir& it = found.iterations[1];
  EXPECT_EQ(it.rel, "runA/profile_trace/iteration_1");
  EXPECT_EQ(it.run, "runA");
  EXPECT_EQ(it.iteration, "iteration_1");
  ASSERT_EQ(it.ranks.size(), 2u);
  EXPECT_EQ(it.ranks[0].path.filename().string(), "rank0_trace.json.gz");
  EXPECT_EQ(it.ranks[1].rank, 1);
  EXPECT_TRUE(found.problems.empty());
}

TEST(SweepDiscovery, ReportsASymlinkLoopAndGoesOn) {
  TempTree tree;
  tree.file("run/profile_trace/iteration_2/rank0_trace.json");
  fs::create_directory_symlink("..", tree.root / "run/profile_trace/back");
  Discovery found = discover(tree.root);
  ASSERT_EQ(found.iterations.size(), 1u);
  ASSERT_EQ(found.problems.size(), 1u);
  EXPECT_EQ(found.problems[0].rel, "run/profile_trace/back");
  EXPECT_NE(found.problems[0].reason.find("symlink loop"), std::string::npos);
  EXPECT_FALSE(found.problems[0].failure);
}

TEST(SweepDiscovery, AFileNamedLikeARankWhoseNumberDoesNotFitIsAWarningNotSilence) {
  TempTree tree;
  tree.file("it/rank0_trace.json");
  tree.file("it/rank99999999999999999999_trace.json");
  Discovery found = discover(tree.root);
  ASSERT_EQ(found.iterations.size(), 1u);
  EXPECT_EQ(found.iterations[0].ranks.size(), 1u);
  ASSERT_EQ(found.problems.size(), 1u);
  EXPECT_EQ(found.problems[0].rel, "it/rank99999999999999999999_trace.json");
  EXPECT_NE(found.problems[0].reason.find("rank number too large"), std::string::npos);
  EXPECT_FALSE(found.problems[0].failure);
}

TEST(SweepDiscovery, ADanglingRankSymlinkIsAWarningNotSilence) {
  TempTree tree;
  tree.file("it/rank0_trace.json");
  fs::create_symlink("nowhere/rank1_trace.json", tree.root / "it/rank1_trace.json");
  Discovery found = discover(tree.root);
  ASSERT_EQ(found.iterations.size(), 1u);
  EXPECT_EQ(found.iterations[0].ranks.size(), 1u);
  ASSERT_EQ(found.problems.size(), 1u);
  EXPECT_EQ(found.problems[0].rel, "it/rank1_trace.json");
  EXPECT_NE(found.problems[0].reason.find("dangling symlink"), std::string::npos);
}

TEST(SweepDiscovery, ARankSymlinkOwnedByAnotherUserIsNotFollowed) {
  if (::geteuid() != 0) GTEST_SKIP() << "SKIPPED: needs root to give a link to another user";
  TempTree tree;
  tree.file("private/secret.json", "{\"traceEvents\": []}");
  tree.file("it/rank0_trace.json");
  fs::create_symlink(tree.root / "private/secret.json", tree.root / "it/rank1_trace.json");
  ASSERT_EQ(::lchown((tree.root / "it/rank1_trace.json").c_str(), 65534, 65534), 0);
  fs::create_symlink(tree.root / "it/rank0_trace.json", tree.root / "it/rank2_trace.json");  // ours: followed
  Discovery found = discover(tree.root);
  ASSERT_EQ(found.iterations.size(), 1u);
  ASSERT_EQ(found.iterations[0].ranks.size(), 2u);
  EXPECT_EQ(found.iterations[0].ranks[1].rank, 2);
  EXPECT_TRUE(found.iterations[0].ranks[1].through_link);
  EXPECT_FALSE(found.iterations[0].ranks[0].through_link);
  ASSERT_EQ(found.problems.size(), 1u);
  EXPECT_EQ(found.problems[0].rel, "it/rank1_trace.json");
  EXPECT_NE(found.problems[0].reason.find("owned by another user"), std::string::npos);
}

TEST(SweepDiscovery, ReportsAnUnreadableDirectoryAsAFailure) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads every directory";
  TempTree tree;
  tree.file("locked/iteration_1/rank0_trace.json");
  fs::permissions(tree.root / "locked", fs::no_perms);
  Discovery found = discover(tree.root);
  fs::permissions(tree.root / "locked", fs::owner_all);
  ASSERT_EQ(found.problems.size(), 1u);
  EXPECT_TRUE(found.problems[0].failure);
}

TEST(SweepDiscovery, RunIsTheComponentBeforeProfileTraceElseTheGrandparent) {
  EXPECT_EQ(run_of("llama/profile_trace/iteration_10", "outputs"), "llama");
  EXPECT_EQ(run_of("profile_trace/iteration_10", "llama"), "llama");
  EXPECT_EQ(run_of("a/b/c/iteration_3", "root"), "a/b");
  EXPECT_EQ(run_of("b/iteration_3", "root"), ".");
  EXPECT_EQ(run_of(".", "root"), ".");
}

TEST(SweepDiscovery, InputNamesExcludeOurOutputs) {
  long long rank = -1;
  EXPECT_TRUE(is_sweep_input_name("rank12_trace.json.gz", &rank));
  EXPECT_EQ(rank, 12);
  EXPECT_FALSE(is_sweep_input_name("rank12_trace_compacted.json.gz"));
  EXPECT_FALSE(is_sweep_input_name("pp_traces_merged_compacted.json.gz"));
  EXPECT_FALSE(is_sweep_input_name("rank_trace.json"));
}

TEST(SweepMemory, GzipSizeEstimateReadsTheTrailer) {
  TempTree tree;
  // A gzip header, filler, then CRC32 and ISIZE = 1000000 (little-endian).
  std::string bytes = "\x1f\x8b\x08";
  bytes += std::string(20, 'x');
  bytes += std::string("\0\0\0\0\x40\x42\x0f\x00", 8);
  tree.file("a.gz", bytes);
  EXPECT_EQ(estimate_uncompressed_bytes(tree.root / "a.gz", bytes.size()), 1000000u);
  tree.file("b.json", "{\"traceEvents\": []}");
  EXPECT_EQ(estimate_uncompressed_bytes(tree.root / "b.json", 19), 19u);
}

TEST(SweepDiscovery, FindsAnIterationDirectoryWhosePathIsLongerThanPathMax) {
  TempTree tree;
  // 250 levels of 30-byte names: about 7,750 bytes, beyond PATH_MAX (4096).
  int fd = ::open(tree.root.c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(fd, 0);
  std::string name(30, 'd');
  std::string rel;
  for (int level = 0; level < 250; ++level) {
    ASSERT_EQ(::mkdirat(fd, name.c_str(), 0755), 0);
    int child = ::openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY);
    ::close(fd);
    ASSERT_GE(child, 0);
    fd = child;
    rel += (rel.empty() ? "" : "/") + name;
  }
  int file = ::openat(fd, "rank0_trace.json", O_WRONLY | O_CREAT | O_EXCL, 0644);
  ASSERT_GE(file, 0);
  ASSERT_EQ(::write(file, "{}", 2), 2);
  ::close(file);
  ::close(fd);
  ASSERT_GT(rel.size(), 4096u);

  Discovery found = discover(tree.root);
  ASSERT_EQ(found.iterations.size(), 1u);
  EXPECT_EQ(found.iterations[0].rel, rel);
  ASSERT_EQ(found.iterations[0].ranks.size(), 1u);
  EXPECT_EQ(found.iterations[0].ranks[0].bytes_on_disk, 2u);
  EXPECT_TRUE(found.problems.empty());
}

TEST(SweepDiscovery, ARankSymlinkOfOursIsFollowedAndSaysSo) {
  TempTree tree;
  tree.file("store/kept.json", "{\"traceEvents\": []}");
  tree.file("it/rank0_trace.json");
  fs::create_symlink(tree.root / "store/kept.json", tree.root / "it/rank1_trace.json");
  Discovery found = discover(tree.root);
  ASSERT_EQ(found.iterations.size(), 1u);
  const IterationDir& it = found.iterations[0];
  ASSERT_EQ(it.ranks.size(), 2u);
  EXPECT_FALSE(it.ranks[0].through_link);
  EXPECT_TRUE(it.ranks[1].through_link);
  EXPECT_EQ(it.ranks[1].bytes_on_disk, 19u);  // the target's size, not the link's
  EXPECT_TRUE(found.problems.empty());
}

TEST(SweepDiscovery, AFifoUnderARankNameIsAWarningAndDoesNotBlock) {
  TempTree tree;
  tree.file("it/rank0_trace.json");
  ASSERT_EQ(::mkfifo((tree.root / "it/rank1_trace.json").c_str(), 0644), 0);
  Discovery found = discover(tree.root);
  ASSERT_EQ(found.iterations.size(), 1u);
  EXPECT_EQ(found.iterations[0].ranks.size(), 1u);
  ASSERT_EQ(found.problems.size(), 1u);
  EXPECT_EQ(found.problems[0].rel, "it/rank1_trace.json");
  EXPECT_FALSE(found.problems[0].failure);
}

TEST(SweepDiscovery, ADirectoryReachedTwiceIsWalkedOnce) {
  TempTree tree;
  tree.file("run/it/rank0_trace.json");
  fs::create_directory_symlink(tree.root / "run", tree.root / "alias");
  Discovery found = discover(tree.root);
  EXPECT_EQ(found.iterations.size(), 1u);
  ASSERT_EQ(found.problems.size(), 1u);
  EXPECT_FALSE(found.problems[0].failure);
}

TEST(SweepDiscovery, ListsADirectorysNamesSortedWithoutDotAndDotDot) {
  TempTree tree;
  for (const char* name : {"b", "a", "B", "rank1_trace.json"}) tree.file(name);
  int fd = ::open(tree.root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  std::vector<std::string> names;
  EXPECT_EQ(list_directory(fd, names), 0);
  ::close(fd);
  EXPECT_EQ(names, (std::vector<std::string>{"B", "a", "b", "rank1_trace.json"}));
}

TEST(SweepMemory, AGzipTrailerSizeIsLiftedByWholeMultiplesOfFourGiBToAtLeastTheFileSize) {
  TempTree tree;
  // A sparse file of 5 GiB: a gzip header, nothing, then CRC32 and ISIZE = 10.
  const uint64_t size = (uint64_t(5) << 30) + 18;
  fs::path path = tree.root / "big.gz";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::pwrite(fd, "\x1f\x8b\x08", 3, 0), 3);
  ASSERT_EQ(::pwrite(fd, "\0\0\0\0\x0a\0\0\0", 8, off_t(size - 8)), 8);
  ::close(fd);
  EXPECT_EQ(estimate_uncompressed_bytes(path, size), (uint64_t(2) << 32) + 10);
}
