// ROOT/.tracelane.lock lives in a directory that other people and jobs can write, so its
// name may already hold anything: a symlink to a file of ours (which opening it for
// writing and truncating it, as the first version did, would wipe), a hard link to one, a
// FIFO (which a blocking open would wait on for ever), a directory. So:
//
// - create it with O_EXCL | O_NOFOLLOW: a new, empty, regular file of our own, the only
//   kind we ever write a whole pid into;
// - otherwise open the existing name with O_NOFOLLOW | O_NONBLOCK (a symlink fails, a FIFO
//   does not block) and lock it only if fstat says it is a regular file;
// - never truncate it; write our pid into an existing file only when it is ours alone (we
//   own it, one link, no larger than a pid), and then as a fixed-width record over the old
//   one;
// - flock() needs no write access, so a lock file another user made is locked read-only.
#include "tree_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace tracelane::cli {

namespace {
constexpr off_t kLargestPidRecord = 64;
}

TreeLock::~TreeLock() {
  if (fd_ >= 0) ::close(fd_);
}

namespace {

// Opens the lock file `path` as the file comment says, without locking it: returns `locked`
// when `file` is open, else `unlocked` or `refused` with `message` saying why
// (`consequence` ends an "unlocked" message, `remove_to` a refusal's advice).
struct LockFile {
  int fd = -1;
  bool created = false, writable = false;
  struct stat st {};
};
TreeLock::Outcome open_lock_file(const std::string& path, LockFile& file, std::string& message, const char* consequence,
                                 const char* remove_to) {
  const int flags = O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
  file.fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | flags, 0644);
  if (file.fd >= 0) {
    file.created = file.writable = true;
  } else if (errno == EEXIST) {
    file.fd = ::open(path.c_str(), O_RDWR | flags);
    file.writable = file.fd >= 0;
    if (file.fd < 0 && errno != ELOOP) file.fd = ::open(path.c_str(), O_RDONLY | flags);  // another user's, a directory
    if (file.fd < 0) {
      int e = errno;
      if (e == ELOOP) {
        message = path + ": is a symbolic link, not a lock file tracelane made; not following it (remove it to " +
                  remove_to + ")";
        return TreeLock::Outcome::refused;
      }
      message = path + ": cannot open the lock file (" + std::strerror(e) + "); " + consequence;
      return TreeLock::Outcome::unlocked;
    }
  } else {
    message = path + ": cannot create the lock file (" + std::strerror(errno) + "); " + consequence;
    return TreeLock::Outcome::unlocked;
  }
  if (::fstat(file.fd, &file.st) != 0 || !S_ISREG(file.st.st_mode)) {
    ::close(file.fd);
    file.fd = -1;
    message = path + ": is not a regular file, not a lock file tracelane made (remove it to " + remove_to + ")";
    return TreeLock::Outcome::refused;
  }
  return TreeLock::Outcome::locked;
}

}  // namespace

TreeLock::Outcome TreeLock::take(const boost::filesystem::path& root, bool shared, std::string& message) {
  const std::string path = (root / ".tracelane.lock").string();
  LockFile file;
  Outcome opened = open_lock_file(path, file, message, "not guarding against another sweep of this tree", "sweep");
  if (opened != Outcome::locked) return opened;
  fd_ = file.fd;
  const struct stat& st = file.st;
  const bool created = file.created, writable = file.writable;
  // Ours alone: created just now, or a file we own with one link and room for a pid only.
  bool ours = created || (writable && st.st_uid == ::geteuid() && st.st_nlink == 1 && st.st_size <= kLargestPidRecord);
  if (::flock(fd_, (shared ? LOCK_SH : LOCK_EX) | LOCK_NB) != 0) {
    int e = errno;
    if (e != EWOULDBLOCK) {
      message = path + ": cannot lock (" + std::strerror(e) + "); not guarding against another sweep of this tree";
      return Outcome::unlocked;
    }
    long pid = 0;
    if (st.st_nlink == 1 && st.st_size <= kLargestPidRecord) {
      char buf[kLargestPidRecord + 1] = {};
      ssize_t n = ::pread(fd_, buf, kLargestPidRecord, 0);
      pid = n > 0 ? std::atol(buf) : 0;
    }
    message = "another sweep is running on " + root.string() + (pid > 0 ? " (pid " + std::to_string(pid) + ")" : "");
    return Outcome::busy;
  }
  if (ours) {
    // Fixed width, so it covers an older record without truncating: the pid is only for the
    // other sweep's message.
    char record[32];
    int n = std::snprintf(record, sizeof record, "%-20ld\n", long(::getpid()));
    wrote_pid_ = n > 0 && ::pwrite(fd_, record, size_t(n), 0) == n;
  }
  return Outcome::locked;
}

DirectoryLock::~DirectoryLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor of the open file releases the flock
}

TreeLock::Outcome DirectoryLock::take(const boost::filesystem::path& dir, std::string& message) {
  const std::string path = (dir / kDirectoryLockName).string();
  LockFile file;
  TreeLock::Outcome opened =
      open_lock_file(path, file, message, "not guarding this directory against another writer", "write here");
  if (opened != TreeLock::Outcome::locked) return opened;
  fd_ = file.fd;
  // Waited for: the holder's work under it is one rename, or one iteration's last checks
  // and unlinks.
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    message = path + ": cannot lock (" + std::strerror(errno) + "); not guarding this directory against another writer";
    ::close(fd_);
    fd_ = -1;
    return TreeLock::Outcome::unlocked;
  }
  return TreeLock::Outcome::locked;
}

}  // namespace tracelane::cli
