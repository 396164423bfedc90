// The locks of src/cli/tree_lock.hpp, taken in directories that others can write: the
// tree's lock keeps whole-tree sweeps apart and lets shards share it, and neither lock
// ever follows, truncates or writes into a file it did not make (issue 9).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/filesystem.hpp>
#include <cstdlib>
#include <fstream>

#include "cli/tree_lock.hpp"

namespace fs = boost::filesystem;
using namespace tracelane::cli;

namespace {

struct Scratch {
  fs::path root = fs::temp_directory_path() / fs::unique_path("tracelane-lock-%%%%-%%%%");
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

TEST(TreeLock, CreatesItsOwnLockFileAndWritesItsPid) {
  Scratch tree;
  TreeLock lock;
  std::string message;
  ASSERT_EQ(lock.take(tree.root, false, message), TreeLock::Outcome::locked) << message;
  EXPECT_TRUE(lock.wrote_pid());
  EXPECT_EQ(std::atol(contents(tree.root / ".tracelane.lock").c_str()), long(::getpid()));
}

TEST(TreeLock, ASecondWholeTreeSweepIsBusyAndShardsShareTheLock) {
  Scratch tree;
  std::string message;
  {
    TreeLock first, second;
    ASSERT_EQ(first.take(tree.root, false, message), TreeLock::Outcome::locked);
    EXPECT_EQ(second.take(tree.root, false, message), TreeLock::Outcome::busy);
    EXPECT_NE(message.find("pid " + std::to_string(::getpid())), std::string::npos) << message;
  }  // released: the kernel drops an flock with its descriptor
  TreeLock shard_a, shard_b;
  EXPECT_EQ(shard_a.take(tree.root, true, message), TreeLock::Outcome::locked) << message;
  EXPECT_EQ(shard_b.take(tree.root, true, message), TreeLock::Outcome::locked) << message;
}

TEST(TreeLock, RefusesASymlinkAndLeavesItsTargetUntouched) {
  Scratch tree;
  fs::path victim = tree.file("victim.txt", "precious data\n");
  fs::create_symlink(victim, tree.root / ".tracelane.lock");
  TreeLock lock;
  std::string message;
  EXPECT_EQ(lock.take(tree.root, false, message), TreeLock::Outcome::refused);
  EXPECT_NE(message.find("symbolic link"), std::string::npos) << message;
  EXPECT_EQ(contents(victim), "precious data\n");
}

TEST(TreeLock, NeverWritesIntoAHardLinkToAnotherFile) {
  Scratch tree;
  fs::path victim = tree.file("victim.txt", "precious\n");
  ASSERT_EQ(::link(victim.c_str(), (tree.root / ".tracelane.lock").c_str()), 0);
  TreeLock lock;
  std::string message;
  EXPECT_EQ(lock.take(tree.root, false, message), TreeLock::Outcome::locked) << message;
  EXPECT_FALSE(lock.wrote_pid());
  EXPECT_EQ(contents(victim), "precious\n");
}

TEST(TreeLock, NeverWritesIntoALargerFileLeftUnderItsName) {
  Scratch tree;
  std::string text(1000, 'x');
  tree.file(".tracelane.lock", text);
  TreeLock lock;
  std::string message;
  EXPECT_EQ(lock.take(tree.root, false, message), TreeLock::Outcome::locked) << message;
  EXPECT_FALSE(lock.wrote_pid());
  EXPECT_EQ(contents(tree.root / ".tracelane.lock"), text);
}

TEST(TreeLock, RefusesAFifoOrADirectoryWithoutBlocking) {
  Scratch tree;
  ASSERT_EQ(::mkfifo((tree.root / ".tracelane.lock").c_str(), 0644), 0);
  TreeLock lock;
  std::string message;
  EXPECT_EQ(lock.take(tree.root, false, message), TreeLock::Outcome::refused);
  fs::remove(tree.root / ".tracelane.lock");
  fs::create_directory(tree.root / ".tracelane.lock");
  TreeLock again;
  EXPECT_EQ(again.take(tree.root, false, message), TreeLock::Outcome::refused);
}

TEST(TreeLock, RefusesADanglingSymlinkAndCreatesNothingWhereItPoints) {
  Scratch tree;
  fs::create_symlink(tree.root / "planted", tree.root / ".tracelane.lock");
  TreeLock lock;
  std::string message;
  EXPECT_EQ(lock.take(tree.root, false, message), TreeLock::Outcome::refused);
  EXPECT_NE(message.find("symbolic link"), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(tree.root / "planted"));
}

TEST(DirectoryLock, CreatesItsOwnLockFileAndRefusesASymlinkInItsPlace) {
  Scratch tree;
  std::string message;
  {
    DirectoryLock lock;
    EXPECT_EQ(lock.take(tree.root, message), TreeLock::Outcome::locked) << message;
    EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(tree.root / kDirectoryLockName)));
  }
  Scratch other;
  fs::path victim = other.file("victim.txt", "precious\n");
  fs::create_symlink(victim, other.root / kDirectoryLockName);
  DirectoryLock lock;
  EXPECT_EQ(lock.take(other.root, message), TreeLock::Outcome::refused);
  EXPECT_EQ(contents(victim), "precious\n");
}
