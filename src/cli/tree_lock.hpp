// The lock that keeps two sweeps of one tree apart, taken in a directory that others can
// write: see tree_lock.cpp for what it refuses to open or write.
#pragma once

#include <boost/filesystem.hpp>
#include <string>

namespace tracelane::cli {

// Two sweeps of one tree would redo each other's work and race on the report, so a sweep
// holds an flock on ROOT/.tracelane.lock: exclusive for a whole-tree sweep, shared for a
// --shard run, so the shards of a Slurm array run together but not beside a whole-tree
// sweep. The kernel drops the lock when the process ends, however it ends.
class TreeLock {
 public:
  enum class Outcome {
    locked,    // held until destruction
    unlocked,  // cannot lock here (read-only root, no flock on this file system): warned, run anyway
    busy,      // another sweep holds it: do not start
    refused,   // the name is not a lock file we may use (a symlink, a FIFO, a directory...): do not start
  };
  TreeLock() = default;
  TreeLock(const TreeLock&) = delete;
  TreeLock& operator=(const TreeLock&) = delete;
  ~TreeLock();

  // Takes the lock on `root`/.tracelane.lock. `message` says why when not `locked` (a
  // warning for `unlocked`, the reason not to start otherwise).
  Outcome take(const boost::filesystem::path& root, bool shared, std::string& message);
  // Whether take() wrote our pid into the file (only into a lock file that is ours alone).
  bool wrote_pid() const { return wrote_pid_; }

 private:
  int fd_ = -1;
  bool wrote_pid_ = false;
};

// The lock of one directory that tracelane writes outputs into or removes originals
// from, whoever started it and from whatever ROOT: DIR/.tracelane.dir.lock, opened as
// TreeLock opens its file, exclusive, waited for. Held by AtomicOutput::commit from its
// last check of the inputs to the rename, and by the removal of an iteration's originals
// from its last checks to the unlinks, so that a copy made from a file that has since been
// removed or rewritten never lands (files.hpp, remove_originals.cpp). An flock: on NFS
// (Linux 2.6.12 and later) it is a whole-file POSIX lock seen by every client; on Lustre it
// needs the `flock` mount option, and without it take() says `unlocked`.
inline constexpr const char* kDirectoryLockName = ".tracelane.dir.lock";
class DirectoryLock {
 public:
  DirectoryLock() = default;
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;
  ~DirectoryLock();
  // Waits for the lock on `dir`. Never `busy`; `message` says why when not `locked`.
  TreeLock::Outcome take(const boost::filesystem::path& dir, std::string& message);

 private:
  int fd_ = -1;
};

}  // namespace tracelane::cli
