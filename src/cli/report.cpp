// The sweep report. Rows are a fixed set of typed columns (report_columns) so that the
// JSON and the CSV say the same thing, a partial report reads back without loss, and a
// combined report of shards equals a single-node report in every non-timing column: the
// rows are sorted by a key made only of their own values, and totals are recomputed from
// the rows instead of being added up from the partial reports.
#include "report.hpp"

#include <simdjson.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>
#include <stdexcept>

#include "files.hpp"
#include "tracelane/json_value.hpp"
#include "tracelane/trace.hpp"

namespace tracelane::cli {

namespace {

constexpr unsigned F = 1u << unsigned(RowKind::file);
constexpr unsigned M = 1u << unsigned(RowKind::merge);
constexpr unsigned P = 1u << unsigned(RowKind::problem);
constexpr auto T = ColumnType::text;
constexpr auto I = ColumnType::integer;
constexpr auto R = ColumnType::real;

const std::vector<Column> kColumns = {
    // name, type, kinds, summed, timing, decimals
    {"kind", T, F | M | P, false, false},
    {"dir", T, F | M | P, false, false},
    {"file", T, F, false, false},
    {"run", T, F | M, false, false},
    {"iteration", T, F | M, false, false},
    {"rank", I, F, false, false},
    {"pp_rank", I, F, false, false},
    {"ranks", I, M, false, false},
    {"pp_order", T, M, false, false},
    {"pp_order_source", T, M, false, false},
    {"time_alignment", T, M, false, false},
    {"input_bytes", I, F | M, true, false},
    {"output_bytes", I, F | M, true, false},
    {"events", I, F, true, false},
    {"measured_slices", I, F, true, false},
    {"original_streams", I, F, true, false},
    {"compacted_lanes", I, F, true, false},
    {"compaction_ratio", R, F, false, false, 4},
    {"flows_mapped", I, F, true, false},
    {"flows_unmapped", I, F, true, false},
    {"annotations_mapped", I, F, true, false},
    {"annotations_coalesced", I, F, true, false},
    {"cuda_graph_launches", I, F, true, false},
    {"pp_send_recv_pairs", I, M, true, false},
    {"pp_send_recv_unmatched", I, M, true, false},
    {"pp_compute_dependency_pairs", I, M, true, false},
    {"pp_compute_dependency_unmatched", I, M, true, false},
    {"pp_unshard_compute_pairs", I, M, true, false},
    {"pp_unshard_compute_unmatched", I, M, true, false},
    {"output", T, F | M, false, false},
    {"seconds", R, F | M, true, true, 3},
    {"status", T, F | M | P, false, false},
    {"error", T, F | M | P, false, false},
};

std::string format_real(double value, int decimals) {
  if (!std::isfinite(value)) return "";
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

JsonValue cell_json(const Cell& cell, const Column& column) {
  if (std::holds_alternative<int64_t>(cell)) return JsonValue::integer(std::get<int64_t>(cell));
  if (std::holds_alternative<double>(cell)) {
    std::string text = format_real(std::get<double>(cell), column.decimals);
    return text.empty() ? JsonValue::null() : JsonValue::raw_number(text);
  }
  if (std::holds_alternative<std::string>(cell)) return JsonValue::string(std::get<std::string>(cell));
  return JsonValue::null();
}

// A cell of `column` from its JSON value in a report or a row record; nothing when the
// value is of another type.
std::optional<Cell> cell_from_json(simdjson::dom::element value, const Column& column) {
  if (column.type == ColumnType::text) {
    std::string_view text;
    if (value.get(text)) return std::nullopt;
    return Cell(std::string(text));
  }
  if (column.type == ColumnType::integer) {
    int64_t number;
    if (value.get(number)) return std::nullopt;
    return Cell(number);
  }
  double number;
  if (value.get(number)) return std::nullopt;
  return Cell(number);
}

std::string shard_label(const std::pair<int, int>& shard) {
  return std::to_string(shard.first) + "/" + std::to_string(shard.second);
}

const char* status_of(const Row& row) {
  const Cell& cell = row.get("status");
  return std::holds_alternative<std::string>(cell) ? std::get<std::string>(cell).c_str() : "";
}

struct Totals {
  std::map<std::string, int64_t> counts;  // "<kind>s", "<kind>s_<status>"
  std::vector<Cell> sums = std::vector<Cell>(kColumns.size());
};

// File columns are summed over file rows, merge-only columns over merge rows, so that
// input_bytes counts every rank file once.
Totals compute_totals(const std::vector<Row>& rows) {
  Totals totals;
  for (RowKind kind : {RowKind::file, RowKind::merge, RowKind::problem}) {
    std::string plural = std::string(kind_name(kind)) + "s";
    totals.counts[plural] = 0;
    for (const char* status : {"ok", "skipped", "failed"})
      if (kind != RowKind::problem || std::string_view(status) != "ok") totals.counts[plural + "_" + status] = 0;
    if (kind == RowKind::problem) totals.counts[plural + "_warning"] = 0;
  }
  for (const Row& row : rows) {
    std::string plural = std::string(kind_name(row.kind)) + "s";
    totals.counts[plural]++;
    totals.counts[plural + "_" + status_of(row)]++;
    for (size_t c = 0; c < kColumns.size(); ++c) {
      const Column& column = kColumns[c];
      if (!column.summed) continue;
      RowKind summed_kind = (column.kinds & F) ? RowKind::file : RowKind::merge;
      if (row.kind != summed_kind) continue;
      const Cell& cell = row.cells[c];
      Cell& sum = totals.sums[c];
      if (std::holds_alternative<int64_t>(cell))
        sum = (std::holds_alternative<int64_t>(sum) ? std::get<int64_t>(sum) : 0) + std::get<int64_t>(cell);
      else if (std::holds_alternative<double>(cell))
        sum = (std::holds_alternative<double>(sum) ? std::get<double>(sum) : 0.0) + std::get<double>(cell);
    }
  }
  return totals;
}

}  // namespace

const char* kind_name(RowKind kind) {
  switch (kind) {
    case RowKind::file: return "file";
    case RowKind::merge: return "merge";
    case RowKind::problem: return "problem";
  }
  return "?";
}

const std::vector<Column>& report_columns() { return kColumns; }

size_t column_index(std::string_view name) {
  for (size_t i = 0; i < kColumns.size(); ++i)
    if (name == kColumns[i].name) return i;
  throw std::out_of_range("no report column " + std::string(name));
}

Row& Row::set(std::string_view column, Cell value) {
  cells[column_index(column)] = std::move(value);
  return *this;
}

const Cell& Row::get(std::string_view column) const { return cells[column_index(column)]; }

void sort_rows(std::vector<Row>& rows) {
  auto text = [](const Row& row, const char* column) {
    const Cell& cell = row.get(column);
    return std::holds_alternative<std::string>(cell) ? std::get<std::string>(cell) : std::string();
  };
  auto number = [](const Row& row, const char* column) {
    const Cell& cell = row.get(column);
    return std::holds_alternative<int64_t>(cell) ? std::get<int64_t>(cell) : int64_t(0);
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
    auto key = [&](const Row& row) {
      return std::make_tuple(text(row, "dir"), int(row.kind), number(row, "rank"), text(row, "file"),
                             text(row, "error"));
    };
    return key(a) < key(b);
  });
}

std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string cell_text(const Cell& cell, const Column& column) {
  if (std::holds_alternative<int64_t>(cell)) return std::to_string(std::get<int64_t>(cell));
  if (std::holds_alternative<double>(cell)) return format_real(std::get<double>(cell), column.decimals);
  if (std::holds_alternative<std::string>(cell)) return std::get<std::string>(cell);
  return "";
}

std::string report_json(const Report& report) {
  JsonValue doc = JsonValue::object();
  doc.set("schema_version", JsonValue::integer(kReportSchemaVersion));
  doc.set("tool", JsonValue::string("tracelane " TRACELANE_VERSION));
  doc.set("root", JsonValue::string(report.root));
  if (report.shard) {
    JsonValue shard = JsonValue::object();
    shard.set("index", JsonValue::integer(report.shard->first));
    shard.set("count", JsonValue::integer(report.shard->second));
    doc.set("shard", shard);
  } else {
    doc.set("shard", JsonValue::null());
  }
  doc.set("timing_columns", [&] {
    JsonValue names = JsonValue::array();
    for (const Column& column : kColumns)
      if (column.timing) names.push(JsonValue::string(column.name));
    return names;
  }());
  JsonValue runs = JsonValue::array();
  for (const RunInfo& run : report.runs) {
    JsonValue item = JsonValue::object();
    item.set("shard", run.shard ? JsonValue::string(shard_label(*run.shard)) : JsonValue::null());
    item.set("wall_seconds", JsonValue::raw_number(format_real(run.wall_seconds, 3)));
    item.set("jobs", JsonValue::integer(run.jobs));
    item.set("memory_budget_bytes", JsonValue::integer(int64_t(run.memory_budget_bytes)));
    runs.push(item);
  }
  doc.set("runs", runs);

  Totals totals = compute_totals(report.rows);
  JsonValue totals_json = JsonValue::object();
  for (const auto& [key, value] : totals.counts) totals_json.set(key, JsonValue::integer(value));
  for (size_t c = 0; c < kColumns.size(); ++c)
    if (kColumns[c].summed) totals_json.set(kColumns[c].name, cell_json(totals.sums[c], kColumns[c]));
  JsonValue unmatched = JsonValue::array();
  for (const auto& [dir, count] : unmatched_iterations(report.rows)) unmatched.push(JsonValue::string(dir));
  totals_json.set("iterations_with_unmatched_send_recv", unmatched);
  doc.set("totals", totals_json);

  JsonValue rows = JsonValue::array();
  for (const Row& row : report.rows) {
    JsonValue item = JsonValue::object();
    unsigned bit = 1u << unsigned(row.kind);
    for (size_t c = 0; c < kColumns.size(); ++c) {
      if (!(kColumns[c].kinds & bit)) continue;
      if (c == 0)
        item.set("kind", JsonValue::string(kind_name(row.kind)));
      else
        item.set(kColumns[c].name, cell_json(row.cells[c], kColumns[c]));
    }
    rows.push(item);
  }
  doc.set("rows", rows);
  return doc.dump(2) + "\n";
}

std::string row_record(const Row& row) {
  JsonValue item = JsonValue::object();
  item.set("kind", JsonValue::string(kind_name(row.kind)));
  for (size_t c = 1; c < kColumns.size(); ++c)
    if (!kColumns[c].timing && !std::holds_alternative<std::monostate>(row.cells[c]))
      item.set(kColumns[c].name, cell_json(row.cells[c], kColumns[c]));
  return item.dump(-1);
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
    std::string_view name = column.name;
    if (column.timing || name == "status" || name == "error") continue;
    if (!std::holds_alternative<std::monostate>(filled.cells[c])) continue;
    simdjson::dom::element value;
    if (item[column.name].get(value) || value.is_null()) continue;
    std::optional<Cell> cell = cell_from_json(value, column);
    if (!cell) return false;
    filled.cells[c] = std::move(*cell);
  }
  row = std::move(filled);
  return true;
}

std::string report_csv(const Report& report) {
  // CRLF line ends (RFC 4180); pandas and spreadsheets read them as plain line ends.
  std::string out;
  for (size_t c = 0; c < kColumns.size(); ++c) out += (c ? "," : "") + std::string(kColumns[c].name);
  out += "\r\n";
  auto write_cells = [&](const std::vector<Cell>& cells, const char* kind) {
    for (size_t c = 0; c < kColumns.size(); ++c) {
      if (c) out += ',';
      std::string text = c == 0 ? std::string(kind) : cell_text(cells[c], kColumns[c]);
      out += csv_field(text);
    }
    out += "\r\n";
  };
  for (const Row& row : report.rows) write_cells(row.cells, kind_name(row.kind));
  Totals totals = compute_totals(report.rows);
  std::vector<Cell> total_cells = totals.sums;
  total_cells[column_index("status")] = std::string(has_failures(report.rows) ? "failed" : "ok");
  write_cells(total_cells, "total");
  return out;
}

Report parse_report_json(std::string_view json, const std::string& source) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto error = parser.parse(json.data(), json.size()).get(doc))
    throw Error(source + ": not a JSON report: " + simdjson::error_message(error));
  int64_t version = 0;
  if (doc["schema_version"].get(version) || version != kReportSchemaVersion)
    throw Error(source + ": not a tracelane report with schema_version " + std::to_string(kReportSchemaVersion));
  Report report;
  std::string_view text;
  if (!doc["root"].get(text)) report.root = std::string(text);
  simdjson::dom::object shard;
  if (!doc["shard"].get(shard)) {
    int64_t index = 0, count = 0;
    if (shard["index"].get(index) || shard["count"].get(count) || count < 1 || index < 0 || index >= count)
      throw Error(source + ": malformed shard");
    report.shard = {int(index), int(count)};
  }
  simdjson::dom::array runs;
  if (!doc["runs"].get(runs)) {
    for (simdjson::dom::element item : runs) {
      RunInfo run;
      std::string_view label;
      if (!item["shard"].get(label)) {
        int k = 0, n = 0;
        if (std::sscanf(std::string(label).c_str(), "%d/%d", &k, &n) == 2) run.shard = {k, n};
      }
      double wall = 0;
      if (!item["wall_seconds"].get(wall)) run.wall_seconds = wall;
      int64_t value = 0;
      if (!item["jobs"].get(value)) run.jobs = int(value);
      if (!item["memory_budget_bytes"].get(value)) run.memory_budget_bytes = uint64_t(value);
      report.runs.push_back(run);
    }
  }
  simdjson::dom::array rows;
  if (doc["rows"].get(rows)) throw Error(source + ": report has no rows array");
  for (simdjson::dom::element item : rows) {
    std::string_view kind;
    if (item["kind"].get(kind)) throw Error(source + ": a row without kind");
    Row row;
    if (kind == "file")
      row.kind = RowKind::file;
    else if (kind == "merge")
      row.kind = RowKind::merge;
    else if (kind == "problem")
      row.kind = RowKind::problem;
    else
      throw Error(source + ": unknown row kind '" + std::string(kind) + "'");
    for (size_t c = 1; c < kColumns.size(); ++c) {
      const Column& column = kColumns[c];
      simdjson::dom::element value;
      if (item[column.name].get(value) || value.is_null()) continue;
      if (std::optional<Cell> cell = cell_from_json(value, column)) row.cells[c] = std::move(*cell);
    }
    report.rows.push_back(std::move(row));
  }
  return report;
}

std::string report_base_name(const std::optional<std::pair<int, int>>& shard) {
  if (!shard) return "tracelane_report";
  return "tracelane_report.shard-" + std::to_string(shard->first) + "-of-" + std::to_string(shard->second);
}

fs::path write_report(const Report& report, const fs::path& dir) {
  std::string base = report_base_name(report.shard);
  fs::path json_path = dir / (base + ".json");
  write_atomically(dir / (base + ".csv"), report_csv(report), true);
  write_atomically(json_path, report_json(report), true);
  return json_path;
}

std::vector<std::pair<std::string, int64_t>> unmatched_iterations(const std::vector<Row>& rows) {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const Row& row : rows) {
    if (row.kind != RowKind::merge) continue;
    const Cell& cell = row.get("pp_send_recv_unmatched");
    if (std::holds_alternative<int64_t>(cell) && std::get<int64_t>(cell) > 0) {
      const Cell& dir = row.get("dir");
      out.push_back({std::holds_alternative<std::string>(dir) ? std::get<std::string>(dir) : "", std::get<int64_t>(cell)});
    }
  }
  return out;
}

bool has_failures(const std::vector<Row>& rows) {
  for (const Row& row : rows)
    if (std::string_view(status_of(row)) == "failed") return true;
  return false;
}

Combined combine_reports(const std::vector<Report>& partials) {
  Combined combined;
  std::optional<int> count;
  std::set<int> seen;
  for (const Report& partial : partials) {
    if (combined.report.root.empty()) combined.report.root = partial.root;
    if (partial.root != combined.report.root)
      combined.problems.push_back("reports of different roots: " + combined.report.root + " and " + partial.root);
    if (partial.shard) {
      if (count && *count != partial.shard->second)
        combined.problems.push_back("shard counts differ: " + std::to_string(*count) + " and " +
                                    std::to_string(partial.shard->second));
      count = partial.shard->second;
      if (!seen.insert(partial.shard->first).second)
        combined.problems.push_back("shard " + shard_label(*partial.shard) + " given twice");
    }
    combined.report.runs.insert(combined.report.runs.end(), partial.runs.begin(), partial.runs.end());
    combined.report.rows.insert(combined.report.rows.end(), partial.rows.begin(), partial.rows.end());
  }
  if (count)
    for (int k = 0; k < *count; ++k)
      if (!seen.count(k)) combined.missing_shards.push_back(k);
  sort_rows(combined.report.rows);
  return combined;
}

int run_report(int argc, char** argv) {
  namespace po = boost::program_options;
  std::vector<std::string> combine;
  std::string report_dir;
  bool quiet = false;
  po::options_description options("report options");
  options.add_options()("help,h", "show this help")(
      "combine", po::value(&combine)->multitoken(),
      "partial reports (tracelane_report.shard-K-of-N.json) or directories holding them")(
      "report-dir", po::value(&report_dir), "where to write tracelane_report.json/.csv (default: the first directory)")(
      "quiet,q", po::bool_switch(&quiet), "print only problems");
  po::positional_options_description positional;
  positional.add("combine", -1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(options).positional(positional).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "tracelane report: " << e.what() << "\n";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << "usage: tracelane report --combine DIR_OR_FILES... [--report-dir DIR]\n\n" << options;
    return 0;
  }
  if (combine.empty()) {
    std::cerr << "tracelane report: nothing to combine (give --combine DIR_OR_FILES...)\n";
    return 2;
  }
  std::vector<fs::path> files;
  fs::path first_dir;
  for (const std::string& arg : combine) {
    fs::path path(arg);
    boost::system::error_code ec;
    if (fs::is_directory(path, ec)) {
      if (first_dir.empty()) first_dir = path;
      std::vector<fs::path> found;
      for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
        std::string name = it->path().filename().string();
        if (name.rfind("tracelane_report.shard-", 0) == 0 && it->path().extension() == ".json")
          found.push_back(it->path());
      }
      if (ec) {
        std::cerr << path.string() << ": cannot list directory: " << ec.message() << "\n";
        return 2;
      }
      std::sort(found.begin(), found.end());
      if (found.empty()) std::cerr << path.string() << ": no tracelane_report.shard-*.json here\n";
      files.insert(files.end(), found.begin(), found.end());
    } else {
      if (first_dir.empty()) first_dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
      files.push_back(path);
    }
  }
  if (files.empty()) return 2;
  std::vector<Report> partials;
  bool unreadable = false;
  for (const fs::path& file : files) {
    try {
      partials.push_back(parse_report_json(read_file(file), file.string()));
    } catch (const Error& e) {
      std::cerr << e.what() << "\n";
      unreadable = true;
    }
  }
  Combined combined = combine_reports(partials);
  for (const std::string& problem : combined.problems) std::cerr << "tracelane report: " << problem << "\n";
  fs::path out_dir = report_dir.empty() ? first_dir : fs::path(report_dir);
  fs::path written;
  try {
    boost::system::error_code ec;
    fs::create_directories(out_dir, ec);
    written = write_report(combined.report, out_dir);
  } catch (const Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  if (!combined.missing_shards.empty()) {
    int count = 0;
    for (const Report& partial : partials)
      if (partial.shard) count = partial.shard->second;
    std::cerr << "missing shards:";
    for (int k : combined.missing_shards) std::cerr << " " << k;
    std::cerr << " (of " << count << ")\n";
  }
  std::vector<std::string> failed_shards;
  for (const Report& partial : partials)
    if (has_failures(partial.rows))
      failed_shards.push_back(partial.shard ? shard_label(*partial.shard) : std::string("(unsharded)"));
  if (!failed_shards.empty()) {
    std::cerr << "shards with failed rows:";
    for (const auto& label : failed_shards) std::cerr << " " << label;
    std::cerr << "\n";
  }
  for (const auto& [dir, count] : unmatched_iterations(combined.report.rows))
    std::cerr << dir << ": " << count << " PP send/recv unmatched (a truncated capture window?)\n";
  if (!quiet)
    std::cout << written.string() << ": " << combined.report.rows.size() << " rows from " << partials.size()
              << " partial reports\n";
  bool failed = unreadable || !combined.missing_shards.empty() || !failed_shards.empty() || !combined.problems.empty();
  return failed ? 1 : 0;
}

}  // namespace tracelane::cli
