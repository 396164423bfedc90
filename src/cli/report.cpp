// The sweep report. Rows are a fixed set of typed columns (report_columns) so that the
// JSON and the CSV say the same thing, a partial report reads back without loss, and a
// combined report of shards equals a single-node report in every non-timing column: the
// rows are sorted by a key made only of their own values, and totals are recomputed from
// the rows instead of being added up from the partial reports.
//
// A report is read by people and programs that trust it, and written from names anyone
// with write access to the tree chose: text cells are written in printable()'s escaped
// form (valid UTF-8, reversible), CSV text cells never start a spreadsheet formula, and a
// partial report read back by `report --combine` is checked field by field, as untrusted
// as any other file in the tree.
#include "report.hpp"

#include <simdjson.h>

#include <sys/stat.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <set>
#include <stdexcept>

#include "files.hpp"
#include "tracelane/gzip.hpp"
#include "printable.hpp"
#include "report_html.hpp"
#include "tracelane/decimal_time.hpp"
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
    // sweep --remove-originals: "removed" or "kept: <reason>"; empty without the flag.
    {"original", T, F, false, false},
};

// The largest real a report holds (seconds, ratios): 1e15 s is 31 million years. Beyond
// it, "%.3f" would write hundreds of digits, a number JSON readers (simdjson) refuse.
constexpr double kMaxReal = 1e15;

std::string format_real(double value, int decimals) {
  if (!std::isfinite(value)) return "";
  char buffer[400];
  // A sum of many reals may pass kMaxReal: the exponent form, which every reader takes.
  if (std::fabs(value) >= kMaxReal)
    std::snprintf(buffer, sizeof buffer, "%.17g", value);
  else
    std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

// A group id as a report writes it (printable()'s escaped form, like every text cell).
std::string report_text(const std::string& text) { return printable(text, Backslash::escape); }

// The figures' keys, after the columns (report_json, parse_report_json).
const std::vector<std::string_view> kFigureKeys = {"gpu_window_us", "gpu_busy", "bubble_fraction", "timeline"};

JsonValue cell_json(const Cell& cell, const Column& column) {
  if (std::holds_alternative<int64_t>(cell)) return JsonValue::integer(std::get<int64_t>(cell));
  if (std::holds_alternative<double>(cell)) {
    std::string text = format_real(std::get<double>(cell), column.decimals);
    return text.empty() ? JsonValue::null() : JsonValue::raw_number(text);
  }
  if (std::holds_alternative<std::string>(cell))
    return JsonValue::string(printable(std::get<std::string>(cell), Backslash::escape));
  return JsonValue::null();
}

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

std::string shard_label(const std::pair<int, int>& shard) {
  return std::to_string(shard.first) + "/" + std::to_string(shard.second);
}

// A shard K/N as a report may hold it: 0 <= K < N <= kMaxShards.
bool valid_shard(int64_t index, int64_t count) { return count >= 1 && count <= kMaxShards && index >= 0 && index < count; }

// "K/N" (a run's shard label): digits only, in range; nothing otherwise.
std::optional<std::pair<int, int>> parse_shard_label(std::string_view label) {
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
  return std::pair<int, int>{int(*k), int(*n)};
}

// A value from a report for a message: short, one line (printable() is applied where the
// message is printed).
std::string excerpt(simdjson::dom::element value) {
  std::string text = simdjson::minify(value);
  if (text.size() > 60) text = text.substr(0, 60) + "...";
  return text;
}

const char* status_of(const Row& row) {
  const Cell& cell = row.get("status");
  return std::holds_alternative<std::string>(cell) ? std::get<std::string>(cell).c_str() : "";
}

struct Totals {
  std::map<std::string, int64_t> counts;  // "<kind>s", "<kind>s_<status>"
  std::vector<Cell> sums = std::vector<Cell>(kColumns.size());
  // Columns whose sum does not fit (beyond int64, or an infinite real): their sum is
  // absent. Rows of a real tree never get near; rows read from reports are checked for it.
  std::set<std::string> overflowed;
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
      if (std::holds_alternative<int64_t>(cell)) {
        int64_t before = std::holds_alternative<int64_t>(sum) ? std::get<int64_t>(sum) : 0, after;
        if (__builtin_add_overflow(before, std::get<int64_t>(cell), &after)) {
          totals.overflowed.insert(column.name);
          after = before;
        }
        sum = after;
      } else if (std::holds_alternative<double>(cell)) {
        sum = (std::holds_alternative<double>(sum) ? std::get<double>(sum) : 0.0) + std::get<double>(cell);
      }
    }
  }
  for (size_t c = 0; c < kColumns.size(); ++c) {
    bool infinite = std::holds_alternative<double>(totals.sums[c]) && !std::isfinite(std::get<double>(totals.sums[c]));
    if (infinite) totals.overflowed.insert(kColumns[c].name);
  }
  for (const std::string& name : totals.overflowed) totals.sums[column_index(name)] = std::monostate();
  return totals;
}

// The totals object of report_json().
JsonValue totals_json(const std::vector<Row>& rows) {
  Totals totals = compute_totals(rows);
  JsonValue out = JsonValue::object();
  for (const auto& [key, value] : totals.counts) out.set(key, JsonValue::integer(value));
  for (size_t c = 0; c < kColumns.size(); ++c)
    if (kColumns[c].summed) out.set(kColumns[c].name, cell_json(totals.sums[c], kColumns[c]));
  JsonValue unmatched = JsonValue::array();
  for (const auto& [dir, count] : unmatched_iterations(rows))
    unmatched.push(JsonValue::string(printable(dir, Backslash::escape)));
  out.set("iterations_with_unmatched_send_recv", unmatched);
  return out;
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
  if (!std::holds_alternative<std::string>(cell)) return "";
  // CSV injection (OWASP): a spreadsheet runs a cell that starts with = + - @ (or tab, CR)
  // as a formula, so a directory named "=HYPERLINK(...)" would be live in the report.
  // Such text cells get a leading ', and so do cells that already start with ', which
  // keeps the rule reversible: strip one leading ' from a text cell. Numbers are never
  // prefixed (a count is written as digits only). printable() has already escaped tab and
  // CR; they are in the list for whatever reaches here.
  std::string text = printable(std::get<std::string>(cell), Backslash::escape);
  if (!text.empty() && std::string_view("=+-@\t\r'").find(text[0]) != std::string_view::npos) text.insert(0, 1, '\'');
  return text;
}

std::optional<std::string> name_from_report(std::string_view text) {
  std::string bytes;
  bytes.reserve(text.size());
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;  // printable() writes lower case only
  };
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\') {
      bytes += text[i];
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '\\') {
      bytes += '\\';
      i += 1;
    } else if (i + 3 < text.size() && text[i + 1] == 'x' && hex(text[i + 2]) >= 0 && hex(text[i + 3]) >= 0) {
      bytes += char(hex(text[i + 2]) << 4 | hex(text[i + 3]));
      i += 3;
    } else {
      return std::nullopt;
    }
  }
  // Only the form printable() writes: "\x41" or a raw control character would decode to
  // bytes whose escaped form is another text, and a report must read back as it was written.
  if (printable(bytes, Backslash::escape) != text) return std::nullopt;
  return bytes;
}

std::string summarise_list(const std::vector<std::string>& first, int64_t total) {
  std::string out;
  for (size_t i = 0; i < first.size() && i < kListLimit; ++i) out += (i ? " " : "") + first[i];
  int64_t shown = int64_t(std::min(first.size(), kListLimit));
  if (total > shown) out += " ... and " + std::to_string(total - shown) + " more";
  return out;
}

std::string report_json(const Report& report) {
  JsonValue doc = JsonValue::object();
  doc.set("schema_version", JsonValue::integer(kReportSchemaVersion));
  doc.set("tool", JsonValue::string("tracelane " TRACELANE_VERSION));
  doc.set("root", JsonValue::string(printable(report.root, Backslash::escape)));
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

  doc.set("totals", totals_json(report.rows));

  JsonValue rows = JsonValue::array();
  for (const Row& row : report.rows) {
    JsonValue item = JsonValue::object();
    unsigned bit = 1u << unsigned(row.kind);
    for (size_t c = 0; c < kColumns.size(); ++c) {
      if (!(kColumns[c].kinds & bit)) continue;
      // "original" only where sweep --remove-originals filled it: a report of a sweep
      // without the flag is what it was before the column (and older readers read it).
      if (std::string_view(kColumns[c].name) == "original" && std::holds_alternative<std::monostate>(row.cells[c]))
        continue;
      if (c == 0)
        item.set("kind", JsonValue::string(kind_name(row.kind)));
      else
        item.set(kColumns[c].name, cell_json(row.cells[c], kColumns[c]));
    }
    if (row.figures && row.kind != RowKind::problem) add_figures_json(item, *row.figures, report_text);
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
    // "original" is what this run did with the rank file, never the output's.
    if (column.timing || name == "status" || name == "error" || name == "original") continue;
    if (!std::holds_alternative<std::monostate>(filled.cells[c])) continue;
    simdjson::dom::element value;
    if (item[column.name].get(value) || value.is_null()) continue;
    auto cell = cell_from_json(value, column);
    if (!std::holds_alternative<Cell>(cell)) return false;
    filled.cells[c] = std::move(std::get<Cell>(cell));
  }
  row = std::move(filled);
  return true;
}

std::string report_csv(const Report& report) {
  // CRLF line ends (RFC 4180); pandas and spreadsheets read them as plain line ends.
  std::string out;
  // "original" only when a row has it (sweep --remove-originals), as in report_json.
  const size_t original = column_index("original");
  const bool with_original = std::any_of(report.rows.begin(), report.rows.end(), [&](const Row& row) {
    return !std::holds_alternative<std::monostate>(row.cells[original]);
  });
  for (size_t c = 0; c < kColumns.size(); ++c)
    if (c != original || with_original) out += (c ? "," : "") + std::string(kColumns[c].name);
  // The figures' scalar columns last (the timeline is in the JSON report only).
  out += ",gpu_window_us,gpu_busy\r\n";
  auto write_cells = [&](const std::vector<Cell>& cells, const char* kind, const std::optional<GpuFigures>& figures) {
    for (size_t c = 0; c < kColumns.size(); ++c) {
      if (c == original && !with_original) continue;
      if (c) out += ',';
      std::string text = c == 0 ? std::string(kind) : cell_text(cells[c], kColumns[c]);
      out += csv_field(text);
    }
    out += ',';
    if (figures) out += real_text(figures->window_us);
    out += ',';
    // Through cell_text as any text cell: escaped, and never a live spreadsheet formula.
    if (figures && !figures->merged) out += csv_field(cell_text(Cell(busy_csv(*figures)), kColumns[0]));
    out += "\r\n";
  };
  for (const Row& row : report.rows)
    write_cells(row.cells, kind_name(row.kind), row.kind == RowKind::problem ? std::nullopt : row.figures);
  Totals totals = compute_totals(report.rows);
  std::vector<Cell> total_cells = totals.sums;
  total_cells[column_index("status")] = std::string(has_failures(report.rows) ? "failed" : "ok");
  write_cells(total_cells, "total", std::nullopt);
  return out;
}

namespace {

// parse_report_json's checks, with the JSON path of what is checked for the message.
class ReportReader {
 public:
  explicit ReportReader(const std::string& source) : source_(source) {}

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
    if (!bytes) fail(where, "not text as tracelane writes it (printable UTF-8, \\\\ and \\xHH escapes): " + excerpt(value));
    return *bytes;
  }

 private:
  const std::string& source_;
};

bool status_allowed(RowKind kind, std::string_view status) {
  if (kind == RowKind::problem) return status == "warning" || status == "failed";
  return status == "ok" || status == "skipped" || status == "failed" || status == "already laned";
}

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
                                       std::string_view status, const std::string& where) {
  bool any = false;
  for (std::string_view key : kFigureKeys) any = any || members.count(key);
  if (!any) return std::nullopt;
  if (kind == RowKind::problem || (status != "ok" && status != "skipped"))
    reader.fail(where, std::string("GPU figures on a ") + kind_name(kind) + " row with status " + std::string(status) +
                           " (only ok and skipped file and merge rows have them)");
  GpuFigures figures;
  figures.merged = kind == RowKind::merge;
  const char* absent = figures.merged ? "gpu_busy" : "bubble_fraction";
  if (members.count(absent)) reader.fail(where + "." + absent, std::string("not a key of ") + kind_name(kind) + " rows");

  simdjson::dom::element window = reader.required(members, "gpu_window_us", where);
  if (window.get(figures.window_us) || !std::isfinite(figures.window_us) || figures.window_us < 0 ||
      figures.window_us > kMaxReal)
    reader.fail(where + ".gpu_window_us", "expected a finite non-negative number of at most 1e15, got " + excerpt(window));

  if (!figures.merged) {
    std::string path = where + ".gpu_busy";
    for (auto [key, value] : object_items(reader, reader.required(members, "gpu_busy", where), path)) {
      std::optional<std::string> name = name_from_report(key);
      if (!name || name->empty()) reader.fail(path, "a group name is not text as tracelane writes it: " + std::string(key));
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
  auto fields = reader.members(reader.required(members, "timeline", where), path, {"start_us", "end_us", "bins", "strips"});
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
      reader.fail(at + ".occupancy", "expected " + std::to_string(timeline.bins) + " digits, got " + excerpt(occupancy));
    strip.occupancy = std::string(digits);
    timeline.strips.push_back(std::move(strip));
  }
  return figures;
}

Row read_row(const ReportReader& reader, simdjson::dom::element item, const std::string& where) {
  static const std::vector<std::string_view> known = [] {
    std::vector<std::string_view> names;
    for (const Column& column : kColumns) names.push_back(column.name);
    names.insert(names.end(), kFigureKeys.begin(), kFigureKeys.end());
    return names;
  }();
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
    std::string path = where + "." + column.name;
    auto it = members.find(column.name);
    if (!(column.kinds & bit)) {
      if (it != members.end()) reader.fail(path, std::string("not a column of ") + kind_name(row.kind) + " rows");
      continue;
    }
    // "original" is written only when filled (report_json): absent reads as empty.
    if (it == members.end() && std::string_view(column.name) == "original") continue;
    if (it == members.end()) reader.fail(path, "missing");
    if (it->second.is_null()) continue;
    auto cell = cell_from_json(it->second, column);
    if (std::holds_alternative<std::string>(cell))
      reader.fail(path, std::get<std::string>(cell) + ", got " + excerpt(it->second));
    row.cells[c] = std::move(std::get<Cell>(cell));
  }
  // sweep --remove-originals writes "removed" or "kept: <reason>".
  if (const Cell& original = row.get("original"); std::holds_alternative<std::string>(original)) {
    std::string_view text = std::get<std::string>(original);
    if (text != "removed" && text.substr(0, 6) != "kept: ")
      reader.fail(where + ".original", "expected \"removed\" or \"kept: <reason>\", got " + excerpt(members.at("original")));
  }
  // What identifies a row and decides the outcome is never unknown.
  for (const char* name : {"dir", "status"})
    if (!std::holds_alternative<std::string>(row.get(name))) reader.fail(where + "." + name, "missing (null)");
  if (!status_allowed(row.kind, status_of(row)))
    reader.fail(where + ".status", std::string("not a status of ") + kind_name(row.kind) + " rows: " +
                                       excerpt(members.at("status")));
  row.figures = read_figures(reader, members, row.kind, status_of(row), where);
  return row;
}

RunInfo read_run(const ReportReader& reader, simdjson::dom::element item, const std::string& where) {
  auto members = reader.members(item, where, {"shard", "wall_seconds", "jobs", "memory_budget_bytes"});
  RunInfo run;
  simdjson::dom::element shard = reader.required(members, "shard", where);
  if (!shard.is_null()) {
    std::string_view label;
    std::optional<std::pair<int, int>> parsed;
    if (!shard.get(label)) parsed = parse_shard_label(label);
    if (!parsed)
      reader.fail(where + ".shard", "expected null or \"K/N\" with 0 <= K < N <= " + std::to_string(kMaxShards) +
                                        ", got " + excerpt(shard));
    run.shard = parsed;
  }
  double wall = 0;
  simdjson::dom::element seconds = reader.required(members, "wall_seconds", where);
  if (seconds.get(wall) || !std::isfinite(wall) || wall < 0 || wall > kMaxReal)
    reader.fail(where + ".wall_seconds", "expected a finite non-negative number of at most 1e15, got " + excerpt(seconds));
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
  for (auto [key, value] : expected) keys.push_back(key);
  auto members = reader.members(given, "totals", keys);
  for (auto [expected_key, value] : expected) {
    std::string_view key = expected_key;  // clang 14 cannot capture a structured binding
    std::string path = "totals." + std::string(key);
    simdjson::dom::element got = reader.required(members, key, "totals");
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

std::string figures_record(const Row& row) {
  if (!row.figures || row.kind == RowKind::problem) return {};
  JsonValue item = JsonValue::object();
  add_figures_json(item, *row.figures, report_text);
  std::string record = gzip_compress(item.dump(-1), 12);
  return record.size() <= kFiguresRecordMax ? record : std::string();
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
    std::optional<GpuFigures> figures = read_figures(reader, members, row.kind, "ok", "");
    if (!figures) return false;
    row.figures = std::move(figures);
    return true;
  } catch (const Error&) {
    return false;  // damaged, truncated, too large or not ours: the row has no figures
  }
}

Report parse_report_json(std::string_view json, const std::string& source, bool verify_totals) {
  ReportReader reader(source);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto error = parser.parse(json.data(), json.size()).get(doc))
    throw Error(source + ": not a JSON report: " + simdjson::error_message(error));
  // The version first, so that a report of another version says only that.
  simdjson::dom::object object;
  int64_t version = 0;
  if (doc.get(object) || object["schema_version"].get(version) || version != kReportSchemaVersion)
    throw Error(source + ": not a tracelane report with schema_version " + std::to_string(kReportSchemaVersion));
  auto members =
      reader.members(doc, "", {"schema_version", "tool", "root", "shard", "timing_columns", "runs", "totals", "rows"});
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
    report.shard = {int(index), int(count)};
  }

  simdjson::dom::array names;
  if (reader.required(members, "timing_columns", "").get(names)) reader.fail("timing_columns", "expected an array");
  for (simdjson::dom::element name : names)
    if (!name.is_string()) reader.fail("timing_columns", "expected strings, got " + excerpt(name));

  simdjson::dom::array runs;
  if (reader.required(members, "runs", "").get(runs)) reader.fail("runs", "expected an array");
  size_t n = 0;
  for (simdjson::dom::element item : runs) report.runs.push_back(read_run(reader, item, "runs[" + std::to_string(n++) + "]"));

  simdjson::dom::array rows;
  if (reader.required(members, "rows", "").get(rows)) reader.fail("rows", "expected an array");
  n = 0;
  for (simdjson::dom::element item : rows) report.rows.push_back(read_row(reader, item, "rows[" + std::to_string(n++) + "]"));
  simdjson::dom::element totals = reader.required(members, "totals", "");
  if (verify_totals)
    check_totals(reader, totals, report.rows);
  else if (!totals.is_object())
    reader.fail("totals", "expected an object");
  return report;
}

std::string report_base_name(const std::optional<std::pair<int, int>>& shard) {
  if (!shard) return "tracelane_report";
  return "tracelane_report.shard-" + std::to_string(shard->first) + "-of-" + std::to_string(shard->second);
}

fs::path write_report(const Report& report, const fs::path& dir) {
  std::string base = report_base_name(report.shard);
  fs::path json_path = dir / (base + ".json");
  std::string json = report_json(report);
  write_atomically(dir / (base + ".csv"), report_csv(report), true);
  write_atomically(json_path, json, true);
  // The page is drawn from the JSON just written, the way `report --html` draws it.
  write_atomically(html_path_for(json_path), report_html(json, json_path.string(), dir), true);
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
  for (const Row& row : rows) {
    if (std::string_view(status_of(row)) == "failed") return true;
    // A compacted copy that does not give its original back (sweep --remove-originals).
    const Cell& original = row.get("original");
    if (std::holds_alternative<std::string>(original) &&
        std::get<std::string>(original).rfind(kOriginalUnfaithful, 0) == 0)
      return true;
  }
  return false;
}

Combined combine_reports(const std::vector<Report>& partials, const std::vector<std::string>& unreadable) {
  Combined combined;
  combined.problems = unreadable;
  std::map<int, std::string> shard_source;  // one entry per partial report, never per shard of N
  const Report* first = nullptr;
  for (const Report& partial : partials) {
    std::string name = partial.source.empty() ? std::string("a partial report") : partial.source;
    if (!first) {
      first = &partial;
      combined.report.root = partial.root;
    } else if (partial.root != first->root) {
      combined.problems.push_back(name + ": a report of root " + partial.root + ", not of " + first->root);
    }
    if (partial.shard) {
      auto [index, count] = *partial.shard;
      if (!combined.shard_count) combined.shard_count = count;
      // Rows of another partition of the tree, or a second report of one shard, would
      // repeat rows: they are left out, and the combined report says so.
      if (count != *combined.shard_count) {
        combined.problems.push_back(name + ": shard " + shard_label(*partial.shard) + " is not one of the " +
                                    std::to_string(*combined.shard_count) + " shards of the first report; left out");
        continue;
      }
      auto [it, inserted] = shard_source.emplace(index, name);
      if (!inserted) {
        combined.problems.push_back(name + ": shard " + shard_label(*partial.shard) + " given twice (also " +
                                    it->second + "); left out");
        continue;
      }
    }
    combined.report.runs.insert(combined.report.runs.end(), partial.runs.begin(), partial.runs.end());
    combined.report.rows.insert(combined.report.rows.end(), partial.rows.begin(), partial.rows.end());
  }
  if (combined.shard_count) {
    // Counted, not listed: N is at most kMaxShards, and only the first few are kept.
    std::vector<std::string> first_missing;
    for (int k = 0; k < *combined.shard_count; ++k) {
      if (shard_source.count(k)) continue;
      if (combined.missing_shards.size() < kListLimit) {
        combined.missing_shards.push_back(k);
        first_missing.push_back(std::to_string(k));
      }
      combined.missing_shard_count++;
    }
    if (combined.missing_shard_count)
      combined.problems.push_back("missing shards: " + summarise_list(first_missing, combined.missing_shard_count) +
                                  " (of " + std::to_string(*combined.shard_count) + ")");
  }
  // Each partial report's sums fit; all of them together may not: say so, never wrap.
  for (const std::string& column : compute_totals(combined.report.rows).overflowed)
    combined.problems.push_back("the sum of " + column + " over all reports is beyond int64 (or not finite); its total is null");
  for (const std::string& problem : combined.problems) {
    Row row(RowKind::problem);
    row.set("dir", std::string(".")).set("status", std::string("failed")).set("error", problem);
    combined.report.rows.push_back(std::move(row));
  }
  sort_rows(combined.report.rows);
  return combined;
}

namespace {

std::string shown(const std::string& text) { return printable(text, Backslash::keep); }

// `report --html REPORT.json [-o OUT.html]`: the page of an existing report (a sweep's or
// one copied from a cluster), through the same guard and atomic write as every output.
// The page beside the report is the report's own (a sweep rewrites it too); a page named
// with -o is like any other output: an .html name, and never over an existing file
// without --overwrite.
int write_report_page(const fs::path& report_path, const std::string& output, bool overwrite, bool quiet) {
  fs::path page = output.empty() ? html_path_for(report_path) : fs::path(output);
  if (!output.empty() && page.extension() != ".html") {
    print_error(page.string() + ": the page's name must end in .html");
    return 2;
  }
  try {
    guard_output(page, {report_path}, output.empty() || overwrite);
  } catch (const OutputRefused& e) {
    print_error(std::string(e.what()) + " (not overwritten; give another -o)");
    return 2;
  }
  try {
    ReadOptions read;
    read.regular_only = true;
    read.max_bytes = kMaxPartialReportBytes;
    std::string json = read_file(report_path, nullptr, read);
    fs::path page_dir = page.parent_path().empty() ? fs::path(".") : page.parent_path();
    write_atomically(page, report_html(json, report_path.string(), page_dir), output.empty() || overwrite);
  } catch (const OutputRefused& e) {
    print_error(e.what());
    return 2;
  } catch (const Error& e) {
    print_error(e.what());
    return 1;
  }
  if (!quiet) std::cout << shown(page.string()) << "\n";
  return 0;
}

}  // namespace

int run_report(int argc, char** argv) {
  namespace po = boost::program_options;
  std::vector<std::string> combine;
  std::string report_dir, html, output;
  bool quiet = false, overwrite = false;
  po::options_description options("report options");
  options.add_options()("help,h", "show this help")(
      "combine", po::value(&combine)->multitoken(),
      "partial reports (tracelane_report.shard-K-of-N.json) or directories holding them")(
      "report-dir", po::value(&report_dir),
      "where to write tracelane_report.json/.csv/.html (default: the first directory)")(
      "html", po::value(&html), "draw the page of an existing report: REPORT.json -> REPORT.html")(
      "output,o", po::value(&output), "with --html: where to write the page, OUT.html (default: beside REPORT.json)")(
      "overwrite", po::bool_switch(&overwrite), "with --html -o: replace an existing OUT.html")(
      "quiet,q", po::bool_switch(&quiet), "print only problems");
  po::positional_options_description positional;
  positional.add("combine", -1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(options).positional(positional).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "tracelane report: " << shown(e.what()) << "\n";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << "usage: tracelane report --combine DIR_OR_FILES... [--report-dir DIR]\n"
                 "       tracelane report --html REPORT.json [-o OUT.html [--overwrite]]\n\n"
              << options;
    return 0;
  }
  if (!html.empty()) {
    if (!combine.empty() || !report_dir.empty()) {
      std::cerr << "tracelane report: --html takes one report and -o, not --combine or --report-dir\n";
      return 2;
    }
    return write_report_page(html, output, overwrite, quiet);
  }
  if (!output.empty()) {
    std::cerr << "tracelane report: -o is for --html (--combine writes into --report-dir)\n";
    return 2;
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
        std::cerr << shown(path.string()) << ": cannot list directory: " << ec.message() << "\n";
        return 2;
      }
      std::sort(found.begin(), found.end());
      if (found.empty()) std::cerr << shown(path.string()) << ": no tracelane_report.shard-*.json here\n";
      files.insert(files.end(), found.begin(), found.end());
    } else {
      if (first_dir.empty()) first_dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
      files.push_back(path);
    }
  }
  if (files.empty()) return 2;
  // One file named twice (a directory and a file in it) is read once.
  std::set<std::pair<dev_t, ino_t>> identities;
  std::vector<fs::path> inputs;
  for (const fs::path& file : files) {
    struct stat st {};
    if (::stat(file.c_str(), &st) == 0 && !identities.insert({st.st_dev, st.st_ino}).second) continue;
    inputs.push_back(file);
  }
  // Checked before anything is read: the combined report never replaces one of its inputs.
  fs::path out_dir = report_dir.empty() ? first_dir : fs::path(report_dir);
  std::string base = report_base_name(std::nullopt);
  // Made first, so that the guard every writing command goes through (an input under
  // the name, through any link; a directory there) judges the real directory.
  boost::system::error_code made;
  fs::create_directories(out_dir, made);
  for (const char* extension : {".json", ".csv", ".html"}) {
    try {
      guard_output(out_dir / (base + extension), files, true);
    } catch (const OutputRefused& e) {
      print_error(std::string(e.what()) + " (not overwritten; give another --report-dir)");
      return 2;
    }
  }
  std::vector<Report> partials;
  std::vector<std::string> unreadable;
  for (const fs::path& file : inputs) {
    try {
      // A partial report comes from another node: a regular file, and no larger than any
      // real report (a row is ~1 KB; kMaxPartialReportBytes holds a million of them).
      ReadOptions read;
      read.regular_only = true;
      read.max_bytes = kMaxPartialReportBytes;
      partials.push_back(parse_report_json(read_file(file, nullptr, read), file.string()));
    } catch (const Error& e) {
      unreadable.push_back(e.what());
    }
  }
  Combined combined = combine_reports(partials, unreadable);
  for (const std::string& problem : combined.problems) std::cerr << shown(problem) << "\n";
  fs::path written;
  try {
    boost::system::error_code ec;
    fs::create_directories(out_dir, ec);
    written = write_report(combined.report, out_dir);
  } catch (const Error& e) {
    std::cerr << shown(e.what()) << "\n";
    return 1;
  }
  std::vector<std::string> failed_shards;
  int64_t failed_count = 0;
  for (const Report& partial : partials)
    if (has_failures(partial.rows) && failed_count++ < int64_t(kListLimit))
      failed_shards.push_back(partial.shard ? shard_label(*partial.shard) : std::string("(unsharded)"));
  if (failed_count) std::cerr << "shards with failed rows: " << summarise_list(failed_shards, failed_count) << "\n";
  auto unmatched = unmatched_iterations(combined.report.rows);
  for (size_t i = 0; i < unmatched.size() && i < kListLimit; ++i)
    std::cerr << shown(unmatched[i].first) << ": " << unmatched[i].second
              << " PP send/recv unmatched (a truncated capture window?)\n";
  if (unmatched.size() > kListLimit)
    std::cerr << "... and " << unmatched.size() - kListLimit
              << " more iterations with PP send/recv unmatched (totals.iterations_with_unmatched_send_recv)\n";
  if (!quiet)
    std::cout << shown(written.string()) << ": " << combined.report.rows.size() << " rows from " << partials.size()
              << " partial reports\n";
  bool failed = failed_count > 0 || !combined.problems.empty();
  return failed ? 1 : 0;
}

}  // namespace tracelane::cli
