// Removing originals whose compacted copy gives them back (`sweep --remove-originals`).
//
// A rank file is the one thing a sweep must never lose: its compacted copy is for reading,
// and only the restore data inside the copy can stand in for it (docs/restore.md). So the
// removal proves, from what is on disk now, that the copy gives this very file back, and
// refuses on any doubt:
//
//   1. the iteration is wholly done (decided by the caller from the report rows: a failed
//      rank or merge needs every original for the next sweep's redo);
//   2. per file, under the sweep's memory budget: the directory entry, examined without
//      following links, is a regular file with one link, ours, with the identity (device,
//      inode, size, mtime) the sweep read; it is opened O_NOFOLLOW relative to the
//      directory and read again, with the same identity before and after; the copy beside
//      it is opened the same way (a regular file of ours), and restore_original() of it,
//      in memory, must equal the original's text byte for byte;
//   3. per iteration, all files or none, under the directory's lock (DirectoryLock: a
//      writer that read an original earlier cannot put its copy in place once the
//      original is gone): every file verified is checked once more
//      (fstatat, AT_SYMLINK_NOFOLLOW), the directory is listed again (a rank file that
//      appeared since the sweep listed it keeps them all: the merged output does not cover
//      it), then each is checked again just before unlinkat(dirfd, name, 0). Removing part of an iteration would make
//      the next sweep merge the ranks that are left and replace the merged output of all of them.
//
// A copy whose restore fails or differs is not a faithful copy: the file is kept and the
// sweep exits 1 (report cell "kept: restore differs: ...").
#include "remove_originals.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <malloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

#include "discovery.hpp"
#include "memory_budget.hpp"
#include "printable.hpp"
#include "report/report.hpp"
#include "tracelane/gzip.hpp"
#include "tracelane/restore.hpp"
#include "tree_lock.hpp"

namespace tracelane::cli {

std::string original_cell(const OriginalVerdict& verdict) {
  return verdict.kind == OriginalVerdict::removed ? std::string("removed") : "kept: " + verdict.reason;
}

std::optional<std::string> iteration_not_done(
    const std::vector<std::pair<std::string, std::optional<RowStatus>>>& rank_statuses,
    const std::optional<MergeStatus>& merge) {
  auto done = [](std::optional<RowStatus> status) { return status == RowStatus::ok || status == RowStatus::skipped; };
  auto named = [](std::optional<RowStatus> status) { return status ? status_name(*status) : "unknown"; };
  for (const auto& [name, status] : rank_statuses)
    if (!done(status)) return "iteration not wholly done: " + name + " is " + named(status);
  if (merge && !done(merge->status))
    return "iteration not wholly done: its merge is " + std::string(named(merge->status)) +
           " (a later sweep needs every original to redo it)";
  return std::nullopt;
}

std::optional<std::string> original_refusal(const struct stat& now, const FileIdentity& expected, bool through_link,
                                            uid_t user) {
  if (through_link) return std::string("reached through a symbolic link (its target is not removed)");
  if (S_ISLNK(now.st_mode)) return std::string("is a symbolic link now");
  if (!S_ISREG(now.st_mode)) return std::string("not a regular file");
  if (now.st_nlink != 1) return "has " + std::to_string(uint64_t(now.st_nlink)) + " hard links";
  if (now.st_uid != user) return std::string("owned by another user");
  if (!(identity_of(now) == expected))
    return std::string("changed since the sweep read it (device, inode, size or mtime)");
  return std::nullopt;
}

namespace {

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// The whole of a regular file `st` describes, from its descriptor; refuses one that grew
// while read (the identity check after reading catches the rest).
std::string read_whole(int fd, const struct stat& st, const std::string& what, uint64_t max_bytes) {
  if (uint64_t(st.st_size) > max_bytes)
    throw LargerThanAdmitted(what + ": holds more than the " + std::to_string(max_bytes) + " bytes admitted",
                             uint64_t(st.st_size));
  std::string bytes(size_t(st.st_size), '\0');
  size_t got = 0;
  while (got < bytes.size()) {
    ssize_t n = ::pread(fd, bytes.data() + got, bytes.size() - got, off_t(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(what + ": read error: " + std::strerror(errno));
    if (n == 0) throw Error(what + ": shorter than its size (changed while verified)");
    got += size_t(n);
  }
  char probe = 0;
  if (::pread(fd, &probe, 1, off_t(got)) > 0) throw Error(what + ": longer than its size (changed while verified)");
  return bytes;
}

// Decompresses gzip text within `max_bytes`, else checks plain text against it.
std::string text_of(std::string bytes, const std::string& what, uint64_t max_bytes) {
  if (is_gzip(bytes)) return gunzip(bytes, what, max_bytes);
  if (bytes.size() > max_bytes)
    throw LargerThanAdmitted(what + ": holds more than the " + std::to_string(max_bytes) + " bytes admitted",
                             bytes.size());
  return bytes;
}

struct Check {
  // Nothing is verified until verify() says so.
  enum Kind { verified, kept, unfaithful, larger } kind = kept;
  std::string reason;
  uint64_t estimate = 0;  // larger: a better estimate
  FileIdentity copy;      // verified: the copy that restored it (checked again before removal)
};
Check kept(std::string reason) { return {Check::kept, std::move(reason), 0, {}}; }
Check unfaithful(std::string reason) { return {Check::unfaithful, "restore differs: " + std::move(reason), 0, {}}; }

// Step 2 of the file comment, holding at most about kVerifyFactor x `max_bytes`, the
// original's admitted (uncompressed) size.
// Why the copy's directory entry is not one we may trust to stand in for the original:
// a regular file of ours that nobody else may write.
std::optional<std::string> copy_refusal(const std::string& name, const struct stat& st) {
  if (!S_ISREG(st.st_mode)) return name + ": not a regular file";
  // Whoever owns or may write the copy can change it after the original is gone.
  if (st.st_uid != ::geteuid()) return name + ": owned by another user";
  if (st.st_mode & (S_IWGRP | S_IWOTH)) return name + ": writable by others";
  return std::nullopt;
}

// A rank file in the directory open as `dir_fd` that is none of `known` (the iteration's
// rank files this sweep merged), or nothing. Such a rank appeared after the sweep listed
// the directory: the merged output does not cover it, and once the others are gone the
// next sweep would merge it alone over the merged output of all of them.
std::optional<std::string> rank_file_added(int dir_fd, const std::vector<std::string>& known) {
  std::vector<std::string> names;
  if (int error = list_directory(dir_fd, names))
    return std::string("cannot list its directory again: ") + std::strerror(error);
  for (const std::string& name : names)
    if (is_sweep_input_name(name) && std::find(known.begin(), known.end(), name) == known.end())
      return name + " appeared in the directory after the sweep listed it; the merged output does not cover it";
  return std::nullopt;
}

Check verify(const OriginalFile& file, uint64_t max_bytes) {
  const std::string original_path = (file.dir / file.name).string();
  const std::string copy_path = (file.dir / file.output_name).string();
  Fd dir{::open(file.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (dir.fd < 0) return kept(std::string("cannot open its directory: ") + std::strerror(errno));
  struct stat entry {};
  if (::fstatat(dir.fd, file.name.c_str(), &entry, AT_SYMLINK_NOFOLLOW) != 0)
    return kept(std::string("cannot examine it: ") + std::strerror(errno));
  if (auto refusal = original_refusal(entry, file.identity, file.through_link, ::geteuid())) return kept(*refusal);
  FileIdentity copy_identity;
  try {
    // The copy first: its restore peaks at about 3x the copy's text, and the original's
    // text is read only once that is freed (peak max(3 x copy, 2 x original), not their sum).
    std::string restored;
    {
      std::string copy;
      Fd out{::openat(dir.fd, file.output_name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)};
      if (out.fd < 0)
        return kept(file.output_name + ": cannot open: " +
                    (errno == ELOOP ? std::string("a symbolic link") : std::string(std::strerror(errno))));
      struct stat st {};
      if (::fstat(out.fd, &st) != 0) return kept(file.output_name + ": cannot examine: " + std::strerror(errno));
      if (auto refusal = copy_refusal(file.output_name, st)) return kept(*refusal);
      copy_identity = identity_of(st);
      // A copy may be somewhat larger than its original (lane names, restore data).
      const uint64_t copy_max = 2 * max_bytes + (1 << 20);
      std::string raw = read_whole(out.fd, st, copy_path, copy_max + copy_max / 8 + (1 << 16));
      struct stat after {};
      if (::fstat(out.fd, &after) != 0 || !(identity_of(after) == copy_identity))
        return kept(file.output_name + ": changed while it was verified");
      try {
        copy = text_of(std::move(raw), copy_path, copy_max);
        std::vector<RestoreRecordInfo> records = list_restore_records(copy, copy_path);
        if (records.empty()) return unfaithful(file.output_name + " holds no restore data");
        if (records.size() != 1)
          return unfaithful(file.output_name + " holds " + std::to_string(records.size()) +
                            " restore records, not one");
        if (records[0].original_bytes > max_bytes)
          throw LargerThanAdmitted(
              copy_path + ": restores more than the " + std::to_string(max_bytes) + " bytes admitted",
              records[0].original_bytes);
        restored = restore_original(std::move(copy), copy_path, 0);
      } catch (const LargerThanAdmitted&) {
        throw;
      } catch (const Error& e) {
        return unfaithful(e.what());  // damaged: a gzip stream, a record, the events
      }
    }
    std::string original;
    {
      Fd in{::openat(dir.fd, file.name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)};
      if (in.fd < 0) return kept(std::string("cannot open it: ") + std::strerror(errno));
      struct stat before {
      }, after{};
      if (::fstat(in.fd, &before) != 0) return kept(std::string("cannot examine it: ") + std::strerror(errno));
      if (auto refusal = original_refusal(before, file.identity, false, ::geteuid())) return kept(*refusal);
      // A gzip file is no larger than its text plus headers (read_trace_bytes' margin).
      std::string raw = read_whole(in.fd, before, original_path, max_bytes + max_bytes / 8 + (1 << 16));
      if (::fstat(in.fd, &after) != 0 || !(identity_of(after) == identity_of(before)))
        return kept("changed while it was verified");
      original = text_of(std::move(raw), original_path, max_bytes);
    }
    if (restored != original) {
      size_t at = 0;
      while (at < restored.size() && at < original.size() && restored[at] == original[at]) ++at;
      return unfaithful("restoring " + file.output_name + " gives " + std::to_string(restored.size()) +
                        " bytes, which differ from " + file.name + "'s " + std::to_string(original.size()) +
                        " from byte " + std::to_string(at));
    }
  } catch (const LargerThanAdmitted& e) {
    return {Check::larger, {}, std::max(e.estimate, max_bytes * 2), {}};
  } catch (const std::bad_alloc&) {
    return kept("out of memory while verifying");
  } catch (const std::exception& e) {
    return kept(e.what());
  }
  return {Check::verified, {}, 0, copy_identity};
}

// Step 2 for every file not refused already, in parallel under the budget (the sweep's
// Admission counts the costs; the jobs are never part of a merge group).
std::vector<Check> verify_all(const std::vector<OriginalFile>& files, uint64_t memory_budget, int jobs) {
  std::vector<Check> checks(files.size(), kept("not verified"));
  std::vector<uint64_t> estimates(files.size());
  const uint64_t memory = memory_limit();

  Admission admission(memory_budget);
  for (size_t i = 0; i < files.size(); ++i) {
    if (files[i].refusal) {
      checks[i] = kept(*files[i].refusal);
      continue;
    }
    estimates[i] = std::max<uint64_t>(files[i].estimate, 1);
    admission.enqueue({i, SIZE_MAX, kVerifyFactor * estimates[i], 0});
  }
  std::mutex mutex;
  tbb::task_group group;
  std::function<void(std::vector<size_t>)> start = [&](std::vector<size_t> ids) {
    for (size_t id : ids)
      group.run([&, id] {
        Check check = verify(files[id], estimates[id]);
        std::vector<size_t> next;
        {
          std::lock_guard lock(mutex);
          // What the verification freed goes back to the system before more is admitted
          // (the sweep graph's admit node explains why).
          ::malloc_trim(0);
          if (check.kind == Check::larger && check.estimate <= memory) {
            estimates[id] = check.estimate;
            admission.requeue(id, kVerifyFactor * estimates[id], 0);
          } else {
            if (check.kind == Check::larger)
              check = kept("decompresses to more than this machine's or job's memory; not verified");
            checks[id] = std::move(check);
            admission.finish_job(id);
          }
          next = admission.admit();
        }
        start(std::move(next));
      });
  };
  tbb::task_arena arena(arena_threads(jobs));
  arena.execute([&] {
    std::vector<size_t> first;
    {
      std::lock_guard lock(mutex);
      first = admission.admit();
    }
    start(std::move(first));
    group.wait();
  });
  return checks;
}

// Step 3 for one iteration's files (`members`): all removed, or none. A file kept says why
// in its verdict; `checks` of those kept here become kept. `merged`: a merged output covers
// the iteration, so a rank file it does not cover keeps them all.
void remove_iteration(const std::vector<OriginalFile>& files, const std::vector<size_t>& members,
                      std::vector<Check>& checks, std::vector<OriginalVerdict>& verdicts, bool merged = true) {
  auto keep_all = [&](size_t because) {
    for (size_t i : members)
      if (checks[i].kind == Check::verified)
        verdicts[i].reason = files[because].name +
                             " of this iteration is kept, and an iteration's originals are "
                             "removed all together or not at all";
  };
  size_t blocker = SIZE_MAX;
  for (size_t i : members)
    if (checks[i].kind != Check::verified && blocker == SIZE_MAX) blocker = i;
  if (blocker != SIZE_MAX) {
    keep_all(blocker);
    return;
  }
  // The directory's lock, from the last checks to the unlinks: a writer that read one of
  // these originals earlier (a sweep of a nested ROOT, a shard run of another count, a
  // compact) checks under the same lock that its input is still there and unchanged
  // before it puts its copy in place (AtomicOutput::commit). So no copy lands over a
  // verified one after its original is gone, and one that landed before is seen below.
  DirectoryLock lock;
  std::string unlocked;
  if (lock.take(files[members.front()].dir, unlocked) != TreeLock::Outcome::locked) {
    for (size_t i : members) {
      verdicts[i].reason = "cannot lock its directory, so another writer could replace the copy: " + unlocked;
      checks[i].kind = Check::kept;
    }
    return;
  }
  Fd dir{::open(files[members.front()].dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  auto recheck = [&](size_t i, struct stat& st) -> std::optional<std::string> {
    if (dir.fd < 0) return std::string("cannot open its directory: ") + std::strerror(errno);
    if (::fstatat(dir.fd, files[i].name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
      return std::string("cannot examine it: ") + std::strerror(errno);
    if (auto refusal = original_refusal(st, files[i].identity, files[i].through_link, ::geteuid()))
      return *refusal + " (after it was verified)";
    // The copy must still be the one that restored it: another writer (a compact
    // --overwrite, a sweep of a nested ROOT) may have replaced it since.
    struct stat copy {};
    if (::fstatat(dir.fd, files[i].output_name.c_str(), &copy, AT_SYMLINK_NOFOLLOW) != 0)
      return files[i].output_name + ": cannot examine it after it was verified: " + std::strerror(errno);
    if (auto refusal = copy_refusal(files[i].output_name, copy)) return *refusal + " (after it was verified)";
    if (!(identity_of(copy) == checks[i].copy)) return files[i].output_name + ": changed after it was verified";
    return std::nullopt;
  };
  for (size_t i : members) {
    struct stat st {};
    if (auto refusal = recheck(i, st)) {
      verdicts[i].reason = *refusal;
      checks[i].kind = Check::kept;
      if (blocker == SIZE_MAX) blocker = i;
    }
  }
  if (blocker != SIZE_MAX) {
    keep_all(blocker);
    return;
  }
  std::vector<std::string> known;
  for (size_t i : members) known.push_back(files[i].name);
  if (auto added = merged ? rank_file_added(dir.fd, known) : std::nullopt) {
    for (size_t i : members) {
      verdicts[i].reason = *added;
      checks[i].kind = Check::kept;
    }
    return;
  }
  for (size_t i : members) {
    struct stat st {};
    if (auto refusal = recheck(i, st)) {
      verdicts[i].reason = *refusal;
      continue;
    }
    if (::unlinkat(dir.fd, files[i].name.c_str(), 0) != 0) {
      verdicts[i].reason = std::string("cannot remove it: ") + std::strerror(errno);
      continue;
    }
    verdicts[i] = {OriginalVerdict::removed, {}, uint64_t(st.st_size)};
  }
}

// The verdicts before step 3: each file kept, with the reason its check gives.
std::vector<OriginalVerdict> verdicts_of(const std::vector<Check>& checks) {
  std::vector<OriginalVerdict> verdicts(checks.size());
  for (size_t i = 0; i < checks.size(); ++i) {
    verdicts[i].reason = checks[i].reason;
    verdicts[i].kind = checks[i].kind == Check::unfaithful ? OriginalVerdict::unfaithful : OriginalVerdict::kept;
  }
  return verdicts;
}

}  // namespace

std::vector<OriginalVerdict> remove_originals(const std::vector<OriginalFile>& files, uint64_t memory_budget, int jobs,
                                              const std::function<void(const std::string&)>& error) {
  std::vector<Check> checks = verify_all(files, memory_budget, jobs);
  std::vector<OriginalVerdict> verdicts = verdicts_of(checks);
  for (size_t i = 0; i < files.size(); ++i)
    if (checks[i].kind == Check::unfaithful)
      error((files[i].dir / files[i].name).string() + ": kept: " + checks[i].reason);
  // Removal, per iteration: all or none (the file comment says why).
  std::map<size_t, std::vector<size_t>> iterations;
  for (size_t i = 0; i < files.size(); ++i) iterations[files[i].iteration].push_back(i);
  for (const auto& entry : iterations) remove_iteration(files, entry.second, checks, verdicts);
  return verdicts;
}

OriginalVerdict remove_original(const OriginalFile& file, uint64_t memory_budget) {
  std::vector<OriginalFile> files{file};
  std::vector<Check> checks = verify_all(files, memory_budget, 1);
  std::vector<OriginalVerdict> verdicts = verdicts_of(checks);
  remove_iteration(files, {0}, checks, verdicts, false);
  return verdicts[0];
}

std::string removal_summary(const std::vector<OriginalVerdict>& verdicts) {
  size_t removed = 0, kept = 0, unfaithful = 0;
  uint64_t bytes = 0;
  for (const OriginalVerdict& verdict : verdicts) {
    if (verdict.kind == OriginalVerdict::removed)
      removed++, bytes += verdict.bytes;
    else
      kept++, unfaithful += verdict.kind == OriginalVerdict::unfaithful;
  }
  std::string out = "removed " + std::to_string(removed) + " original" + (removed == 1 ? "" : "s") + ", " +
                    std::to_string(bytes) + " bytes; kept " + std::to_string(kept);
  if (unfaithful) out += " (" + std::to_string(unfaithful) + " whose compacted copy does not restore it)";
  return out;
}

std::string removal_plan(const std::vector<OriginalFile>& files, const std::vector<std::string>& rel_names) {
  std::vector<std::optional<std::string>> refusals(files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    struct stat st {};
    if (files[i].refusal)
      refusals[i] = files[i].refusal;
    else if (::lstat((files[i].dir / files[i].name).c_str(), &st) != 0)
      refusals[i] = std::string("cannot examine it: ") + std::strerror(errno);
    else
      refusals[i] = original_refusal(st, files[i].identity, files[i].through_link, ::geteuid());
  }
  std::map<size_t, size_t> blocker;  // iteration -> its first refused file
  for (size_t i = 0; i < files.size(); ++i)
    if (refusals[i] && !blocker.count(files[i].iteration)) blocker[files[i].iteration] = i;
  std::string out;
  for (size_t i = 0; i < files.size(); ++i) {
    auto block = blocker.find(files[i].iteration);
    if (refusals[i])
      out += "keep    " + printable(rel_names[i]) + " (" + printable(*refusals[i]) + ")\n";
    else if (block != blocker.end())
      out += "keep    " + printable(rel_names[i]) + " (" + printable(files[block->second].name) +
             " of this iteration is kept)\n";
    else
      out += "remove  " + printable(rel_names[i]) + " (once " + printable(files[i].output_name) +
             " restores it byte for byte)\n";
  }
  return out;
}

}  // namespace tracelane::cli
