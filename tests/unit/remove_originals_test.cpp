// `sweep --remove-originals` (issue 14): when an iteration is done, what makes a directory
// entry the original the sweep read, and the removal itself on real files: a copy that
// restores its original lets it go, any other copy keeps it, and an iteration goes all
// together or not at all; and the directory lock that keeps the removal and other writers
// of the same directory apart (DirectoryLock, at the end).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <boost/filesystem.hpp>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <thread>

#include "cli/files.hpp"
#include "cli/report/report.hpp"
#include "cli/sweep/remove_originals.hpp"
#include "cli/tree_lock.hpp"
#include "test_support.hpp"
#include "tracelane/compact.hpp"

namespace fs = boost::filesystem;
using namespace tracelane::cli;
using tracelane::testing::kernel;
using tracelane::testing::trace_json;

namespace {

struct Scratch {
  fs::path root = fs::temp_directory_path() / fs::unique_path("tracelane-remove-%%%%-%%%%");
  Scratch() { fs::create_directories(root); }
  ~Scratch() {
    boost::system::error_code ec;
    fs::remove_all(root, ec);
  }
  fs::path file(const std::string& name, const std::string& text) const {
    fs::create_directories((root / name).parent_path());
    std::ofstream(root / name, std::ios::binary) << text;
    return root / name;
  }
};

std::string original_text(int kernels) {
  std::vector<std::string> events;
  for (int i = 0; i < kernels; ++i)
    events.push_back(kernel(0, 7 + i % 3, std::to_string(1000 + 3 * i) + ".250", "1.500", "k" + std::to_string(i % 5)));
  return trace_json(events);
}

std::string compacted_text(const std::string& original) {
  return tracelane::write_compacted(tracelane::compact_trace(tracelane::parse_trace(original, "t.json"), {}));
}

// The file `name` of `dir` as the sweep would have read it.
OriginalFile original_file(const fs::path& dir, const std::string& name, size_t iteration) {
  struct stat st {};
  EXPECT_EQ(::lstat((dir / name).c_str(), &st), 0);
  OriginalFile file;
  file.dir = dir;
  file.name = name;
  file.output_name = default_compact_output(dir / name).filename().string();
  file.identity = identity_of(st);
  file.estimate = uint64_t(st.st_size);
  file.iteration = iteration;
  return file;
}

void no_errors(const std::string& line) { ADD_FAILURE() << "unexpected error line: " << line; }

std::string contents(const fs::path& path) {
  std::ifstream in(path.string(), std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Hidden names in `dir` other than the directory's lock file: temporaries left behind.
std::vector<std::string> temporaries(const fs::path& dir) {
  std::vector<std::string> left;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::string name = entry.path().filename().string();
    if (name[0] == '.' && name != kDirectoryLockName) left.push_back(name);
  }
  return left;
}

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

TEST(RemoveOriginals, AnIterationIsDoneOnlyWhenEveryRankAndItsMergeAreOkOrSkipped) {
  EXPECT_FALSE(iteration_not_done({{"rank0_trace.json", RowStatus::ok}, {"rank1_trace.json", RowStatus::skipped}},
                                  MergeStatus{RowStatus::ok}));
  EXPECT_FALSE(iteration_not_done({{"rank0_trace.json", RowStatus::ok}}, std::nullopt));
  auto failed_rank = iteration_not_done({{"rank0_trace.json", RowStatus::ok}, {"rank1_trace.json", RowStatus::failed}},
                                        MergeStatus{RowStatus::failed});
  ASSERT_TRUE(failed_rank);
  EXPECT_NE(failed_rank->find("rank1_trace.json is failed"), std::string::npos) << *failed_rank;
  auto failed_merge = iteration_not_done({{"rank0_trace.json", RowStatus::ok}, {"rank1_trace.json", RowStatus::ok}},
                                         MergeStatus{RowStatus::failed});
  ASSERT_TRUE(failed_merge);
  EXPECT_NE(failed_merge->find("merge is failed"), std::string::npos) << *failed_merge;
  EXPECT_TRUE(iteration_not_done({{"rank0_trace.json", RowStatus::already_laned}}, std::nullopt));
  EXPECT_TRUE(iteration_not_done({{"rank0_trace.json", std::nullopt}}, std::nullopt));
}

TEST(RemoveOriginals, AnEntryIsTheOriginalOnlyAsARegularFileWithOneLinkOursAndUnchanged) {
  Scratch scratch;
  fs::path path = scratch.file("rank0_trace.json", "{}");
  struct stat st {};
  ASSERT_EQ(::lstat(path.c_str(), &st), 0);
  const FileIdentity read = identity_of(st);
  const uid_t me = ::geteuid();
  EXPECT_FALSE(original_refusal(st, read, false, me));
  EXPECT_EQ(original_refusal(st, read, true, me).value_or(""),
            "reached through a symbolic link (its target is not removed)");
  struct stat linked = st;
  linked.st_nlink = 2;
  EXPECT_EQ(original_refusal(linked, read, false, me).value_or(""), "has 2 hard links");
  EXPECT_EQ(original_refusal(st, read, false, me + 1).value_or(""), "owned by another user");
  struct stat link = st;
  link.st_mode = S_IFLNK | 0777;
  EXPECT_TRUE(original_refusal(link, read, false, me));
  for (auto change : {+[](FileIdentity& i) { i.size++; }, +[](FileIdentity& i) { i.mtime_ns++; },
                      +[](FileIdentity& i) { i.inode++; }, +[](FileIdentity& i) { i.device++; }}) {
    FileIdentity other = read;
    change(other);
    EXPECT_EQ(original_refusal(st, other, false, me).value_or(""),
              "changed since the sweep read it (device, inode, size or mtime)");
  }
}

TEST(RemoveOriginals, RemovesAnOriginalWhoseCopyRestoresItEvenUnderATinyBudget) {
  Scratch scratch;
  std::string original = original_text(40);
  scratch.file("it/rank0_trace.json", original);
  scratch.file("it/rank0_trace_compacted.json", compacted_text(original));
  std::vector<OriginalFile> files{original_file(scratch.root / "it", "rank0_trace.json", 0)};
  std::vector<OriginalVerdict> verdicts = remove_originals(files, 1, 2, no_errors);  // a 1-byte budget: alone
  ASSERT_EQ(verdicts.size(), 1u);
  EXPECT_EQ(original_cell(verdicts[0]), "removed");
  EXPECT_EQ(verdicts[0].bytes, original.size());
  EXPECT_FALSE(fs::exists(scratch.root / "it/rank0_trace.json"));
  EXPECT_TRUE(fs::exists(scratch.root / "it/rank0_trace_compacted.json"));
  EXPECT_EQ(removal_summary(verdicts), "removed 1 original, " + std::to_string(original.size()) + " bytes; kept 0");
}

TEST(RemoveOriginals, ACopyOfAnotherOriginalIsNotFaithfulAndKeepsItsWholeIteration) {
  Scratch scratch;
  std::string rank0 = original_text(30), rank1 = original_text(31);
  scratch.file("it/rank0_trace.json", rank0);
  scratch.file("it/rank0_trace_compacted.json", compacted_text(rank0));
  scratch.file("it/rank1_trace.json", rank1);
  scratch.file("it/rank1_trace_compacted.json", compacted_text(rank0));  // restores rank0's text
  std::vector<OriginalFile> files{original_file(scratch.root / "it", "rank0_trace.json", 0),
                                  original_file(scratch.root / "it", "rank1_trace.json", 0)};
  std::vector<std::string> errors;
  std::vector<OriginalVerdict> verdicts =
      remove_originals(files, 1 << 30, 2, [&](const std::string& line) { errors.push_back(line); });
  ASSERT_EQ(verdicts.size(), 2u);
  EXPECT_EQ(verdicts[1].kind, OriginalVerdict::unfaithful);
  EXPECT_EQ(original_cell(verdicts[1]).rfind(kOriginalUnfaithful, 0), 0u) << original_cell(verdicts[1]);
  EXPECT_EQ(verdicts[0].kind, OriginalVerdict::kept);
  EXPECT_NE(verdicts[0].reason.find("rank1_trace.json of this iteration is kept"), std::string::npos)
      << verdicts[0].reason;
  EXPECT_EQ(errors.size(), 1u);
  EXPECT_TRUE(fs::exists(scratch.root / "it/rank0_trace.json"));
  EXPECT_TRUE(fs::exists(scratch.root / "it/rank1_trace.json"));
  // The report says so, and a report with such a cell is a failure.
  Row row(RowKind::file);
  row.set_status(RowStatus::ok).set(ColumnId::original, original_cell(verdicts[1]));
  EXPECT_TRUE(has_failures({row}));
  row.set(ColumnId::original, original_cell(verdicts[0]));
  EXPECT_FALSE(has_failures({row}));
}

TEST(RemoveOriginals, ARankFileThatAppearedAfterTheListingKeepsItsIterationsOriginals) {
  // rank2 was written into the iteration after the sweep listed it (a job still writing its
  // ranks): the merged output covers ranks 0 and 1 only. Removing their originals would
  // leave rank2 alone, and the next sweep would merge it alone over the merge of all three.
  Scratch scratch;
  for (const char* rank : {"0", "1"}) {
    std::string original = original_text(30);
    scratch.file(std::string("it/rank") + rank + "_trace.json", original);
    scratch.file(std::string("it/rank") + rank + "_trace_compacted.json", compacted_text(original));
  }
  std::vector<OriginalFile> files{original_file(scratch.root / "it", "rank0_trace.json", 0),
                                  original_file(scratch.root / "it", "rank1_trace.json", 0)};
  scratch.file("it/rank2_trace.json.gz", "written since");
  std::vector<OriginalVerdict> verdicts = remove_originals(files, 1 << 30, 2, no_errors);
  ASSERT_EQ(verdicts.size(), 2u);
  for (const OriginalVerdict& verdict : verdicts) {
    EXPECT_EQ(verdict.kind, OriginalVerdict::kept);
    EXPECT_EQ(verdict.reason,
              "rank2_trace.json.gz appeared in the directory after the sweep listed it; the merged output does not "
              "cover it");
  }
  EXPECT_TRUE(fs::exists(scratch.root / "it/rank0_trace.json"));
  EXPECT_TRUE(fs::exists(scratch.root / "it/rank1_trace.json"));
}

TEST(RemoveOriginals, ACopyWithoutRestoreDataOrMissingKeepsTheOriginal) {
  Scratch scratch;
  std::string original = original_text(20);
  scratch.file("a/rank0_trace.json", original);
  tracelane::CompactOptions plain;
  plain.restore_data = false;
  scratch.file("a/rank0_trace_compacted.json",
               tracelane::write_compacted(tracelane::compact_trace(tracelane::parse_trace(original, "t"), plain)));
  scratch.file("b/rank0_trace.json", original);  // no copy at all
  std::vector<OriginalFile> files{original_file(scratch.root / "a", "rank0_trace.json", 0),
                                  original_file(scratch.root / "b", "rank0_trace.json", 1)};
  size_t errors = 0;
  std::vector<OriginalVerdict> verdicts = remove_originals(files, 1 << 30, 1, [&](const std::string&) { errors++; });
  EXPECT_EQ(original_cell(verdicts[0]), "kept: restore differs: rank0_trace_compacted.json holds no restore data");
  EXPECT_EQ(verdicts[1].kind, OriginalVerdict::kept);
  EXPECT_NE(verdicts[1].reason.find("rank0_trace_compacted.json: cannot open"), std::string::npos)
      << verdicts[1].reason;
  EXPECT_EQ(errors, 1u);
  EXPECT_TRUE(fs::exists(scratch.root / "a/rank0_trace.json"));
  EXPECT_TRUE(fs::exists(scratch.root / "b/rank0_trace.json"));
}

TEST(RemoveOriginals, AFileReadWithAnotherIdentityIsKept) {
  Scratch scratch;
  std::string original = original_text(20);
  scratch.file("it/rank0_trace.json", original);
  scratch.file("it/rank0_trace_compacted.json", compacted_text(original));
  OriginalFile file = original_file(scratch.root / "it", "rank0_trace.json", 0);
  file.identity.mtime_s -= 1;  // what the sweep read is not what is there now
  std::vector<OriginalVerdict> verdicts = remove_originals({file}, 1 << 30, 1, no_errors);
  EXPECT_EQ(original_cell(verdicts[0]), "kept: changed since the sweep read it (device, inode, size or mtime)");
  EXPECT_TRUE(fs::exists(scratch.root / "it/rank0_trace.json"));
}

TEST(RemoveOriginalsReport, TheOriginalColumnIsOptionalWhenReadAndChecked) {
  Report report;
  report.root = "/r";
  Row row(RowKind::file);
  row.set(ColumnId::dir, std::string("."))
      .set(ColumnId::file, std::string("rank0_trace.json"))
      .set_status(RowStatus::ok);
  row.set(ColumnId::original, std::string("removed"));
  report.rows.push_back(row);
  std::string json = report_json(report);
  EXPECT_EQ(std::get<std::string>(parse_report_json(json, "r.json").rows.at(0).get(ColumnId::original)), "removed");
  EXPECT_NE(report_csv(report).find(",original"), std::string::npos);
  // A report written before the column: read as empty.
  std::string without = json;
  size_t at = without.find("\"original\": \"removed\"");
  ASSERT_NE(at, std::string::npos) << json;
  size_t comma = without.rfind(',', at);
  without.erase(comma, at + std::string("\"original\": \"removed\"").size() - comma);
  EXPECT_TRUE(
      std::holds_alternative<std::monostate>(parse_report_json(without, "r.json").rows.at(0).get(ColumnId::original)));
  std::string bad = json;
  bad.replace(bad.find("\"removed\""), 9, "\"gone\"");
  EXPECT_THROW(parse_report_json(bad, "r.json"), tracelane::Error);
}

// DirectoryLock (tree_lock.hpp) and what it keeps apart: a writer's last check of its
// inputs and rename (AtomicOutput::commit) against the removal of originals, whoever
// started each. The races are made deterministic by doing the other process's step by hand
// at the point where it would interleave.
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
  std::vector<OriginalVerdict> verdicts =
      remove_originals({original_file(scratch.root, "rank0_trace.json", 0)}, 1, 1, no_errors);
  ASSERT_EQ(original_cell(verdicts.at(0)), "removed");

  try {
    second.output->commit(true);
    ADD_FAILURE() << "the second sweep's copy was put in place over the verified one";
  } catch (const InputChanged& e) {
    EXPECT_NE(std::string(e.what()).find("rank0_trace.json was removed or changed since it was read"),
              std::string::npos)
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
  std::vector<OriginalVerdict> verdicts =
      remove_originals({original_file(scratch.root, "rank0_trace.json", 0)}, 1, 1, no_errors);
  ASSERT_EQ(verdicts.size(), 1u);
  EXPECT_NE(original_cell(verdicts[0]).find("kept: cannot lock its directory"), std::string::npos)
      << original_cell(verdicts[0]);
  EXPECT_TRUE(fs::exists(scratch.root / "rank0_trace.json"));
  EXPECT_EQ(contents(elsewhere), "");
}
