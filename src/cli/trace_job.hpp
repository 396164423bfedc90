// One job for one trace file, the steps `compact`, `merge` and `sweep` all run, so that
// the three commands cannot drift:
//
//   read -> parse -> compact -> figures -> serialise -> compress (encode) -> write -> summary
//
// `compact` (compact_command.cpp) calls them in that order for its one file; the sweep's
// graph nodes (sweep_graph.cpp: load_parse, compact_rank, write_rank) call the same steps
// on many files at once; `merge` reads, parses and compacts each rank with them, then
// merge_and_write() (merge + compress + write) does the rest, for `tracelane merge` and
// the sweep's merge node alike.
//
// The steps keep no state between calls and touch nothing shared except what the caller
// passes (a Timings*, which one thread at a time may use: null where jobs run
// concurrently), so ranks can be compacted concurrently.
#pragma once

#include <boost/filesystem.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "files.hpp"
#include "options.hpp"
#include "report/report.hpp"
#include "tracelane/compact.hpp"
#include "tracelane/figures.hpp"
#include "tracelane/gzip.hpp"
#include "tracelane/json_value.hpp"
#include "tracelane/merge.hpp"
#include "tracelane/timings.hpp"
#include "tracelane/trace.hpp"
#include "tracelane/trace_output.hpp"

namespace tracelane::cli {

namespace fs = boost::filesystem;

// The input is not a trace tracelane compacts or merges: gzip or JSON it cannot read, a bad
// event, no GPU slices, ranks that do not merge. The message names the file and the
// position. The steps below throw it in place of the core's plain Error (the command line
// treats both alike; the Python module raises it as tracelane.TraceError).
class BadTrace : public Error {
 public:
  using Error::Error;
};

// What every job of one command shares, set once from its options.
struct JobOptions {
  const Rules* rules = nullptr;  // null: built-in
  std::string rules_text;        // the --rules file's text, for the outputs' recipe
  bool force = false;            // compact traces that are already laned (SPEC 9.8)
  bool restore_data = true;      // outputs carry what restores their originals (SPEC 9.12)
  int level = kDefaultLevel;     // gzip level of the outputs
  // Input bytes per gzip member of a .gz output, compressed concurrently (gzip.hpp);
  // 0: one member (--single-gzip-member).
  size_t gzip_member_bytes = kGzipMemberBytes;
  Timings* timings = nullptr;  // --timings; null when jobs run concurrently (sweep)

  // The one place CompactOptions are made from the command's options. `pp_flows`: the
  // single-trace PP arrows (merge leaves them out; a merged output carries its own).
  CompactOptions compact_options(bool pp_flows) const;
  // What decides an output besides its inputs (kept in its inputs record, files.hpp).
  std::string recipe(bool pp_flows) const { return output_recipe(rules_text, restore_data, pp_flows); }
};

// From compact's or merge's options (the rules are pointed to, not copied).
JobOptions job_options(const SharedOptions& shared, bool force, Timings* timings);

// A trace's text as read, and its CRC-32 where the file gave it (a gzip file's trailers):
// restore data then takes it instead of a pass over the text.
struct TraceBytes {
  TextBuffer json;
  std::optional<uint32_t> crc32;
};

// Read: the file's bytes, decompressed, with the identity of the file read. The caller
// has put the output's name through guard_output first (files.hpp), each command where
// its refusals belong (compact: before --preview's; sweep: in the rank's row).
// `for_restore`: a compacted copy for original_text_from_copy, read into a std::string
// (which release_string then moves out, not copies).
TraceBytes read_step(const fs::path& input, FileIdentity& identity, const ReadOptions& read, const JobOptions& job,
                     bool for_restore = false);
// A rank whose file is gone, read from its compacted copy (`copy_text`, decompressed): the
// text of the original the copy's one restore record gives back, decompressed when the
// original was gzip. Throws Error naming the copy (no restore data, several records,
// damaged), or LargerThanAdmitted beyond `max_bytes`.
std::string original_text_from_copy(std::string copy_text, const std::string& copy, uint64_t max_bytes);
// Parse.
Trace parse_step(TraceBytes bytes, const fs::path& input, const JobOptions& job, bool beside_others = false);
// Compact. The result may be already laned (SPEC 9.8): see already_laned().
CompactedTrace compact_step(Trace trace, const JobOptions& job, bool pp_flows);

// SPEC 9.8: a trace the exporter laned already is left as it is and nothing is written;
// not a failure. The reason, or empty when the trace was compacted.
inline const std::string& already_laned(const CompactedTrace& compacted) { return compacted.already_laned; }
// compact and merge: the summary (output null), and the line that says why, for stderr.
// `force_does` is what --force does anyway ("compacts", "merges").
JsonValue already_laned_summary(const fs::path& input, const std::string& reason);
std::string already_laned_line(const fs::path& input, const std::string& reason, const char* force_does);
// compact and merge on the command line: the summary on stdout, then the already-laned
// line, when there is one, on stderr.
void print_summary(const JsonValue& summary, const std::string& already_laned_line);
// sweep: the row's status and error.
void mark_already_laned(Row& row, const std::string& reason);

// Figures: the GPU timeline's numbers and strips (docs/figures.md).
GpuFigures figures_step(const CompactedTrace& compacted, const JobOptions& job, std::optional<int64_t> rank,
                        std::optional<int64_t> pp_rank);
// The global rank a single trace's strips are labelled with: the N of a rank<N>_trace
// name, else distributedInfo.rank; none when negative.
std::optional<int64_t> rank_of(const fs::path& input, const CompactedTrace& compacted);

// What is stored with an output besides its inputs record: the sweep's row and figures
// (report.hpp row_record, figures_record); empty for compact and merge.
struct OutputRecords {
  std::string row;
  std::string figures;
};
// Given the output's size once it is written whole.
using RecordsOf = std::function<OutputRecords(uint64_t output_bytes)>;

// The output's encoding as its name says: gzip members for .gz (one with
// --single-gzip-member), else the text.
OutputEncoding encoding_for(const fs::path& output, const JobOptions& job);

// Serialise, compress and write, streamed (trace_output.hpp): the text is made and
// compressed in blocks concurrently, each written to a temporary beside `output` as it is
// ready, which is put in place, with the inputs as read, the recipe and `records`, only
// once whole (files.hpp AtomicOutput); on any failure it is removed. Returns the size.
uint64_t write_output_step(const fs::path& output, const TraceText& text, bool overwrite,
                           const std::vector<NamedIdentity>& inputs, std::string_view recipe, const JobOptions& job,
                           const RecordsOf& records = {});

// The summary: a sweep row's numbers, and compact's JSON on stdout.
void fill_compact_row(Row& row, const CompactSummary& summary);
void fill_merge_row(Row& row, const MergeSummary& summary);
JsonValue compact_summary_json(const fs::path& input, const fs::path& output, const CompactSummary& summary,
                               const GpuFigures& figures);

// Merge orchestration, once for `tracelane merge` and the sweep: merges the compacted
// ranks (file order), compresses, and writes `output` with the ranks' identities as read.
// `records` (may be empty) gives what to store with the output once its size is known.
struct MergedOutput {
  MergeSummary summary;
  GpuFigures figures;
  uint64_t output_bytes = 0;
};
using MergeRecords = std::function<OutputRecords(const MergeSummary&, const GpuFigures&, uint64_t output_bytes)>;
MergedOutput merge_and_write(std::vector<MergeInput> ranks, const std::vector<NamedIdentity>& inputs,
                             const fs::path& output, bool overwrite, const JobOptions& job,
                             const MergeRecords& records = {});

}  // namespace tracelane::cli
