// The sweep report (tracelane_report.json and .csv): one row per rank file, one per merged
// iteration, one per discovery problem, plus totals; and `tracelane report --combine`,
// which joins the partial reports of `sweep --shard K/N` into the report a single node
// would have written. docs/report.md documents every column.
#pragma once

#include <array>
#include <bit>
#include <boost/filesystem.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "iteration_plan.hpp"
#include "tracelane/figures.hpp"

namespace tracelane::cli {

namespace fs = boost::filesystem;

// 4: a report records the iteration plan it worked from ("plan": iteration_plan.hpp), so
// that `report --combine` can refuse shards that split different lists of iterations.
// 3: a column that `compact`'s or `merge`'s JSON summary also gives is named by the
// summary's key (kRenamedColumns), one name per quantity.
// 2: every text cell is written in printable()'s reversible escaped form (Backslash::escape),
// so that a report is valid UTF-8 whatever the names in the tree; 1 wrote names raw.
inline constexpr int kReportSchemaVersion = 4;
// The oldest schema still read (`report --html`, a skipped row's record, and `report
// --combine`, which reads it only to say why it leaves it out): 2 differs from 3 only in the
// names of kRenamedColumns, which are read as their names now, and 2 and 3 record no plan,
// so nothing shows that their shards split the list the others did. 1 (names raw) is
// refused: its text cells do not read back to the names the tree holds.
inline constexpr int kOldestReadReportSchema = 2;

// The columns schema 3 renamed to the summary key of the same quantity: {schema 2, now}.
struct RenamedColumn {
  const char* schema2;
  const char* name;
};
inline constexpr RenamedColumn kRenamedColumns[] = {
    {"flows_mapped", "gpu_flow_endpoints_mapped"},
    {"flows_unmapped", "gpu_flow_endpoints_unmapped"},
    {"annotations_mapped", "gpu_annotations_mapped"},
    {"annotations_coalesced", "gpu_annotations_coalesced"},
};
// A column's (or a totals key's) name as a report of schema `version` writes it.
std::string_view column_name_in_schema(std::string_view name, int version);
// A report's schema_version (`found`; nothing when the document has no integer one) when
// this tracelane reads it; else throws Error("<source>: ...") naming the version found.
int readable_schema_version(const std::string& source, std::optional<int64_t> found);

// The most shards a `sweep --shard K/N` may split a tree into, and the most a partial report
// may claim: far above any cluster's array size, small enough that a typo (0/100000000)
// cannot make `report --combine` spend memory or log on the shards it did not get.
inline constexpr int kMaxShards = 100000;
// The largest partial report `report --combine` reads (1 GiB).
inline constexpr uint64_t kMaxPartialReportBytes = uint64_t(1) << 30;

// Long lists (missing shards, failed shards, iterations) are printed and stored as their
// first kListLimit items, then "... and N more".
inline constexpr size_t kListLimit = 10;
// `first` (at most kListLimit items, space-separated) followed by " ... and N more" when
// `total` is larger than the number of items given.
std::string summarise_list(const std::vector<std::string>& first, int64_t total);

enum class RowKind { file, merge, problem };
const char* kind_name(RowKind kind);

// What became of a row's file, merge or problem. Each status has one name, the one the
// report writes (status_name(); the table is in report_columns.cpp), and is allowed on
// some kinds of rows only: ok, skipped and already laned on file and merge rows, warning
// on problem rows, failed on every kind.
enum class RowStatus { ok, skipped, already_laned, failed, warning };
const char* status_name(RowStatus status);
// The status of that name; nothing for any other text.
std::optional<RowStatus> status_named(std::string_view name);
// Whether a row of `kind` may have `status`.
bool status_allowed(RowKind kind, RowStatus status);

// The report's columns, in their order: report_columns()[size_t(id)] is column `id`, and
// the table there holds its name (the JSON key, the CSV header), type and kinds. Code
// names a column by its id, so that a column that does not exist does not compile.
enum class ColumnId : uint8_t {
  kind,
  dir,
  file,
  run,
  iteration,
  rank,
  pp_rank,
  ranks,
  pp_order,
  pp_order_source,
  time_alignment,
  input_bytes,
  output_bytes,
  events,
  measured_slices,
  original_streams,
  compacted_lanes,
  compaction_ratio,
  gpu_flow_endpoints_mapped,
  gpu_flow_endpoints_unmapped,
  gpu_annotations_mapped,
  gpu_annotations_coalesced,
  cuda_graph_launches,
  pp_send_recv_pairs,
  pp_send_recv_unmatched,
  pp_compute_dependency_pairs,
  pp_compute_dependency_unmatched,
  pp_unshard_compute_pairs,
  pp_unshard_compute_unmatched,
  output,
  seconds,
  status,
  error,
  original,
};
inline constexpr size_t kColumnCount = size_t(ColumnId::original) + 1;

enum class ColumnType { text, integer, real };

// One report column. `kinds` is a bit set of RowKind values that have it (1 << kind);
// `summed`: totals add it up; `timing`: it differs between runs of the same inputs, so
// comparisons of reports leave it out.
struct Column {
  ColumnId id;
  const char* name;
  ColumnType type;
  unsigned kinds;
  bool summed;
  bool timing;
  int decimals = 0;  // reals: digits after the point
};
const std::array<Column, kColumnCount>& report_columns();
inline const Column& column_of(ColumnId id) { return report_columns()[size_t(id)]; }

// A cell: absent (null in JSON, empty in CSV), an integer, a real, or text.
using Cell = std::variant<std::monostate, int64_t, double, std::string>;

// The cells a row has set, and only those, in column order: a sweep of a million rows holds
// a million of these, and a file row sets two thirds of the columns, a merge row of an
// iteration without a merge none.
class RowCells {
 public:
  static_assert(kColumnCount <= 64, "one bit of `present_` per column");

  RowCells() = default;
  RowCells(const RowCells&) = default;
  RowCells& operator=(const RowCells&) = default;
  // A moved-from row reads as empty.
  RowCells(RowCells&& other) noexcept : present_(std::exchange(other.present_, 0)), cells_(std::move(other.cells_)) {
    other.cells_.clear();
  }
  RowCells& operator=(RowCells&& other) noexcept {
    if (this == &other) return *this;  // a vector moved into itself may empty itself
    present_ = std::exchange(other.present_, 0);
    cells_ = std::move(other.cells_);
    other.cells_.clear();
    return *this;
  }

  const Cell& get(ColumnId column) const {
    static const Cell absent;
    uint64_t bit = uint64_t(1) << size_t(column);
    return present_ & bit ? cells_[std::popcount(present_ & (bit - 1))] : absent;
  }
  // `room`: how many cells to make room for when this is the first (the most the row's kind
  // has), so that a row's cells are one allocation of the size it needs.
  void set(ColumnId column, Cell value, size_t room);

 private:
  uint64_t present_ = 0;     // bit c: column c's cell is in cells_
  std::vector<Cell> cells_;  // the cells of the bits of present_, lowest first
};

// An optional value held on the heap, as std::optional reads: a row without one costs a
// pointer, not the value's size, and a copy copies the value.
template <class T>
class HeapOptional {
 public:
  HeapOptional() = default;
  HeapOptional(std::nullopt_t) {}
  HeapOptional(T value) : value_(std::make_unique<T>(std::move(value))) {}
  HeapOptional(std::optional<T> value) {
    if (value) value_ = std::make_unique<T>(std::move(*value));
  }
  HeapOptional(const HeapOptional& other) : value_(other.value_ ? std::make_unique<T>(*other.value_) : nullptr) {}
  HeapOptional(HeapOptional&&) noexcept = default;
  HeapOptional& operator=(HeapOptional other) noexcept {
    value_ = std::move(other.value_);
    return *this;
  }

  bool has_value() const { return value_ != nullptr; }
  explicit operator bool() const { return has_value(); }
  const T& operator*() const { return *value_; }
  T& operator*() { return *value_; }
  const T* operator->() const { return value_.get(); }
  T* operator->() { return value_.get(); }
  // The value, or nullptr.
  const T* get() const { return value_.get(); }
  void reset() { value_.reset(); }

 private:
  std::unique_ptr<T> value_;
};

struct Row {
  RowKind kind = RowKind::file;
  // GPU busy figures and timeline data (docs/figures.md): only on file and merge rows with
  // status ok, or skipped when figures_record() kept them with the output. Written after the
  // columns (the CSV gets gpu_window_us and gpu_busy), never in row_record() (they are
  // stored apart, figures_record()), optional when read back.
  HeapOptional<GpuFigures> figures;

  Row() = default;
  explicit Row(RowKind k) : kind(k) {}
  Row& set(ColumnId column, Cell value);
  const Cell& get(ColumnId column) const { return cells_.get(column); }
  const Cell& get(size_t column) const { return get(ColumnId(column)); }
  // A text cell's bytes; "" when the cell is absent or not text.
  std::string text(ColumnId column) const;
  // The status cell as a status: nothing while it is unset (or, in a report read for the
  // page, text that is no status).
  std::optional<RowStatus> status() const;
  Row& set_status(RowStatus status) { return set(ColumnId::status, std::string(status_name(status))); }

 private:
  RowCells cells_;
};

// Sorted by iteration directory (byte order), then file rows by rank, the merge row, and
// problem rows: the same order whichever node or shard produced a row.
void sort_rows(std::vector<Row>& rows);

// One `sweep` (or shard) run: environment and wall time; timing only, never compared.
struct RunInfo {
  std::optional<Shard> shard;
  double wall_seconds = 0;
  int jobs = 0;
  uint64_t memory_budget_bytes = 0;
};

struct Report {
  std::string source;  // the file it was read from (parse_report_json), for messages; never written
  std::string root;
  std::optional<Shard> shard;  // a partial report of `sweep --shard K/N`
  // The iteration plan the sweep worked from, with the iterations this report covers
  // (shard_plan()). None in a report of schema 2 or 3, and in a combined report that does
  // not account for its whole plan (a shard missing, left out or not agreeing).
  std::optional<IterationPlan> plan;
  std::vector<RunInfo> runs;
  std::vector<Row> rows;
};

// RFC 4180: a field with a comma, quote, CR or LF is quoted, quotes doubled.
std::string csv_field(std::string_view text);
// A cell as report_csv() writes it (before csv_field's quoting): numbers as they are, text in
// printable()'s escaped form, and a text cell that a spreadsheet would run as a formula
// (first character = + - @ tab CR, OWASP's list) or that starts with ' gets a leading ',
// so that stripping one leading ' from a text cell always gives the JSON's value back.
std::string cell_text(const Cell& cell, const Column& column);

// The raw bytes of a text cell written in printable()'s escaped form (`\\` and `\xHH`), or
// nothing when `text` is not exactly that form of any byte string.
std::optional<std::string> name_from_report(std::string_view text);

std::string report_json(const Report& report);
// The same text, handed to `sink` in pieces of about kReportPiece bytes.
inline constexpr size_t kReportPiece = size_t(1) << 20;
void write_report_json(const Report& report, const std::function<void(std::string_view)>& sink);

// A row's cells as a small JSON object (the kind, and every cell but the timing ones),
// stored with the row's output file, so that a later sweep that skips the up-to-date
// output (after a kill, say) can still report its numbers.
std::string row_record(const Row& row);
// Fills the absent cells of `row` (never status, error or timing) from a row_record() of
// the same kind whose output_bytes is `output_bytes`, the output's size now. False, and
// `row` unchanged, when the record is not such a record.
bool fill_from_record(Row& row, std::string_view record, int64_t output_bytes);
// A row's figures as stored with its output (kFiguresAttribute, beside row_record()): the
// JSON report's figure keys of the row, gzip-compressed (a merge of 8 ranks x 9 groups
// takes a few hundred bytes, not the 7 KB of its digits). Empty when the row has none or
// the record would be larger than kFiguresRecordMax.
inline constexpr size_t kFiguresRecordMax = 32 * 1024;
std::string figures_record(const Row& row);
// Sets `row.figures` from a figures_record() of a row of the same kind, read exactly as
// parse_report_json() reads a row's figures. False, and `row` unchanged, when the record
// is larger than kFiguresRecordMax, does not decompress (within 1 MiB), or is not such a
// record.
bool fill_figures_from_record(Row& row, std::string_view record);
std::string report_csv(const Report& report);
void write_report_csv(const Report& report, const std::function<void(std::string_view)>& sink);
// Reads a report_json() text back, checking every field's type and range (a row's kind,
// its status for that kind, each column's type, integers non-negative within int64, reals
// finite and non-negative, shard K/N with N <= kMaxShards, the schema_version, no unknown
// or repeated keys, the plan as plan_problem() checks it, totals that agree with the rows,
// and every file and merge row's dir one of the plan's iterations). Throws
// Error("<source>: <where>: <what>"), where is a JSON path such as rows[3].input_bytes.
// `verify_agreement` false (the fuzzer, whose mutated rows rarely keep their totals or
// their plan) reads the totals' shape only, and leaves out the checks of the rows' dirs
// and of an unsharded plan's digest against the plan.
Report parse_report_json(std::string_view json, const std::string& source, bool verify_agreement = true);

// A plan file (`sweep ROOT --write-plan FILE`, read by `sweep --plan FILE`): the root it
// was written for, as report_json() writes a root, and the whole plan.
struct PlanFile {
  std::string root;
  IterationPlan plan;
};
inline constexpr int kPlanFileVersion = 1;
std::string plan_file_json(const PlanFile& file);
// Reads a plan_file_json() text as strictly as a report (no unknown or repeated keys, every
// name in the escaped form, plan_problem(), the digest the list's own); throws
// Error("<source>: <where>: <what>").
PlanFile parse_plan_file(std::string_view json, const std::string& source);

// report file names: tracelane_report[.shard-K-of-N].json / .csv
std::string report_base_name(const std::optional<Shard>& shard);

// Writes the JSON, the CSV and the page into `dir` as one set (write_set_atomically: a
// failure leaves the previous set whole); returns the JSON path.
fs::path write_report(const Report& report, const fs::path& dir);

// Iterations whose merge left PP send/recv arrows unmatched: (dir, count).
std::vector<std::pair<std::string, int64_t>> unmatched_iterations(const std::vector<Row>& rows);
// A row "failed", or a rank row whose "original" cell starts with kOriginalUnfaithful.
bool has_failures(const std::vector<Row>& rows);
// sweep --remove-originals: the cell of a rank file kept because its compacted copy's
// restore failed or differs (a copy that is not faithful is a failure of the sweep).
inline constexpr std::string_view kOriginalUnfaithful = "kept: restore differs";

struct Combined {
  Report report;
  std::optional<int> shard_count;     // N, when the partial reports name it
  std::vector<int> missing_shards;    // the first kListLimit shards of N that no report gave
  int64_t missing_shard_count = 0;    // all of them
  std::vector<std::string> problems;  // unreadable or inconsistent inputs, one line each
};
// Joins partial reports (each from parse_report_json). The rows are the union, sorted, plus
// one failed `problem` row (dir ".") per line of `problems`: each report in `unreadable`
// (its error message), missing shards (one summarised row), a shard given twice, with
// another shard count, of another plan or of none (whose rows are left out), reports of
// different roots; then what the reports took must be their plan, once: iterations taken
// by two reports, iterations taken with no row, rows given twice (the second left out) or
// of an iteration their report did not take, and, every shard present, iterations that
// are not the plan or not at their shard's positions (one summarised row each). A combined
// report with something missing is then `failed` in itself, not only in the exit status;
// it records the plan only when it accounts for all of it.
Combined combine_reports(const std::vector<Report>& partials, const std::vector<std::string>& unreadable = {});

}  // namespace tracelane::cli
