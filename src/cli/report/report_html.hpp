// The visual sweep report, tracelane_report.html: one self-contained page (inline style and
// script, no network) drawn from a JSON report, written beside it by `sweep` and
// `report --combine` and from any report by `report --html`.
#pragma once

#include <boost/filesystem.hpp>
#include <functional>
#include <string>
#include <string_view>

namespace tracelane::cli {

// The page for `report_json` (a report_json() text, read from `source`, which messages
// name). `page_dir` is the directory the page is written to: links to the compacted and
// merged files are relative to it. Throws Error("<source>: <where>: <what>") when the text
// is not a report. Every text of the report reaches the page only as JSON data inside a
// <script type="application/json"> element with '<' escaped, and the page's script puts
// it into the document as text, never as markup.
std::string report_html(std::string_view report_json, const std::string& source,
                        const boost::filesystem::path& page_dir);

// The same page for a report in memory (write_report: the page of the report_json() text
// just made, without reading that text back): byte for byte what report_html() draws from
// report_json(report) read from `source`. `reserve`: the page's expected size.
struct Report;
std::string report_page(const Report& report, const std::string& source, const boost::filesystem::path& page_dir,
                        size_t reserve);
// The same page, handed to `sink` in pieces of about kReportPiece bytes (write_report).
void write_report_page(const Report& report, const std::string& source, const boost::filesystem::path& page_dir,
                       const std::function<void(std::string_view)>& sink);

// The page's name for a report file: tracelane_report[.shard-K-of-N].json -> .html.
boost::filesystem::path html_path_for(const boost::filesystem::path& report_json_path);

}  // namespace tracelane::cli
