// What every command shares on its command line: the exit statuses, the options of the
// commands that write a trace (-o, --overwrite, --level, --rules, --timings, --preview,
// --no-restore-data), and the Boost.Program_options parsing with its --help and usage
// errors, written once. Each command (compact_command.cpp, sweep/sweep_command.cpp, ...) declares its
// own options and hands them to parse_command_line.
#pragma once

#include <boost/filesystem.hpp>
#include <boost/program_options.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tracelane/rules.hpp"
#include "tracelane/trace.hpp"

namespace tracelane::cli {

namespace fs = boost::filesystem;
namespace po = boost::program_options;

// Exit statuses of every command: 0 done; 1 an input or output failed (check: violations);
// 2 a usage error, or an output the guard refused.
inline constexpr int kExitOk = 0, kExitFailed = 1, kExitUsage = 2;

// A compacted trace is a viewing copy beside its original, so time wins over size; what
// each level costs and saves is measured in bench/README.md, "Default gzip level 1".
inline constexpr int kDefaultLevel = 1;

// The top-level usage (`tracelane --help`), printed after a usage error of the commands
// that write a trace.
extern const char* const kUsage;

// The options compact, merge and restore share (sweep: --level, --rules,
// --no-restore-data, --overwrite).
struct SharedOptions {
  std::string rules_file;
  std::optional<Rules> rules;  // loaded before any trace is read (load_rules)
  std::string rules_text;      // its text, for the outputs' recipe (files.hpp output_recipe)
  std::string output;
  bool overwrite = false;
  int level = kDefaultLevel;
  bool timings = false;
  std::string preview;  // --preview FILE.svg: the timeline picture (docs/figures.md)
  bool no_restore_data = false;
  int jobs = -1;                    // --jobs; -1: not given (default_jobs())
  bool single_gzip_member = false;  // --single-gzip-member

  const Rules* rules_or_null() const { return rules ? &*rules : nullptr; }
};

// --help, -o, --overwrite, --level, --timings, --rules, --preview.
void add_shared_options(po::options_description& options, SharedOptions& shared);
// --no-restore-data.
void add_restore_option(po::options_description& options, SharedOptions& shared);
// --jobs, --single-gzip-member (compact, merge; sweep has its own --jobs).
void add_parallel_options(po::options_description& options, SharedOptions& shared);
void add_single_member_option(po::options_description& options, bool& single_gzip_member);
// --jobs as given, else SLURM_CPUS_PER_TASK, else the cores this process may run on; 0
// when --jobs is below 1 (a usage error).
int jobs_of(const SharedOptions& shared);

// --preview FILE.svg goes through the same guard as the output, against the inputs and
// the output itself (one name for both would lose one of them). Throws OutputRefused.
void guard_preview(const SharedOptions& shared, const fs::path& output, std::vector<fs::path> inputs);

// How a command presents itself when its command line is wrong or --help is asked.
struct CommandLine {
  std::string command;               // "compact": messages start "tracelane compact: "
  std::string usage;                 // the first lines of --help, each ending in '\n'
  std::string after_error;           // printed on stderr after a usage error's line
  bool options_after_error = false;  // and then the options' descriptions
};

// Parses argv (argv[0] is the command's name) against `options` (what --help shows),
// `hidden` and `positional`. Returns the exit status when the command is done (--help:
// kExitOk; a malformed command line: kExitUsage, after saying why on stderr), else
// nothing: go on.
std::optional<int> parse_command_line(int argc, char** argv, const CommandLine& line,
                                      const po::options_description& options,
                                      const po::options_description& hidden = po::options_description(),
                                      const po::positional_options_description& positional = {},
                                      po::variables_map* parsed = nullptr);

// The same for a command with one positional argument that must be given: `name` is
// both its option name and what "missing NAME" says.
std::optional<int> parse_command_line(int argc, char** argv, const CommandLine& line,
                                      const po::options_description& options, const char* name, std::string& value,
                                      po::variables_map* parsed = nullptr);

// A usage error: "tracelane <command>: <message>" and what follows a usage error.
int usage_error(const CommandLine& line, const std::string& message);

bool level_in_range(int level);
// False (after saying so on stderr) when --level is outside 0..12.
bool check_level(int level, const char* command);

// A --rules file that cannot be read or is not a rules file: a usage error, whose message
// is the file's own ("my_rules.json: ..."), printed without the command's name.
class BadRules : public Error {
 public:
  using Error::Error;
};
// Reads and parses --rules FILE into `shared` (nothing when none is given); throws BadRules.
void read_rules(SharedOptions& shared);
// The same, false (after saying why) when it is bad: a bad rules file stops the command
// before any trace is read.
bool load_rules(SharedOptions& shared);

// The exit status of a command that failed on `input`, after printing why; call it in a
// catch block. An output that appeared while we worked (write_atomically's OutputRefused)
// is a usage error, as when the guard sees it first, and so is a UsageError or BadRules;
// any other failure is `failed`.
int exit_status_of_failure(const fs::path& input, int failed = kExitFailed);
// The same status, printing nothing (the Python module raises it with the exception).
int exit_status_of_exception(int failed = kExitFailed);

// The message of the exception being handled (call it in a catch block): an Error's own
// (which names its file), anything else after "<subject>: " ("<subject>: out of memory").
std::string describe_exception(const fs::path& subject);

}  // namespace tracelane::cli
