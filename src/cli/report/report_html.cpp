// The visual sweep report. The page is one file with everything inline (clusters are often
// air-gapped, and a page copied to a laptop must still work from file://): a style sheet,
// the report's data as JSON, and a script that draws the page from it.
//
// The data is the report's rows, reduced to arrays of cells (a sweep of 2,000 iterations x
// 8 ranks stays a few MB), with the figures the pictures need (GPU busy fractions, bubble
// fractions, timeline occupancy strips) and each row's link to its output, relative to the
// page. Names in a report come from a tree anyone with write access chose; they reach the
// page only as JSON strings inside <script type="application/json">, with every '<', '>' and
// '&' written as a \u escape so that no text can end the element, and the script puts them
// into the document with textContent and setAttribute, never as markup.
//
// The page reads the report through the reader of `report --combine` (read_report(),
// Reading::page), tolerantly where a viewer should: keys it does not know are left out (a
// newer report still draws), and a figure that is not in the form the report contract
// gives (docs: gpu_window_us, gpu_busy, bubble_fraction, timeline) is not drawn and the
// page says so; what it shows is checked as `report --combine` checks it, with the same
// "<source>: <where>: <what>" messages.
#include "report_html.hpp"

#include <cctype>
#include <iterator>
#include <map>
#include <set>
#include <utility>

#include "printable.hpp"
#include "report_cells.hpp"
#include "report_page.hpp"
#include "tracelane/figures.hpp"
#include "tracelane/json_value.hpp"
#include "tracelane/trace.hpp"

namespace tracelane::cli {

namespace {

namespace fs = boost::filesystem;

// What a page is drawn from: a report as the page reads it (report_html: read_report's
// Reading::page) or as it is in memory (report_page). `written_cells_only`: a row's cell of
// a column its kind does not have is left out, as report_json() leaves it out.
struct PageData {
  const Report* report = nullptr;
  std::string tool;
  JsonValue totals;
  std::vector<FigureKeys> figure_keys;
  std::vector<std::string> notes;
  bool written_cells_only = false;
};

// Text as the report writes it, and as the page's data holds it: printable()'s escaped form.
std::string report_text(const std::string& bytes) { return printable(bytes, Backslash::escape); }

// Appends JSON text (JsonValue::dump(-1)'s, or a piece of it cut between values) to `out`,
// safe inside a <script> element: '<', '>' and '&' only occur in strings there, where \u
// escapes mean the same characters. The spaces dump(-1) writes after ',' and ':' outside
// strings are left out (a big sweep's data is MBs).
void append_script_safe(std::string& out, std::string_view json) {
  bool in_string = false;
  for (size_t i = 0; i < json.size(); ++i) {
    char c = json[i];
    if (c == '<') {
      out += "\\u003c";
    } else if (c == '>') {
      out += "\\u003e";
    } else if (c == '&') {
      out += "\\u0026";
    } else {
      out += c;
      if (in_string && c == '\\') {
        out += json[++i];  // an escaped character, '"' included
      } else if (c == '"') {
        in_string = !in_string;
      } else if (!in_string && (c == ',' || c == ':') && i + 1 < json.size() && json[i + 1] == ' ') {
        ++i;
      }
    }
  }
}

// A relative URL for a path of bytes: every byte but unreserved ones and '/' percent-encoded,
// so that no name can become a scheme ("javascript:"), a query or a fragment.
std::string url_path(const std::string& bytes) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : bytes) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
      out += char(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

// The columns the page shows or uses, in the order of its data's rows.
const ColumnId kPageColumns[] = {ColumnId::kind,
                                 ColumnId::dir,
                                 ColumnId::file,
                                 ColumnId::run,
                                 ColumnId::iteration,
                                 ColumnId::rank,
                                 ColumnId::pp_rank,
                                 ColumnId::ranks,
                                 ColumnId::pp_order,
                                 ColumnId::pp_order_source,
                                 ColumnId::time_alignment,
                                 ColumnId::input_bytes,
                                 ColumnId::output_bytes,
                                 ColumnId::events,
                                 ColumnId::measured_slices,
                                 ColumnId::original_streams,
                                 ColumnId::compacted_lanes,
                                 ColumnId::compaction_ratio,
                                 ColumnId::pp_send_recv_pairs,
                                 ColumnId::pp_send_recv_unmatched,
                                 ColumnId::pp_compute_dependency_pairs,
                                 ColumnId::pp_compute_dependency_unmatched,
                                 ColumnId::output,
                                 ColumnId::seconds,
                                 ColumnId::status,
                                 ColumnId::error};

// Lane group names, each written once in the data: rows refer to them by index.
struct Groups {
  std::map<std::string, int64_t> index;
  JsonValue names = JsonValue::array();
  JsonValue of(std::string_view name) {
    auto [it, inserted] = index.emplace(std::string(name), int64_t(index.size()));
    if (inserted) names.push(JsonValue::string(std::string(name)));
    return JsonValue::integer(it->second);
  }
};

// The figures of a row as the page's data holds them: all but the timeline in `out`.
struct Figures {
  JsonValue out = JsonValue::object();
  std::optional<JsonValue> timeline;
};

// {"start_us","end_us","bins","strips":[[rank, pp_rank, group index, occupancy]]}
JsonValue timeline_json(const Timeline& timeline, Groups& groups) {
  auto rank = [](const std::optional<int64_t>& value) {
    return value ? JsonValue::integer(*value) : JsonValue::null();
  };
  JsonValue strips = JsonValue::array();
  for (const TimelineStrip& strip : timeline.strips) {
    JsonValue item = JsonValue::array();
    item.push(rank(strip.rank)).push(rank(strip.pp_rank)).push(groups.of(report_text(strip.group)));
    item.push(JsonValue::string(strip.occupancy));
    strips.push(std::move(item));
  }
  JsonValue out = JsonValue::object();
  out.set("start_us", real_json(timeline.start_us)).set("end_us", real_json(timeline.end_us));
  out.set("bins", JsonValue::integer(timeline.bins)).set("strips", std::move(strips));
  return out;
}

// The figure keys the reader read of a row, in the report's order; gpu_busy as
// [[group index, fraction], ...].
Figures figures_json(const GpuFigures* figures, const FigureKeys& keys, Groups& groups) {
  Figures out;
  if (!figures) return out;
  auto fraction = [](int value) { return real_json(double(value) / kFractionScale); };
  if (keys.window) out.out.set("gpu_window_us", real_json(figures->window_us));
  if (keys.busy) {
    JsonValue busy = JsonValue::array();
    for (const auto& [group, value] : figures->busy)
      busy.push(JsonValue::array().push(groups.of(report_text(group))).push(fraction(value)));
    out.out.set("gpu_busy", std::move(busy));
  }
  if (keys.bubble) {
    JsonValue bubble = JsonValue::object();
    for (const auto& [rank, value] : figures->bubble) bubble.set(std::to_string(rank), fraction(value));
    out.out.set("bubble_fraction", std::move(bubble));
  }
  if (keys.timeline) out.timeline = timeline_json(figures->timeline, groups);
  return out;
}

// Where links to outputs start: ROOT relative to the page's directory, when the report's
// root is an absolute path (the page links root/dir/output); nothing otherwise.
std::optional<fs::path> link_base_of(const std::string& root, const fs::path& page_dir) {
  if (!fs::path(root).is_absolute()) return std::nullopt;
  boost::system::error_code ec;
  fs::path from = fs::absolute(page_dir, ec).lexically_normal();
  fs::path relative = fs::path(root).lexically_normal().lexically_relative(from);
  if (ec || relative.empty()) return std::nullopt;
  return relative;
}

// The page up to its data: the data, JSON in a script element, follows (append_script_safe),
// then page_tail(); drawn by the page's script, one self-contained file.
std::string page_head(const std::string& root, size_t reserve) {
  std::string page;
  page.reserve(reserve + kReportPageScript.size() + kReportPageStyle.size() + 4096);
  page += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  // Nothing but this file: no request can leave the page (links are followed by the user).
  page +=
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n";
  page += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  page += "<title>tracelane report: " + xml_text(root) + "</title>\n<style>\n";
  page += kReportPageStyle;
  page += "</style>\n</head>\n<body>\n";
  page +=
      "<noscript><p>This page draws the sweep report with JavaScript, which is off. The same numbers are in "
      "tracelane_report.json and tracelane_report.csv beside it.</p></noscript>\n";
  page += "<div id=\"js-errors\" hidden></div>\n<main id=\"page\" data-state=\"loading\"><h1>tracelane report: " +
          xml_text(root) + "</h1><p>Drawing&hellip;</p></main>\n";
  page += "<script type=\"application/json\" id=\"tracelane-data\">";
  return page;
}

void page_tail(std::string& page) {
  page += "</script>\n<script>\n";
  page += kReportPageScript;
  page += "</script>\n</body>\n</html>\n";
}

// Whether the page links a row's output: never for a dir outside ROOT, or a name with
// '/', '.' or '..', which would lead out of the tree or its directory, however the page
// would otherwise join links[dir] and the name.
bool linkable(const std::string& dir, const std::string& output) {
  return is_dir_under_root(dir) && output.find('/') == std::string::npos && output != "." && output != "..";
}

// Links: the page joins links[dir] (once per directory, page_dir_links()) and the output's
// name, which is given again as output_href only where the name needs percent-encoding.
void link_output(Figures& figure, const std::string& dir, const std::string& output) {
  if (linkable(dir, output)) {
    std::string encoded = url_path(output);
    if (encoded != report_text(output)) figure.out.set("output_href", JsonValue::string(encoded));
  } else {
    figure.out.set("no_link", JsonValue::boolean(true));
  }
}

// Whether a row gets a link (link_output): it has a dir and an output, and the report's
// root is absolute.
bool has_link(const Row& row, const std::optional<fs::path>& link_base) {
  return link_base && std::holds_alternative<std::string>(row.get(ColumnId::dir)) &&
         std::holds_alternative<std::string>(row.get(ColumnId::output));
}

// links[dir]: each linked directory's path relative to the page.
std::map<std::string, std::string> page_dir_links(const PageData& page, const std::optional<fs::path>& link_base) {
  std::map<std::string, std::string> dir_links;
  for (const Row& row : page.report->rows) {
    if (!has_link(row, link_base)) continue;
    std::string dir = row.text(ColumnId::dir);
    if (!linkable(dir, row.text(ColumnId::output))) continue;
    std::string dir_text = report_text(dir);
    if (!dir_links.count(dir_text))
      dir_links[dir_text] = url_path((*link_base / dir).lexically_normal().generic_string());
  }
  return dir_links;
}

// The lane group names, numbered in the order of the rows' figures (figures_json's).
Groups page_groups(const PageData& page) {
  Groups groups;
  for (size_t i = 0; i < page.report->rows.size(); ++i)
    figures_json(page.report->rows[i].figures.get(), page.figure_keys[i], groups);
  return groups;
}

// The iterations whose merge row has a timeline: their file rows' timelines are left out
// (page_row).
std::set<std::string> merged_timeline_dirs_of(const PageData& page) {
  std::set<std::string> dirs;
  for (size_t i = 0; i < page.report->rows.size(); ++i) {
    const Row& row = page.report->rows[i];
    if (row.figures && page.figure_keys[i].timeline && row.kind == RowKind::merge &&
        std::holds_alternative<std::string>(row.get(ColumnId::dir)))
      dirs.insert(row.text(ColumnId::dir));
  }
  return dirs;
}

// Row `i` as an array of the kPageColumns cells, ending in its figures and link. An
// iteration whose merge row has a timeline leaves its file rows' timelines out: the page
// draws the merge's (all ranks on one clock), and the data stays small.
JsonValue page_row(const PageData& page, size_t i, Groups& groups, const std::set<std::string>& merged_timeline_dirs,
                   const std::optional<fs::path>& link_base) {
  const Row& row = page.report->rows[i];
  JsonValue cells = JsonValue::array();
  cells.push(JsonValue::string(kind_name(row.kind)));
  for (size_t c = 1; c < std::size(kPageColumns); ++c) {
    const Column& column = column_of(kPageColumns[c]);
    const Cell& cell =
        page.written_cells_only && !(column.kinds & (1u << unsigned(row.kind))) ? Cell() : row.get(column.id);
    cells.push(std::holds_alternative<double>(cell)
                   ? real_json(real_as_written(std::get<double>(cell), column.decimals))
                   : cell_json(cell, column));
  }
  Figures figure = figures_json(row.figures.get(), page.figure_keys[i], groups);
  bool has_dir = std::holds_alternative<std::string>(row.get(ColumnId::dir));
  bool merge_draws_it = row.kind == RowKind::file && has_dir && merged_timeline_dirs.count(row.text(ColumnId::dir));
  if (figure.timeline && !merge_draws_it) figure.out.set("timeline", std::move(*figure.timeline));
  if (has_link(row, link_base)) link_output(figure, row.text(ColumnId::dir), row.text(ColumnId::output));
  cells.push(std::move(figure.out));
  return cells;
}

JsonValue notes_json(const std::vector<std::string>& notes) {
  JsonValue out = JsonValue::array();
  for (const std::string& note : notes) out.push(JsonValue::string(note));
  return out;
}

// The report's shard and runs as the page's script takes them.
JsonValue shard_json(const std::optional<Shard>& shard) {
  if (!shard) return JsonValue::null();
  JsonValue out = JsonValue::object();
  return out.set("index", JsonValue::integer(shard->index)).set("count", JsonValue::integer(shard->count));
}

JsonValue runs_json(const std::vector<RunInfo>& runs) {
  JsonValue out = JsonValue::array();
  for (const RunInfo& run : runs) {
    JsonValue item = JsonValue::object();
    item.set("shard", run.shard ? JsonValue::string(run.shard->label()) : JsonValue::null());
    item.set("wall_seconds", real_json(real_as_written(run.wall_seconds, 3))).set("jobs", JsonValue::integer(run.jobs));
    out.push(item.set("memory_budget_bytes", JsonValue::integer(int64_t(run.memory_budget_bytes))));
  }
  return out;
}

// The page of `page`: the group names numbered in the order of the rows' figures, and the
// links to the outputs relative to the page, first (the data gives them before the rows);
// then the data, written into the page a row at a time (a tree of a million rows' data
// would cost several times its text), and the page handed to `sink` a piece at a time.
void draw_page(PageData& page, const std::string& source, const fs::path& page_dir, size_t reserve,
               const std::function<void(std::string_view)>& sink) {
  const Report& report = *page.report;
  const std::string root = report_text(report.root);
  Groups groups = page_groups(page);
  std::optional<fs::path> link_base = link_base_of(report.root, page_dir);
  std::set<std::string> merged_timeline_dirs = merged_timeline_dirs_of(page);

  std::string out = page_head(root, reserve);
  std::string json;  // the data's text since it was last appended to the page
  auto append = [&] {
    append_script_safe(out, json);
    json.clear();
  };
  JsonObjectWriter data(json, -1);
  data.member("source", JsonValue::string(report_text(source)));
  data.member("root", JsonValue::string(root)).member("tool", JsonValue::string(page.tool));
  data.member("shard", shard_json(report.shard)).member("runs", runs_json(report.runs));
  data.member("totals", page.totals);
  JsonValue columns = JsonValue::array(), links = JsonValue::object();
  for (ColumnId id : kPageColumns) columns.push(JsonValue::string(column_of(id).name));
  for (const auto& [dir, link] : page_dir_links(page, link_base)) links.set(dir, JsonValue::string(link));
  data.member("columns", columns).member("groups", groups.names).member("links", links);
  data.begin_array("rows");
  for (size_t i = 0; i < report.rows.size(); ++i) {
    data.item(page_row(page, i, groups, merged_timeline_dirs, link_base));
    append();
    if (out.size() >= kReportPiece) {
      sink(out);
      out.clear();
    }
  }
  data.end_array().member("notes", notes_json(page.notes)).finish();
  append();
  page_tail(out);
  sink(out);
}

}  // namespace

std::string report_html(std::string_view report_json, const std::string& source,
                        const boost::filesystem::path& page_dir) {
  // One reader for the page and `report --combine`: the page's tolerance is a parameter.
  ReportRead read = read_report(report_json, source, Reading::page);
  PageData page{&read.report, read.tool, std::move(read.totals), std::move(read.figure_keys), std::move(read.notes)};
  std::string out;
  draw_page(page, source, page_dir, report_json.size() / 2, [&out](std::string_view piece) { out += piece; });
  return out;
}

boost::filesystem::path html_path_for(const boost::filesystem::path& report_json_path) {
  boost::filesystem::path page = report_json_path;
  return page.replace_extension(".html");
}

namespace {

// What reading report_json(report) for the page gives: report_json() writes a row's
// figures as gpu_window_us, gpu_busy (files) or bubble_fraction (merges), and timeline.
PageData page_of(const Report& report) {
  PageData page{&report, "tracelane " TRACELANE_VERSION, page_totals_of(report.rows), {}, {}, true};
  for (const Row& row : report.rows) {
    bool written = row.figures && row.kind != RowKind::problem;
    bool merged = written && row.figures->merged;
    page.figure_keys.push_back({written, written && !merged, merged, written});
  }
  return page;
}

}  // namespace

std::string report_page(const Report& report, const std::string& source, const boost::filesystem::path& page_dir,
                        size_t reserve) {
  PageData page = page_of(report);
  std::string out;
  draw_page(page, source, page_dir, reserve, [&out](std::string_view piece) { out += piece; });
  return out;
}

void write_report_page(const Report& report, const std::string& source, const boost::filesystem::path& page_dir,
                       const std::function<void(std::string_view)>& sink) {
  PageData page = page_of(report);
  draw_page(page, source, page_dir, kReportPiece, sink);
}

}  // namespace tracelane::cli
