// Writing a report: the JSON and CSV files (atomically, with the page drawn from the JSON),
// and the records kept with each output (row_record, figures_record) that a later sweep
// reads back for a row it skips.
#include <utility>

#include "files.hpp"
#include "printable.hpp"
#include "report_cells.hpp"
#include "report_html.hpp"
#include "tracelane/gzip.hpp"

namespace tracelane::cli {

namespace {

// The columns, in their order (report_columns()).
const std::array<Column, kColumnCount>& kColumns = report_columns();

// A group id as a report writes it (printable()'s escaped form, like every text cell).
std::string report_text(const std::string& text) { return printable(text, Backslash::escape); }

// A plan's keys, into `object`: the digest, the count, and the iterations as text cells.
void add_plan_json(JsonValue& object, const IterationPlan& plan) {
  object.set("digest", JsonValue::string(plan.digest));
  object.set("count", JsonValue::integer(plan.count));
  JsonValue iterations = JsonValue::array();
  for (const std::string& name : plan.iterations) iterations.push(JsonValue::string(report_text(name)));
  object.set("iterations", std::move(iterations));
}

// A row as report_json() writes it: its kind's columns, then its figures.
JsonValue row_json(const Row& row) {
  JsonValue item = JsonValue::object();
  unsigned bit = 1u << unsigned(row.kind);
  for (size_t c = 0; c < kColumns.size(); ++c) {
    if (!(kColumns[c].kinds & bit)) continue;
    // "original" only where sweep --remove-originals filled it: a report of a sweep
    // without the flag is what it was before the column (and older readers read it).
    if (kColumns[c].id == ColumnId::original && std::holds_alternative<std::monostate>(row.get(c))) continue;
    if (c == 0)
      item.set("kind", JsonValue::string(kind_name(row.kind)));
    else
      item.set(kColumns[c].name, cell_json(row.get(c), kColumns[c]));
  }
  if (row.figures && row.kind != RowKind::problem) add_figures_json(item, *row.figures, report_text);
  return item;
}

}  // namespace

std::string report_json(const Report& report) {
  std::string out;
  write_report_json(report, [&out](std::string_view piece) { out += piece; });
  return out;
}

// Written member by member, each row built, written and dropped, and handed on a piece at
// a time: neither a tree of a million rows' JSON nor its whole text is ever held.
void write_report_json(const Report& report, const std::function<void(std::string_view)>& sink) {
  std::string out;
  JsonObjectWriter doc(out, 2);
  doc.member("schema_version", JsonValue::integer(kReportSchemaVersion));
  doc.member("tool", JsonValue::string("tracelane " TRACELANE_VERSION));
  doc.member("root", JsonValue::string(printable(report.root, Backslash::escape)));
  if (report.shard) {
    JsonValue shard = JsonValue::object();
    shard.set("index", JsonValue::integer(report.shard->index));
    shard.set("count", JsonValue::integer(report.shard->count));
    doc.member("shard", shard);
  } else {
    doc.member("shard", JsonValue::null());
  }
  if (report.plan) {
    JsonValue plan = JsonValue::object();
    add_plan_json(plan, *report.plan);
    doc.member("plan", plan);
  } else {
    doc.member("plan", JsonValue::null());
  }
  JsonValue timing_names = JsonValue::array();
  for (const Column& column : kColumns)
    if (column.timing) timing_names.push(JsonValue::string(column.name));
  doc.member("timing_columns", timing_names);
  JsonValue runs = JsonValue::array();
  for (const RunInfo& run : report.runs) {
    JsonValue item = JsonValue::object();
    item.set("shard", run.shard ? JsonValue::string(run.shard->label()) : JsonValue::null());
    item.set("wall_seconds", JsonValue::raw_number(format_real(run.wall_seconds, 3)));
    item.set("jobs", JsonValue::integer(run.jobs));
    item.set("memory_budget_bytes", JsonValue::integer(int64_t(run.memory_budget_bytes)));
    runs.push(std::move(item));
  }
  doc.member("runs", runs);
  doc.member("totals", totals_json(report.rows));
  doc.begin_array("rows");
  for (const Row& row : report.rows) {
    doc.item(row_json(row));
    if (out.size() >= kReportPiece) {
      sink(out);
      out.clear();
    }
  }
  doc.end_array().finish();
  out += '\n';
  sink(out);
}

std::string plan_file_json(const PlanFile& file) {
  JsonValue doc = JsonValue::object();
  doc.set("plan_version", JsonValue::integer(kPlanFileVersion));
  doc.set("tool", JsonValue::string("tracelane " TRACELANE_VERSION));
  doc.set("root", JsonValue::string(report_text(file.root)));
  add_plan_json(doc, file.plan);
  return doc.dump(2) + "\n";
}

std::string row_record(const Row& row) {
  JsonValue item = JsonValue::object();
  item.set("kind", JsonValue::string(kind_name(row.kind)));
  for (size_t c = 1; c < kColumns.size(); ++c)
    if (!kColumns[c].timing && !std::holds_alternative<std::monostate>(row.get(c)))
      item.set(kColumns[c].name, cell_json(row.get(c), kColumns[c]));
  return item.dump(-1);
}

std::string report_csv(const Report& report) {
  std::string out;
  write_report_csv(report, [&out](std::string_view piece) { out += piece; });
  return out;
}

void write_report_csv(const Report& report, const std::function<void(std::string_view)>& sink) {
  // CRLF line ends (RFC 4180); pandas and spreadsheets read them as plain line ends.
  std::string out;
  // "original" only when a row has it (sweep --remove-originals), as in report_json.
  const size_t original = size_t(ColumnId::original);
  const bool with_original = std::any_of(report.rows.begin(), report.rows.end(), [&](const Row& row) {
    return !std::holds_alternative<std::monostate>(row.get(original));
  });
  for (size_t c = 0; c < kColumns.size(); ++c) {
    if (c == original && !with_original) continue;
    if (c) out += ',';
    out += kColumns[c].name;
  }
  // The figures' scalar columns last (the timeline is in the JSON report only).
  out += ",gpu_window_us,gpu_busy\r\n";
  auto write_cells = [&](const auto& cell_of, const char* kind, const GpuFigures* figures) {
    for (size_t c = 0; c < kColumns.size(); ++c) {
      if (c == original && !with_original) continue;
      if (c) out += ',';
      std::string text = c == 0 ? std::string(kind) : cell_text(cell_of(c), kColumns[c]);
      out += csv_field(text);
    }
    out += ',';
    if (figures) out += real_text(figures->window_us);
    out += ',';
    // Through cell_text as any text cell: escaped, and never a live spreadsheet formula.
    if (figures && !figures->merged) out += csv_field(cell_text(Cell(busy_csv(*figures)), kColumns[0]));
    out += "\r\n";
  };
  for (const Row& row : report.rows) {
    write_cells([&](size_t c) -> const Cell& { return row.get(c); }, kind_name(row.kind),
                row.kind == RowKind::problem ? nullptr : row.figures.get());
    if (out.size() >= kReportPiece) {
      sink(out);
      out.clear();
    }
  }
  Totals totals = compute_totals(report.rows);
  std::vector<Cell> total_cells = totals.sums;
  total_cells[size_t(ColumnId::status)] =
      std::string(status_name(has_failures(report.rows) ? RowStatus::failed : RowStatus::ok));
  write_cells([&](size_t c) -> const Cell& { return total_cells[c]; }, "total", nullptr);
  sink(out);
}

std::string figures_record(const Row& row) {
  if (!row.figures || row.kind == RowKind::problem) return {};
  JsonValue item = JsonValue::object();
  add_figures_json(item, *row.figures, report_text);
  std::string record = gzip_compress(item.dump(-1), 12);
  return record.size() <= kFiguresRecordMax ? record : std::string();
}

std::string report_base_name(const std::optional<Shard>& shard) {
  if (!shard) return "tracelane_report";
  return "tracelane_report.shard-" + std::to_string(shard->index) + "-of-" + std::to_string(shard->count);
}

fs::path write_report(const Report& report, const fs::path& dir) {
  std::string base = report_base_name(report.shard);
  fs::path json_path = dir / (base + ".json");
  // The page is what `report --html` draws from the JSON, drawn from the report in memory
  // (reading the JSON back costs over ten times its size). The three replace the previous
  // set together: the JSON first (what the others are made from), the page last (what a
  // person opens). Each is written a piece at a time as it is made: a big sweep's report
  // never holds the text of any of them.
  write_set_atomically(
      dir, std::vector<SetMember>{
               {json_path.filename().string(), [&](const ByteSink& sink) { write_report_json(report, sink); }},
               {base + ".csv", [&](const ByteSink& sink) { write_report_csv(report, sink); }},
               {html_path_for(json_path).filename().string(),
                [&](const ByteSink& sink) { write_report_page(report, json_path.string(), dir, sink); }}});
  return json_path;
}

}  // namespace tracelane::cli
