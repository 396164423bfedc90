// DirectoryLock (tree_lock.cpp) and what it keeps apart: a writer's last check of its
// inputs and rename (AtomicOutput::commit) against the removal of originals
// (remove_originals), whoever started each. The races are made deterministic by doing the
// other process's step by hand at the point where it would interleave.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <boost/filesystem.hpp>
#include <chrono>
#include <fstream>
#include <iterator>
#include <thread>

#include "cli/files.hpp"
#include "cli/remove_originals.hpp"
#include "cli/tree_lock.hpp"
#include "test_support.hpp"
#include "tracelane/compact.hpp"

namespace fs = boost::filesystem;
using namespace tracelane::cli;
using tracelane::testing::kernel;
using tracelane::testing::trace_json;

namespace {

struct Scratch {
  fs::path root = fs::temp_directory_path() / fs::unique_path("tracelane-dirlock-%%%%-%%%%");
  Scratch() { fs::create_directories(root); }
  ~Scratch() {
    boost::system::error_code ec;
    fs::remove_all(root, ec);
  }
  fs::path file(const std::string& name, const std::string& text) const {
    std::ofstream(root / name, std::ios::binary) << text;
    return root / name;
  }
};

std::string contents(const fs::path& path) {
  std::ifstream in(path.string(), std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Hidden names in `dir` other than the lock files: temporaries left behind.
std::vector<std::string> temporaries(const fs::path& dir) {
  std::vector<std::string> left;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::string name = entry.path().filename().string();
    if (name[0] == '.' && name != kDirectoryLockName) left.push_back(name);
  }
  return left;
}

std::string original_text(int kernels) {
  std::vector<std::string> events;
  for (int i = 0; i < kernels; ++i)
    events.push_back(kernel(0, 7 + i % 3, std::to_string(1000 + 3 * i) + ".250", "1.500", "k" + std::to_string(i % 5)));
  return trace_json(events);
}

std::string compacted_text(const std::string& original) {
  return tracelane::write_compacted(tracelane::compact_trace(tracelane::parse_trace(original, "t.json"), {}));
}

OriginalFile original_file(const fs::path& dir, const std::string& name) {
  struct stat st {};
  EXPECT_EQ(::lstat((dir / name).c_str(), &st), 0);
  OriginalFile file;
  file.dir = dir;
  file.name = name;
  file.output_name = default_compact_output(dir / name).filename().string();
  file.identity = identity_of(st);
  file.estimate = uint64_t(st.st_size);
  return file;
}

void no_errors(const std::string& line) { ADD_FAILURE() << "unexpected error line: " << line; }

// What a second sweep holds once it has read `input` and written its copy, before commit().
struct SecondWriter {
  NamedIdentity input;
  std::unique_ptr<AtomicOutput> output;
  SecondWriter(const fs::path& input_path, const fs::path& output_path, const std::string& copy) {
    read_file(input_path, &input.identity);
    input.name = input_path.filename().string();
    input.path = input_path;
    output = std::make_unique<AtomicOutput>(output_path, std::vector<NamedIdentity>{input});
    output->write(copy);
  }
};

}  // namespace

// The data loss of a sweep of a nested ROOT racing `sweep --remove-originals`: the removing
// sweep verified its copy and removed the original; the other sweep, which had read the
// original before, must not then put its own copy (here one that cannot restore it) over
// the verified one.
TEST(DirectoryLock, ACopyOfAnOriginalRemovedSinceItWasReadIsNotPutOverTheVerifiedCopy) {
  Scratch scratch;
  std::string original = original_text(30);
  fs::path rank = scratch.file("rank0_trace.json", original);
  fs::path copy = scratch.root / "rank0_trace_compacted.json";
  SecondWriter second(rank, copy, "a copy without restore data");

  std::string verified = compacted_text(original);
  scratch.file("rank0_trace_compacted.json", verified);
  std::vector<OriginalVerdict> verdicts = remove_originals({original_file(scratch.root, "rank0_trace.json")}, 1, 1, no_errors);
  ASSERT_EQ(original_cell(verdicts.at(0)), "removed");

  try {
    second.output->commit(true);
    ADD_FAILURE() << "the second sweep's copy was put in place over the verified one";
  } catch (const InputChanged& e) {
    EXPECT_NE(std::string(e.what()).find("rank0_trace.json was removed or changed since it was read"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(contents(copy), verified);
  EXPECT_EQ(tracelane::restore_original(contents(copy), copy.string(), 0), original);
  EXPECT_EQ(temporaries(scratch.root), std::vector<std::string>{});
}

// A copy made from an older version of a rank file never lands over the copy of the newer.
TEST(DirectoryLock, ACopyOfAnOriginalRewrittenSinceItWasReadIsNotPutInPlace) {
  Scratch scratch;
  fs::path rank = scratch.file("rank0_trace.json", original_text(10));
  fs::path copy = scratch.file("rank0_trace_compacted.json", "the newer trace's copy");
  SecondWriter second(rank, copy, "the older trace's copy");
  scratch.file("rank0_trace.json.new", original_text(12));
  fs::rename(scratch.root / "rank0_trace.json.new", rank);  // as a job writes it again
  EXPECT_THROW(second.output->commit(true), InputChanged);
  EXPECT_EQ(contents(copy), "the newer trace's copy");
  // Unchanged input: it lands.
  SecondWriter third(rank, copy, "a copy of the newer trace");
  third.output->commit(true);
  EXPECT_EQ(contents(copy), "a copy of the newer trace");
  EXPECT_EQ(temporaries(scratch.root), std::vector<std::string>{});
}

// The removal's last checks and unlinks hold the directory's lock: a commit in that window
// waits for it, then sees the original gone.
TEST(DirectoryLock, ACommitWaitsForTheLockOfItsDirectory) {
  Scratch scratch;
  fs::path rank = scratch.file("rank0_trace.json", original_text(5));
  fs::path copy = scratch.file("rank0_trace_compacted.json", "verified");
  SecondWriter second(rank, copy, "stale");
  std::atomic<bool> finished{false}, refused{false};
  std::thread writer;
  {
    DirectoryLock lock;
    std::string message;
    ASSERT_EQ(lock.take(scratch.root, message), TreeLock::Outcome::locked) << message;
    writer = std::thread([&] {
      try {
        second.output->commit(true);
      } catch (const InputChanged&) {
        refused = true;
      }
      finished = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_FALSE(finished) << "the commit did not wait for the directory's lock";
    fs::remove(rank);  // the removal, under the lock
  }
  writer.join();
  EXPECT_TRUE(refused);
  EXPECT_EQ(contents(copy), "verified");
}

// A lock file the removal cannot use (planted as a symlink) keeps the originals: without the
// lock another writer could replace the verified copy.
TEST(DirectoryLock, AnIterationWhoseDirectoryCannotBeLockedKeepsItsOriginals) {
  Scratch scratch;
  std::string original = original_text(20);
  scratch.file("rank0_trace.json", original);
  scratch.file("rank0_trace_compacted.json", compacted_text(original));
  fs::path elsewhere = scratch.file("elsewhere", "");
  fs::create_symlink(elsewhere, scratch.root / kDirectoryLockName);
  std::vector<OriginalVerdict> verdicts = remove_originals({original_file(scratch.root, "rank0_trace.json")}, 1, 1, no_errors);
  ASSERT_EQ(verdicts.size(), 1u);
  EXPECT_NE(original_cell(verdicts[0]).find("kept: cannot lock its directory"), std::string::npos)
      << original_cell(verdicts[0]);
  EXPECT_TRUE(fs::exists(scratch.root / "rank0_trace.json"));
  EXPECT_EQ(contents(elsewhere), "");
}
