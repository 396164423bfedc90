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

}  // namespace tracelane::cli
