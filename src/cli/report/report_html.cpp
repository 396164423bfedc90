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
// The page reads the report tolerantly where a viewer should: keys it does not know are
// left out (a newer report still draws), and a figure that is not in the form the report
// contract gives (docs: gpu_window_us, gpu_busy, bubble_fraction, timeline) is not drawn
// and the page says so; the columns every report has are checked as strictly as
// `report --combine` checks them, with the same "<source>: <where>: <what>" messages.
#include "report_html.hpp"

#include <simdjson.h>

#include <charconv>
#include <cmath>
#include <map>
#include <set>

#include "printable.hpp"
#include "report.hpp"
#include "report_page.hpp"
#include "tracelane/figures.hpp"
#include "tracelane/json_value.hpp"
#include "tracelane/trace.hpp"

namespace tracelane::cli {

namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

// The most time bins a timeline may have: the report reader's bound (tracelane writes 100).
constexpr int64_t kMaxBins = kMaxTimelineBins;

struct PageReader {
  std::string source;
  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw Error(source + ": " + where + ": " + what);
  }
};

// A real as the shortest text that reads back as the same double, so that the page shows
// the report's number and a test can compare them exactly.
JsonValue real_json(double value) {
  char buffer[64];
  auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value);
  if (error != std::errc()) return JsonValue::null();
  return JsonValue::raw_number(std::string(buffer, end));
}

// A finite number, or nothing.
std::optional<double> finite_number(element value) {
  double number;
  if (!value.is_number() || value.get(number) || !std::isfinite(number)) return std::nullopt;
  return number;
}

// JSON text (JsonValue::dump(-1)'s) safe inside a <script> element: '<', '>' and '&' only
// occur in strings there, where \u escapes mean the same characters. The spaces dump(-1)
// writes after ',' and ':' outside strings are left out (a big sweep's data is MBs).
std::string script_safe(const std::string& json) {
  std::string out;
  out.reserve(json.size() + json.size() / 64);
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
  return out;
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

// Scalars, and arrays or objects of them (totals, runs), as they are; anything deeper or
// not finite fails.
JsonValue copy_plain(const PageReader& reader, element value, const std::string& where, int depth = 0) {
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
      std::optional<double> number = finite_number(value);
      if (!number) reader.fail(where, "expected a finite number");
      return real_json(*number);
    }
    case element_type::ARRAY: {
      if (depth >= 2) reader.fail(where, "nested too deep");
      JsonValue out = JsonValue::array();
      size_t i = 0;
      simdjson::dom::array items;
      if (value.get(items)) reader.fail(where, "unreadable value");
      for (element item : items) out.push(copy_plain(reader, item, where + "[" + std::to_string(i++) + "]", depth + 1));
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

// A report cell as the page holds it, checked like parse_report_json checks it (type only:
// the page shows what the report says).
JsonValue cell_json(const PageReader& reader, element value, const Column& column, const std::string& where) {
  if (value.is_null()) return JsonValue::null();
  if (column.type == ColumnType::text) {
    std::string_view text;
    if (value.get(text)) reader.fail(where, "expected a string");
    return JsonValue::string(std::string(text));
  }
  if (column.type == ColumnType::integer) {
    int64_t number;
    if (value.type() != element_type::INT64 || value.get(number) || number < 0)
      reader.fail(where, "expected a non-negative integer");
    return JsonValue::integer(number);
  }
  std::optional<double> number = finite_number(value);
  if (!number || *number < 0) reader.fail(where, "expected a finite non-negative number");
  return real_json(*number);
}

// The figures of the report contract a row may carry; a malformed one is left out and
// named in `notes` (the page lists them), never a reason to draw nothing.
struct Figures {
  JsonValue out = JsonValue::object();  // all but the timeline
  std::optional<JsonValue> timeline;
};

// name -> fraction in [0, 1]; with `groups`, as [[group index, fraction], ...].
std::optional<JsonValue> fractions(element value, Groups* groups) {
  simdjson::dom::object object;
  if (value.get(object)) return std::nullopt;
  JsonValue out = groups ? JsonValue::array() : JsonValue::object();
  for (auto [key, item] : object) {
    std::optional<double> number = finite_number(item);
    if (!number || *number < 0 || *number > 1) return std::nullopt;
    if (groups)
      out.push(JsonValue::array().push(groups->of(key)).push(real_json(*number)));
    else
      out.set(std::string(key), real_json(*number));
  }
  return out;
}

std::optional<JsonValue> optional_rank(element value) {
  if (value.is_null()) return JsonValue::null();
  int64_t number;
  if (value.type() != element_type::INT64 || value.get(number) || number < 0) return std::nullopt;
  return JsonValue::integer(number);
}

// {"start_us","end_us","bins","strips":[{"rank","pp_rank","group","occupancy"}]} ->
// {"start_us","end_us","bins","strips":[[rank, pp_rank, group, occupancy]]}
std::optional<JsonValue> timeline(element value, Groups& groups, std::string& why) {
  simdjson::dom::object object;
  if (value.get(object)) return why = "expected an object", std::nullopt;
  element start, end, bins_value, strips_value;
  if (object["start_us"].get(start) || object["end_us"].get(end) || object["bins"].get(bins_value) ||
      object["strips"].get(strips_value))
    return why = "expected start_us, end_us, bins and strips", std::nullopt;
  std::optional<double> start_us = finite_number(start), end_us = finite_number(end);
  if (!start_us || !end_us || *end_us < *start_us) return why = "expected numbers start_us <= end_us", std::nullopt;
  int64_t bins;
  if (bins_value.type() != element_type::INT64 || bins_value.get(bins) || bins < 1 || bins > kMaxBins)
    return why = "bins: expected an integer from 1 to " + std::to_string(kMaxBins), std::nullopt;
  simdjson::dom::array strips;
  if (strips_value.get(strips)) return why = "strips: expected an array", std::nullopt;
  JsonValue out_strips = JsonValue::array();
  size_t n = 0;
  for (element strip : strips) {
    std::string at = "strips[" + std::to_string(n++) + "]";
    element rank, pp_rank, group, occupancy;
    if (strip["rank"].get(rank) || strip["pp_rank"].get(pp_rank) || strip["group"].get(group) ||
        strip["occupancy"].get(occupancy))
      return why = at + ": expected rank, pp_rank, group and occupancy", std::nullopt;
    std::optional<JsonValue> rank_json = optional_rank(rank), pp_json = optional_rank(pp_rank);
    std::string_view group_text, digits;
    if (!rank_json || !pp_json) return why = at + ": expected ranks that are integers or null", std::nullopt;
    if (group.get(group_text)) return why = at + ".group: expected a string", std::nullopt;
    if (occupancy.get(digits) || int64_t(digits.size()) != bins ||
        digits.find_first_not_of("0123456789") != std::string_view::npos)
      return why = at + ".occupancy: expected " + std::to_string(bins) + " digits", std::nullopt;
    JsonValue item = JsonValue::array();
    item.push(*rank_json).push(*pp_json).push(groups.of(group_text));
    item.push(JsonValue::string(std::string(digits)));
    out_strips.push(item);
  }
  JsonValue out = JsonValue::object();
  out.set("start_us", real_json(*start_us)).set("end_us", real_json(*end_us)).set("bins", JsonValue::integer(bins));
  out.set("strips", out_strips);
  return out;
}

Figures read_figures(simdjson::dom::object row, const std::string& where, Groups& groups, JsonValue& notes) {
  Figures figures;
  auto note = [&](const std::string& key, const std::string& why) {
    notes.push(JsonValue::string(where + "." + key + ": " + why + "; not drawn"));
  };
  element value;
  if (!row["gpu_window_us"].get(value) && !value.is_null()) {
    std::optional<double> window = finite_number(value);
    if (window && *window >= 0)
      figures.out.set("gpu_window_us", real_json(*window));
    else
      note("gpu_window_us", "expected a finite non-negative number");
  }
  for (const char* key : {"gpu_busy", "bubble_fraction"}) {
    if (row[key].get(value) || value.is_null()) continue;
    bool busy = std::string_view(key) == "gpu_busy";
    if (std::optional<JsonValue> out = fractions(value, busy ? &groups : nullptr))
      figures.out.set(key, *out);
    else
      note(key, "expected an object of fractions from 0 to 1");
  }
  if (!row["timeline"].get(value) && !value.is_null()) {
    std::string why;
    figures.timeline = timeline(value, groups, why);
    if (!figures.timeline) note("timeline", why);
  }
  return figures;
}

// Where links to outputs start: ROOT relative to the page's directory, when the report's
// root is an absolute path (the page links root/dir/output); nothing otherwise.
std::optional<boost::filesystem::path> link_base_of(const std::string& root, const boost::filesystem::path& page_dir) {
  namespace fs = boost::filesystem;
  std::optional<std::string> root_bytes = name_from_report(root);
  if (!root_bytes || !fs::path(*root_bytes).is_absolute()) return std::nullopt;
  boost::system::error_code ec;
  fs::path from = fs::absolute(page_dir, ec).lexically_normal();
  fs::path relative = fs::path(*root_bytes).lexically_normal().lexically_relative(from);
  if (ec || relative.empty()) return std::nullopt;
  return relative;
}

// The report's totals for the page, under today's names (a schema 2 report's renamed
// columns too).
JsonValue page_totals(PageReader& reader, simdjson::dom::object top, int version) {
  JsonValue totals = JsonValue::object();
  element value;
  simdjson::dom::object totals_in;
  if (!top["totals"].get(value) && !value.get(totals_in)) {
    for (auto [key, item] : totals_in) {
      std::string name(key);
      for (const RenamedColumn& renamed : kRenamedColumns)
        if (version < 3 && key == renamed.schema2) name = renamed.name;
      totals.set(name, copy_plain(reader, item, "totals." + std::string(key), 1));
    }
  } else if (!top["totals"].get(value)) {
    totals = copy_plain(reader, value, "totals");
  }
  return totals;
}

// The page: the report's data as JSON in a script element, drawn by the page's script;
// one self-contained file.
std::string page_document(const std::string& root, const JsonValue& data, size_t reserve) {
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
  page += script_safe(data.dump(-1));
  page += "</script>\n<script>\n";
  page += kReportPageScript;
  page += "</script>\n</body>\n</html>\n";
  return page;
}

// The figures of every row, in order; `merged_timeline_dirs` gets the directories whose
// merge row has a timeline.
std::vector<Figures> read_row_figures(PageReader& reader, simdjson::dom::array rows, Groups& groups, JsonValue& notes,
                                      std::set<std::string>& merged_timeline_dirs) {
  std::vector<Figures> figures;
  size_t n = 0;
  for (element item : rows) {
    std::string where = "rows[" + std::to_string(n++) + "]";
    simdjson::dom::object row;
    if (item.get(row)) reader.fail(where, "expected an object");
    figures.push_back(read_figures(row, where, groups, notes));
    std::string_view kind, dir;
    if (figures.back().timeline && !row["kind"].get(kind) && kind == "merge" && !row["dir"].get(dir))
      merged_timeline_dirs.insert(std::string(dir));
  }
  return figures;
}

// Links: the page joins links[dir] (once per directory) and the output's name, which is
// given again as output_href only where the name needs percent-encoding.
void link_output(Figures& figure, std::map<std::string, std::string>& dir_links,
                 const boost::filesystem::path& link_base, std::string_view dir, std::string_view output) {
  std::optional<std::string> dir_bytes = name_from_report(dir), output_bytes = name_from_report(output);
  if (dir_bytes && is_dir_under_root(*dir_bytes) && output_bytes && output_bytes->find('/') == std::string::npos &&
      *output_bytes != "." && *output_bytes != "..") {
    if (!dir_links.count(std::string(dir)))
      dir_links[std::string(dir)] = url_path((link_base / *dir_bytes).lexically_normal().generic_string());
    std::string encoded = url_path(*output_bytes);
    if (encoded != output) figure.out.set("output_href", JsonValue::string(encoded));
  } else {
    // Never linked (a dir outside ROOT, or a name with '/', '.' or '..', would lead out of
    // the tree or its directory), however the page would otherwise join links[dir] and the
    // name.
    figure.out.set("no_link", JsonValue::boolean(true));
  }
}

}  // namespace

boost::filesystem::path html_path_for(const boost::filesystem::path& report_json_path) {
  boost::filesystem::path page = report_json_path;
  return page.replace_extension(".html");
}

std::string report_html(std::string_view report_json, const std::string& source,
                        const boost::filesystem::path& page_dir) {
  namespace fs = boost::filesystem;
  PageReader reader{source};
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto error = parser.parse(report_json.data(), report_json.size()).get(doc))
    throw Error(source + ": not a JSON report: " + simdjson::error_message(error));
  simdjson::dom::object top;
  int64_t found = 0;
  bool has_version = !doc.get(top) && !top["schema_version"].get(found);
  // A schema 2 report (the previous release's) draws the same: its renamed columns are read
  // under their old names, and its totals are given to the page under the names now.
  int version = readable_schema_version(source, has_version ? std::optional(found) : std::nullopt);

  auto text_member = [&](const char* key) -> std::string {
    element value;
    std::string_view text;
    if (top[key].get(value)) reader.fail(key, "missing");
    if (value.is_null()) return "";
    if (value.get(text)) reader.fail(key, "expected a string");
    return std::string(text);
  };
  std::string root = text_member("root"), tool = text_member("tool");

  std::optional<fs::path> link_base = link_base_of(root, page_dir);

  std::vector<const Column*> columns;
  JsonValue column_names = JsonValue::array();
  for (ColumnId id : kPageColumns) {
    columns.push_back(&column_of(id));
    column_names.push(JsonValue::string(column_of(id).name));
  }

  simdjson::dom::array rows;
  element rows_value;
  if (top["rows"].get(rows_value) || rows_value.get(rows)) reader.fail("rows", "expected an array");
  // First the figures, so that an iteration whose merge row has a timeline leaves its file
  // rows' timelines out: the page draws the merge's (all ranks on one clock), and the data
  // stays small.
  JsonValue notes = JsonValue::array();
  Groups groups;
  std::set<std::string> merged_timeline_dirs;
  std::vector<Figures> figures = read_row_figures(reader, rows, groups, notes, merged_timeline_dirs);

  JsonValue out_rows = JsonValue::array();
  std::map<std::string, std::string> dir_links;
  size_t n = 0;
  for (element item : rows) {
    std::string where = "rows[" + std::to_string(n) + "]";
    simdjson::dom::object row;
    if (item.get(row)) reader.fail(where, "expected an object");
    std::string_view kind;
    if (row["kind"].get(kind) || (kind != "file" && kind != "merge" && kind != "problem"))
      reader.fail(where + ".kind", "expected \"file\", \"merge\" or \"problem\"");
    JsonValue cells = JsonValue::array();
    cells.push(JsonValue::string(std::string(kind)));
    for (size_t c = 1; c < columns.size(); ++c) {
      element value;
      const Column& column = *columns[c];
      std::string_view key = column_name_in_schema(column.name, version);
      cells.push(row[key].get(value) ? JsonValue::null()
                                     : cell_json(reader, value, column, where + "." + std::string(key)));
    }
    Figures& figure = figures[n];
    std::string_view dir, output;
    bool has_dir = !row["dir"].get(dir), has_output = !row["output"].get(output);
    bool merge_draws_it = kind == "file" && has_dir && merged_timeline_dirs.count(std::string(dir));
    if (figure.timeline && !merge_draws_it) figure.out.set("timeline", *figure.timeline);
    if (link_base && has_dir && has_output) link_output(figure, dir_links, *link_base, dir, output);
    cells.push(figure.out);
    out_rows.push(cells);
    ++n;
  }

  JsonValue data = JsonValue::object();
  data.set("source", JsonValue::string(printable(source, Backslash::escape)));
  data.set("root", JsonValue::string(root)).set("tool", JsonValue::string(tool));
  element value;
  data.set("shard", top["shard"].get(value) ? JsonValue::null() : copy_plain(reader, value, "shard"));
  data.set("runs", top["runs"].get(value) ? JsonValue::array() : copy_plain(reader, value, "runs"));
  data.set("totals", page_totals(reader, top, version));
  JsonValue links = JsonValue::object();
  for (const auto& [dir, link] : dir_links) links.set(dir, JsonValue::string(link));
  data.set("columns", column_names).set("groups", groups.names).set("links", links);
  data.set("rows", out_rows).set("notes", notes);

  return page_document(root, data, report_json.size() / 2);
}

}  // namespace tracelane::cli
