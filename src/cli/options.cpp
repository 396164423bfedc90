#include "options.hpp"

#include <iostream>
#include <new>

#include "files.hpp"
#include "memory_budget.hpp"
#include "tracelane/trace.hpp"

namespace tracelane::cli {

const char* const kUsage =
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
    "compact, merge and sweep take --rules FILE, --force (for tracelane's own outputs)\n"
    "and --no-restore-data.\n"
    "\n"
    "  tracelane <command> --help   options of a command\n"
    "  tracelane --version\n";

void add_shared_options(po::options_description& options, SharedOptions& shared) {
  options.add_options()("help,h", "show this help")("output,o", po::value(&shared.output),
                                                    "output file (.gz: gzip-compressed)")(
      "overwrite", po::bool_switch(&shared.overwrite), "replace an existing output")(
      "level", po::value(&shared.level)->default_value(kDefaultLevel),
      "gzip level, 0 (store) to 12 (smallest); libdeflate's scale")("timings", po::bool_switch(&shared.timings),
                                                                    "print the time of each phase on stderr")(
      "rules", po::value(&shared.rules_file),
      "classification and PP rules (JSON; see `tracelane rules --print-defaults`)")(
      "preview", po::value(&shared.preview), "also write the GPU timeline picture as a standalone SVG (FILE.svg)");
}

void add_restore_option(po::options_description& options, SharedOptions& shared) {
  options.add_options()("no-restore-data", po::bool_switch(&shared.no_restore_data),
                        "leave out what `tracelane restore` needs to write the original back");
}

void add_single_member_option(po::options_description& options, bool& single_gzip_member) {
  options.add_options()("single-gzip-member", po::bool_switch(&single_gzip_member),
                        "write a .gz output as one gzip member (slower: no parallel compression), for readers that "
                        "stop after the first member");
}

void add_parallel_options(po::options_description& options, SharedOptions& shared) {
  options.add_options()("jobs,j", po::value(&shared.jobs),
                        "threads (default: SLURM_CPUS_PER_TASK, else the cores available)");
  add_single_member_option(options, shared.single_gzip_member);
}

int jobs_of(const SharedOptions& shared) {
  if (shared.jobs == -1) return default_jobs();
  return shared.jobs >= 1 ? shared.jobs : 0;
}

// The preview goes through the same guard as the output, against the inputs and the
// output itself (one name for both would lose one of them). Throws OutputRefused.
void guard_preview(const SharedOptions& shared, const fs::path& output, std::vector<fs::path> inputs) {
  if (shared.preview.empty()) return;
  fs::path preview(shared.preview);
  if (preview.extension() != ".svg")
    throw OutputRefused(shared.preview + ": --preview writes SVG; give a name ending in .svg");
  inputs.push_back(output);
  guard_output(preview, inputs, shared.overwrite);
}

int usage_error(const CommandLine& line, const std::string& message) {
  print_error("tracelane " + line.command + ": " + message);
  std::cerr << line.after_error;
  return kExitUsage;
}

namespace {

std::optional<int> usage_error(const CommandLine& line, const std::string& message,
                               const po::options_description& options) {
  cli::usage_error(line, message);
  if (line.options_after_error) std::cerr << options;
  return kExitUsage;
}

}  // namespace

std::optional<int> parse_command_line(int argc, char** argv, const CommandLine& line,
                                      const po::options_description& options, const po::options_description& hidden,
                                      const po::positional_options_description& positional, po::variables_map* parsed) {
  po::options_description all;
  all.add(options).add(hidden);
  po::variables_map local;
  po::variables_map& vm = parsed ? *parsed : local;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(positional).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    return usage_error(line, e.what(), options);
  }
  if (vm.count("help")) {
    std::cout << line.usage << "\n" << options;
    return kExitOk;
  }
  return std::nullopt;
}

std::optional<int> parse_command_line(int argc, char** argv, const CommandLine& line,
                                      const po::options_description& options, const char* name, std::string& value,
                                      po::variables_map* parsed) {
  po::options_description hidden;
  hidden.add_options()(name, po::value(&value));
  po::positional_options_description positional;
  positional.add(name, 1);
  if (auto done = parse_command_line(argc, argv, line, options, hidden, positional, parsed)) return done;
  if (value.empty()) return usage_error(line, std::string("missing ") + name, options);
  return std::nullopt;
}

bool level_in_range(int level) { return level >= 0 && level <= 12; }

bool check_level(int level, const char* command) {
  if (level_in_range(level)) return true;
  std::cerr << "tracelane " << command << ": --level must be between 0 and 12\n";
  return false;
}

void read_rules(SharedOptions& shared) {
  if (shared.rules_file.empty()) return;
  try {
    shared.rules_text = read_file(shared.rules_file);
    shared.rules = Rules::parse(shared.rules_text, shared.rules_file);
  } catch (const Error& e) {
    throw BadRules(e.what());
  }
}

bool load_rules(SharedOptions& shared) {
  try {
    read_rules(shared);
    return true;
  } catch (const BadRules& e) {
    print_error(e.what());
    return false;
  }
}

int exit_status_of_failure(const fs::path& input, int failed) {
  print_error(describe_exception(input));
  return exit_status_of_exception(failed);
}

int exit_status_of_exception(int failed) {
  try {
    throw;
  } catch (const OutputRefused&) {
    return kExitUsage;
  } catch (const UsageError&) {
    return kExitUsage;
  } catch (const BadRules&) {
    return kExitUsage;
  } catch (...) {
    return failed;
  }
}

std::string describe_exception(const fs::path& subject) {
  try {
    throw;
  } catch (const Error& e) {
    return e.what();
  } catch (const std::bad_alloc&) {
    return subject.string() + ": out of memory";
  } catch (const std::exception& e) {
    return subject.string() + ": " + e.what();
  }
}

}  // namespace tracelane::cli
