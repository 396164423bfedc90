// What the report's own files share (report_columns.cpp, report_write.cpp,
// report_read.cpp, report_combine.cpp, report_command.cpp): how a cell is written, and the
// totals computed from the rows. Not for other commands: report.hpp is the report's face.
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "report.hpp"
#include "tracelane/json_value.hpp"

namespace tracelane::cli {

// The largest real a report holds (seconds, ratios): 1e15 s is 31 million years. Beyond
// it, "%.3f" would write hundreds of digits, a number JSON readers (simdjson) refuse.
inline constexpr double kMaxReal = 1e15;

// A real with `decimals` digits after the point ("" when not finite; the exponent form at
// kMaxReal and beyond).
std::string format_real(double value, int decimals);
// A real as a report holds it: rounded to the decimals it is written with, so that a row
// read back from a report is the row that was written (and totals of a combined report are
// the sums of the values its inputs show), and the page of a report in memory is the page
// of its JSON. Again on its own result, it changes nothing.
double real_as_written(double value, int decimals);
// A cell as the JSON report writes it: text in printable()'s escaped form, reals with the
// column's decimals, absent as null.
JsonValue cell_json(const Cell& cell, const Column& column);
// A real as the shortest text that reads back as the same double (the page's data, so that
// the page shows the report's number and a test can compare them exactly).
JsonValue real_json(double value);

struct Totals {
  std::map<std::string, int64_t> counts;  // "<kind>s", "<kind>s_<status>"
  std::vector<Cell> sums = std::vector<Cell>(kColumnCount);
  // Columns whose sum does not fit (beyond int64, or an infinite real): their sum is
  // absent. Rows of a real tree never get near; rows read from reports are checked for it.
  std::set<std::string> overflowed;
};

// How a report is read (report_reader.hpp). `strict`: as `report --combine` and a skipped
// row's record read it (parse_report_json). `page`: as the page reads it, tolerantly
// where a viewer should (unknown keys left out, any status, dir or column of another kind
// shown, figures not in the contract's form left out and named, the totals as given); what
// it shows is checked as strictly, with the same "<source>: <where>: <what>" messages.
enum class Reading { strict, page };

// Which of a row's figure keys the page read (the others were absent, null or left out).
struct FigureKeys {
  bool window = false, busy = false, bubble = false, timeline = false;
};

// A report as read, with what only the page needs: the tool that wrote it and, read for
// the page, the totals as the report gives them (under the column names now), each row's
// figure keys (one per row) and the notes on figures left out.
struct ReportRead {
  Report report;
  std::string tool;
  JsonValue totals = JsonValue::object();
  std::vector<FigureKeys> figure_keys;
  std::vector<std::string> notes;
};
// Throws Error("<source>: <where>: <what>"); parse_report_json() is the strict reading.
ReportRead read_report(std::string_view json, const std::string& source, Reading reading, bool verify_agreement = true);

// The totals of `rows` as the page reads them from report_json()'s text (read_report with
// Reading::page: every number as its JSON value, not as the text written).
JsonValue page_totals_of(const std::vector<Row>& rows);

// File columns are summed over file rows, merge-only columns over merge rows, so that
// input_bytes counts every rank file once.
Totals compute_totals(const std::vector<Row>& rows);
// The totals object of report_json().
JsonValue totals_json(const std::vector<Row>& rows);

}  // namespace tracelane::cli
