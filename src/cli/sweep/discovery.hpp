// Discovery for `tracelane sweep ROOT`: the walk of ROOT that finds every iteration
// directory (a directory holding rank<N>_trace.json[.gz] files) and everything it could
// not look into, and the size each rank will have once decompressed.
#pragma once

#include <boost/filesystem.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "files.hpp"

namespace tracelane::cli {

namespace fs = boost::filesystem;

struct RankFile {
  fs::path path;
  long long rank = 0;
  uint64_t bytes_on_disk = 0;
  uint64_t bytes_uncompressed = 0;  // estimate: the gzip trailer's ISIZE, else bytes_on_disk
  FileIdentity identity;            // as discovery saw it (stat through the name)
  bool through_link = false;        // the name is a symlink (of ours) to the file
  // The rank's original is gone (removed by --remove-originals, say) and `path` is its
  // compacted copy: the iteration's merge restores the original from it (SPEC 9.12) so that
  // the merged output keeps every rank.
  bool from_copy = false;
};

// A directory holding one or more rank<N>_trace.json[.gz] files.
struct IterationDir {
  fs::path dir;
  std::string rel;                // relative to ROOT, '/'-separated; "." for ROOT itself
  std::string run;                // the component before profile_trace, else the grandparent (see run_of)
  std::string iteration;          // the directory's name
  std::vector<RankFile> ranks;    // sorted by rank number, then name; copies of gone originals too
  bool through_dir_link = false;  // reached through a directory symbolic link below ROOT
};

// Something discovery could not look into. `failure`: it may hide inputs (an unreadable
// directory), so the sweep exits 1; otherwise a warning (a symlink loop).
struct DiscoveryProblem {
  std::string rel;
  std::string reason;
  bool failure = false;
};

struct Discovery {
  std::vector<IterationDir> iterations;  // sorted by rel (byte order)
  std::vector<DiscoveryProblem> problems;
};

// A rank trace we read: rank<N>_trace.json[.gz], never one of our own outputs.
bool is_sweep_input_name(const std::string& filename, long long* rank = nullptr);
// The names in the directory open as `fd` (its descriptor stays the caller's), but "." and
// "..", sorted (byte order). Returns 0, or the errno of a failed listing.
int list_directory(int fd, std::vector<std::string>& names);

// A rank's compacted copy as compact and sweep name it: rank<N>_trace_compacted.json[.gz].
// `original` gets the rank file's name it was made from.
bool is_rank_copy_name(const std::string& filename, long long* rank = nullptr, std::string* original = nullptr);

// Walks ROOT depth first through directory descriptors (openat: no PATH_MAX limit),
// following directory symlinks once (a directory reached twice, by a loop or by a second
// link, is reported and not entered again). Every directory it cannot enter or list and
// every entry it cannot examine is a problem; a rank name that is not a regular file is a
// warning.
Discovery discover(const fs::path& root);

// "run" and "iteration" of an iteration directory given its '/'-separated path relative
// to ROOT: run is the component before "profile_trace" (ROOT's own name when
// profile_trace is the first component), else the grandparent's path relative to ROOT
// ("." when that is ROOT or above it).
std::string run_of(const std::string& rel, const std::string& root_name);

// Uncompressed size estimate: ISIZE (size mod 2^32) of the last gzip member, lifted by
// multiples of 4 GiB to at least the compressed size; the file size for plain JSON.
// Only an estimate: the sweep checks it when it reads the file (read_trace_bytes's
// max_bytes) and requeues a file that is larger with a better one.
uint64_t estimate_uncompressed_bytes(const fs::path& path, uint64_t bytes_on_disk);
uint64_t estimate_uncompressed_bytes(int fd, uint64_t bytes_on_disk);

}  // namespace tracelane::cli
