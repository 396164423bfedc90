// `tracelane check ORIGINAL COMPACTED`: the command-line side of the independent verifier
// (src/check/check.hpp). Exit 0: OK; 1: violations; 2: usage or an unreadable input.
#include "commands.hpp"

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "../check/check.hpp"
#include "files.hpp"
#include "options.hpp"
#include "printable.hpp"
#include "tracelane/restore.hpp"
#include "tracelane/trace.hpp"

namespace tracelane::cli {

namespace {

constexpr int kExitViolations = kExitFailed;

const char* kCheckHelp =
    "usage: tracelane check ORIGINAL COMPACTED [--list N]\n"
    "\n"
    "Independently verify a single-trace compaction (tracelane's or any other tool's);\n"
    "both files may be .json or gzip. It checks that\n"
    "  - every measured slice of ORIGINAL (cat kernel/Kernel/gpu_memcpy/gpu_memset/Memcpy/\n"
    "    Memset, and every cuda_sync X event) is in COMPACTED with the same name, cat, ph,\n"
    "    pid, ts, dur and args except stream, and COMPACTED has no other;\n"
    "  - no lane or annotation track of COMPACTED has partially overlapping X events\n"
    "    (nesting and touching are fine) and no two slices of one lane overlap;\n"
    "  - every flow endpoint on a GPU pid lies in an X event of its own track (those\n"
    "    already unbound in ORIGINAL are a warning) and none was lost;\n"
    "  - every other event of ORIGINAL, and every top-level key, is in COMPACTED unchanged.\n"
    "Values compare exactly (numbers as decimals from their text, object keys unordered).\n"
    "Overlaps are judged as Perfetto draws them: in whole nanoseconds, ts and dur each\n"
    "rounded half away from zero.\n"
    "It is for one trace and its compaction, not for merged PP outputs (merging renumbers\n"
    "pids and shifts times, so every event would differ).\n"
    "It also reports COMPACTED's restore data (SPEC 9.12): absent; or present, complete\n"
    "and verified (it rebuilds ORIGINAL byte for byte); a damaged record, or one that\n"
    "rebuilds another trace, is a violation.\n"
    "\n"
    "Exit status: 0 OK, 1 violations, 2 usage error or unreadable input.\n";

// What COMPACTED's restore data is: absent, or verified against ORIGINAL's bytes; `ok`
// false when it is there but does not give ORIGINAL back.
std::string restore_data_status(const std::string& original, const std::string& compacted, const std::string& path,
                                bool& ok) {
  try {
    std::vector<RestoreRecordInfo> records = list_restore_records(compacted, path);
    if (records.empty()) return "absent (`tracelane restore` cannot give ORIGINAL back from COMPACTED)";
    if (records.size() > 1)
      return "present, " + std::to_string(records.size()) +
             " records (a merged output): not verified here; `tracelane restore --rank R` checks each";
    if (restore_original(compacted, path, 0) != original) {
      ok = false;
      return "VIOLATION: present and complete, but it rebuilds another trace than ORIGINAL";
    }
    return "present, complete, verified (rebuilds ORIGINAL byte for byte, " + std::to_string(original.size()) +
           " bytes)";
  } catch (const Error& e) {
    ok = false;
    return std::string("VIOLATION: ") + e.what();
  }
}

}  // namespace

int run_check(int argc, char** argv) {
  size_t listed = 10;
  std::vector<std::string> paths;
  po::options_description options("check options");
  options.add_options()("help,h", "show this help")("list", po::value(&listed)->default_value(10),
                                                    "violations to list (all are counted)");
  po::options_description hidden;
  hidden.add_options()("trace", po::value(&paths));
  po::positional_options_description pos;
  pos.add("trace", -1);
  const CommandLine line{"check", kCheckHelp, std::string("\n") + kCheckHelp};
  if (auto done = parse_command_line(argc, argv, line, options, hidden, pos)) return *done;
  if (paths.size() != 2) {
    std::cerr << "tracelane check: expected ORIGINAL and COMPACTED, got " << paths.size() << " file(s)\n\n"
              << kCheckHelp;
    return kExitUsage;
  }
  std::string bytes[2];
  for (int k = 0; k < 2; ++k) {
    try {
      bytes[k] = read_trace_bytes(paths[k]);
    } catch (const Error& e) {
      print_error(e.what());
      return kExitUsage;
    } catch (const std::bad_alloc&) {
      print_error(paths[k] + ": out of memory");
      return kExitUsage;
    }
  }
  try {
    check::CheckOptions check_options;
    check_options.max_recorded = std::max<size_t>(listed, 1);
    check::CheckReport report = check::check_traces(bytes[0], bytes[1], check_options);
    bool restore_ok = true;
    std::string restore_line = "check: restore data: " + restore_data_status(bytes[0], bytes[1], paths[1], restore_ok);
    // Event names in the listed violations come from the traces: each line printable.
    std::string text = "check: ORIGINAL " + paths[0] + "\ncheck: COMPACTED " + paths[1] + "\n" + restore_line + "\n" +
                       check::format_report(report, listed);
    for (size_t start = 0; start < text.size();) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      std::cout << printable(std::string_view(text).substr(start, end - start));
      if (end < text.size()) std::cout << '\n';
      start = end + 1;
    }
    std::cout << std::flush;
    return report.ok() && restore_ok ? kExitOk : kExitViolations;
  } catch (const check::CheckInputError& e) {
    print_error(paths[e.in_compacted ? 1 : 0] + ": " + e.what());
  } catch (const std::bad_alloc&) {
    print_error(paths[0] + ": out of memory");
  } catch (const std::exception& e) {
    print_error(std::string("tracelane check: ") + e.what());
  }
  return kExitUsage;
}

}  // namespace tracelane::cli
