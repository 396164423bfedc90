// File-system side of the command line: reading traces, naming outputs, finding rank
// files, and writing outputs so that no half-written file is ever visible.
#pragma once

#include <boost/filesystem.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tracelane/trace.hpp"

namespace tracelane::cli {

namespace fs = boost::filesystem;

// A usage error found on the file system (exit status 2 wherever the README documents one
// for usage errors): an output path the guard refuses.
class OutputRefused : public Error {
 public:
  using Error::Error;
};
// The output appeared between the guard's check and write_atomically's link() (another
// process won the race); without --overwrite it is never replaced. Also a usage error.
class OutputExists : public OutputRefused {
 public:
  using OutputRefused::OutputRefused;
};

// The one guard every command that writes a file calls before it reads any input. Throws
// OutputRefused ("<output>: reason") when `output`
//  - names a directory (an existing one, or a path ending in '/', '.' or '..'),
//  - is in a directory that does not exist (or is not a directory),
//  - is, links followed, the same file (device and inode) as any of `inputs`, or names
//    the same directory entry as one of them (same directory, same name),
//  - has a name tracelane reads as an input (rank<N>_trace.json[.gz]): writing it would
//    add a rank to the directory, and every later merge or sweep of it would read it,
//  - exists and `overwrite` is false.
// Checking early is for the user's sake (a usage error after reading 1 GiB is late); the
// final word on "exists" is write_atomically's atomic link().
void guard_output(const fs::path& output, const std::vector<fs::path>& inputs, bool overwrite);

// One error or warning line on stderr, through printable() (Backslash::keep): names read
// from a shared tree may hold terminal escape sequences or invalid UTF-8. The line is one
// line: an embedded newline is written \x0a.
void print_error(std::string_view line);

std::string read_file(const fs::path& path);
// Reads and, when the bytes start with the gzip magic, decompresses.
std::string read_trace_bytes(const fs::path& path);

fs::path default_compact_output(const fs::path& input);
inline const char* kMergedName = "pp_traces_merged_compacted.json.gz";

bool is_rank_trace_name(const std::string& filename, long long* rank = nullptr);
bool is_our_output_name(const std::string& filename);
// rank<N>_trace.json[.gz] files of a directory (or of the directory of one such file),
// sorted by N. Throws Error when fewer than two.
std::vector<fs::path> find_rank_files(const fs::path& dir_or_file);

// Writes `bytes` to a temporary file beside `path`, then renames it into place. Without
// `overwrite`, an existing `path` is never replaced (checked atomically; OutputExists).
// Throws Error.
// A non-empty `record` is stored with the file as the extended attribute kRecordAttribute,
// set before the rename, so the file never appears without it; where the file system has
// no user extended attributes, the file is written without it.
void write_atomically(const fs::path& path, const std::string& bytes, bool overwrite,
                      std::string_view record = {});
inline const char* kRecordAttribute = "user.tracelane.report_row";
// The record stored with `path`, or nothing (no such attribute, or none readable, or
// `path` is a symbolic link: the attribute is read from the file tracelane wrote, which a
// link is not).
std::optional<std::string> read_record(const fs::path& path);

// gzip-compress when the name ends in .gz.
std::string encode_for(const fs::path& path, std::string json, int level);

}  // namespace tracelane::cli
