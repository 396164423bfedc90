// The one reader of a report's JSON (report_read.cpp, report_read_figures.cpp): the checks
// every field goes through, with the JSON path of what is checked for the message. How
// much it tolerates is a parameter (Reading): `report --combine` and a skipped row's
// record refuse anything a tracelane would not write; the page (report_html.cpp) reads as
// a viewer does, and leaves out what it cannot draw instead of refusing the report.
#pragma once

#include <simdjson.h>

#include <climits>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "report_cells.hpp"
#include "tracelane/trace.hpp"

namespace tracelane::cli {

// A value from a report for a message: short, one line (printable() is applied where the
// message is printed).
std::string excerpt(simdjson::dom::element value);

// What is wrong with one field: its JSON path, what is wrong, and the value found (empty
// when the message does not show it). what() is "<source>: <where>: <what>, got <got>".
class FieldError : public Error {
 public:
  FieldError(const std::string& source, const std::string& at, const std::string& what, const std::string& got)
      : Error(source + ": " + at + ": " + what + (got.empty() ? "" : ", got " + got)), where(at), what_is_wrong(what) {}
  std::string where, what_is_wrong;
};

using Members = std::map<std::string_view, simdjson::dom::element>;

class ReportReader {
 public:
  explicit ReportReader(const std::string& source, int version = kReportSchemaVersion,
                        Reading reading = Reading::strict)
      : source_(source), version_(version), reading_(reading) {}

  // A column's or totals key's name as this report writes it (schema 2: kRenamedColumns).
  std::string_view key_in_file(std::string_view name) const { return column_name_in_schema(name, version_); }
  int version() const { return version_; }
  bool for_page() const { return reading_ == Reading::page; }

  [[noreturn]] void fail(const std::string& where, const std::string& what, const std::string& got = "") const {
    throw FieldError(source_, where, what, got);
  }

  // The members of an object, each key once and every key one of `known`. Read for the
  // page, unknown keys are left out (a newer report still draws) and a repeated key's
  // first value is taken, as any JSON viewer takes it.
  Members members(simdjson::dom::element value, const std::string& where,
                  const std::vector<std::string_view>& known) const {
    simdjson::dom::object object;
    if (value.get(object)) fail(where, "expected an object", excerpt(value));
    Members out;
    for (auto [key, member] : object) {
      std::string path = where.empty() ? std::string(key) : where + "." + std::string(key);
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        if (for_page()) continue;
        fail(path, "unknown key");
      }
      if (!out.emplace(key, member).second && !for_page()) fail(path, "given twice");
    }
    return out;
  }

  simdjson::dom::element required(const Members& members, std::string_view key, const std::string& where) const {
    auto it = members.find(key);
    if (it == members.end()) fail(where.empty() ? std::string(key) : where + "." + std::string(key), "missing");
    return it->second;
  }

  int64_t integer(simdjson::dom::element value, const std::string& where, int64_t max = INT64_MAX) const {
    int64_t number;
    if (value.type() != simdjson::dom::element_type::INT64 || value.get(number) || number < 0 || number > max)
      fail(where, "expected an integer from 0 to " + std::to_string(max), excerpt(value));
    return number;
  }

  // Text in printable()'s escaped form, decoded back to its bytes.
  std::string text(simdjson::dom::element value, const std::string& where) const {
    std::string_view raw;
    if (value.get(raw)) fail(where, "expected a string", excerpt(value));
    std::optional<std::string> bytes = name_from_report(raw);
    if (!bytes)
      fail(where, "not text as tracelane writes it (printable UTF-8, \\\\ and \\xHH escapes): " + excerpt(value));
    return *bytes;
  }

 private:
  const std::string& source_;
  int version_;
  Reading reading_;
};

// The figures' keys, after the columns (report_json, read_row).
inline const std::vector<std::string_view> kFigureKeys = {"gpu_window_us", "gpu_busy", "bubble_fraction", "timeline"};

// The figures of a row (docs/figures.md), when it has any: all of its kind's keys or none
// (reports written before the figures existed have none), and only on rows with status ok
// or skipped (figures kept with an up-to-date output, figures_record()).
std::optional<GpuFigures> read_figures(const ReportReader& reader, const Members& members, RowKind kind,
                                       RowStatus status, const std::string& where);
// The figures of a row as the page reads them: each key on its own, whatever the row's
// kind and status; a key not in the contract's form is left out of `keys` and named in
// `notes` ("<where>.<key>: <what>; not drawn").
std::optional<GpuFigures> read_figures_for_page(const ReportReader& reader, const Members& members, RowKind kind,
                                                const std::string& where, FigureKeys& keys,
                                                std::vector<std::string>& notes);

}  // namespace tracelane::cli
