// tracelane: compact CUDA-graph PyTorch profiler traces into semantic GPU lanes, and
// merge pipeline-parallel ranks into one timeline.
//
// The command line owns options, files and exit codes; all trace logic is in the core.
#include <boost/program_options.hpp>
#include <chrono>
#include <csignal>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <streambuf>
#include <string>

#include <unistd.h>

#include "check_command.hpp"
#include "files.hpp"
#include "printable.hpp"
#include "report.hpp"
#include "sweep.hpp"
#include "tracelane/compact.hpp"
#include "tracelane/figures.hpp"
#include "tracelane/merge.hpp"
#include "tracelane/restore.hpp"
#include "tracelane/rules.hpp"
#include "tracelane/summary.hpp"
#include "tracelane_build_info.hpp"  // TRACELANE_GIT_COMMIT, generated (cmake/BuildInfo.cmake)

namespace po = boost::program_options;
namespace fs = boost::filesystem;
using namespace tracelane;

namespace {

constexpr int kExitOk = 0, kExitFailed = 1, kExitUsage = 2;
// Measured in bench/README.md: level 1 writes ~3x faster than 6 for ~10% larger files.
constexpr int kDefaultLevel = 1;

const char* kUsage =
    "usage: tracelane <command> [options]\n"
    "\n"
    "commands:\n"
    "  compact TRACE [-o OUT] [--overwrite] [--level N] [--no-pp-flows] [--preview FILE.svg]\n"
    "      repack GPU slices of one trace into semantic lanes\n"
    "  merge DIR_OR_ONE_RANK_FILE [-o OUT] [--overwrite] [--level N] [--preview FILE.svg]\n"
    "      compact every rank<N>_trace.json[.gz] of a directory and merge them into one\n"
    "      pipeline-parallel timeline\n"
    "  sweep ROOT [--jobs N] [--memory BYTES] [--overwrite] [--dry-run] [--shard K/N]\n"
    "      compact and merge every iteration directory under ROOT; writes\n"
    "      tracelane_report.json/.csv/.html (ROOT or --report-dir)\n"
    "  report --combine DIR_OR_FILES... [--report-dir DIR]\n"
    "      join the partial reports of sweep --shard K/N runs into one\n"
    "  report --html REPORT.json [-o OUT.html [--overwrite]]\n"
    "      draw the visual report page of an existing report\n"
    "  restore COMPACTED [-o OUT] [--rank R] [--overwrite]\n"
    "      write back the original trace a compacted or merged output was made from\n"
    "  check ORIGINAL COMPACTED [--list N]\n"
    "      verify a single-trace compaction independently; exit 1 on any violation\n"
    "  rules --print-defaults | --check FILE\n"
    "      the built-in classification and PP rules, or validate a --rules file\n"
    "\n"
    "compact, merge and sweep take --rules FILE; compact and merge take --force for\n"
    "traces that are already laned; all three take --no-restore-data.\n"
    "\n"
    "  tracelane <command> --help   options of a command\n"
    "  tracelane --version\n";

class Timer {
 public:
  explicit Timer(bool enabled) : enabled_(enabled), last_(std::chrono::steady_clock::now()) {}
  void lap(const char* what) {
    auto now = std::chrono::steady_clock::now();
    if (enabled_)
      std::fprintf(stderr, "timing: %-10s %8.3f s   peak RSS so far %7.1f MB\n", what,
                   std::chrono::duration<double>(now - last_).count(), peak_rss_mb());
    last_ = now;
  }

 private:
  // VmHWM from /proc/self/status (Linux); 0 where unavailable.
  static double peak_rss_mb() {
    std::FILE* status = std::fopen("/proc/self/status", "r");
    if (!status) return 0;
    char line[256];
    double kb = 0;
    while (std::fgets(line, sizeof line, status))
      if (std::sscanf(line, "VmHWM: %lf kB", &kb) == 1) break;
    std::fclose(status);
    return kb / 1024;
  }

 public:

 private:
  bool enabled_;
  std::chrono::steady_clock::time_point last_;
};

struct Common {
  std::string rules_file;
  std::optional<Rules> rules;  // loaded before any trace is read
  std::string rules_text;      // its text, for the outputs' recipe (files.hpp output_recipe)
  std::string output;
  bool overwrite = false;
  int level = kDefaultLevel;
  bool timings = false;
  std::string preview;  // --preview FILE.svg: the timeline picture (docs/figures.md)
  bool no_restore_data = false;
};

void add_common(po::options_description& options, Common& common) {
  options.add_options()("help,h", "show this help")(
      "output,o", po::value(&common.output), "output file (.gz: gzip-compressed, one member)")(
      "overwrite", po::bool_switch(&common.overwrite), "replace an existing output")(
      "level", po::value(&common.level)->default_value(kDefaultLevel),
      "gzip level, 0 (store) to 12 (smallest); libdeflate's scale")(
      "timings", po::bool_switch(&common.timings), "print the time of each phase on stderr")(
      "rules", po::value(&common.rules_file), "classification and PP rules (JSON; see `tracelane rules --print-defaults`)")(
      "preview", po::value(&common.preview), "also write the GPU timeline picture as a standalone SVG (FILE.svg)");
}

// The preview goes through the same guard as the output, against the inputs and the
// output itself (one name for both would lose one of them). Throws OutputRefused.
void guard_preview(const Common& common, const fs::path& output, std::vector<fs::path> inputs) {
  if (common.preview.empty()) return;
  fs::path preview(common.preview);
  if (preview.extension() != ".svg")
    throw cli::OutputRefused(common.preview + ": --preview writes SVG; give a name ending in .svg");
  inputs.push_back(output);
  cli::guard_output(preview, inputs, common.overwrite);
}

void add_restore_option(po::options_description& options, Common& common) {
  options.add_options()("no-restore-data", po::bool_switch(&common.no_restore_data),
                        "leave out what `tracelane restore` needs to write the original back");
}

// A bad rules file stops the command before any trace is read.
bool load_rules(Common& common) {
  if (common.rules_file.empty()) return true;
  try {
    common.rules_text = cli::read_file(common.rules_file);
    common.rules = Rules::parse(common.rules_text, common.rules_file);
    return true;
  } catch (const Error& e) {
    cli::print_error(e.what());
    return false;
  }
}

// The exit status of a command that failed on `input`, after printing why; called in a
// catch block. An output that appeared while we worked (write_atomically's OutputRefused)
// is a usage error, as when the guard sees it first; any other failure is `failed`.
int exit_status_of_failure(const fs::path& input, int failed = kExitFailed) {
  try {
    throw;
  } catch (const cli::OutputRefused& e) {
    cli::print_error(e.what());
    return kExitUsage;
  } catch (const Error& e) {
    cli::print_error(e.what());
  } catch (const std::bad_alloc&) {
    cli::print_error(input.string() + ": out of memory");
  } catch (const std::exception& e) {
    cli::print_error(input.string() + ": " + e.what());
  }
  return failed;
}

int run_rules(int argc, char** argv) {
  bool print_defaults = false;
  std::string check;
  po::options_description options("rules options");
  options.add_options()("help,h", "show this help")("print-defaults", po::bool_switch(&print_defaults),
                                                    "print the built-in rules (SPEC 3 and 7) as a rules file")(
      "check", po::value(&check), "validate a rules file and print the groups it defines");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(options).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    cli::print_error(std::string("tracelane rules: ") + e.what());
    std::cerr << "\n" << options;
    return kExitUsage;
  }
  if (vm.count("help") || (!print_defaults && check.empty())) {
    std::cout << "usage: tracelane rules --print-defaults | --check FILE\n\n" << options;
    return vm.count("help") ? kExitOk : kExitUsage;
  }
  if (print_defaults) {
    std::cout << Rules::default_json();
    return kExitOk;
  }
  try {
    Rules rules = Rules::parse(cli::read_file(check), check);
    std::string line = check + ": ok; groups in order:";
    for (const auto& group : rules.groups()) line += " " + group.id + " (\"" + group.label + "\")";
    std::cout << cli::printable(line) << "\n";
    return kExitOk;
  } catch (const Error& e) {
    cli::print_error(e.what());
    return kExitUsage;
  }
}

// Parses a subcommand's options; returns -1 to continue, else an exit code.
int parse(int argc, char** argv, const char* command, po::options_description& options, const char* positional,
          std::string& positional_value) {
  po::options_description hidden;
  hidden.add_options()(positional, po::value(&positional_value));
  po::options_description all;
  all.add(options).add(hidden);
  po::positional_options_description pos;
  pos.add(positional, 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    cli::print_error(std::string("tracelane ") + command + ": " + e.what());
    std::cerr << "\n" << kUsage;
    return kExitUsage;
  }
  if (vm.count("help")) {
    std::cout << "usage: tracelane " << command << " " << positional << " [options]\n\n" << options;
    return kExitOk;
  }
  if (positional_value.empty()) {
    std::cerr << "tracelane " << command << ": missing " << positional << "\n\n" << kUsage;
    return kExitUsage;
  }
  return -1;
}

bool check_level(int level, const char* command) {
  if (level < 0 || level > 12) {
    std::cerr << "tracelane " << command << ": --level must be between 0 and 12\n";
    return false;
  }
  return true;
}

int run_compact(int argc, char** argv) {
  Common common;
  bool no_pp_flows = false, force = false;
  po::options_description options("compact options");
  add_common(options, common);
  add_restore_option(options, common);
  options.add_options()("no-pp-flows", po::bool_switch(&no_pp_flows), "do not add rank-local PP arrows")(
      "force", po::bool_switch(&force), "compact a trace that is already laned (SPEC 9.8)");
  std::string input_arg;
  if (int code = parse(argc, argv, "compact", options, "TRACE", input_arg); code >= 0) return code;
  if (!check_level(common.level, "compact") || !load_rules(common)) return kExitUsage;
  fs::path input(input_arg);
  fs::path output = common.output.empty() ? cli::default_compact_output(input) : fs::path(common.output);
  // Every refusal of the output path before the input is read (exit 2). Without -o the
  // output is beside the input: if their directory is missing, so is the input, and
  // reading it says so at once (exit 1, as for any missing input).
  boost::system::error_code ec;
  fs::path beside = output.parent_path();
  if (beside.empty()) beside = ".";
  const bool input_dir_missing = common.output.empty() && !fs::is_directory(beside, ec);
  try {
    if (!input_dir_missing) cli::guard_output(output, {input}, common.overwrite);
    guard_preview(common, output, {input});
  } catch (const cli::OutputRefused& e) {
    cli::print_error(e.what());
    return kExitUsage;
  }
  try {
    Timer timer(common.timings);
    cli::FileIdentity identity;  // recorded with the output, so a sweep knows what it was made from
    std::string json = cli::read_trace_bytes(input, &identity);
    timer.lap("read");
    Trace trace = parse_trace(std::move(json), input.string());
    timer.lap("parse");
    CompactOptions compact_options;
    compact_options.pp_flows = !no_pp_flows;
    compact_options.force = force;
    compact_options.restore_data = !common.no_restore_data;
    compact_options.rules = common.rules ? &*common.rules : nullptr;
    CompactedTrace compacted = compact_trace(std::move(trace), compact_options);
    timer.lap("compact");
    if (!compacted.already_laned.empty()) {
      // Compacting twice would only reshuffle lanes the exporter chose: write nothing.
      JsonValue summary = JsonValue::object();
      summary.set("input", JsonValue::string(input.string())).set("output", JsonValue::null());
      summary.set("status", JsonValue::string("already laned"));
      summary.set("reason", JsonValue::string(compacted.already_laned));
      std::cout << summary.dump(2) << std::endl;
      cli::print_error(input.string() + ": already laned (" + compacted.already_laned +
                       "); nothing written (--force compacts anyway)");
      return kExitOk;
    }
    std::string text = write_compacted(compacted);
    timer.lap("serialise");
    CompactSummary compact_summary = compacted.summary;
    // The strips' rank is the file's, as a sweep's report row has it: the N of a
    // rank<N>_trace name, else distributedInfo.rank.
    std::optional<int64_t> rank;
    if (long long from_name; cli::is_rank_trace_name(input.filename().string(), &from_name))
      rank = from_name;
    else
      rank = read_distributed_info(compacted.trace).rank;
    if (rank && *rank < 0) rank.reset();
    GpuFigures figures = trace_figures(compacted, compact_options.rules, rank,
                                       compact_summary.has_pp ? compact_summary.pp_rank : single_trace_pp_rank(compacted.trace));
    compacted = CompactedTrace{};  // the input document and events are no longer needed
    std::string bytes = cli::encode_for(output, std::move(text), common.level);
    timer.lap("compress");
    std::vector<cli::NamedIdentity> inputs_read{{input.filename().string(), identity}};
    cli::write_atomically(output, bytes, common.overwrite, {}, inputs_read,
                          cli::output_recipe(common.rules_text, !common.no_restore_data, !no_pp_flows));
    if (!common.preview.empty())  // no more readable than the input, as the output
      cli::write_atomically(common.preview, timeline_svg(figures, input.filename().string()), common.overwrite, {},
                            inputs_read);
    timer.lap("write");
    JsonValue summary =
        with_input_output(JsonValue::string(input.string()), output.string(), compaction_summary(compact_summary, true));
    add_figures_json(summary, figures);
    std::cout << summary.dump(2) << std::endl;
    return kExitOk;
  } catch (...) {
    return exit_status_of_failure(input);
  }
}

int run_merge(int argc, char** argv) {
  Common common;
  bool force = false;
  po::options_description options("merge options");
  add_common(options, common);
  add_restore_option(options, common);
  options.add_options()("force", po::bool_switch(&force), "merge ranks that are already laned (SPEC 9.8)");
  std::string input_arg;
  if (int code = parse(argc, argv, "merge", options, "DIR_OR_ONE_RANK_FILE", input_arg); code >= 0) return code;
  if (!check_level(common.level, "merge") || !load_rules(common)) return kExitUsage;
  fs::path input(input_arg);
  boost::system::error_code ec;
  fs::path dir = fs::is_directory(input, ec) ? input : input.parent_path();
  if (dir.empty()) dir = ".";
  fs::path output = common.output.empty() ? dir / cli::kMergedName : fs::path(common.output);
  try {
    Timer timer(common.timings);
    std::vector<fs::path> files = cli::find_rank_files(input);
    // Against every rank file, before any is read.
    cli::guard_output(output, files, common.overwrite);
    guard_preview(common, output, files);
    std::vector<MergeInput> inputs;
    std::vector<cli::NamedIdentity> identities;  // recorded with the output, as the sweep does
    for (const auto& file : files) {
      cli::FileIdentity identity;
      // Found by listing a directory others may write: regular files only (a FIFO planted
      // under a rank name must not hang an unattended merge).
      cli::ReadOptions read;
      read.regular_only = true;
      Trace trace = parse_trace(cli::read_trace_bytes(file, &identity, read), file.string());
      identities.push_back({file.filename().string(), identity});
      CompactOptions compact_options;
      compact_options.pp_flows = false;
      compact_options.force = force;
      compact_options.restore_data = !common.no_restore_data;
      compact_options.rules = common.rules ? &*common.rules : nullptr;
      inputs.push_back({file.filename().string(), compact_trace(std::move(trace), compact_options)});
      if (!inputs.back().compacted.already_laned.empty()) {
        JsonValue summary = JsonValue::object();
        summary.set("input", JsonValue::string(file.string())).set("output", JsonValue::null());
        summary.set("status", JsonValue::string("already laned"));
        summary.set("reason", JsonValue::string(inputs.back().compacted.already_laned));
        std::cout << summary.dump(2) << std::endl;
        cli::print_error(file.string() + ": already laned (" + inputs.back().compacted.already_laned +
                         "); nothing written (--force merges anyway)");
        return kExitOk;
      }
    }
    timer.lap("compact");
    MergeResult merged = merge_ranks(std::move(inputs), common.rules ? &*common.rules : nullptr);
    timer.lap("merge");
    std::string bytes = cli::encode_for(output, std::move(merged.json), common.level);
    timer.lap("compress");
    cli::write_atomically(output, bytes, common.overwrite, {}, identities,
                          cli::output_recipe(common.rules_text, !common.no_restore_data, true));
    if (!common.preview.empty()) {
      fs::path dir_name = fs::absolute(dir).lexically_normal();
      if (dir_name.filename() == "." || dir_name.filename().empty()) dir_name = dir_name.parent_path();
      std::string title = dir_name.filename().string() + " (" + std::to_string(files.size()) + " ranks merged)";
      cli::write_atomically(common.preview, timeline_svg(merged.figures, title), common.overwrite, {}, identities);
    }
    timer.lap("write");
    JsonValue names = JsonValue::array();
    for (const auto& file : files) names.push(JsonValue::string(file.filename().string()));
    JsonValue summary = with_input_output(names, output.string(), merge_summary(merged.summary));
    add_figures_json(summary, merged.figures);
    std::cout << summary.dump(2) << std::endl;
    return kExitOk;
  } catch (...) {
    return exit_status_of_failure(input, kExitUsage);  // the original exits 2 on any merge error; scripts rely on it
  }
}

// `X_compacted.json.gz` -> `X_restored.json.gz` (`X_rank3_restored...` with --rank 3):
// beside the compacted file, never the original's name.
fs::path default_restore_output(const fs::path& compacted, std::optional<int64_t> rank) {
  std::string name = compacted.filename().string(), extension;
  for (const char* ext : {".json.gz", ".json"})
    if (name.size() > std::strlen(ext) && name.compare(name.size() - std::strlen(ext), std::string::npos, ext) == 0) {
      extension = ext;
      name.resize(name.size() - extension.size());
      break;
    }
  if (extension.empty()) extension = ".json.gz";
  static const std::string kCompacted = "_compacted";
  if (name.size() > kCompacted.size() && name.compare(name.size() - kCompacted.size(), std::string::npos, kCompacted) == 0)
    name.resize(name.size() - kCompacted.size());
  if (rank) name += "_rank" + std::to_string(*rank);
  return compacted.parent_path() / (name + "_restored" + extension);
}

int run_restore(int argc, char** argv) {
  Common common;
  std::optional<int64_t> rank;
  po::options_description options("restore options");
  options.add_options()("help,h", "show this help")(
      "output,o", po::value(&common.output),
      "output file (.gz: gzip-compressed); default: COMPACTED's name without _compacted, plus _restored "
      "(and _rank<R> with --rank)")("overwrite", po::bool_switch(&common.overwrite), "replace an existing output")(
      "level", po::value(&common.level)->default_value(kDefaultLevel), "gzip level, 0 (store) to 12 (smallest)")(
      "rank", po::value<int64_t>()->notifier([&](int64_t r) { rank = r; }),
      "for a merged output: the global rank whose original to write");
  std::string input_arg;
  if (int code = parse(argc, argv, "restore", options, "COMPACTED", input_arg); code >= 0) return code;
  if (!check_level(common.level, "restore")) return kExitUsage;
  fs::path input(input_arg);
  fs::path output = common.output.empty() ? default_restore_output(input, rank) : fs::path(common.output);
  try {
    cli::guard_output(output, {input}, common.overwrite, cli::RankName::allowed);
  } catch (const cli::OutputRefused& e) {
    cli::print_error(e.what());
    return kExitUsage;
  }
  try {
    cli::FileIdentity identity;  // the original is no more readable than its copy
    std::string text = cli::read_trace_bytes(input, &identity);
    std::vector<RestoreRecordInfo> records = list_restore_records(text, input.string());
    if (records.empty())
      throw Error(input.string() + ": no restore data (no \"" + std::string(kRestoreKey) +
                  "\"): it was written with --no-restore-data or by another tool, or is not a tracelane output");
    size_t record = 0;
    auto ranks = [&] {
      std::string list;
      for (const auto& r : records) list += (list.empty() ? "" : ", ") + std::to_string(r.global_rank);
      return list;
    };
    if (rank) {
      auto it = std::find_if(records.begin(), records.end(), [&](const auto& r) { return r.global_rank == *rank; });
      if (it == records.end())
        throw Error(input.string() + ": no restore data for global rank " + std::to_string(*rank) +
                    (records.size() > 1 ? " (it has ranks " + ranks() + ")" : " (it is not a merged output)"));
      record = size_t(it - records.begin());
    } else if (records.size() > 1) {
      cli::print_error(input.string() + ": a merged output of " + std::to_string(records.size()) +
                       " ranks; name one with --rank (" + ranks() + ")");
      return kExitUsage;
    }
    std::string original = restore_original(std::move(text), input.string(), record);
    std::string bytes = cli::encode_for(output, std::move(original), common.level);
    cli::write_atomically(output, bytes, common.overwrite, {}, {{input.filename().string(), identity}});
    JsonValue summary = JsonValue::object();
    summary.set("input", JsonValue::string(input.string())).set("output", JsonValue::string(output.string()));
    if (records[record].global_rank >= 0) summary.set("global_rank", JsonValue::integer(records[record].global_rank));
    summary.set("bytes", JsonValue::integer(int64_t(records[record].original_bytes)));
    summary.set("verified", JsonValue::boolean(true));
    std::cout << summary.dump(2) << std::endl;
    return kExitOk;
  } catch (...) {
    return exit_status_of_failure(input);
  }
}

}  // namespace

// glibc's malloc asks the kernel for transparent huge pages (2 MB) for its large blocks
// only under the tunable glibc.malloc.hugetlb=1, and tunables are read when a process
// starts. tracelane's buffers are as large as the trace, and with 4 KB pages their first
// touch is one page fault per 4 KB: on the 2-core VM of bench/README.md that was half of a
// 500 MB compaction (16.8 s -> 8.1 s with the tunable, same output). So re-run this
// program with the tunable set, unless GLIBC_TUNABLES already names it (a user's
// glibc.malloc.hugetlb=0 stands) or TRACELANE_HUGE_PAGES=0. Where the kernel gives no
// huge pages (transparent_hugepage=never) the tunable does nothing.
void use_huge_pages(char** argv) {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables && std::strstr(tunables, "glibc.malloc.hugetlb")) return;
  const char* wanted = std::getenv("TRACELANE_HUGE_PAGES");
  if (wanted && std::strcmp(wanted, "0") == 0) return;
  std::string saved = tunables ? tunables : "";
  std::string value = saved.empty() ? "glibc.malloc.hugetlb=1" : saved + ":glibc.malloc.hugetlb=1";
  if (setenv("GLIBC_TUNABLES", value.c_str(), 1) != 0) return;
  execv("/proc/self/exe", argv);
  // No /proc (or no exec): go on with small pages, the environment as it was.
  if (tunables) setenv("GLIBC_TUNABLES", saved.c_str(), 1);
  else unsetenv("GLIBC_TUNABLES");
}

namespace {

int run_command(int argc, char** argv) {
  std::string command = argv[1];
  if (command == "--version" || command == "version") {
    std::cout << "tracelane " TRACELANE_VERSION " (commit " TRACELANE_GIT_COMMIT ")\n";
    return kExitOk;
  }
  if (command == "--help" || command == "-h" || command == "help") {
    std::cout << kUsage;
    return kExitOk;
  }
  if (command == "compact") return run_compact(argc - 1, argv + 1);
  if (command == "merge") return run_merge(argc - 1, argv + 1);
  if (command == "rules") return run_rules(argc - 1, argv + 1);
  if (command == "sweep") return cli::run_sweep(argc - 1, argv + 1);
  if (command == "report") return cli::run_report(argc - 1, argv + 1);
  if (command == "check") return cli::run_check(argc - 1, argv + 1);
  if (command == "restore") return run_restore(argc - 1, argv + 1);
  cli::print_error("tracelane: unknown command '" + command + "'");
  std::cerr << "\n" << kUsage;
  return kExitUsage;
}

// Whatever a command prints on stdout (a summary, the default rules, a report) is its
// result: if it could not be written (a full disk, /dev/full, EIO), the command failed,
// whichever command it was. std::cout writes through this buffer, which keeps the errno of
// the first failed write (stdio's and iostream's error flags do not), so the message can
// say why: "tracelane: standard output: No space left on device".
class StdoutBuffer : public std::streambuf {
 public:
  StdoutBuffer() { setp(buffer_, buffer_ + sizeof buffer_); }
  int error() const { return error_; }

 protected:
  int_type overflow(int_type c) override {
    if (drain() != 0) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return drain(); }

 private:
  int drain() {
    const char* p = pbase();
    while (p < pptr()) {
      ssize_t n = ::write(STDOUT_FILENO, p, size_t(pptr() - p));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        if (error_ == 0) error_ = n < 0 ? errno : EIO;
        setp(buffer_, buffer_ + sizeof buffer_);  // what could not be written is dropped
        return -1;
      }
      p += n;
    }
    setp(buffer_, buffer_ + sizeof buffer_);
    return 0;
  }

  char buffer_[1 << 16];
  int error_ = 0;
};

// Flushes stdout and turns a failed write into exit status 1, unless the command had
// already failed with its own status, which stands.
int finish_stdout(int code, StdoutBuffer& buffer) {
  std::cout.flush();
  int e = buffer.error();
  if (e == 0 && (std::fflush(stdout) != 0 || std::ferror(stdout))) e = errno ? errno : EIO;  // stdio, if ever used
  if (e == 0 && std::cout.bad()) e = EIO;
  if (e == 0) return code;
  cli::print_error(std::string("tracelane: standard output: ") + std::strerror(e));
  return code == kExitOk ? kExitFailed : code;
}

}  // namespace

int main(int argc, char** argv) {
  // Past RLIMIT_FSIZE (`ulimit -f`), write() fails with EFBIG once SIGXFSZ is ignored,
  // instead of the signal killing us with a temporary file left behind.
  std::signal(SIGXFSZ, SIG_IGN);
  if (argc < 2) {
    std::cerr << kUsage;
    return kExitUsage;
  }
  std::string command = argv[1];
  if (command == "compact" || command == "merge" || command == "sweep" || command == "check" ||
      command == "restore")
    use_huge_pages(argv);
  // Never destroyed, so that std::cout's flush at exit finds it even after an exit() call.
  // std::cout is written from the main thread only (workers report on stderr).
  static StdoutBuffer* stdout_buffer = new StdoutBuffer;
  std::streambuf* stdio_buffer = std::cout.rdbuf(stdout_buffer);
  int code = finish_stdout(run_command(argc, argv), *stdout_buffer);
  std::cout.rdbuf(stdio_buffer);
  return code;
}
