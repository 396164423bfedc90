// The sweep report. Rows are a fixed set of typed columns (report_columns) so that the
// JSON and the CSV say the same thing, a partial report reads back without loss, and a
// combined report of shards equals a single-node report in every non-timing column: the
// rows are sorted by a key made only of their own values, and totals are recomputed from
// the rows instead of being added up from the partial reports.
//
// A report is read by people and programs that trust it, and written from names anyone
// with write access to the tree chose: text cells are written in printable()'s escaped
// form (valid UTF-8, reversible), CSV text cells never start a spreadsheet formula, and a
// partial report read back by `report --combine` is checked field by field, as untrusted
// as any other file in the tree.
//
// This file is the `report` command; the report itself is in report_columns.cpp (columns,
// rows, totals), report_write.cpp (JSON, CSV, records), report_read.cpp (reading and
// checking) and report_combine.cpp (joining shards).
#include "report.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <iostream>
#include <set>

#include "commands.hpp"
#include "files.hpp"
#include "options.hpp"
#include "printable.hpp"
#include "report_cells.hpp"
#include "report_html.hpp"

namespace tracelane::cli {

namespace {

std::string shown(const std::string& text) { return printable(text, Backslash::keep); }

// `report --html REPORT.json [-o OUT.html]`: the page of an existing report (a sweep's or
// one copied from a cluster), through the same guard and atomic write as every output.
// The page beside the report is the report's own (a sweep rewrites it too); a page named
// with -o is like any other output: an .html name, and never over an existing file
// without --overwrite.
int write_report_page(const fs::path& report_path, const std::string& output, bool overwrite, bool quiet) {
  fs::path page = output.empty() ? html_path_for(report_path) : fs::path(output);
  if (!output.empty() && page.extension() != ".html") {
    print_error(page.string() + ": the page's name must end in .html");
    return kExitUsage;
  }
  try {
    guard_output(page, {report_path}, output.empty() || overwrite);
  } catch (const OutputRefused& e) {
    print_error(std::string(e.what()) + " (not overwritten; give another -o)");
    return kExitUsage;
  }
  try {
    ReadOptions read;
    read.regular_only = true;
    read.max_bytes = kMaxPartialReportBytes;
    std::string json = read_file(report_path, nullptr, read);
    fs::path page_dir = page.parent_path().empty() ? fs::path(".") : page.parent_path();
    write_atomically(page, report_html(json, report_path.string(), page_dir), output.empty() || overwrite);
  } catch (const OutputRefused& e) {
    print_error(e.what());
    return kExitUsage;
  } catch (const Error& e) {
    print_error(e.what());
    return kExitFailed;
  }
  if (!quiet) std::cout << shown(page.string()) << "\n";
  return kExitOk;
}

// The partial reports named by --combine: files as given, and each directory's
// tracelane_report.shard-*.json (sorted). `first_dir` is the first directory named (or the
// first file's). Nothing, or the exit status of a directory that cannot be listed.
std::optional<int> partial_report_files(const std::vector<std::string>& combine, std::vector<fs::path>& files,
                                        fs::path& first_dir) {
  for (const std::string& arg : combine) {
    fs::path path(arg);
    boost::system::error_code ec;
    if (fs::is_directory(path, ec)) {
      if (first_dir.empty()) first_dir = path;
      std::vector<fs::path> found;
      for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
        std::string name = it->path().filename().string();
        if (name.rfind("tracelane_report.shard-", 0) == 0 && it->path().extension() == ".json")
          found.push_back(it->path());
      }
      if (ec) {
        std::cerr << shown(path.string()) << ": cannot list directory: " << ec.message() << "\n";
        return kExitUsage;
      }
      std::sort(found.begin(), found.end());
      if (found.empty()) std::cerr << shown(path.string()) << ": no tracelane_report.shard-*.json here\n";
      files.insert(files.end(), found.begin(), found.end());
    } else {
      if (first_dir.empty()) first_dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
      files.push_back(path);
    }
  }
  return std::nullopt;
}

// Each partial report read and checked (parse_report_json); one that cannot be read is
// an `unreadable` line, which the combined report then lists as a failed problem row.
std::vector<Report> read_partial_reports(const std::vector<fs::path>& files, std::vector<std::string>& unreadable) {
  // One file named twice (a directory and a file in it) is read once.
  std::set<std::pair<dev_t, ino_t>> identities;
  std::vector<Report> partials;
  for (const fs::path& file : files) {
    struct stat st {};
    if (::stat(file.c_str(), &st) == 0 && !identities.insert({st.st_dev, st.st_ino}).second) continue;
    try {
      // A partial report comes from another node: a regular file, and no larger than any
      // real report (a row is ~1 KB; kMaxPartialReportBytes holds a million of them).
      ReadOptions read;
      read.regular_only = true;
      read.max_bytes = kMaxPartialReportBytes;
      partials.push_back(parse_report_json(read_file(file, nullptr, read), file.string()));
    } catch (const Error& e) {
      unreadable.push_back(e.what());
    }
  }
  return partials;
}

// After the combined report is written: the shards with failed rows and the iterations
// with unmatched PP arrows on stderr, the summary line on stdout. Returns the exit status.
int report_combined(const Combined& combined, const std::vector<Report>& partials, const fs::path& written,
                    bool quiet) {
  std::vector<std::string> failed_shards;
  int64_t failed_count = 0;
  for (const Report& partial : partials)
    if (has_failures(partial.rows) && failed_count++ < int64_t(kListLimit))
      failed_shards.push_back(partial.shard ? partial.shard->label() : std::string("(unsharded)"));
  if (failed_count) std::cerr << "shards with failed rows: " << summarise_list(failed_shards, failed_count) << "\n";
  auto unmatched = unmatched_iterations(combined.report.rows);
  for (size_t i = 0; i < unmatched.size() && i < kListLimit; ++i)
    std::cerr << shown(unmatched[i].first) << ": " << unmatched[i].second
              << " PP send/recv unmatched (a truncated capture window?)\n";
  if (unmatched.size() > kListLimit)
    std::cerr << "... and " << unmatched.size() - kListLimit
              << " more iterations with PP send/recv unmatched (totals.iterations_with_unmatched_send_recv)\n";
  if (!quiet)
    std::cout << shown(written.string()) << ": " << combined.report.rows.size() << " rows from " << partials.size()
              << " partial reports\n";
  return failed_count > 0 || !combined.problems.empty() ? kExitFailed : kExitOk;
}

// `report`'s options, as given.
struct ReportArguments {
  std::vector<std::string> combine;
  std::string report_dir, html, output;
  bool quiet = false, overwrite = false;
};

// Nothing, or the exit status of a command line that is help, wrong, or a mix of --html's
// and --combine's options.
std::optional<int> parse_report_arguments(int argc, char** argv, ReportArguments& args) {
  po::options_description options("report options");
  options.add_options()("help,h", "show this help")(
      "combine", po::value(&args.combine)->multitoken(),
      "partial reports (tracelane_report.shard-K-of-N.json) or directories holding them")(
      "report-dir", po::value(&args.report_dir),
      "where to write tracelane_report.json/.csv/.html (default: the first directory)")(
      "html", po::value(&args.html), "draw the page of an existing report: REPORT.json -> REPORT.html")(
      "output,o", po::value(&args.output),
      "with --html: where to write the page, OUT.html (default: beside REPORT.json)")(
      "overwrite", po::bool_switch(&args.overwrite), "with --html -o: replace an existing OUT.html")(
      "quiet,q", po::bool_switch(&args.quiet), "print only problems");
  po::positional_options_description positional;
  positional.add("combine", -1);
  const CommandLine line{"report",
                         "usage: tracelane report --combine DIR_OR_FILES... [--report-dir DIR]\n"
                         "       tracelane report --html REPORT.json [-o OUT.html [--overwrite]]\n",
                         ""};
  if (auto done = parse_command_line(argc, argv, line, options, {}, positional)) return *done;
  if (!args.html.empty() && (!args.combine.empty() || !args.report_dir.empty())) {
    std::cerr << "tracelane report: --html takes one report and -o, not --combine or --report-dir\n";
    return kExitUsage;
  }
  if (args.html.empty() && !args.output.empty()) {
    std::cerr << "tracelane report: -o is for --html (--combine writes into --report-dir)\n";
    return kExitUsage;
  }
  if (args.html.empty() && args.combine.empty()) {
    std::cerr << "tracelane report: nothing to combine (give --combine DIR_OR_FILES...)\n";
    return kExitUsage;
  }
  return std::nullopt;
}

// Nothing, or the exit status when a combined report's file in `out_dir` would replace
// one of `inputs`. The directory is made first, so that the guard every writing command
// goes through (an input under the name, through any link; a directory there) judges the
// real directory.
std::optional<int> guard_combined_report(const fs::path& out_dir, const std::vector<fs::path>& inputs) {
  boost::system::error_code made;
  fs::create_directories(out_dir, made);
  for (const char* extension : {".json", ".csv", ".html"}) {
    try {
      guard_output(out_dir / (report_base_name(std::nullopt) + extension), inputs, true);
    } catch (const OutputRefused& e) {
      print_error(std::string(e.what()) + " (not overwritten; give another --report-dir)");
      return kExitUsage;
    }
  }
  return std::nullopt;
}

// The combined report's JSON, CSV and page in `out_dir`; the JSON's path, or nothing
// (the error printed).
std::optional<fs::path> write_combined_report(const Combined& combined, const fs::path& out_dir) {
  try {
    boost::system::error_code ec;
    fs::create_directories(out_dir, ec);
    return write_report(combined.report, out_dir);
  } catch (const Error& e) {
    std::cerr << shown(e.what()) << "\n";
    return std::nullopt;
  }
}

// `report --combine`: the partial reports of a sharded sweep joined into one report.
int combine_command(const ReportArguments& args) {
  // Which partial reports: the files named, and each directory's shard reports.
  std::vector<fs::path> files;
  fs::path first_dir;
  if (auto failed = partial_report_files(args.combine, files, first_dir)) return *failed;
  if (files.empty()) return kExitUsage;
  // Checked before anything is read: the combined report never replaces one of its inputs.
  fs::path out_dir = args.report_dir.empty() ? first_dir : fs::path(args.report_dir);
  if (auto refused = guard_combined_report(out_dir, files)) return *refused;
  // Each read and checked; one that cannot be read becomes a failed problem row.
  std::vector<std::string> unreadable;
  std::vector<Report> partials = read_partial_reports(files, unreadable);
  Combined combined = combine_reports(partials, unreadable);
  for (const std::string& problem : combined.problems) std::cerr << shown(problem) << "\n";
  std::optional<fs::path> written = write_combined_report(combined, out_dir);
  if (!written) return kExitFailed;
  // What failed, in the shards and in the combining, and the exit status.
  return report_combined(combined, partials, *written, args.quiet);
}

}  // namespace

int run_report(int argc, char** argv) {
  ReportArguments args;
  if (auto done = parse_report_arguments(argc, argv, args)) return *done;
  if (!args.html.empty()) return write_report_page(args.html, args.output, args.overwrite, args.quiet);
  return combine_command(args);
}

}  // namespace tracelane::cli
