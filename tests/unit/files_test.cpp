// The file-system side of the command line (src/cli/files.hpp) in a tree that others can
// write: a read is of one file whose identity it records, held to what was admitted and
// never through a link swapped in; an output appears whole or not at all, never through a
// link planted under its name, and records the inputs it was made from.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/filesystem.hpp>
#include <fstream>
#include <iostream>
#include <thread>

#include "cli/files.hpp"
#include "cli/report/report.hpp"
#include "cli/sweep/discovery.hpp"
#include "cli/tree_lock.hpp"
#include "tracelane/gzip.hpp"

namespace fs = boost::filesystem;
using namespace tracelane::cli;

namespace {

struct Scratch {
  fs::path root = fs::temp_directory_path() / fs::unique_path("tracelane-files-%%%%-%%%%");
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
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST(ReadFile, ReadsAFileOnceIntoABufferOfItsSizeAndPadding) {
  // The buffer is the file's size plus simdjson's 64 bytes of padding: not regrown (copied
  // and zero-filled, twice the memory) on reaching the end.
  fs::path path = fs::temp_directory_path() / fs::unique_path("tracelane-read-%%%%-%%%%.json");
  std::string text(3 << 20, 'x');
  std::ofstream(path.string()) << text;
  std::string bytes = read_file(path);
  fs::remove(path);
  EXPECT_EQ(bytes, text);
  EXPECT_GE(bytes.capacity(), text.size() + 64);
  EXPECT_LT(bytes.capacity(), text.size() + text.size() / 2);
}

TEST(ReadIdentity, IsTheIdentityOfTheFileReadNotOfTheNameAfterwards) {
  Scratch tree;
  fs::path path = tree.file("rank0_trace.json", "{\"traceEvents\": []}");
  FileIdentity identity;
  EXPECT_EQ(read_file(path, &identity), "{\"traceEvents\": []}");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(identity, identity_of(st));
  EXPECT_EQ(identity.size, 19u);
}

TEST(ReadIdentity, AFileWrittenToWhileItIsReadIsReportedAsChanged) {
  Scratch tree;
  fs::path path = tree.file("rank0_trace.json", std::string(1 << 20, ' '));
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    int fd = ::open(path.c_str(), O_WRONLY | O_APPEND);
    std::string chunk(4096, 'y');
    while (!stop) {
      if (::write(fd, chunk.data(), chunk.size()) < 0) break;
      struct stat st {};
      if (::fstat(fd, &st) == 0 && st.st_size > (4 << 20)) (void)::ftruncate(fd, 1 << 20);
    }
    ::close(fd);
  });
  int changed = 0;
  for (int attempt = 0; attempt < 2000 && changed == 0; ++attempt) {
    try {
      FileIdentity identity;
      std::string bytes = read_file(path, &identity);
      EXPECT_EQ(bytes.size(), identity.size);  // what it returns is what the identity says
    } catch (const InputChanged&) {
      changed++;
    }
  }
  stop = true;
  writer.join();
  EXPECT_GT(changed, 0);
}

TEST(InputsRecord, IsStoredWithTheOutputAndNamesTheDeviceRelativeToIt) {
  Scratch tree;
  fs::path input = tree.file("rank3_trace.json", "{}");
  FileIdentity identity;
  read_file(input, &identity);
  fs::path output = tree.root / "rank3_trace_compacted.json";
  write_atomically(output, "{}", false, {}, {{"rank3_trace.json", identity}});
  auto recorded = read_attribute(output, kInputsAttribute);
  ASSERT_TRUE(recorded);
  EXPECT_EQ(*recorded, format_inputs({{"rank3_trace.json", identity}}, identity.device));
  EXPECT_EQ(recorded->rfind("rank3_trace.json\t=\t", 0), 0u) << *recorded;
  FileIdentity elsewhere = identity;
  elsewhere.device += 1;
  EXPECT_NE(format_inputs({{"rank3_trace.json", elsewhere}}, identity.device), *recorded);
}

TEST(InputsRecord, AMergeOfHundredsOfRanksStillFitsAndTellsOneChangedRankApart) {
  Scratch tree;
  fs::path input = tree.file("rank0_trace.json", "{}");
  FileIdentity identity;
  read_file(input, &identity);
  std::vector<NamedIdentity> ranks;
  for (int r = 0; r < 512; ++r) {
    FileIdentity id = identity;
    id.inode += ino_t(r);
    ranks.push_back({"rank" + std::to_string(r) + "_trace.json.gz", id});
  }
  ASSERT_GT(format_inputs(ranks, identity.device).size(), kInputsRecordTextMax);
  std::string record = inputs_record(ranks, identity.device);
  EXPECT_LT(record.size(), 100u) << record;
  fs::path output = tree.root / "pp_traces_merged_compacted.json.gz";
  write_atomically(output, "{}", false, row_record(Row(RowKind::merge)), ranks);
  auto stored = read_attribute(output, kInputsAttribute);
  ASSERT_TRUE(stored) << "a 512-rank record must be stored beside the report row";
  EXPECT_EQ(*stored, record);
  ranks[300].identity.size += 1;  // one rank rewritten
  EXPECT_NE(inputs_record(ranks, identity.device), record);
}

// The figures go on last and best effort: a file system with no room for them (ext4: about
// 4 KiB for all of an inode's attributes) still gets the output, its row record and its
// inputs record, and a rerun reports the row without figures.
TEST(WriteAtomically, FiguresTheFileSystemHasNoRoomForAreLeftOutNotTheOutput) {
  Scratch tree;
  fs::path input = tree.file("rank0_trace.json", "{}");
  FileIdentity identity;
  read_file(input, &identity);
  std::string figures(kFiguresRecordMax, '\0');
  for (size_t i = 0; i < figures.size(); ++i) figures[i] = char((i * 2654435761u) >> 13);  // incompressible
  fs::path output = tree.root / "rank0_trace_compacted.json";
  std::string row = row_record(Row(RowKind::file));
  write_atomically(output, "{}", false, row, {{"rank0_trace.json", identity}}, {}, figures);
  EXPECT_EQ(read_file(output, nullptr), "{}");
  EXPECT_EQ(read_attribute(output, kRecordAttribute), row);
  EXPECT_TRUE(read_attribute(output, kInputsAttribute).has_value());
  auto stored = read_attribute(output, kFiguresAttribute, kFiguresRecordMax);
  if (stored)  // XFS, tmpfs and btrfs take 32 KiB; ext4 refuses it
    EXPECT_EQ(*stored, figures);
  else
    std::cout << "(this file system refused a " << figures.size() << "-byte attribute: output written without it)\n";
  // Nor is an attribute larger than the reader's bound read.
  if (stored) {
    EXPECT_FALSE(read_attribute(output, kFiguresAttribute, kFiguresRecordMax - 1).has_value());
  }
}

TEST(WriteAtomically, AnOutputIsNeverMoreReadableThanItsInputs) {
  Scratch tree;
  fs::path input = tree.file("rank0_trace.json", "{}");
  ASSERT_EQ(::chmod(input.c_str(), 0600), 0);
  FileIdentity identity;
  read_file(input, &identity);
  fs::path output = tree.root / "rank0_trace_compacted.json";
  write_atomically(output, "{}", false, {}, {{"rank0_trace.json", identity}});
  struct stat st {};
  ASSERT_EQ(::stat(output.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0077, 0u) << std::oct << (st.st_mode & 07777);
}

TEST(ReadLimit, AGzipDecompressingToAFewBytesMoreThanAdmittedIsRefused) {
  std::string text(100000, 'x');
  std::string gz = tracelane::gzip_compress(text, 1);
  EXPECT_EQ(tracelane::gunzip(gz, "t.gz", text.size()).size(), text.size());
  for (uint64_t short_by : {1, 10, 63, 64})
    EXPECT_THROW(tracelane::gunzip(gz, "t.gz", text.size() - short_by), tracelane::LargerThanAdmitted) << short_by;
}

TEST(ReadLimit, AMultiMemberGzipLargerThanAdmittedIsStoppedAndReadWithABetterEstimate) {
  Scratch tree;
  // A big first member and a tiny last one: the trailer's ISIZE says 2 bytes.
  std::string big(3 << 20, 'a');
  for (size_t i = 0; i < big.size(); i += 97) big[i] = char('b' + i % 7);
  std::string bytes = tracelane::gzip_compress(big, 1) + tracelane::gzip_compress("{}", 1);
  fs::path path = tree.file("rank0_trace.json.gz", bytes);
  uint64_t estimate = estimate_uncompressed_bytes(path, bytes.size());
  EXPECT_LT(estimate, big.size());
  int reads = 0;
  std::string out;
  for (;;) {
    ++reads;
    ASSERT_LE(reads, 20);
    try {
      ReadOptions read;
      read.max_bytes = estimate;
      out = read_trace_bytes(path, nullptr, read);
      break;
    } catch (const tracelane::LargerThanAdmitted& e) {
      EXPECT_GT(e.estimate, estimate);
      estimate = std::max(e.estimate, estimate * 2);
    }
  }
  EXPECT_GT(reads, 1);
  EXPECT_EQ(out, big + "{}");
}

TEST(ReadLimit, APlainFileLargerThanAdmittedIsStoppedAndOneOfExactlyThatSizeIsRead) {
  Scratch tree;
  fs::path path = tree.file("rank0_trace.json", std::string(1000, ' '));
  ReadOptions read;
  read.max_bytes = 999;
  EXPECT_THROW(read_trace_bytes(path, nullptr, read), tracelane::LargerThanAdmitted);
  read.max_bytes = 1000;
  EXPECT_EQ(read_trace_bytes(path, nullptr, read).size(), 1000u);
}

TEST(ReadLimit, ARegularOnlyReadRefusesAFifoWithoutBlocking) {
  Scratch tree;
  fs::path path = tree.root / "rank0_trace.json";
  ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0);
  ReadOptions read;
  read.regular_only = true;
  EXPECT_THROW(read_trace_bytes(path, nullptr, read), tracelane::Error);
}

TEST(ReadLimit, ASingleMemberBeyondWhatWasAdmittedGetsItsExactSizeFromTheTrailer) {
  Scratch tree;
  std::string big(3 << 20, 'a');
  for (size_t i = 0; i < big.size(); i += 89) big[i] = char('c' + i % 5);
  fs::path path = tree.file("rank0_trace.json.gz", tracelane::gzip_compress(big, 1));
  ReadOptions read;
  read.max_bytes = 1 << 20;
  try {
    read_trace_bytes(path, nullptr, read);
    ADD_FAILURE() << "read more than admitted";
  } catch (const tracelane::LargerThanAdmitted& e) {
    EXPECT_EQ(e.estimate, big.size());
  }
}

// --- opening and creating without following a planted link --------------------------------

TEST(NoFollow, AReadThatMustNotFollowRefusesASymlinkSwappedInForTheFile) {
  Scratch tree;
  fs::path secret = tree.file("secret.json", "{\"private\": true}");
  fs::create_symlink(secret, tree.root / "rank0_trace.json");
  ReadOptions no_follow;
  no_follow.no_follow = true;
  EXPECT_THROW(read_file(tree.root / "rank0_trace.json", nullptr, no_follow), FileError);
  EXPECT_THROW(read_trace_bytes(tree.root / "rank0_trace.json", nullptr, no_follow), FileError);
  // The same name read as the user named it follows the link.
  EXPECT_EQ(read_file(tree.root / "rank0_trace.json"), "{\"private\": true}");
}

TEST(NoFollow, AnOutputNameHoldingASymlinkIsNeverWrittenThrough) {
  Scratch tree;
  fs::path victim = tree.file("victim.txt", "precious\n");
  fs::path output = tree.root / "rank0_trace_compacted.json";
  fs::create_symlink(victim, output);
  // Without --overwrite the name exists: refused, and the link's target is left alone.
  EXPECT_THROW(write_atomically(output, "{}", false), OutputExists);
  EXPECT_EQ(contents(victim), "precious\n");
  EXPECT_TRUE(fs::is_symlink(output));
  // With it, the link itself is replaced by the output; its target is still left alone.
  write_atomically(output, "{}", true);
  EXPECT_EQ(contents(victim), "precious\n");
  EXPECT_FALSE(fs::is_symlink(output));
  EXPECT_EQ(contents(output), "{}");
}

TEST(NoFollow, TheRecordOfASymlinkIsNotItsTargets) {
  Scratch tree;
  fs::path output = tree.root / "rank0_trace_compacted.json";
  write_atomically(output, "{}", false, "{\"kind\": \"file\"}");
  ASSERT_EQ(read_record(output), std::optional<std::string>("{\"kind\": \"file\"}"));
  fs::create_symlink(output, tree.root / "link_compacted.json");
  EXPECT_FALSE(read_record(tree.root / "link_compacted.json").has_value());
}

// --- writing atomically --------------------------------------------------------------------

// The directory's lock file (tree_lock.hpp) stays: it is what the next writer locks.
TEST(WriteAtomically, LeavesTheOutputAndNoTemporaryBehind) {
  Scratch tree;
  write_atomically(tree.root / "out.json", "{\"a\": 1}", false);
  std::vector<std::string> names;
  for (fs::directory_iterator it(tree.root), end; it != end; ++it) names.push_back(it->path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{kDirectoryLockName, "out.json"}));
  EXPECT_EQ(contents(tree.root / "out.json"), "{\"a\": 1}");
}

TEST(WriteAtomically, AnOutputAbandonedBeforeItsCommitLeavesNothing) {
  Scratch tree;
  fs::path temporary;
  {
    AtomicOutput output(tree.root / "out.json", {});
    output.write("{\"half\": ");
    temporary = output.temporary();
    EXPECT_TRUE(fs::exists(temporary));
    EXPECT_EQ(temporary.parent_path(), tree.root);  // beside the output: the rename stays on one file system
  }
  EXPECT_FALSE(fs::exists(temporary));
  EXPECT_FALSE(fs::exists(tree.root / "out.json"));
}

// --- what an output records of its inputs ----------------------------------------------------

TEST(InputsRecord, IsOneLineANameDeviceInodeSizeAndMtimeHeadedByTheRecipe) {
  FileIdentity identity;
  identity.device = 5;
  identity.inode = 42;
  identity.size = 1000;
  identity.mtime_s = 1700000000;
  identity.mtime_ns = 123456789;
  std::vector<NamedIdentity> inputs = {{"rank0_trace.json", identity}};
  EXPECT_NE(format_inputs(inputs, 5).find("rank0_trace.json\t=\t42\t1000\t1700000000.123456789"), std::string::npos);
  EXPECT_NE(format_inputs(inputs, 6).find("rank0_trace.json\t5\t42\t1000\t1700000000.123456789"), std::string::npos);
  inputs.push_back({"rank1_trace.json", identity});
  const std::string two = format_inputs(inputs, 5);
  EXPECT_LT(two.find("rank0_trace.json\t"), two.find('\n'));
  EXPECT_GT(two.find("rank1_trace.json\t"), two.find('\n'));

  const std::string recipe = output_recipe("built-in", true, true);
  EXPECT_EQ(inputs_record(inputs, 5, recipe).rfind(recipe, 0), 0u);
}

TEST(InputsRecord, TheRecipeNamesTheRulesAndEveryOptionThatChangesTheBytes) {
  const std::string usual = output_recipe("rules A", true, true);
  EXPECT_EQ(output_recipe("rules A", true, true), usual);
  EXPECT_NE(output_recipe("rules B", true, true), usual);
  EXPECT_NE(output_recipe("rules A", false, true), usual);
  EXPECT_NE(output_recipe("rules A", true, false), usual);
}

// --- names ------------------------------------------------------------------------------

TEST(OutputNames, ACompactedCopyIsNamedAfterItsInputBesideIt) {
  EXPECT_EQ(default_compact_output("/data/it/rank3_trace.json.gz"), fs::path("/data/it/rank3_trace_compacted.json.gz"));
  EXPECT_EQ(default_compact_output("/data/it/rank3_trace.json"), fs::path("/data/it/rank3_trace_compacted.json"));
  EXPECT_TRUE(is_our_output_name("rank3_trace_compacted.json.gz"));
  EXPECT_TRUE(is_our_output_name(kMergedName));
  EXPECT_FALSE(is_our_output_name("rank3_trace.json.gz"));
}

TEST(OutputNames, RankFilesOfADirectoryComeInRankOrderAndOurOutputsAreNotAmongThem) {
  Scratch tree;
  for (const char* name : {"rank10_trace.json", "rank2_trace.json.gz", "rank2_trace_compacted.json.gz", "notes.json"})
    tree.file(name, "{}");
  std::vector<fs::path> found = find_rank_files(tree.root);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].filename().string(), "rank2_trace.json.gz");
  EXPECT_EQ(found[1].filename().string(), "rank10_trace.json");
  // Given one of the files, the same list; with fewer than two rank files, an error.
  EXPECT_EQ(find_rank_files(found[1]), found);
  fs::remove(found[1]);
  EXPECT_THROW(find_rank_files(tree.root), tracelane::Error);
}
