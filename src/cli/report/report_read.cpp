// Reading a report back (`report --combine`, a skipped row's record): a partial report
// comes from another node and is as untrusted as any file in the tree, so every field is
// checked (type, range, status for the kind, no unknown or repeated keys, totals that the
// rows give, a plan whose iterations hold the rows) and an error names the file and the
// JSON path. Reports of schema 2 are read under the column names now (kRenamedColumns);
// reports of schema 2 and 3 have no plan. A plan file (`sweep --write-plan`) is read here
// too, by the same reader.
#include <simdjson.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

#include "report_cells.hpp"
#include "tracelane/decimal_time.hpp"
#include "tracelane/gzip.hpp"
#include "tracelane/trace.hpp"

namespace tracelane::cli {

namespace {

// The columns, in their order (report_columns()).
const std::array<Column, kColumnCount>& kColumns = report_columns();

// The figures' keys, after the columns (report_json, parse_report_json).
const std::vector<std::string_view> kFigureKeys = {"gpu_window_us", "gpu_busy", "bubble_fraction", "timeline"};

// A real as a report holds it: rounded to the decimals it is written with, so that a row
// read back from a report is the row that was written (and totals of a combined report are
// the sums of the values its inputs show).
double rounded(double value, int decimals) {
  std::string text = format_real(value, decimals);
  return text.empty() ? value : std::strtod(text.c_str(), nullptr);
}

// What is wrong with `value` as a cell of `column`, or the cell: text in printable()'s
// escaped form (decoded back to its bytes), integers non-negative within int64, reals
// finite and non-negative. Every integer and real column is a count, a size, an index, a
// ratio or a duration, so a negative value is a corrupt report, never a measurement.
std::variant<Cell, std::string> cell_from_json(simdjson::dom::element value, const Column& column) {
  using simdjson::dom::element_type;
  element_type type = value.type();
  if (column.type == ColumnType::text) {
    std::string_view text;
    if (value.get(text)) return std::string("expected a string");
    std::optional<std::string> bytes = name_from_report(text);
    if (!bytes) return std::string("not text as tracelane writes it (printable UTF-8, \\\\ and \\xHH escapes)");
    return Cell(std::move(*bytes));
  }
  if (column.type == ColumnType::integer) {
    if (type == element_type::UINT64) return std::string("an integer beyond int64");
    int64_t number;
    if (type != element_type::INT64 || value.get(number)) return std::string("expected an integer");
    if (number < 0) return std::string("expected a non-negative integer");
    return Cell(number);
  }
  double number;
  if (value.get(number)) return std::string("expected a number");
  if (!std::isfinite(number) || number < 0 || number > kMaxReal)
    return std::string("expected a finite non-negative number of at most 1e15");
  return Cell(rounded(number, column.decimals));
}

// A shard K/N as a report may hold it: 0 <= K < N <= kMaxShards.
bool valid_shard(int64_t index, int64_t count) {
  return count >= 1 && count <= kMaxShards && index >= 0 && index < count;
}

// "K/N" (a run's shard label): digits only, in range; nothing otherwise.
std::optional<Shard> parse_shard_label(std::string_view label) {
  size_t slash = label.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  auto number = [](std::string_view digits) -> std::optional<int64_t> {
    if (digits.empty() || digits.size() > 9) return std::nullopt;  // kMaxShards has 6 digits
    int64_t value = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') return std::nullopt;
      value = value * 10 + (c - '0');
    }
    return value;
  };
  std::optional<int64_t> k = number(label.substr(0, slash)), n = number(label.substr(slash + 1));
  if (!k || !n || !valid_shard(*k, *n)) return std::nullopt;
  return Shard{int(*k), int(*n)};
}

// A value from a report for a message: short, one line (printable() is applied where the
// message is printed).
std::string excerpt(simdjson::dom::element value) {
  std::string text = simdjson::minify(value);
  if (text.size() > 60) text = text.substr(0, 60) + "...";
  return text;
}

// parse_report_json's checks, with the JSON path of what is checked for the message.
class ReportReader {
 public:
  explicit ReportReader(const std::string& source, int version = kReportSchemaVersion)
      : source_(source), version_(version) {}

  // A column's or totals key's name as this report writes it (schema 2: kRenamedColumns).
  std::string_view key_in_file(std::string_view name) const { return column_name_in_schema(name, version_); }
  int version() const { return version_; }

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw Error(source_ + ": " + where + ": " + what);
  }

  // The members of an object, each key once and every key one of `known`.
  std::map<std::string_view, simdjson::dom::element> members(simdjson::dom::element value, const std::string& where,
                                                             const std::vector<std::string_view>& known) const {
    simdjson::dom::object object;
    if (value.get(object)) fail(where, "expected an object, got " + excerpt(value));
    std::map<std::string_view, simdjson::dom::element> out;
    for (auto [key, member] : object) {
      std::string path = where.empty() ? std::string(key) : where + "." + std::string(key);
      if (std::find(known.begin(), known.end(), key) == known.end()) fail(path, "unknown key");
      if (!out.emplace(key, member).second) fail(path, "given twice");
    }
    return out;
  }

  simdjson::dom::element required(const std::map<std::string_view, simdjson::dom::element>& members,
                                  std::string_view key, const std::string& where) const {
    auto it = members.find(key);
    if (it == members.end()) fail(where.empty() ? std::string(key) : where + "." + std::string(key), "missing");
    return it->second;
  }

  int64_t integer(simdjson::dom::element value, const std::string& where, int64_t max = INT64_MAX) const {
    int64_t number;
    if (value.type() != simdjson::dom::element_type::INT64 || value.get(number) || number < 0 || number > max)
      fail(where, "expected an integer from 0 to " + std::to_string(max) + ", got " + excerpt(value));
    return number;
  }

  std::string text(simdjson::dom::element value, const std::string& where) const {
    std::string_view raw;
    if (value.get(raw)) fail(where, "expected a string, got " + excerpt(value));
    std::optional<std::string> bytes = name_from_report(raw);
    if (!bytes)
      fail(where, "not text as tracelane writes it (printable UTF-8, \\\\ and \\xHH escapes): " + excerpt(value));
    return *bytes;
  }

 private:
  const std::string& source_;
  int version_;
};

// A fraction as figures hold it: a number from 0 to 1, in ten-thousandths.
int read_fraction(const ReportReader& reader, simdjson::dom::element value, const std::string& where) {
  double number;
  if (value.get(number) || !std::isfinite(number) || number < 0 || number > 1)
    reader.fail(where, "expected a number from 0 to 1, got " + excerpt(value));
  return int(std::lround(number * kFractionScale));
}

// The keys of an object in order, each once.
std::vector<std::pair<std::string_view, simdjson::dom::element>> object_items(const ReportReader& reader,
                                                                              simdjson::dom::element value,
                                                                              const std::string& where) {
  simdjson::dom::object object;
  if (value.get(object)) reader.fail(where, "expected an object, got " + excerpt(value));
  std::vector<std::pair<std::string_view, simdjson::dom::element>> out;
  std::set<std::string_view> seen;
  for (auto [key, member] : object) {
    if (!seen.insert(key).second) reader.fail(where + "." + std::string(key), "given twice");
    out.emplace_back(key, member);
  }
  return out;
}

std::optional<int64_t> read_optional_rank(const ReportReader& reader, simdjson::dom::element value,
                                          const std::string& where) {
  if (value.is_null()) return std::nullopt;
  return reader.integer(value, where);
}

// The figures of a row (docs/figures.md), when it has any: all of its kind's keys or none
// (reports written before the figures existed have none), and only on rows with status ok
// or skipped (figures kept with an up-to-date output, figures_record()).
std::optional<GpuFigures> read_figures(const ReportReader& reader,
                                       const std::map<std::string_view, simdjson::dom::element>& members, RowKind kind,
                                       RowStatus status, const std::string& where) {
  bool any = false;
  for (std::string_view key : kFigureKeys) any = any || members.count(key);
  if (!any) return std::nullopt;
  if (kind == RowKind::problem || (status != RowStatus::ok && status != RowStatus::skipped))
    reader.fail(where, std::string("GPU figures on a ") + kind_name(kind) + " row with status " + status_name(status) +
                           " (only ok and skipped file and merge rows have them)");
  GpuFigures figures;
  figures.merged = kind == RowKind::merge;
  const char* absent = figures.merged ? "gpu_busy" : "bubble_fraction";
  if (members.count(absent))
    reader.fail(where + "." + absent, std::string("not a key of ") + kind_name(kind) + " rows");

  simdjson::dom::element window = reader.required(members, "gpu_window_us", where);
  if (window.get(figures.window_us) || !std::isfinite(figures.window_us) || figures.window_us < 0 ||
      figures.window_us > kMaxReal)
    reader.fail(where + ".gpu_window_us",
                "expected a finite non-negative number of at most 1e15, got " + excerpt(window));

  if (!figures.merged) {
    std::string path = where + ".gpu_busy";
    for (auto [key, value] : object_items(reader, reader.required(members, "gpu_busy", where), path)) {
      std::optional<std::string> name = name_from_report(key);
      if (!name || name->empty())
        reader.fail(path, "a group name is not text as tracelane writes it: " + std::string(key));
      figures.busy[*name] = read_fraction(reader, value, path + "." + std::string(key));
    }
  } else {
    std::string path = where + ".bubble_fraction";
    for (auto [key, value] : object_items(reader, reader.required(members, "bubble_fraction", where), path)) {
      int64_t rank;
      if (!parse_json_int(key, rank) || rank < 0 || std::to_string(rank) != key)
        reader.fail(path, "a key is not a global rank (a non-negative integer): " + std::string(key));
      figures.bubble[rank] = read_fraction(reader, value, path + "." + std::string(key));
    }
  }

  std::string path = where + ".timeline";
  auto fields =
      reader.members(reader.required(members, "timeline", where), path, {"start_us", "end_us", "bins", "strips"});
  Timeline& timeline = figures.timeline;
  for (auto [key, target] : {std::pair{"start_us", &timeline.start_us}, std::pair{"end_us", &timeline.end_us}}) {
    simdjson::dom::element value = reader.required(fields, key, path);
    // Times tracelane reads are at most kMaxTimeNs (3e15 us) in size: epoch microseconds pass 1e15.
    if (value.get(*target) || !std::isfinite(*target) || std::fabs(*target) > double(kMaxTimeNs) / 1000)
      reader.fail(path + "." + key, "expected a finite number of at most 3e15 in size, got " + excerpt(value));
  }
  if (timeline.end_us < timeline.start_us) reader.fail(path + ".end_us", "before start_us");
  // -0 reads as 0, so that it is written back as 0.
  for (double* value : {&figures.window_us, &timeline.start_us, &timeline.end_us})
    if (*value == 0) *value = 0;
  timeline.bins = int(reader.integer(reader.required(fields, "bins", path), path + ".bins", kMaxTimelineBins));
  if (timeline.bins < 1) reader.fail(path + ".bins", "expected at least 1 bin");
  simdjson::dom::array strips;
  if (reader.required(fields, "strips", path).get(strips)) reader.fail(path + ".strips", "expected an array");
  size_t n = 0;
  for (simdjson::dom::element item : strips) {
    std::string at = path + ".strips[" + std::to_string(n++) + "]";
    auto strip_fields = reader.members(item, at, {"rank", "pp_rank", "group", "occupancy"});
    TimelineStrip strip;
    strip.rank = read_optional_rank(reader, reader.required(strip_fields, "rank", at), at + ".rank");
    strip.pp_rank = read_optional_rank(reader, reader.required(strip_fields, "pp_rank", at), at + ".pp_rank");
    strip.group = reader.text(reader.required(strip_fields, "group", at), at + ".group");
    if (strip.group.empty()) reader.fail(at + ".group", "empty");
    std::string_view digits;
    simdjson::dom::element occupancy = reader.required(strip_fields, "occupancy", at);
    if (occupancy.get(digits) || digits.size() != size_t(timeline.bins) ||
        digits.find_first_not_of("0123456789") != std::string_view::npos)
      reader.fail(at + ".occupancy",
                  "expected " + std::to_string(timeline.bins) + " digits, got " + excerpt(occupancy));
    strip.occupancy = std::string(digits);
    timeline.strips.push_back(std::move(strip));
  }
  return figures;
}

Row read_row(const ReportReader& reader, simdjson::dom::element item, const std::string& where) {
  std::vector<std::string_view> known;
  for (const Column& column : kColumns) known.push_back(reader.key_in_file(column.name));
  known.insert(known.end(), kFigureKeys.begin(), kFigureKeys.end());
  auto members = reader.members(item, where, known);
  std::string_view kind;
  if (reader.required(members, "kind", where).get(kind)) reader.fail(where + ".kind", "expected a string");
  Row row;
  if (kind == "file")
    row.kind = RowKind::file;
  else if (kind == "merge")
    row.kind = RowKind::merge;
  else if (kind == "problem")
    row.kind = RowKind::problem;
  else
    reader.fail(where + ".kind", "unknown row kind " + excerpt(members.at("kind")));
  unsigned bit = 1u << unsigned(row.kind);
  // report_json() writes every column of the row's kind (null when unknown), and no other.
  for (size_t c = 1; c < kColumns.size(); ++c) {
    const Column& column = kColumns[c];
    std::string_view key = reader.key_in_file(column.name);
    std::string path = where + "." + std::string(key);
    auto it = members.find(key);
    if (!(column.kinds & bit)) {
      if (it != members.end()) reader.fail(path, std::string("not a column of ") + kind_name(row.kind) + " rows");
      continue;
    }
    // "original" is written only when filled (report_json): absent reads as empty.
    if (it == members.end() && column.id == ColumnId::original) continue;
    if (it == members.end()) reader.fail(path, "missing");
    if (it->second.is_null()) continue;
    auto cell = cell_from_json(it->second, column);
    if (std::holds_alternative<std::string>(cell))
      reader.fail(path, std::get<std::string>(cell) + ", got " + excerpt(it->second));
    row.cells[c] = std::move(std::get<Cell>(cell));
  }
  // sweep --remove-originals writes "removed" or "kept: <reason>".
  if (const Cell& original = row.get(ColumnId::original); std::holds_alternative<std::string>(original)) {
    std::string_view text = std::get<std::string>(original);
    if (text != "removed" && text.substr(0, 6) != "kept: ")
      reader.fail(where + ".original",
                  "expected \"removed\" or \"kept: <reason>\", got " + excerpt(members.at("original")));
  }
  // What identifies a row and decides the outcome is never unknown.
  for (ColumnId id : {ColumnId::dir, ColumnId::status})
    if (!std::holds_alternative<std::string>(row.get(id)))
      reader.fail(where + "." + column_of(id).name, "missing (null)");
  // A dir becomes a path under ROOT and a link on the page: never one that leads out.
  if (!is_dir_under_root(row.text(ColumnId::dir)))  // text cells hold the raw bytes
    reader.fail(where + ".dir", "not a directory under the report's root (\".\" or a relative path without \"..\"): " +
                                    excerpt(members.at("dir")));
  std::optional<RowStatus> status = row.status();
  if (!status || !status_allowed(row.kind, *status))
    reader.fail(where + ".status",
                std::string("not a status of ") + kind_name(row.kind) + " rows: " + excerpt(members.at("status")));
  row.figures = read_figures(reader, members, row.kind, *status, where);
  return row;
}

// A plan's keys among `members` (a report's "plan" object, whose path is `where`, or a plan
// file's top level, ""), checked as plan_problem() checks them for `shard`.
IterationPlan read_plan(const ReportReader& reader, const std::map<std::string_view, simdjson::dom::element>& members,
                        const std::string& where, const std::optional<Shard>& shard) {
  auto path = [&](const std::string& key) { return where.empty() ? key : where + "." + key; };
  IterationPlan plan;
  simdjson::dom::element digest = reader.required(members, "digest", where);
  std::string_view digest_text;
  if (digest.get(digest_text)) reader.fail(path("digest"), "expected a string, got " + excerpt(digest));
  plan.digest = std::string(digest_text);
  plan.count = reader.integer(reader.required(members, "count", where), path("count"), kMaxPlanIterations);
  simdjson::dom::array iterations;
  if (reader.required(members, "iterations", where).get(iterations))
    reader.fail(path("iterations"), "expected an array");
  size_t n = 0;
  for (simdjson::dom::element item : iterations)
    plan.iterations.push_back(reader.text(item, path("iterations[" + std::to_string(n++) + "]")));
  if (auto problem = plan_problem(plan, shard)) reader.fail(path(problem->where), problem->what);
  return plan;
}

RunInfo read_run(const ReportReader& reader, simdjson::dom::element item, const std::string& where) {
  auto members = reader.members(item, where, {"shard", "wall_seconds", "jobs", "memory_budget_bytes"});
  RunInfo run;
  simdjson::dom::element shard = reader.required(members, "shard", where);
  if (!shard.is_null()) {
    std::string_view label;
    std::optional<Shard> parsed;
    if (!shard.get(label)) parsed = parse_shard_label(label);
    if (!parsed)
      reader.fail(where + ".shard", "expected null or \"K/N\" with 0 <= K < N <= " + std::to_string(kMaxShards) +
                                        ", got " + excerpt(shard));
    run.shard = parsed;
  }
  double wall = 0;
  simdjson::dom::element seconds = reader.required(members, "wall_seconds", where);
  if (seconds.get(wall) || !std::isfinite(wall) || wall < 0 || wall > kMaxReal)
    reader.fail(where + ".wall_seconds",
                "expected a finite non-negative number of at most 1e15, got " + excerpt(seconds));
  run.wall_seconds = rounded(wall, 3);
  run.jobs = int(reader.integer(reader.required(members, "jobs", where), where + ".jobs", INT_MAX));
  run.memory_budget_bytes =
      uint64_t(reader.integer(reader.required(members, "memory_budget_bytes", where), where + ".memory_budget_bytes"));
  return run;
}

// The totals must be the ones the rows give: a report cut short or edited by hand says so.
// Integer counts and sums only: real sums (seconds) were added before their rows were
// rounded to the decimals they are written with.
void check_totals(const ReportReader& reader, simdjson::dom::element given, const std::vector<Row>& rows) {
  Totals totals = compute_totals(rows);
  if (!totals.overflowed.empty())
    reader.fail("rows", "the sum of " + *totals.overflowed.begin() + " over the rows is beyond int64 (or not finite)");
  simdjson::dom::parser parser;
  simdjson::dom::object expected;
  std::string text = totals_json(rows).dump(-1);
  if (parser.parse(text).get(expected)) reader.fail("totals", "cannot be checked");  // never: our own JSON
  std::vector<std::string_view> keys;
  for (auto [key, value] : expected) keys.push_back(reader.key_in_file(key));
  auto members = reader.members(given, "totals", keys);
  for (auto [expected_key, value] : expected) {
    std::string_view key = expected_key;  // clang 14 cannot capture a structured binding
    std::string path = "totals." + std::string(reader.key_in_file(key));
    simdjson::dom::element got = reader.required(members, reader.key_in_file(key), "totals");
    bool real_column = std::any_of(kColumns.begin(), kColumns.end(), [&](const Column& column) {
      return column.type == ColumnType::real && key == column.name;
    });
    if (real_column) {
      double real;
      if (!got.is_null() && (got.get(real) || !std::isfinite(real) || real < 0))
        reader.fail(path, "expected a finite non-negative number, got " + excerpt(got));
      continue;
    }
    if (simdjson::minify(value) != simdjson::minify(got))
      reader.fail(path, excerpt(got) + " does not match the rows (" + excerpt(value) + ")");
  }
}

}  // namespace

int readable_schema_version(const std::string& source, std::optional<int64_t> found) {
  if (!found) throw Error(source + ": not a tracelane report (no integer schema_version)");
  if (*found < kOldestReadReportSchema || *found > kReportSchemaVersion)
    throw Error(source + ": a report of schema_version " + std::to_string(*found) + ", which tracelane " +
                TRACELANE_VERSION + " does not read (it reads schema_version " +
                std::to_string(kOldestReadReportSchema) + " to " + std::to_string(kReportSchemaVersion) + ")");
  return int(*found);
}

bool fill_from_record(Row& row, std::string_view record, int64_t output_bytes) {
  simdjson::dom::parser parser;
  simdjson::dom::element item;
  if (parser.parse(record.data(), record.size()).get(item)) return false;
  std::string_view kind;
  int64_t bytes = -1;
  if (item["kind"].get(kind) || kind != kind_name(row.kind)) return false;
  if (item["output_bytes"].get(bytes) || bytes != output_bytes) return false;
  Row filled = row;
  for (size_t c = 1; c < kColumns.size(); ++c) {
    const Column& column = kColumns[c];
    // "original" is what this run did with the rank file, never the output's.
    if (column.timing || column.id == ColumnId::status || column.id == ColumnId::error ||
        column.id == ColumnId::original)
      continue;
    if (!std::holds_alternative<std::monostate>(filled.cells[c])) continue;
    // A record written before schema 3 (an output of the previous release, still up to
    // date) names a renamed column as schema 2 did.
    simdjson::dom::element value;
    if (item[column.name].get(value) && item[column_name_in_schema(column.name, 2)].get(value)) continue;
    if (value.is_null()) continue;
    auto cell = cell_from_json(value, column);
    if (!std::holds_alternative<Cell>(cell)) return false;
    filled.cells[c] = std::move(std::get<Cell>(cell));
  }
  row = std::move(filled);
  return true;
}

bool fill_figures_from_record(Row& row, std::string_view record) {
  if (record.empty() || record.size() > kFiguresRecordMax) return false;
  const std::string source = "figures record";
  try {
    std::string json = gunzip(record, source, 1 << 20);
    simdjson::dom::parser parser;
    simdjson::dom::element item;
    if (parser.parse(json).get(item)) return false;
    ReportReader reader(source);
    auto members = reader.members(item, "", kFigureKeys);
    // Read as the figures of an ok row: which status the row has now is not the record's.
    std::optional<GpuFigures> figures = read_figures(reader, members, row.kind, RowStatus::ok, "");
    if (!figures) return false;
    row.figures = std::move(figures);
    return true;
  } catch (const Error&) {
    return false;  // damaged, truncated, too large or not ours: the row has no figures
  }
}

Report parse_report_json(std::string_view json, const std::string& source, bool verify_agreement) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto error = parser.parse(json.data(), json.size()).get(doc))
    throw Error(source + ": not a JSON report: " + simdjson::error_message(error));
  // The version first, so that a report of another version says only that.
  simdjson::dom::object object;
  int64_t found = 0;
  bool has_version = !doc.get(object) && !object["schema_version"].get(found);
  ReportReader reader(source, readable_schema_version(source, has_version ? std::optional(found) : std::nullopt));
  std::vector<std::string_view> keys = {"schema_version", "tool", "root",   "shard",
                                        "timing_columns", "runs", "totals", "rows"};
  if (reader.version() >= 4) keys.push_back("plan");
  auto members = reader.members(doc, "", keys);
  Report report;
  report.source = source;
  std::string_view tool;
  if (reader.required(members, "tool", "").get(tool)) reader.fail("tool", "expected a string");
  report.root = reader.text(reader.required(members, "root", ""), "root");

  simdjson::dom::element shard = reader.required(members, "shard", "");
  if (!shard.is_null()) {
    auto fields = reader.members(shard, "shard", {"index", "count"});
    int64_t count = reader.integer(reader.required(fields, "count", "shard"), "shard.count", kMaxShards);
    int64_t index = reader.integer(reader.required(fields, "index", "shard"), "shard.index", kMaxShards);
    if (!valid_shard(index, count))
      reader.fail("shard", "index " + std::to_string(index) + " is not below count " + std::to_string(count));
    report.shard = Shard{int(index), int(count)};
  }
  if (reader.version() >= 4) {
    simdjson::dom::element plan = reader.required(members, "plan", "");
    if (!plan.is_null())
      report.plan =
          read_plan(reader, reader.members(plan, "plan", {"digest", "count", "iterations"}), "plan", report.shard);
  }

  simdjson::dom::array names;
  if (reader.required(members, "timing_columns", "").get(names)) reader.fail("timing_columns", "expected an array");
  for (simdjson::dom::element name : names)
    if (!name.is_string()) reader.fail("timing_columns", "expected strings, got " + excerpt(name));

  simdjson::dom::array runs;
  if (reader.required(members, "runs", "").get(runs)) reader.fail("runs", "expected an array");
  size_t n = 0;
  for (simdjson::dom::element item : runs)
    report.runs.push_back(read_run(reader, item, "runs[" + std::to_string(n++) + "]"));

  simdjson::dom::array rows;
  if (reader.required(members, "rows", "").get(rows)) reader.fail("rows", "expected an array");
  n = 0;
  for (simdjson::dom::element item : rows)
    report.rows.push_back(read_row(reader, item, "rows[" + std::to_string(n++) + "]"));
  simdjson::dom::element totals = reader.required(members, "totals", "");
  if (verify_agreement)
    check_totals(reader, totals, report.rows);
  else if (!totals.is_object())
    reader.fail("totals", "expected an object");
  if (report.plan && verify_agreement) {
    // What the sweep took is its plan's share: a row of another iteration was not planned.
    const std::vector<std::string>& taken = report.plan->iterations;
    for (size_t i = 0; i < report.rows.size(); ++i) {
      const Row& row = report.rows[i];
      if (row.kind != RowKind::problem && !std::binary_search(taken.begin(), taken.end(), row.text(ColumnId::dir)))
        reader.fail("rows[" + std::to_string(i) + "].dir", "not one of the plan's iterations (plan.iterations)");
    }
    if (!report.shard && plan_digest(taken) != report.plan->digest)
      reader.fail("plan.digest", "not the digest of the iterations listed");
  }
  return report;
}

PlanFile parse_plan_file(std::string_view json, const std::string& source) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto error = parser.parse(json.data(), json.size()).get(doc))
    throw Error(source + ": not a JSON plan file: " + simdjson::error_message(error));
  simdjson::dom::object object;
  int64_t found = 0;
  if (doc.get(object) || object["plan_version"].get(found) || found != kPlanFileVersion)
    throw Error(source + ": not a plan file of plan_version " + std::to_string(kPlanFileVersion) +
                " (tracelane sweep ROOT --write-plan FILE writes one)");
  ReportReader reader(source);
  auto members = reader.members(doc, "", {"plan_version", "tool", "root", "digest", "count", "iterations"});
  std::string_view tool;
  if (reader.required(members, "tool", "").get(tool)) reader.fail("tool", "expected a string");
  PlanFile file;
  file.root = reader.text(reader.required(members, "root", ""), "root");
  file.plan = read_plan(reader, members, "", std::nullopt);
  if (plan_digest(file.plan.iterations) != file.plan.digest)
    reader.fail("digest", "not the digest of the iterations listed (the file was cut short or edited)");
  return file;
}

}  // namespace tracelane::cli
