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
// Then the combine over a set of shards: the report's rows are split into the partial
// reports a job array of 1 to 4 shards would have written (the plan: the sorted dirs of
// its file and merge rows), and the set is changed as a hash of the input says: a shard
// dropped, given twice, of another plan (digest, count) or of none, a row repeated, an
// iteration's rows removed, an iteration moved to another shard's list or cut from one.
// Unchanged, the shards must combine as the whole report does (the same rows, as many
// problems, a plan when it has one); changed, into a failed report with a problem line
// (of at most 4096 bytes), and never with a plan. A shard reads back to itself when the
// report did.
//
//   CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DTRACELANE_FUZZ=ON \
//       -DTRACELANE_BUILD_TESTS=OFF -DTRACELANE_BUILD_BENCH=OFF && ninja -C build-fuzz fuzz_report
//   build-fuzz/tests/fuzz/fuzz_report -dict=tests/fuzz/report.dict -max_len=16384 \
//       fuzz-work tests/fuzz/corpus_report
//
// For a long run add -max_total_time=SECONDS (and a new -seed each time); CI runs a fixed
// -seed and -runs. Add each finding, once fixed, as a regression test in
// tests/unit/report_read_test.cpp and its input to tests/fuzz/corpus_report (regress_*).
#include <simdjson.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "report/report.hpp"
#include "report/report_html.hpp"
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
    if (std::string(e.what()).rfind("fuzz.json: ", 0) != 0)
      fail("a page error that does not start with the file", e.what());
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

// The report's file and merge rows (its problem rows count only how many there are).
std::string non_problem_rows(const Report& report) {
  Report rows;
  for (const Row& row : report.rows)
    if (row.kind != RowKind::problem) rows.rows.push_back(row);
  return report_csv(rows);
}

std::string dir_of(const Row& row) { return std::get<std::string>(row.get(ColumnId::dir)); }

// The partial reports shards 0..n-1 of a sweep of `report`'s rows would have written.
std::vector<Report> split_into_shards(const Report& report, int n, const IterationPlan& whole) {
  std::map<std::string, size_t> position;
  for (size_t p = 0; p < whole.iterations.size(); ++p) position[whole.iterations[p]] = p;
  std::vector<Report> shards;
  shards.resize(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) {
    Report& shard = shards[size_t(k)];
    shard.root = report.root;
    shard.shard = {k, n};
    shard.plan = shard_plan(whole, shard.shard);
    shard.source = "shard-" + std::to_string(k) + ".json";
    shard.runs.push_back({shard.shard, 0.5, 1, 1 << 20});
  }
  for (const Row& row : report.rows)
    shards[row.kind == RowKind::problem ? 0 : position.at(dir_of(row)) % size_t(n)].rows.push_back(row);
  return shards;
}

// Changes `shards` as `hash` says; false when they are left as they are.
bool change_shards(std::vector<Report>& shards, uint64_t hash) {
  size_t n = shards.size(), k = (hash >> 16) % n, j = (hash >> 24) % n;
  Report& one = shards[k];
  std::vector<std::string>& taken = one.plan->iterations;
  std::string iteration = taken.empty() ? std::string() : taken[(hash >> 32) % taken.size()];
  auto rows_of_iteration = [&](Report& shard, const std::string& dir) {
    std::vector<Row> moved, kept;
    for (Row& row : shard.rows) (row.kind != RowKind::problem && dir_of(row) == dir ? moved : kept).push_back(row);
    shard.rows = std::move(kept);
    return moved;
  };
  switch ((hash >> 8) % 10) {
    case 0:
      return false;
    case 1:
      if (n < 2) break;
      shards.erase(shards.begin() + std::ptrdiff_t(k));
      return true;
    case 2: {
      Report copy = one;
      copy.source = "copy.json";
      shards.push_back(std::move(copy));
      return true;
    }
    case 4:
      one.plan->count++;
      return true;
    case 5:
      for (const Row& row : one.rows)
        if (row.kind != RowKind::problem) {
          Row copy = row;
          shards[j].rows.push_back(copy);
          return true;
        }
      break;
    case 6:
      if (iteration.empty()) break;
      rows_of_iteration(one, iteration);
      return true;
    case 7: {
      if (iteration.empty() || j == k) break;
      std::vector<Row> moved = rows_of_iteration(one, iteration);
      taken.erase(std::find(taken.begin(), taken.end(), iteration));
      std::vector<std::string>& other = shards[j].plan->iterations;
      other.insert(std::lower_bound(other.begin(), other.end(), iteration), iteration);
      shards[j].rows.insert(shards[j].rows.end(), moved.begin(), moved.end());
      return true;
    }
    case 8:
      if (iteration.empty()) break;
      rows_of_iteration(one, iteration);
      taken.erase(std::find(taken.begin(), taken.end(), iteration));
      return true;
    case 9:
      one.plan.reset();
      return true;
  }
  // 3, and whatever the set does not allow: another plan's digest.
  one.plan->digest[0] = one.plan->digest[0] == '0' ? '1' : '0';
  return true;
}

// The report's rows, split into shards and combined, unchanged and then changed.
void check_shards(const Report& report, std::string_view bytes, bool read_strictly) {
  uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a: every input its own set
  for (unsigned char c : bytes) hash = (hash ^ c) * 0x100000001b3ull;
  std::vector<std::string> dirs;
  for (const Row& row : report.rows)
    if (row.kind != RowKind::problem) dirs.push_back(dir_of(row));
  std::sort(dirs.begin(), dirs.end());
  dirs.erase(std::unique(dirs.begin(), dirs.end()), dirs.end());
  IterationPlan whole = whole_plan(dirs);
  std::vector<Report> shards = split_into_shards(report, int(1 + hash % 4), whole);
  if (read_strictly) check_outputs(shards[(hash >> 40) % shards.size()], "a shard");

  Report unsharded = report;
  unsharded.shard.reset();
  unsharded.plan = whole;
  Combined reference = combine_reports({unsharded});
  Combined joined = combine_reports(shards);
  if (non_problem_rows(joined.report) != non_problem_rows(reference.report))
    fail("shards combine into other rows than their report", non_problem_rows(joined.report));
  if (joined.problems.size() != reference.problems.size() ||
      joined.report.plan.has_value() != reference.report.plan.has_value())
    fail("shards combine with other problems than their report", joined.problems.empty() ? "" : joined.problems[0]);

  if (!change_shards(shards, hash)) return;
  Combined changed = combine_reports(shards);
  check_outputs(changed.report, "changed shards");
  if (changed.problems.empty() || !has_failures(changed.report.rows))
    fail("a changed set of shards combines without a problem", non_problem_rows(changed.report));
  if (changed.report.plan) fail("a changed set of shards combines with a plan", changed.problems[0]);
  for (const std::string& problem : changed.problems)
    if (problem.size() > 4096) fail("a problem line is not summarised", problem);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  check_page(bytes);
  Report report;
  bool read_strictly = true;
  try {
    report = parse_report_json(bytes, "fuzz.json");
  } catch (const tracelane::Error& e) {
    read_strictly = false;
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
  // A plan that does not hold the rows is read only without the agreement checks: the
  // report written with it would not read back.
  if (!read_strictly) report.plan.reset();
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
    const Cell& bytes_cell = row.get(ColumnId::output_bytes);
    int64_t output_bytes = std::holds_alternative<int64_t>(bytes_cell) ? std::get<int64_t>(bytes_cell) : -1;
    if (output_bytes >= 0 && !fill_from_record(skipped, row_record(row), output_bytes))
      fail("a row record does not fill its row", row_record(row));
  }
  check_shards(report, bytes, read_strictly);
  return 0;
}
