// `sweep --remove-originals`: once the sweep's work is done, a rank file is removed only
// when its compacted copy, read back from disk, gives it back byte for byte. See
// remove_originals.cpp for the order of the checks and docs/sweep.md for the user's view.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <boost/filesystem.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "files.hpp"
#include "report/report.hpp"

namespace tracelane::cli {

namespace fs = boost::filesystem;

// One rank file of this run, as the sweep leaves it.
struct OriginalFile {
  fs::path dir;             // its iteration directory
  std::string name;         // rank<N>_trace.json[.gz]
  std::string output_name;  // its compacted copy in the same directory
  FileIdentity identity;    // the file the sweep read, or (row "skipped") found at discovery
  bool through_link = false;
  uint64_t estimate = 0;  // its uncompressed bytes, as the sweep last estimated them
  size_t iteration = 0;   // originals of one iteration are removed all together or not at all
  // Set by the caller when the file may not be removed whatever its copy holds (its
  // iteration is not wholly done): "kept: <refusal>".
  std::optional<std::string> refusal;
};

struct OriginalVerdict {
  enum Kind { removed, kept, unfaithful } kind = kept;
  std::string reason;  // why kept (empty when removed)
  uint64_t bytes = 0;  // bytes on disk freed (removed only)
};

// The report cell ("original" column): "removed", "kept: <reason>".
std::string original_cell(const OriginalVerdict& verdict);

// Why an iteration's originals must stay, or nothing when it is wholly done: every rank row
// (file name, status: nothing while unknown) ok or skipped, and its merge row (when it has
// one) ok or skipped. A later sweep needs the originals to redo what did not finish.
struct MergeStatus {
  std::optional<RowStatus> status;  // nothing while unknown
};
std::optional<std::string> iteration_not_done(
    const std::vector<std::pair<std::string, std::optional<RowStatus>>>& rank_statuses,
    const std::optional<MergeStatus>& merge);

// Why the directory entry `now` (fstatat without following links) is not the original the
// sweep read, or nothing when it is: a regular file with one link, owned by `user`, and the
// same device, inode, size and mtime as `expected`. `through_link`: the sweep reached it
// through a symbolic link (whose target is not ours to remove).
std::optional<std::string> original_refusal(const struct stat& now, const FileIdentity& expected, bool through_link,
                                            uid_t user);

// Per file, the cost of a verification in multiples of the original's uncompressed size.
// The copy is restored first (about 3x the copy's text at its peak), then the original's
// text is read and compared with the restored text (2x). The measured peak is below 4x
// (docs/sweep.md, "Memory and time"); 4 leaves room for copies larger than their originals.
inline constexpr uint64_t kVerifyFactor = 4;

// Verifies every file not refused already (at most --jobs at once, their costs within
// `memory_budget` as the sweep's Admission counts them; a file larger than the budget runs
// alone), then removes the originals of each iteration whose every file verified, each
// checked once more just before unlinkat. `error` gets one line per copy that is not
// faithful. Returns one verdict per file.
std::vector<OriginalVerdict> remove_originals(const std::vector<OriginalFile>& files, uint64_t memory_budget, int jobs,
                                              const std::function<void(const std::string&)>& error);

// One trace compacted on its own (the Python handler's keep_original=False,
// src/python/tracelane/profiler.py): step 2 as for the sweep's files, then step 3's checks
// under the directory's lock and the removal. No merged output covers it, so the rank
// files of other processes beside it (other ranks of the same iteration) keep nothing.
OriginalVerdict remove_original(const OriginalFile& file, uint64_t memory_budget);

// "removed N originals, M bytes; kept K", for the sweep's summary.
std::string removal_summary(const std::vector<OriginalVerdict>& verdicts);

// `--dry-run`: what a sweep with --remove-originals would verify and remove, one line per
// file ("verify+remove DIR/NAME (restore from OUTPUT)" or "keep DIR/NAME (reason)"), judged
// from what is known before any work.
std::string removal_plan(const std::vector<OriginalFile>& files, const std::vector<std::string>& rel_names);

}  // namespace tracelane::cli
