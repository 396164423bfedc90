// The one output guard (files.hpp) every writing command calls before reading: an output
// that is, or names, an input, that tracelane would read as an input, that is a directory
// or lies in none, or that exists without --overwrite, is refused (OutputRefused, exit 2).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <fstream>

#include "files.hpp"
#include "tree_lock.hpp"

using namespace tracelane;
using namespace tracelane::cli;

namespace {

class OutputGuard : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fs::unique_path("tracelane-guard-%%%%-%%%%-%%%%");
    fs::create_directories(dir_);
    input_ = dir_ / "rank0_trace.json.gz";
    write(input_, "original bytes");
  }
  void TearDown() override {
    boost::system::error_code ec;
    fs::remove_all(dir_, ec);
  }
  static void write(const fs::path& path, const std::string& text) { std::ofstream(path.string()) << text; }
  static std::string read(const fs::path& path) {
    std::ifstream in(path.string());
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  // The refusal's message, or "" when the guard accepts.
  static std::string refusal(const fs::path& output, const std::vector<fs::path>& inputs, bool overwrite) {
    try {
      guard_output(output, inputs, overwrite);
      return "";
    } catch (const OutputRefused& e) {
      return e.what();
    }
  }
  fs::path dir_, input_;
};

}  // namespace

TEST_F(OutputGuard, MergeRefusesAnOutputThatIsARankFile) {
  write(dir_ / "rank1_trace.json.gz", "other rank");
  std::vector<fs::path> ranks{input_, dir_ / "rank1_trace.json.gz"};
  std::string why = refusal(input_, ranks, true);
  EXPECT_NE(why.find(input_.string()), std::string::npos) << why;
  EXPECT_EQ(read(input_), "original bytes");
}

TEST_F(OutputGuard, RefusesTheInputUnderAnotherNameThroughLinks) {
  fs::path soft = dir_ / "soft.json.gz", hard = dir_ / "hard.json.gz";
  fs::create_symlink(input_, soft);
  fs::create_hard_link(input_, hard);
  EXPECT_NE(refusal(soft, {input_}, true).find("would replace the input"), std::string::npos);
  EXPECT_NE(refusal(hard, {input_}, true).find("would replace the input"), std::string::npos);
  // and an input given through a link, written to its target
  fs::path plain = dir_ / "plain.json";
  write(plain, "{}");
  fs::path link_to_plain = dir_ / "link.json";
  fs::create_symlink(plain, link_to_plain);
  EXPECT_NE(refusal(plain, {link_to_plain}, true).find("would replace the input"), std::string::npos);
  EXPECT_NE(refusal(dir_ / "sub" / ".." / "plain.json", {plain}, true), "");
}

TEST_F(OutputGuard, RefusesTheSameDirectoryEntryAsAnInputThatIsNotThere) {
  fs::path missing = dir_ / "missing.json";
  EXPECT_NE(refusal(dir_ / "." / "missing.json", {missing}, true).find("would replace the input"), std::string::npos);
}

TEST_F(OutputGuard, RefusesANameTracelaneReadsAsARankTrace) {
  for (const char* name : {"rank9_trace.json.gz", "rank9_trace.json", "rank0_trace.json"}) {
    std::string why = refusal(dir_ / name, {input_}, false);
    EXPECT_NE(why.find("named like a rank trace"), std::string::npos) << name << ": " << why;
    EXPECT_FALSE(fs::exists(dir_ / name));
  }
  // in any directory: a compacted copy named rank<N>_trace would be read as a rank there
  fs::create_directory(dir_ / "elsewhere");
  EXPECT_NE(refusal(dir_ / "elsewhere" / "rank3_trace.json.gz", {input_}, false), "");
  // our own names and names that only look alike are fine
  for (const char* name : {"rank9_trace_compacted.json.gz", "pp_traces_merged_compacted.json.gz",
                           "rank9_trace.json.gz.bak", "my_rank9_trace.json.gz"})
    EXPECT_EQ(refusal(dir_ / name, {input_}, false), "") << name;
}

TEST_F(OutputGuard, RestoreMayWriteARankTraceNameButNothingElseIsRelaxed) {
  // `tracelane restore` gives an original back, under its own name if the user says so.
  EXPECT_NO_THROW(guard_output(dir_ / "rank9_trace.json.gz", {input_}, false, RankName::allowed));
  // ...but never over its input, nor over an existing file without --overwrite.
  EXPECT_THROW(guard_output(input_, {input_}, true, RankName::allowed), OutputRefused);
  write(dir_ / "rank8_trace.json", "{}");
  EXPECT_THROW(guard_output(dir_ / "rank8_trace.json", {input_}, false, RankName::allowed), OutputRefused);
}

TEST_F(OutputGuard, RefusesAnOutputInADirectoryThatDoesNotExist) {
  std::string why = refusal(dir_ / "no_such_dir" / "out.json.gz", {input_}, false);
  EXPECT_NE(why.find("No such file or directory"), std::string::npos) << why;
  write(dir_ / "a_file", "x");
  why = refusal(dir_ / "a_file" / "out.json.gz", {input_}, false);
  EXPECT_NE(why.find("Not a directory"), std::string::npos) << why;
}

TEST_F(OutputGuard, RefusesAnOutputThatIsADirectory) {
  fs::create_directory(dir_ / "d.json.gz");
  fs::create_directory_symlink(dir_ / "d.json.gz", dir_ / "link_to_d.json.gz");
  for (const fs::path& output :
       {dir_ / "d.json.gz", dir_ / "link_to_d.json.gz", fs::path(dir_.string() + "/d.json.gz/"),
        fs::path(dir_.string() + "/new_dir/"), dir_ / "d.json.gz" / "..", dir_ / "."}) {
    std::string why = refusal(output, {input_}, true);
    EXPECT_NE(why.find("directory"), std::string::npos) << output << ": " << why;
  }
}

TEST_F(OutputGuard, RefusesANameTooLongForItsTemporary) {
  // 250 bytes is a valid name, but ".<name>.tmp.<pid>.<n>" beside it is not: refused now,
  // not after the whole input was read.
  std::string why = refusal(dir_ / (std::string(245, 'n') + ".json"), {input_}, false);
  EXPECT_NE(why.find("name too long"), std::string::npos) << why;
  EXPECT_EQ(refusal(dir_ / (std::string(200, 'n') + ".json"), {input_}, false), "");
}

TEST_F(OutputGuard, RefusesAnExistingOutputUnlessOverwrite) {
  write(dir_ / "out.json.gz", "someone's");
  EXPECT_NE(refusal(dir_ / "out.json.gz", {input_}, false).find("output exists"), std::string::npos);
  EXPECT_EQ(refusal(dir_ / "out.json.gz", {input_}, true), "");
  EXPECT_EQ(refusal(dir_ / "new.json.gz", {input_}, false), "");
  EXPECT_EQ(refusal(dir_ / "new.json.gz", {}, false), "");
}

TEST_F(OutputGuard, WriteAtomicallyLosingTheExistsRaceThrowsOutputExists) {
  // The guard passed, then another process created the output: link() refuses, and the
  // error is a usage error (exit 2), not a failed trace (exit 1).
  fs::path output = dir_ / "out.json";
  ASSERT_EQ(refusal(output, {input_}, false), "");
  write(output, "the other writer's");
  EXPECT_THROW(write_atomically(output, "ours", false), OutputExists);
  EXPECT_EQ(read(output), "the other writer's");
  for (auto& entry : fs::directory_iterator(dir_))
    if (entry.path().filename() != kDirectoryLockName) {
      EXPECT_NE(entry.path().filename().string().front(), '.') << "temporary left: " << entry.path();
    }
}

TEST_F(OutputGuard, ReadRecordDoesNotFollowASymbolicLink) {
  fs::path output = dir_ / "out.json";
  write_atomically(output, "{}", false, "{\"row\": 1}");
  if (!read_record(output)) GTEST_SKIP() << "no user extended attributes on " << dir_;
  fs::path link = dir_ / "link.json";
  fs::create_symlink(output, link);
  EXPECT_FALSE(read_record(link).has_value());
  EXPECT_EQ(read_record(output).value_or(""), "{\"row\": 1}");
}

TEST_F(OutputGuard, AtomicOutputAppearsOnlyWhenCommittedWithEveryPieceInOrder) {
  fs::path output = dir_ / "out.json";
  {
    AtomicOutput partial(output, {});
    partial.write("first ");
    ASSERT_TRUE(fs::exists(partial.temporary()));
    EXPECT_FALSE(fs::exists(output));
    // No commit: an exception on the way leaves neither the output nor the temporary.
  }
  for (auto& entry : fs::directory_iterator(dir_))
    EXPECT_NE(entry.path().filename().string().front(), '.') << "temporary left: " << entry.path();
  EXPECT_FALSE(fs::exists(output));
  AtomicOutput whole(output, {});
  for (const char* piece : {"one ", "two ", "three"}) whole.write(piece);
  whole.commit(false);
  EXPECT_EQ(read(output), "one two three");
  EXPECT_FALSE(fs::exists(whole.temporary()));
  EXPECT_THROW(whole.write("more"), Error);  // closed: nothing reaches the file now
  EXPECT_EQ(read(output), "one two three");
}

TEST_F(OutputGuard, ASetWhoseRenameFailsHalfWayLeavesNoMemberOfThePreviousSetBesideTheNew) {
  // A set replaces a set: the first member is renamed into place, the second cannot be (a
  // directory holds its name), and the third, the previous run's, must not stay beside the
  // first as if they belonged together.
  write(dir_ / "set.json", "old json");
  fs::create_directory(dir_ / "set.csv");
  write(dir_ / "set.csv" / "inside", "x");  // rename() over a non-empty directory fails
  write(dir_ / "set.html", "old page");
  try {
    write_set_atomically(dir_, {{"set.json", "new json"}, {"set.csv", "new csv"}, {"set.html", "new page"}});
    ADD_FAILURE() << "a rename over a non-empty directory succeeded";
  } catch (const Error& error) {
    EXPECT_NE(
        std::string(error.what()).find("the set is incomplete: removed the previous " + (dir_ / "set.html").string()),
        std::string::npos)
        << error.what();
  }
  EXPECT_EQ(read(dir_ / "set.json"), "new json");
  EXPECT_TRUE(fs::is_directory(dir_ / "set.csv"));
  EXPECT_FALSE(fs::exists(dir_ / "set.html"));
  for (auto& entry : fs::directory_iterator(dir_))
    if (entry.path().filename() != kDirectoryLockName) {
      EXPECT_NE(entry.path().filename().string().front(), '.') << "temporary left: " << entry.path();
    }
}

// A member's bytes are made only when it is written, a piece at a time (a report's JSON,
// then its page): the pieces make the file, and making them can fail with members already
// written: the previous set then stays whole, no temporary is left, and no member after it
// is made.
TEST_F(OutputGuard, ASetIsWrittenAPieceAtATimeAndAMemberThatCannotBeMadeLeavesThePreviousSetWhole) {
  write_set_atomically(dir_, std::vector<SetMember>{{"set.json", [](const ByteSink& sink) {
                                                       sink("new ");
                                                       sink("");
                                                       sink("json");
                                                     }}});
  EXPECT_EQ(read(dir_ / "set.json"), "new json");

  write(dir_ / "set.json", "old json");
  write(dir_ / "set.html", "old page");
  bool page_made = false;
  std::vector<SetMember> members = {{"set.json", [](const ByteSink& sink) { sink("newer json"); }},
                                    {"set.csv",
                                     [](const ByteSink& sink) {
                                       sink("a,b\r\n");
                                       throw Error("the CSV cannot be made");
                                     }},
                                    {"set.html", [&](const ByteSink& sink) {
                                       page_made = true;
                                       sink("new page");
                                     }}};
  EXPECT_THROW(write_set_atomically(dir_, members), Error);
  EXPECT_FALSE(page_made);
  EXPECT_EQ(read(dir_ / "set.json"), "old json");
  EXPECT_EQ(read(dir_ / "set.html"), "old page");
  EXPECT_FALSE(fs::exists(dir_ / "set.csv"));
  for (auto& entry : fs::directory_iterator(dir_))
    if (entry.path().filename() != kDirectoryLockName) {
      EXPECT_NE(entry.path().filename().string().front(), '.') << "temporary left: " << entry.path();
    }
}

TEST_F(OutputGuard, ASetThatCannotBeWrittenLeavesThePreviousSetWhole) {
  write(dir_ / "set.json", "old json");
  write(dir_ / "set.html", "old page");
  // The second member's temporary cannot be created (its directory does not exist): the
  // first member, already written, is not put in place either.
  EXPECT_THROW(write_set_atomically(dir_, {{"set.json", "new json"}, {"missing/set.csv", "new csv"}}), Error);
  EXPECT_EQ(read(dir_ / "set.json"), "old json");
  EXPECT_EQ(read(dir_ / "set.html"), "old page");
  for (auto& entry : fs::directory_iterator(dir_))
    if (entry.path().filename() != kDirectoryLockName) {
      EXPECT_NE(entry.path().filename().string().front(), '.') << "temporary left: " << entry.path();
    }
}
