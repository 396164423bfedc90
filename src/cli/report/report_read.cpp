// Reading a report back, by one reader for `report --combine`, a skipped row's record and
// the page. A partial report comes from another node and is as untrusted as any file in
// the tree, so every field is checked (type, range, status for the kind, no unknown or
// repeated keys, totals that the rows give, a plan whose iterations hold the rows) and an
// error names the file and the JSON path. The page (Reading::page) reads the same way what
// it shows, and tolerates what a viewer should: keys it does not know, columns of other
// kinds or missing, dirs and statuses a sweep would not write (never linked), figures not
// in the contract's form (left out and named: report_read_figures.cpp), totals as given.
// Reports of schema 2 are read under the column names now (kRenamedColumns); reports of
// schema 2 and 3 have no plan. A plan file (`sweep --write-plan`) is read here too, by the
// same reader.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

#include "report_reader.hpp"
#include "tracelane/gzip.hpp"

namespace tracelane::cli {

std::string excerpt(simdjson::dom::element value) {
  std::string text = simdjson::minify(value);
  if (text.size() > 60) text = text.substr(0, 60) + "...";
  return text;
}

namespace {

// The columns, in their order (report_columns()).
const std::array<Column, kColumnCount>& kColumns = report_columns();

// What is wrong with `value` as a cell of `column`, or the cell: text in printable()'s
// escaped form (decoded back to its bytes), integers non-negative within int64, reals
// finite and non-negative. Every integer and real column is a count, a size, an index, a
// ratio or a duration, so a negative value is a corrupt report, never a measurement.
// The page says only which type it expected, and shows any finite real.
std::variant<Cell, std::string> cell_from_json(simdjson::dom::element value, const Column& column, bool for_page) {
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
    int64_t number;
    bool integer = type == element_type::INT64 && !value.get(number);
    if (for_page && (!integer || number < 0)) return std::string("expected a non-negative integer");
    if (type == element_type::UINT64) return std::string("an integer beyond int64");
    if (!integer) return std::string("expected an integer");
    if (number < 0) return std::string("expected a non-negative integer");
    return Cell(number);
  }
  double number;
  bool finite = !value.get(number) && std::isfinite(number) && number >= 0;
  if (for_page && !finite) return std::string("expected a finite non-negative number");
  if (value.get(number)) return std::string("expected a number");
  if (!finite || (!for_page && number > kMaxReal))
    return std::string("expected a finite non-negative number of at most 1e15");
  return Cell(real_as_written(number, column.decimals));
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

// The cells of a row of `row.kind` from its members. report_json() writes every column of
// the row's kind (null when unknown), and no other; the page takes what is there.
void read_cells(const ReportReader& reader, const Members& members, const std::string& where, Row& row) {
  unsigned bit = 1u << unsigned(row.kind);
  for (size_t c = 1; c < kColumns.size(); ++c) {
    const Column& column = kColumns[c];
    std::string_view key = reader.key_in_file(column.name);
    std::string path = where + "." + std::string(key);
    auto it = members.find(key);
    if (!(column.kinds & bit) && !reader.for_page()) {
      if (it != members.end()) reader.fail(path, std::string("not a column of ") + kind_name(row.kind) + " rows");
      continue;
    }
    // "original" is written only when filled (report_json): absent reads as empty.
    if (it == members.end() && (column.id == ColumnId::original || reader.for_page())) continue;
    if (it == members.end()) reader.fail(path, "missing");
    if (it->second.is_null()) continue;
    auto cell = cell_from_json(it->second, column, reader.for_page());
    if (std::holds_alternative<std::string>(cell))
      reader.fail(path, std::get<std::string>(cell), reader.for_page() ? "" : excerpt(it->second));
    row.set(ColumnId(c), std::move(std::get<Cell>(cell)));
  }
}

// What a sweep writes in the cells that identify a row and decide its outcome; the row's
// status, which read_figures() needs.
RowStatus check_row(const ReportReader& reader, const Members& members, const std::string& where, const Row& row) {
  // sweep --remove-originals writes "removed" or "kept: <reason>".
  if (const Cell& original = row.get(ColumnId::original); std::holds_alternative<std::string>(original)) {
    std::string_view text = std::get<std::string>(original);
    if (text != "removed" && text.substr(0, 6) != "kept: ")
      reader.fail(where + ".original", "expected \"removed\" or \"kept: <reason>\"", excerpt(members.at("original")));
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
  return *status;
}

// A row; read for the page, its figure keys and notes go to `page`.
Row read_row(const ReportReader& reader, simdjson::dom::element item, const std::string& where, ReportRead& page) {
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
  read_cells(reader, members, where, row);
  if (reader.for_page()) {
    page.figure_keys.emplace_back();
    row.figures = read_figures_for_page(reader, members, row.kind, where, page.figure_keys.back(), page.notes);
    return row;
  }
  row.figures = read_figures(reader, members, row.kind, check_row(reader, members, where, row), where);
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
  run.wall_seconds = real_as_written(wall, 3);
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

// Scalars, and arrays or objects of them (totals), as they are; anything deeper or not
// finite fails.
JsonValue copy_plain(const ReportReader& reader, simdjson::dom::element value, const std::string& where,
                     int depth = 0) {
  using simdjson::dom::element_type;
  switch (value.type()) {
    case element_type::NULL_VALUE:
      return JsonValue::null();
    case element_type::BOOL: {
      bool flag = false;
      if (value.get(flag)) reader.fail(where, "unreadable value");
      return JsonValue::boolean(flag);
    }
    case element_type::STRING: {
      std::string_view text;
      if (value.get(text)) reader.fail(where, "unreadable value");
      return JsonValue::string(std::string(text));
    }
    case element_type::INT64: {
      int64_t number = 0;
      if (value.get(number)) reader.fail(where, "unreadable value");
      return JsonValue::integer(number);
    }
    case element_type::UINT64:
    case element_type::DOUBLE: {
      double number;
      if (value.get(number) || !std::isfinite(number)) reader.fail(where, "expected a finite number");
      return real_json(number);
    }
    case element_type::ARRAY: {
      if (depth >= 2) reader.fail(where, "nested too deep");
      JsonValue out = JsonValue::array();
      size_t i = 0;
      simdjson::dom::array items;
      if (value.get(items)) reader.fail(where, "unreadable value");
      for (simdjson::dom::element item : items)
        out.push(copy_plain(reader, item, where + "[" + std::to_string(i++) + "]", depth + 1));
      return out;
    }
    case element_type::OBJECT: {
      if (depth >= 2) reader.fail(where, "nested too deep");
      JsonValue out = JsonValue::object();
      simdjson::dom::object members;
      if (value.get(members)) reader.fail(where, "unreadable value");
      for (auto [key, item] : members)
        out.set(std::string(key), copy_plain(reader, item, where + "." + std::string(key), depth + 1));
      return out;
    }
  }
  reader.fail(where, "unexpected value");
}

// The report's totals for the page, under today's names (a schema 2 report's renamed
// columns too).
JsonValue page_totals(const ReportReader& reader, simdjson::dom::element value) {
  simdjson::dom::object given;
  if (value.get(given)) return copy_plain(reader, value, "totals");
  JsonValue totals = JsonValue::object();
  for (auto [key, item] : given) {
    std::string name(key);
    for (const RenamedColumn& renamed : kRenamedColumns)
      if (reader.version() < 3 && key == renamed.schema2) name = renamed.name;
    totals.set(name, copy_plain(reader, item, "totals." + std::string(key), 1));
  }
  return totals;
}

}  // namespace

JsonValue page_totals_of(const std::vector<Row>& rows) {
  std::string text = totals_json(rows).dump(-1);
  simdjson::dom::parser parser;
  simdjson::dom::element totals;
  if (parser.parse(text).get(totals)) throw Error("internal: the totals' own JSON does not parse");
  return page_totals(ReportReader("totals", kReportSchemaVersion, Reading::page), totals);
}

namespace {

simdjson::dom::element parse_document(simdjson::dom::parser& parser, std::string_view json, const std::string& source) {
  simdjson::dom::element doc;
  if (auto error = parser.parse(json.data(), json.size()).get(doc))
    throw Error(source + ": not a JSON report: " + simdjson::error_message(error));
  return doc;
}

int schema_version_of(simdjson::dom::element doc, const std::string& source) {
  simdjson::dom::object object;
  int64_t found = 0;
  bool has_version = !doc.get(object) && !object["schema_version"].get(found);
  return readable_schema_version(source, has_version ? std::optional(found) : std::nullopt);
}

std::vector<std::string_view> top_level_keys(int version) {
  std::vector<std::string_view> keys = {"schema_version", "tool", "root",   "shard",
                                        "timing_columns", "runs", "totals", "rows"};
  if (version >= 4) keys.push_back("plan");
  return keys;
}

// A member every report has; the page does without those it does not show (nothing).
std::optional<simdjson::dom::element> member(const ReportReader& reader, const Members& members, std::string_view key) {
  if (reader.for_page() && !members.count(key)) return std::nullopt;
  return reader.required(members, key, "");
}

// The report's own fields: the tool that wrote it, ROOT, the shard, the plan and the
// timing columns' names. The page shows a null tool or root as empty, and has no use
// for the plan or the names.
void read_head(const ReportReader& reader, const Members& members, ReportRead& read) {
  Report& report = read.report;
  simdjson::dom::element tool = reader.required(members, "tool", "");
  std::string_view tool_text;
  if (!(reader.for_page() && tool.is_null()) && tool.get(tool_text)) reader.fail("tool", "expected a string");
  read.tool = std::string(tool_text);
  simdjson::dom::element root = reader.required(members, "root", "");
  if (!(reader.for_page() && root.is_null())) report.root = reader.text(root, "root");

  std::optional<simdjson::dom::element> shard = member(reader, members, "shard");
  if (shard && !shard->is_null()) {
    auto fields = reader.members(*shard, "shard", {"index", "count"});
    int64_t count = reader.integer(reader.required(fields, "count", "shard"), "shard.count", kMaxShards);
    int64_t index = reader.integer(reader.required(fields, "index", "shard"), "shard.index", kMaxShards);
    if (!valid_shard(index, count))
      reader.fail("shard", "index " + std::to_string(index) + " is not below count " + std::to_string(count));
    report.shard = Shard{int(index), int(count)};
  }
  if (reader.for_page()) return;
  if (reader.version() >= 4) {
    simdjson::dom::element plan = reader.required(members, "plan", "");
    if (!plan.is_null())
      report.plan =
          read_plan(reader, reader.members(plan, "plan", {"digest", "count", "iterations"}), "plan", report.shard);
  }
  simdjson::dom::array names;
  if (reader.required(members, "timing_columns", "").get(names)) reader.fail("timing_columns", "expected an array");
  for (simdjson::dom::element name : names)
    if (!name.is_string()) reader.fail("timing_columns", "expected strings", excerpt(name));
}

void read_runs(const ReportReader& reader, const Members& members, Report& report) {
  std::optional<simdjson::dom::element> value = member(reader, members, "runs");
  if (!value) return;
  simdjson::dom::array runs;
  if (value->get(runs)) reader.fail("runs", "expected an array");
  size_t n = 0;
  for (simdjson::dom::element item : runs)
    report.runs.push_back(read_run(reader, item, "runs[" + std::to_string(n++) + "]"));
}

void read_rows(const ReportReader& reader, const Members& members, ReportRead& read) {
  simdjson::dom::array rows;
  if (reader.required(members, "rows", "").get(rows)) reader.fail("rows", "expected an array");
  size_t n = 0;
  for (simdjson::dom::element item : rows)
    read.report.rows.push_back(read_row(reader, item, "rows[" + std::to_string(n++) + "]", read));
}

// The totals: those the rows give (`verify_agreement`), or an object. The page shows them
// as the report gives them, under the column names now.
void read_totals(const ReportReader& reader, const Members& members, ReportRead& read, bool verify_agreement) {
  std::optional<simdjson::dom::element> totals = member(reader, members, "totals");
  if (reader.for_page()) {
    read.totals = totals ? page_totals(reader, *totals) : JsonValue::object();
  } else if (verify_agreement) {
    check_totals(reader, *totals, read.report.rows);
  } else if (!totals->is_object()) {
    reader.fail("totals", "expected an object");
  }
}

// What the sweep took is its plan's share: a row of another iteration was not planned.
void check_rows_against_plan(const ReportReader& reader, const Report& report) {
  if (!report.plan) return;
  const std::vector<std::string>& taken = report.plan->iterations;
  for (size_t i = 0; i < report.rows.size(); ++i) {
    const Row& row = report.rows[i];
    if (row.kind != RowKind::problem && !std::binary_search(taken.begin(), taken.end(), row.text(ColumnId::dir)))
      reader.fail("rows[" + std::to_string(i) + "].dir", "not one of the plan's iterations (plan.iterations)");
  }
  if (!report.shard && plan_digest(taken) != report.plan->digest)
    reader.fail("plan.digest", "not the digest of the iterations listed");
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
    if (!std::holds_alternative<std::monostate>(filled.get(c))) continue;
    // A record written before schema 3 (an output of the previous release, still up to
    // date) names a renamed column as schema 2 did.
    simdjson::dom::element value;
    if (item[column.name].get(value) && item[column_name_in_schema(column.name, 2)].get(value)) continue;
    if (value.is_null()) continue;
    auto cell = cell_from_json(value, column, false);
    if (!std::holds_alternative<Cell>(cell)) return false;
    filled.set(ColumnId(c), std::move(std::get<Cell>(cell)));
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

ReportRead read_report(std::string_view json, const std::string& source, Reading reading, bool verify_agreement) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parse_document(parser, json, source);
  // The version first, so that a report of another version says only that.
  ReportReader reader(source, schema_version_of(doc, source), reading);
  Members members = reader.members(doc, "", top_level_keys(reader.version()));
  ReportRead read;
  read.report.source = source;
  read_head(reader, members, read);  // tool, root, shard, plan
  read_runs(reader, members, read.report);
  read_rows(reader, members, read);
  read_totals(reader, members, read, verify_agreement);
  if (verify_agreement && !reader.for_page()) check_rows_against_plan(reader, read.report);
  return read;
}

Report parse_report_json(std::string_view json, const std::string& source, bool verify_agreement) {
  return read_report(json, source, Reading::strict, verify_agreement).report;
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
