// What the report's unit tests share (report_write_test.cpp, report_read_test.cpp,
// report_combine_test.cpp): rows and partial reports of a plan, a valid partial report's
// JSON to corrupt, and the reader's error for a text.
#pragma once

#include <gtest/gtest.h>
#include <simdjson.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/report/report.hpp"
#include "tracelane/trace.hpp"

namespace tracelane::cli::report_test {

inline Row named_file_row(const std::string& dir, const std::string& file, RowStatus status = RowStatus::ok) {
  Row row(RowKind::file);
  row.set(ColumnId::dir, dir)
      .set(ColumnId::file, file)
      .set(ColumnId::rank, int64_t(0))
      .set(ColumnId::run, std::string("run"));
  row.set(ColumnId::iteration, std::string("it"))
      .set(ColumnId::input_bytes, int64_t(100))
      .set(ColumnId::output, file + ".out");
  row.set_status(status).set(ColumnId::seconds, 0.25).set(ColumnId::compaction_ratio, 2.5);
  return row;
}

// The file row of rank `rank` in `dir`, with an input size and a time.
inline Row ranked_file_row(const std::string& dir, int64_t rank, RowStatus status) {
  Row row(RowKind::file);
  row.set(ColumnId::dir, dir)
      .set(ColumnId::file, "rank" + std::to_string(rank) + "_trace.json")
      .set(ColumnId::rank, rank);
  row.set_status(status).set(ColumnId::input_bytes, int64_t(100 + rank)).set(ColumnId::seconds, 0.25);
  return row;
}

// Shard index/count's report of a sweep whose iteration plan is `iterations` (sorted).
inline Report partial(int index, int count, std::vector<Row> rows, std::vector<std::string> iterations) {
  Report report;
  report.root = "/data/outputs";
  report.shard = {index, count};
  report.plan = shard_plan(whole_plan(std::move(iterations)), report.shard);
  report.runs.push_back({Shard{index, count}, 1.5, 2, 1 << 20});
  report.rows = std::move(rows);
  sort_rows(report.rows);
  return report;
}

// Shard index/count's report of plan `iterations`, one file row for each iteration it takes.
inline Report partial_with_rows(int index, int count, std::vector<std::string> iterations, const std::string& source) {
  std::vector<Row> rows;
  for (const std::string& dir : shard_plan(whole_plan(iterations), Shard{index, count}).iterations)
    rows.push_back(named_file_row(dir, "rank0_trace.json"));
  Report report = partial(index, count, std::move(rows), std::move(iterations));
  report.source = source;
  return report;
}

// A valid partial report's JSON, one file row and one merge row, to be corrupted by the tests.
inline std::string valid_json() {
  Row merge(RowKind::merge);
  merge.set(ColumnId::dir, std::string("r/it")).set(ColumnId::ranks, int64_t(2)).set_status(RowStatus::ok);
  Row file = named_file_row("r/it", "rank0_trace.json");
  file.set(ColumnId::gpu_flow_endpoints_mapped, int64_t(72)).set(ColumnId::gpu_annotations_mapped, int64_t(3));
  return report_json(partial(0, 2, {file, merge}, {"r/it", "r/next"}));
}

// Replaces the first `from` among the rows, else the first anywhere (totals repeat some
// column names before the rows).
inline std::string replaced(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from, text.find("\"rows\": ["));
  if (at == std::string::npos) at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// The message of the Error parse_report_json throws, or "" when it reads the text.
inline std::string reading_error(const std::string& json) {
  try {
    parse_report_json(json, "shard.json");
  } catch (const tracelane::Error& e) {
    return e.what();
  }
  return "";
}

// A partial report the previous release (schema 2) wrote: `tracelane sweep --shard K/2` of
// two iterations of one rank each (tests/data/report_schema2/).
inline std::string schema2_report(int shard) {
  std::ifstream in(std::string(TRACELANE_SOURCE_DIR) + "/tests/data/report_schema2/tracelane_report.shard-" +
                   std::to_string(shard) + "-of-2.json");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("\"schema_version\": 2"), std::string::npos);
  return text.str();
}

inline bool valid_utf8(const std::string& text) { return simdjson::validate_utf8(text.data(), text.size()); }

}  // namespace tracelane::cli::report_test
