// The walk of ROOT (discover) and the size estimates of the rank files it finds.
#include "discovery.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <utility>

namespace tracelane::cli {

bool is_sweep_input_name(const std::string& filename, long long* rank) {
  return !is_our_output_name(filename) && is_rank_trace_name(filename, rank);
}

int list_directory(int fd, std::vector<std::string>& names) {
  // fdopendir owns the descriptor it is given: list through a second one.
  int list_fd = ::openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* listing = list_fd >= 0 ? ::fdopendir(list_fd) : nullptr;
  if (!listing) {
    int error = errno;
    if (list_fd >= 0) ::close(list_fd);
    return error;
  }
  errno = 0;
  while (struct dirent* entry = ::readdir(listing)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
    errno = 0;
  }
  int error = errno;
  ::closedir(listing);
  std::sort(names.begin(), names.end());
  return error;
}

bool is_rank_copy_name(const std::string& filename, long long* rank, std::string* original) {
  static const std::string kMarker = "_trace_compacted.json";
  size_t at = filename.rfind(kMarker);
  if (at == std::string::npos) return false;
  std::string rest = filename.substr(at + kMarker.size());
  if (!rest.empty() && rest != ".gz") return false;
  std::string name = filename.substr(0, at) + "_trace.json" + rest;
  if (!is_sweep_input_name(name, rank)) return false;
  if (original) *original = name;
  return true;
}

std::string run_of(const std::string& rel, const std::string& root_name) {
  std::vector<std::string> parts;
  if (rel != ".") {
    size_t start = 0;
    for (;;) {
      size_t slash = rel.find('/', start);
      parts.push_back(rel.substr(start, slash - start));
      if (slash == std::string::npos) break;
      start = slash + 1;
    }
  }
  for (size_t i = 0; i < parts.size(); ++i)
    if (parts[i] == "profile_trace") return i == 0 ? root_name : parts[i - 1];
  if (parts.size() < 3) return ".";
  std::string out = parts[0];
  for (size_t i = 1; i + 2 < parts.size(); ++i) out += "/" + parts[i];
  return out;
}

uint64_t estimate_uncompressed_bytes(int fd, uint64_t bytes_on_disk) {
  unsigned char magic[2] = {0, 0}, trailer[4] = {0, 0, 0, 0};
  bool gzip = bytes_on_disk >= 18 && ::pread(fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b &&
              ::pread(fd, trailer, 4, off_t(bytes_on_disk - 4)) == 4;
  if (!gzip) return bytes_on_disk;
  uint64_t isize =
      uint64_t(trailer[0]) | uint64_t(trailer[1]) << 8 | uint64_t(trailer[2]) << 16 | uint64_t(trailer[3]) << 24;
  // ISIZE is the size mod 2^32: JSON never compresses to more than it was, so lift it.
  while (isize < bytes_on_disk) isize += uint64_t(1) << 32;
  // Deflate cannot compress beyond ~1032:1, so a larger ISIZE is not a trailer (a
  // truncated file): assume a typical trace's ratio instead.
  if (isize / 1032 > bytes_on_disk + 1024) return bytes_on_disk * 8;
  return isize;
}

uint64_t estimate_uncompressed_bytes(const fs::path& path, uint64_t bytes_on_disk) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return bytes_on_disk;
  uint64_t estimate = estimate_uncompressed_bytes(fd, bytes_on_disk);
  ::close(fd);
  return estimate;
}

namespace {

// The compacted copies in `names` (the directory open as `fd`) of ranks that have no rank
// file in `ranks`: each a RankFile `from_copy`. Only a regular file of ours that nobody
// else may write stands in for an original (the standard --remove-originals holds a copy
// to before it removes one); any other is left out, and the merge that would drop its rank
// is refused (plan_sweep).
void add_copies_of_gone_originals(int fd, const fs::path& dir, const std::vector<std::string>& names,
                                  std::vector<RankFile>& ranks) {
  for (const std::string& name : names) {
    long long rank = 0;
    if (!is_rank_copy_name(name, &rank)) continue;
    // Gone: no rank file of that rank, nor a copy taken already (.json beside .json.gz).
    bool gone = std::none_of(ranks.begin(), ranks.end(), [&](const RankFile& file) { return file.rank == rank; });
    struct stat st {};
    if (!gone || ::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
        st.st_uid != ::geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)))
      continue;
    uint64_t size = uint64_t(st.st_size);
    uint64_t estimate = size;
    int file_fd = ::openat(fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (file_fd >= 0) {
      estimate = estimate_uncompressed_bytes(file_fd, size);
      ::close(file_fd);
    }
    RankFile file{dir / name, rank, size, estimate, identity_of(st), false};
    file.from_copy = true;
    ranks.push_back(std::move(file));
  }
}

// The walk holds one open directory per level (openat relative to its parent), so a path
// longer than PATH_MAX is no limit to it; only the number of open files is, and the soft
// limit is raised to the hard one for that. Whatever cannot be entered or examined is a
// problem row: nothing is left out silently.
struct Walker {
  Discovery& out;
  std::string root_name;
  std::map<std::pair<dev_t, ino_t>, std::string> visited;  // directory -> rel of first visit

  static std::string join(const std::string& rel, const std::string& name) {
    return rel == "." ? name : rel + "/" + name;
  }

  void problem(const std::string& rel, const std::string& reason, bool failure) {
    out.problems.push_back({rel, reason, failure});
  }

  // One entry of the directory `dir` (ROOT/rel, open as `fd`): a rank file goes into
  // `iteration`, a directory into `subdirs`; anything the sweep will not read as a rank
  // though named like one is a problem, said.
  void examine_entry(int fd, const fs::path& dir, const std::string& rel, const std::string& name,
                     IterationDir& iteration, std::vector<std::string>& subdirs) {
    struct stat entry {};
    if (::fstatat(fd, name.c_str(), &entry, 0) != 0) {  // follows links, as entering does
      int e = errno;
      struct stat link {};
      if (e == ELOOP)
        problem(join(rel, name), "symlink loop (not followed)", false);
      else if (e != ENOENT)
        problem(join(rel, name), std::string("cannot examine: ") + std::strerror(e), true);
      else if (is_sweep_input_name(name, nullptr) && ::fstatat(fd, name.c_str(), &link, AT_SYMLINK_NOFOLLOW) == 0)
        // A rank that names no file: said, so a merge with one rank fewer is never a surprise.
        problem(join(rel, name), "dangling symlink (not read as a rank)", false);
      return;  // else gone since the listing
    }
    if (S_ISDIR(entry.st_mode)) {
      if (is_sweep_input_name(name, nullptr))
        problem(join(rel, name), "is a directory, not a trace file (not read as a rank)", false);
      subdirs.push_back(name);
      return;
    }
    long long rank = 0;
    struct stat link {};
    bool name_is_link = !S_ISDIR(entry.st_mode) && ::fstatat(fd, name.c_str(), &link, AT_SYMLINK_NOFOLLOW) == 0 &&
                        S_ISLNK(link.st_mode);
    if (name_is_link && is_sweep_input_name(name, nullptr) && link.st_uid != ::geteuid()) {
      // Another user's link could make us read (with our rights) a file they cannot, and
      // write its compacted copy where they can read it.
      problem(join(rel, name), "symlink owned by another user (not followed)", false);
      return;
    }
    if (!is_sweep_input_name(name, &rank)) {
      // Named like a rank file, but its number does not fit: said, never silently left out.
      if (is_sweep_input_name(name, nullptr))
        problem(join(rel, name), "rank number too large (not read as a rank)", false);
      return;
    }
    if (!S_ISREG(entry.st_mode)) {
      problem(join(rel, name), "not a regular file (not read as a rank)", false);
      return;
    }
    uint64_t size = uint64_t(entry.st_size);
    uint64_t estimate = size;
    // O_NONBLOCK: it was a regular file a moment ago, but a FIFO swapped in must not hang us.
    int file_fd = ::openat(fd, name.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (file_fd >= 0) {
      struct stat opened {};
      if (::fstat(file_fd, &opened) == 0 && S_ISREG(opened.st_mode))
        estimate = estimate_uncompressed_bytes(file_fd, size);
      ::close(file_fd);
    }
    RankFile file{dir / name, rank, size, estimate, identity_of(entry), name_is_link};
    iteration.ranks.push_back(std::move(file));
  }

  // `fd` is the directory `dir` (ROOT/rel), open; the caller closes it.
  // `through_link`: `dir` was entered through a directory symbolic link (it or one of its
  // ancestors below ROOT).
  void walk(int fd, const fs::path& dir, const std::string& rel, std::vector<std::pair<dev_t, ino_t>>& ancestors,
            bool through_link) {
    std::pair<dev_t, ino_t> key;
    if (!enter_once(fd, rel, ancestors, key)) return;
    std::vector<std::string> names;
    if (!list(fd, rel, names)) return;
    std::vector<std::string> subdirs;
    add_iteration(fd, dir, rel, names, through_link, subdirs);
    ancestors.push_back(key);
    for (const std::string& name : subdirs) walk_subdirectory(fd, dir, rel, name, ancestors, through_link);
    ancestors.pop_back();
  }

  // The directory's identity (`key`), false (said) when it cannot be examined or was
  // entered before: a loop back to an ancestor, or a second way to one already walked.
  bool enter_once(int fd, const std::string& rel, const std::vector<std::pair<dev_t, ino_t>>& ancestors,
                  std::pair<dev_t, ino_t>& key) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      problem(rel, std::string("cannot read directory: ") + std::strerror(errno), true);
      return false;
    }
    key = {st.st_dev, st.st_ino};
    if (auto seen = visited.find(key); seen != visited.end()) {
      bool loop = std::find(ancestors.begin(), ancestors.end(), key) != ancestors.end();
      problem(rel,
              (loop ? "symlink loop: leads back to " : "reached twice: same directory as ") + seen->second +
                  " (not entered again)",
              false);
      return false;
    }
    visited.emplace(key, rel);
    return true;
  }

  // The directory's entries, sorted; false (a failure, said) when it cannot be listed.
  bool list(int fd, const std::string& rel, std::vector<std::string>& names) {
    if (int error = list_directory(fd, names)) {
      problem(rel, std::string("cannot list directory: ") + std::strerror(error), true);
      return false;
    }
    return true;
  }

  // Examines every entry: the rank files make an iteration (with the copies of originals
  // that are gone), the directories go into `subdirs`.
  void add_iteration(int fd, const fs::path& dir, const std::string& rel, const std::vector<std::string>& names,
                     bool through_link, std::vector<std::string>& subdirs) {
    IterationDir iteration;
    for (const std::string& name : names) examine_entry(fd, dir, rel, name, iteration, subdirs);
    if (iteration.ranks.empty()) return;
    add_copies_of_gone_originals(fd, dir, names, iteration.ranks);
    std::stable_sort(iteration.ranks.begin(), iteration.ranks.end(),
                     [](const RankFile& a, const RankFile& b) { return a.rank < b.rank; });
    iteration.dir = dir;
    iteration.through_dir_link = through_link;
    iteration.rel = rel;
    iteration.run = run_of(rel, root_name);
    iteration.iteration = rel == "." ? root_name : dir.filename().string();
    out.iterations.push_back(std::move(iteration));
  }

  // Enters the subdirectory `name` of `dir` (open as `fd`), following a directory symlink
  // (once: `visited`). O_NONBLOCK is harmless on a directory and keeps a FIFO swapped in
  // since fstatat from blocking the open.
  void walk_subdirectory(int fd, const fs::path& dir, const std::string& rel, const std::string& name,
                         std::vector<std::pair<dev_t, ino_t>>& ancestors, bool through_link) {
    int child = ::openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
    if (child < 0) {
      int e = errno;
      if (e != ENOENT) problem(join(rel, name), std::string("cannot read directory: ") + std::strerror(e), true);
      return;
    }
    struct stat link {};
    bool child_through_link =
        through_link || (::fstatat(fd, name.c_str(), &link, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(link.st_mode));
    walk(child, dir / name, join(rel, name), ancestors, child_through_link);
    ::close(child);
  }
};

// One open directory per level of depth: let the walk use as many as the hard limit allows.
void raise_open_files_limit() {
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    (void)::setrlimit(RLIMIT_NOFILE, &limit);
  }
}

}  // namespace

Discovery discover(const fs::path& root) {
  Discovery out;
  boost::system::error_code ec;
  fs::path absolute = fs::absolute(root, ec);
  std::string root_name = absolute.filename().string();
  if (root_name == "." || root_name.empty()) root_name = absolute.parent_path().filename().string();
  raise_open_files_limit();
  Walker walker{out, root_name, {}};
  std::vector<std::pair<dev_t, ino_t>> ancestors;
  int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    walker.problem(".", std::string("cannot read directory: ") + std::strerror(errno), true);
  } else {
    walker.walk(fd, root, ".", ancestors, false);
    ::close(fd);
  }
  std::sort(out.iterations.begin(), out.iterations.end(),
            [](const IterationDir& a, const IterationDir& b) { return a.rel < b.rel; });
  return out;
}

}  // namespace tracelane::cli
