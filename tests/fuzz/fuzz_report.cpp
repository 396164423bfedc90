// libFuzzer target over the partial-report reader of `tracelane report --combine`: any bytes
// go to parse_report_json; a report it accepts goes through combine_reports (alone, and
// twice with itself, as a repeated shard), report_json and report_csv. Every input must end
// in a report or a clean tracelane::Error; anything else (a crash, a sanitizer report,
// another exception escaping) is a bug, and so is an output that is not valid UTF-8, a
// JSON output that parse_report_json does not read back, or one that does not read back to
// itself (report_json(parse(report_json(r))) == report_json(r)). The same bytes go to the
// HTML page's reader (report_html): a page or a clean Error, and a page whose JSON data
// element holds no '<' (no text can end it) and that is valid UTF-8.
//
//   CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DTRACELANE_FUZZ=ON \
//       -DTRACELANE_BUILD_TESTS=OFF -DTRACELANE_BUILD_BENCH=OFF && ninja -C build-fuzz fuzz_report
//   build-fuzz/tests/fuzz/fuzz_report -dict=tests/fuzz/report.dict -max_len=16384 \
//       fuzz-work tests/fuzz/corpus_report
//
// For a long run add -max_total_time=SECONDS (and a new -seed each time); CI runs a fixed
// -seed and -runs. Add each finding, once fixed, as a regression test in
// tests/unit/report_test.cpp and its input to tests/fuzz/corpus_report (regress_*).
#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "report.hpp"
#include "report_html.hpp"
#include "tracelane/trace.hpp"

namespace {

using namespace tracelane::cli;

[[noreturn]] void fail(const char* what, const std::string& text) {
  std::fprintf(stderr, "fuzz_report: %s\n%.3000s\n", what, text.c_str());
  std::abort();
}

void expect_utf8(const std::string& text, const char* what) {
  if (!simdjson::validate_utf8(text.data(), text.size())) fail(what, text);
}

// The report's JSON and CSV are valid UTF-8, and the JSON reads back to the same report.
void check_outputs(const Report& report, const char* what) {
  std::string json = report_json(report), csv = report_csv(report);
  expect_utf8(json, what);
  expect_utf8(csv, what);
  Report back;
  try {
    back = parse_report_json(json, "written.json");
  } catch (const tracelane::Error& e) {
    fail(("written report not read back: " + std::string(e.what())).c_str(), json);
  }
  if (report_json(back) != json) fail("written report reads back to another report", json);
  if (report_csv(back) != csv) fail("written report reads back to another CSV", csv);
}

// The page of any bytes: a clean Error, or a page whose data element no text can end.
void check_page(std::string_view bytes) {
  std::string page;
  try {
    page = report_html(bytes, "fuzz.json", "/data/pages");
  } catch (const tracelane::Error& e) {
    if (std::string(e.what()).rfind("fuzz.json: ", 0) != 0) fail("a page error that does not start with the file", e.what());
    return;
  }
  expect_utf8(page, "report_html");
  const std::string open = "<script type=\"application/json\" id=\"tracelane-data\">";
  size_t start = page.find(open);
  if (start == std::string::npos) fail("a page without its data element", page);
  start += open.size();
  size_t end = page.find("</script>", start);
  if (end == std::string::npos || page.find('<', start) != end) fail("a '<' in the page's data element", page);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  check_page(bytes);
  Report report;
  try {
    report = parse_report_json(bytes, "fuzz.json");
  } catch (const tracelane::Error& e) {
    std::string message = e.what();
    if (message.rfind("fuzz.json: ", 0) != 0) fail("an error that does not start with the file", message);
    // A mutated row rarely keeps the totals right: read it again without that check, so that
    // the rows' values reach the writers (whose output must then pass every check).
    try {
      report = parse_report_json(bytes, "fuzz.json", false);
    } catch (const tracelane::Error&) {
      return 0;
    }
  }
  check_outputs(report, "report_json(parse)");
  Combined alone = combine_reports({report});
  check_outputs(alone.report, "combined");
  Combined twice = combine_reports({report, report}, {"other.json: unreadable \xff"});
  check_outputs(twice.report, "combined twice");
  if (twice.problems.size() > 4 + alone.problems.size()) fail("problems grow", twice.problems.back());
  for (const std::string& problem : twice.problems)
    if (problem.size() > 4096) fail("a problem line is not summarised", problem);
  // A stored row record fills a row as it was.
  for (const Row& row : report.rows) {
    Row skipped(row.kind);
    const Cell& bytes_cell = row.get("output_bytes");
    int64_t output_bytes = std::holds_alternative<int64_t>(bytes_cell) ? std::get<int64_t>(bytes_cell) : -1;
    if (output_bytes >= 0 && !fill_from_record(skipped, row_record(row), output_bytes))
      fail("a row record does not fill its row", row_record(row));
  }
  return 0;
}
