// Writing the report as others read it (report_write.cpp, report_columns.cpp): valid UTF-8
// whatever the names, reversible escapes, no live spreadsheet formulas.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "report_test_rows.hpp"

using namespace tracelane::cli;
using namespace tracelane::cli::report_test;

TEST(ReportNames, EveryTextCellIsValidUtf8AndReadsBackToTheRawBytes) {
  const std::string dir = "run\xff/it\x1b[31m\\x41/\xc3";
  const std::string file = "rank0_trace.json\x7f";
  Report report = partial(0, 1, {named_file_row(dir, file, "failed")}, {dir});
  report.rows[0].set(ColumnId::error, dir + "/" + file + ": bad \xfe");
  report.root = "/root\xff\\";
  std::string json = report_json(report), csv = report_csv(report);
  EXPECT_TRUE(valid_utf8(json)) << json;
  EXPECT_TRUE(valid_utf8(csv)) << csv;
  EXPECT_EQ(csv.find('\x1b'), std::string::npos);
  // The escaped form: \xHH for what is not printable UTF-8, \\ for a backslash.
  EXPECT_NE(json.find(R"("dir": "run\\xff/it\\x1b[31m\\\\x41/\\xc3")"), std::string::npos) << json;

  Report back = parse_report_json(json, "test");
  EXPECT_EQ(std::get<std::string>(back.rows[0].get(ColumnId::dir)), dir);
  EXPECT_EQ(std::get<std::string>(back.rows[0].get(ColumnId::file)), file);
  EXPECT_EQ(back.root, report.root);
  EXPECT_EQ(report_json(back), json);
  EXPECT_EQ(report_csv(combine_reports({back}).report), csv);
}

TEST(ReportNames, NameFromReportAcceptsOnlyTheFormPrintableWrites) {
  EXPECT_EQ(name_from_report("a\\\\b\\xff"), std::optional<std::string>("a\\b\xff"));
  EXPECT_EQ(name_from_report("α/β"), std::optional<std::string>("α/β"));
  EXPECT_FALSE(name_from_report("\\x41"));  // 'A' is written as itself
  EXPECT_FALSE(name_from_report("\\xFF"));  // printable writes lower case
  EXPECT_FALSE(name_from_report("a\\q"));   // no such escape
  EXPECT_FALSE(name_from_report("a\\"));    // a lone trailing backslash
  EXPECT_FALSE(name_from_report("a\\x4"));  // a cut escape
  EXPECT_FALSE(name_from_report("a\x1b"));  // a raw control character
}

TEST(ReportCsv, PrefixesTextCellsThatASpreadsheetWouldRunAsFormulas) {
  Report report;
  for (const char* dir : {"=HYPERLINK(\"http://x\")", "+1", "-1", "@SUM(A1)", "'quoted", "a=b"})
    report.rows.push_back(named_file_row(dir, "rank0_trace.json"));
  report.rows.back().set(ColumnId::input_bytes, int64_t(0));
  std::string csv = report_csv(report);
  EXPECT_NE(csv.find("\r\nfile,\"'=HYPERLINK(\"\"http://x\"\")\",rank0_trace.json,"), std::string::npos) << csv;
  for (const char* cell :
       {"\r\nfile,'+1,", "\r\nfile,'-1,", "\r\nfile,'@SUM(A1),", "\r\nfile,''quoted,", "\r\nfile,a=b,"})
    EXPECT_NE(csv.find(cell), std::string::npos) << cell << "\n" << csv;
  EXPECT_EQ(csv.find(",'100,"), std::string::npos);  // numbers never
  EXPECT_NE(csv.find(",100,"), std::string::npos);
  // The JSON keeps the value itself.
  EXPECT_NE(report_json(report).find(R"j("dir": "=HYPERLINK(\"http://x\")")j"), std::string::npos);
}
