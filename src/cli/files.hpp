// File-system side of the command line: reading traces, naming outputs, finding rank
// files, and writing outputs so that no half-written file is ever visible.
#pragma once

#include <boost/filesystem.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tracelane::cli {

namespace fs = boost::filesystem;

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
// `overwrite`, an existing `path` is never replaced (checked atomically). Throws Error.
// A non-empty `record` is stored with the file as the extended attribute kRecordAttribute,
// set before the rename, so the file never appears without it; where the file system has
// no user extended attributes, the file is written without it.
void write_atomically(const fs::path& path, const std::string& bytes, bool overwrite,
                      std::string_view record = {});
inline const char* kRecordAttribute = "user.tracelane.report_row";
// The record stored with `path`, or nothing (no such attribute, or none readable).
std::optional<std::string> read_record(const fs::path& path);

// gzip-compress when the name ends in .gz.
std::string encode_for(const fs::path& path, std::string json, int level);

}  // namespace tracelane::cli
