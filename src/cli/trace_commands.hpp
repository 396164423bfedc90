// `compact`, `merge` and `restore` as functions: each does its command's work on options
// already parsed and checked, returns what the command prints, and throws what it fails
// with (the types exit_status_of_failure maps to the exit status: OutputRefused and
// UsageError exit 2; FileError, BadTrace, RestoreRefused, InputChanged and any other Error
// exit 1, or 2 for merge). The command line (run_* in commands.hpp) parses argv into them
// and prints; the Python module (src/python/module.cpp) calls them with the GIL released.
// Nothing here prints on stdout or stderr.
#pragma once

#include <boost/filesystem.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "files.hpp"
#include "options.hpp"
#include "tracelane/json_value.hpp"
#include "tracelane/timings.hpp"

namespace tracelane::cli {

namespace fs = boost::filesystem;

// What compact and merge print: the summary on stdout, and, when the input was already
// laned (SPEC 9.8) and nothing was written, the line that says so on stderr.
struct TraceCommandResult {
  JsonValue summary;
  std::string already_laned;  // the stderr line; empty when an output was written
  fs::path output;            // the output written (empty when already laned)
  FileIdentity input;         // compact: the input as it was read, recorded with the output
  uint64_t input_bytes = 0;   // compact: its size decompressed
};

// `compact TRACE`: the output path is guarded before the input is read (OutputRefused),
// then read, parse, compact, figures, write, preview, on `jobs_of(shared)` threads.
// `shared` holds -o (empty: beside the input), --overwrite, --level, the rules (loaded),
// --preview, --no-restore-data, --jobs and --single-gzip-member.
TraceCommandResult compact_file(const fs::path& input, const SharedOptions& shared, bool pp_flows, bool force,
                                Timings* timings);

// `merge DIR_OR_ONE_RANK_FILE`: every rank file of the directory, compacted concurrently,
// merged and written.
TraceCommandResult merge_rank_files(const fs::path& input, const SharedOptions& shared, bool force, Timings* timings);

// Restore data that cannot give the original back: none, not for the rank asked, damaged,
// or not matching the copy's events (SPEC 9.12). Exit 1.
class RestoreRefused : public Error {
 public:
  using Error::Error;
};

// `restore COMPACTED`: the original written back; its summary. A merged output without
// `rank` is a UsageError ("name one with --rank").
JsonValue restore_file(const fs::path& input, const SharedOptions& shared, std::optional<int64_t> rank);

}  // namespace tracelane::cli
