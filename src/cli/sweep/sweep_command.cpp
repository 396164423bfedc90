// `tracelane sweep ROOT`: its options, then the whole run: lock the tree, discover
// (discovery.hpp), plan (sweep_plan.hpp), run the graph (sweep_graph.hpp, under the
// memory budget of memory_budget.hpp, progress.hpp on stderr), write the report.
//
// Discovery walks ROOT once, sequentially (sharding needs the whole sorted list before any
// work starts, and a walk costs nothing next to parsing); the graph and its memory budget
// are described in sweep_graph.cpp.
#include "sweep.hpp"

#include <chrono>
#include <iostream>
#include <map>
#include <utility>

#include "commands.hpp"
#include "files.hpp"
#include "options.hpp"
#include "printable.hpp"
#include "progress.hpp"
#include "remove_originals.hpp"
#include "report/report.hpp"
#include "sweep_graph.hpp"
#include "tree_lock.hpp"

namespace tracelane::cli {

namespace {

const CommandLine kSweepLine{"sweep", "usage: tracelane sweep ROOT [options]\n",
                             "usage: tracelane sweep ROOT [options]\n"};

// ROOT as the report and a plan file record it: absolute, without "." or "..", and
// without a trailing '/' (lexically_normal writes "outputs/" as "outputs/."), so that
// `outputs/` and `outputs` are one root to a plan file and to `report --combine`.
std::string recorded_root(const fs::path& root) {
  boost::system::error_code ec;
  fs::path normal = fs::absolute(root, ec).lexically_normal();
  if (normal.filename() == "." && normal.has_parent_path()) normal = normal.parent_path();
  return normal.string();
}

// --plan FILE: the plan, read as strictly as a partial report (it may come from another
// node or user) and written for this ROOT; a usage error (exit 2) otherwise, before any work.
void load_plan(const std::string& file, SweepOptions& options) {
  PlanFile plan;
  try {
    ReadOptions read;
    read.regular_only = true;
    read.max_bytes = kMaxPartialReportBytes;
    plan = parse_plan_file(read_file(file, nullptr, read), file);
  } catch (const Error& e) {
    throw UsageError(std::string("--plan: ") + e.what());
  }
  if (plan.root != recorded_root(options.root))
    throw UsageError(file + ": a plan of " + plan.root + ", not of " + recorded_root(options.root));
  options.plan = std::move(plan.plan);
}

// The report's place is checked before any work, not after hours of it.
void check_report_dir(const SweepOptions& options) {
  boost::system::error_code made;
  fs::create_directories(options.report_dir, made);
  for (const char* extension : {".json", ".csv", ".html"}) {
    try {
      guard_output(options.report_dir / (report_base_name(options.shard) + extension), {}, true);
    } catch (const OutputRefused& e) {
      throw UsageError(std::string(e.what()) + " (--report-dir)");
    }
  }
}

// Parses the command line into `options`; the exit status when the command stops here
// (--help, a usage error).
std::optional<int> parse_sweep_options(int argc, char** argv, SweepOptions& options) {
  SweepArguments arguments;
  SharedOptions& shared = arguments.shared;  // --rules, --level, --no-restore-data
  int jobs = 0;
  po::options_description described("sweep options");
  described.add_options()("help,h", "show this help")(
      "jobs,j", po::value(&jobs), "threads (default: SLURM_CPUS_PER_TASK, else the cores available)")(
      "memory", po::value(&arguments.memory),
      "budget for trace data in flight, e.g. 512M, 4G (default: half the memory of the machine or job)")(
      "overwrite", po::bool_switch(&options.overwrite), "redo outputs that are up to date")(
      "force", po::bool_switch(&arguments.force), "compact traces that are tracelane's own outputs (SPEC 9.8)")(
      "rules", po::value(&shared.rules_file),
      "classification and PP rules (JSON; see `tracelane rules --print-defaults`)")(
      "no-restore-data", po::bool_switch(&shared.no_restore_data),
      "leave out what `tracelane restore` needs to write the originals back")(
      "single-gzip-member", po::bool_switch(&shared.single_gzip_member),
      "write .gz outputs as one gzip member (slower: no parallel compression), for readers that stop after the first")(
      "remove-originals", po::bool_switch(&options.remove_originals),
      "after the work, remove each rank file whose compacted copy, read back, restores it byte for byte")(
      "dry-run,n", po::bool_switch(&options.dry_run), "list what would be done; change nothing")(
      "quiet,q", po::bool_switch(&options.quiet), "no progress and no summary; errors only")(
      "report-dir", po::value(&arguments.report_dir),
      "where to write tracelane_report.json/.csv/.html (default: ROOT)")(
      "shard", po::value(&arguments.shard),
      "K/N: process the iteration directories at sorted positions p with p % N == K")(
      "plan", po::value(&arguments.plan),
      "split the list of iteration directories in FILE (--write-plan), not the one ROOT's walk finds")(
      "write-plan", po::value(&options.write_plan),
      "write ROOT's list of iteration directories to FILE for the shards of one job array, and stop")(
      "level", po::value(&shared.level)->default_value(kDefaultLevel), "gzip level, 0 to 12 (libdeflate's scale)");
  po::options_description hidden;
  hidden.add_options()("root", po::value(&arguments.root));
  po::positional_options_description positional;
  positional.add("root", 1);
  po::variables_map vm;
  if (auto done = parse_command_line(argc, argv, kSweepLine, described, hidden, positional, &vm)) return done;
  if (vm.count("jobs")) arguments.jobs = jobs;
  try {
    configure_sweep(std::move(arguments), options);
  } catch (const BadRules& e) {
    print_error(e.what());
    return kExitUsage;
  } catch (const UsageError& e) {
    return cli::usage_error(kSweepLine, e.what());
  }
  return std::nullopt;
}

// "a/b/c" -> "a/b", "c" -> ".": the directory of a discovery problem's entry.
std::string parent_rel(const std::string& rel) {
  size_t slash = rel.rfind('/');
  return slash == std::string::npos ? "." : rel.substr(0, slash);
}

// --remove-originals: every rank file of the plan as the sweep leaves it, in plan order.
// An iteration's files are all refused (remove_originals.hpp) when it is not wholly done,
// when discovery could not account for everything in its directory (a dangling or foreign
// rank link, an entry it could not examine: the merged output may lack a rank that comes
// back later), when it was reached through a directory symbolic link (its files are not
// ROOT's to remove), or when `whole_tree_refusal` says so (the tree lock was not taken).
std::vector<OriginalFile> original_files(const SweepPlan& plan, const Discovery& discovery, bool dry_run,
                                         const std::optional<std::string>& whole_tree_refusal) {
  std::vector<OriginalFile> files;
  for (const auto& iteration : plan.iterations) {
    std::vector<std::pair<std::string, std::optional<RowStatus>>> statuses;
    for (size_t r : iteration->ranks)
      statuses.push_back({plan.ranks[r]->file->path.filename().string(), plan.ranks[r]->row.status()});
    std::optional<MergeStatus> merge_status;
    if (iteration->has_merge_row) merge_status = MergeStatus{iteration->merge_row.status()};
    std::optional<std::string> refusal = whole_tree_refusal;
    if (!refusal && iteration->dir->through_dir_link)
      refusal = "its directory was reached through a symbolic link (not ROOT's to remove)";
    for (const DiscoveryProblem& problem : discovery.problems)
      if (!refusal && parent_rel(problem.rel) == iteration->dir->rel)
        refusal = "its directory holds an entry the sweep could not account for (" + problem.rel + ": " +
                  problem.reason + ")";
    if (!refusal && !dry_run) refusal = iteration_not_done(statuses, merge_status);
    for (size_t r : iteration->ranks) {
      const RankTask& task = *plan.ranks[r];
      if (task.file->from_copy) continue;  // its original is gone already
      OriginalFile file;
      file.dir = iteration->dir->dir;
      file.name = task.file->path.filename().string();
      file.output_name = task.output.filename().string();
      // The file read; a rank not read (or not yet: --dry-run) is the one discovery
      // found, which its output's inputs record named (up_to_date).
      file.identity = task.process && !dry_run ? task.read_identity : task.file->identity;
      file.through_link = task.file->through_link;
      file.estimate = std::max(task.estimate, task.file->bytes_uncompressed);
      file.iteration = iteration->index;
      file.refusal = refusal;
      // Up to date, but read again for the merge and found changed since discovery: the
      // copy was made from the file as it was, not as it is.
      if (!file.refusal && !dry_run && !task.write_output && task.process &&
          !(task.read_identity == task.file->identity))
        file.refusal = "changed since its compacted copy was made";
      files.push_back(std::move(file));
    }
  }
  return files;
}

// --dry-run: what would be verified and removed once the work is done.
std::string removal_listing(const SweepPlan& plan, const Discovery& discovery) {
  std::vector<std::string> rel_names;
  for (const auto& iteration : plan.iterations)
    for (size_t index : iteration->ranks) {
      const std::string& rel = iteration->dir->rel;
      rel_names.push_back((rel == "." ? "" : rel + "/") + plan.ranks[index]->file->path.filename().string());
    }
  return removal_plan(original_files(plan, discovery, true, std::nullopt), rel_names);
}

// After the work: verify and remove; each rank row's "original" says what was done.
std::vector<OriginalVerdict> remove_verified_originals(const SweepOptions& options, SweepPlan& plan,
                                                       const Discovery& discovery,
                                                       const std::optional<std::string>& whole_tree_refusal) {
  std::vector<OriginalVerdict> verdicts =
      remove_originals(original_files(plan, discovery, false, whole_tree_refusal), options.memory_budget, options.jobs,
                       [](const std::string& line) { print_error(line); });
  size_t i = 0;
  for (const auto& iteration : plan.iterations)
    for (size_t r : iteration->ranks)
      plan.ranks[r]->row.set(ColumnId::original,
                             plan.ranks[r]->file->from_copy ? std::string("removed") : original_cell(verdicts[i++]));
  return verdicts;
}

// The report of the run: the rows of the graph, the plan's problems (plan_sweep gives the
// whole tree's to shard 0 only) and, from shard 0 only, discovery's problems (they belong
// to the whole tree: a combined report lists each once); and the plan the shard took.
Report make_report(const SweepOptions& options, std::vector<Row> rows, const Discovery& discovery,
                   const SweepPlan& plan, double wall_seconds) {
  for (const DiscoveryProblem& problem : plan.plan_problems) {
    Row row(RowKind::problem);
    row.set(ColumnId::dir, problem.rel)
        .set_status(problem.failure ? RowStatus::failed : RowStatus::warning)
        .set(ColumnId::error, problem.reason);
    rows.push_back(std::move(row));
  }
  if (!options.shard || options.shard->index == 0)
    for (const DiscoveryProblem& problem : discovery.problems) {
      Row row(RowKind::problem);
      row.set(ColumnId::dir, problem.rel)
          .set_status(problem.failure ? RowStatus::failed : RowStatus::warning)
          .set(ColumnId::error, problem.reason);
      rows.push_back(std::move(row));
    }
  sort_rows(rows);

  Report report;
  report.root = recorded_root(options.root);
  report.shard = options.shard;
  report.plan = plan.recorded;
  RunInfo info;
  info.shard = report.shard;
  info.wall_seconds = wall_seconds;
  info.jobs = options.jobs;
  info.memory_budget_bytes = options.memory_budget;
  report.runs.push_back(info);
  report.rows = std::move(rows);
  return report;
}

// The one-line summary on stdout (not with --quiet), then the warnings and failures on
// stderr.
void print_outcome(const SweepOptions& options, const Report& report, const fs::path& written,
                   const std::vector<OriginalVerdict>& removals) {
  std::map<std::string, size_t> counts;
  for (const Row& row : report.rows) {
    std::optional<RowStatus> status = row.status();
    counts[std::string(kind_name(row.kind)) + "s " + (status ? status_name(*status) : "?")]++;
  }
  if (!options.quiet) {
    std::cout << "tracelane sweep: ";
    bool first = true;
    for (const auto& [key, count] : counts) std::cout << (first ? "" : ", ") << count << " " << key, first = false;
    if (counts.empty()) std::cout << "no rank<N>_trace.json[.gz] files found";
    std::cout << " in " << int(report.runs.back().wall_seconds * 10) / 10.0 << " s\n";
    if (!written.empty()) std::cout << "report: " << printable(written.string()) << "\n";
    if (options.remove_originals) std::cout << "tracelane sweep: " << removal_summary(removals) << "\n";
  }
  for (const auto& [dir, count] : unmatched_iterations(report.rows))
    std::cerr << "warning: " << printable(dir) << ": " << count
              << " PP send/recv arrows unmatched (usually a truncated capture window)\n";
  for (const Row& row : report.rows)
    if (row.kind != RowKind::problem && row.status() == RowStatus::failed &&
        std::holds_alternative<std::string>(row.get(ColumnId::error)))
      std::cerr << "failed: " << printable(std::get<std::string>(row.get(ColumnId::error))) << "\n";
}

// --write-plan FILE: discovery's list of iteration directories, written once (atomically)
// for every shard of a job array to split. It only reads the tree: no lock, no outputs.
// Discovery's problems are printed; each shard 0 finds them again and reports them.
int write_plan(const SweepOptions& options) {
  Discovery discovery = discover(options.root);
  for (const DiscoveryProblem& problem : discovery.problems)
    std::cerr << printable((fs::path(options.root) / problem.rel).string() + ": " + problem.reason) << "\n";
  PlanFile file{recorded_root(options.root), discovered_plan(discovery)};
  try {
    write_atomically(options.write_plan, plan_file_json(file), true);
  } catch (const OutputRefused& e) {
    std::cerr << "tracelane sweep: " << printable(e.what()) << "\n";
    return kExitUsage;
  } catch (const Error& e) {
    std::cerr << "tracelane sweep: " << printable(e.what()) << "\n";
    return kExitFailed;
  }
  if (!options.quiet)
    std::cout << "tracelane sweep: plan of " << file.plan.count << " iteration directories (digest "
              << short_digest(file.plan.digest) << ") written to " << printable(options.write_plan.string()) << "\n";
  return kExitOk;
}

}  // namespace

void configure_sweep(SweepArguments arguments, SweepOptions& options) {
  SharedOptions& shared = arguments.shared;
  if (arguments.root.empty()) throw UsageError("missing ROOT");
  // A copy without restore data cannot give its original back.
  if (options.remove_originals && shared.no_restore_data)
    throw UsageError("--remove-originals needs the restore data that --no-restore-data leaves out");
  read_rules(shared);
  options.rules = std::move(shared.rules);
  options.job = job_options(shared, arguments.force, nullptr);  // no timings: the jobs run concurrently
  options.job.rules = options.rules ? &*options.rules : nullptr;
  options.root = arguments.root;
  boost::system::error_code ec;
  if (!fs::is_directory(options.root, ec)) throw UsageError(arguments.root + ": not a directory");
  if (arguments.jobs && *arguments.jobs < 1) throw UsageError("--jobs must be at least 1");
  options.jobs = arguments.jobs ? *arguments.jobs : default_jobs();
  if (!arguments.memory.empty()) {
    auto bytes = parse_byte_size(arguments.memory);
    if (!bytes) throw UsageError("--memory: expected a size like 512M or 4G, got '" + arguments.memory + "'");
    options.memory_budget = *bytes;
  } else {
    options.memory_budget = default_memory_budget();
  }
  if (!arguments.shard.empty()) {
    options.shard = parse_shard(arguments.shard);
    if (!options.shard)
      throw UsageError("--shard: expected K/N with 0 <= K < N <= " + std::to_string(kMaxShards) + ", got '" +
                       arguments.shard + "'");
  }
  if (!level_in_range(options.job.level)) throw UsageError("--level must be between 0 and 12");
  if (!options.write_plan.empty()) {
    if (options.shard || !arguments.plan.empty() || options.dry_run || options.remove_originals ||
        !arguments.report_dir.empty())
      throw UsageError(
          "--write-plan only writes the plan: not with --shard, --plan, --dry-run, --remove-originals "
          "or --report-dir (run the shards with --plan FILE)");
    try {
      guard_output(options.write_plan, {}, true);
    } catch (const OutputRefused& e) {
      throw UsageError(std::string(e.what()) + " (--write-plan)");
    }
    return;
  }
  if (!arguments.plan.empty()) load_plan(arguments.plan, options);
  options.report_dir = arguments.report_dir.empty() ? options.root : fs::path(arguments.report_dir);
  if (!options.dry_run) check_report_dir(options);
}

SweepOutcome sweep_tree(SweepOptions& options, bool stop_gracefully) {
  SweepOutcome outcome;
  TreeLock lock;  // held until the report is written
  // --remove-originals removes nothing from a tree whose lock it could not take: another
  // sweep could be rewriting the copies it verifies.
  std::optional<std::string> whole_tree_refusal;
  if (!options.dry_run) {
    std::string message;
    TreeLock::Outcome taken = lock.take(options.root, options.shard.has_value(), message);
    if (taken == TreeLock::Outcome::unlocked) {
      std::cerr << "warning: " << printable(message) << "\n";
      whole_tree_refusal = "the sweep ran without the tree's lock (" + message + ")";
    }
    if (taken == TreeLock::Outcome::busy || taken == TreeLock::Outcome::refused) throw TreeBusy(message);
  }
  auto started = std::chrono::steady_clock::now();
  Discovery discovery = discover(options.root);
  for (const DiscoveryProblem& problem : discovery.problems)
    std::cerr << printable((fs::path(options.root) / problem.rel).string() + ": " + problem.reason) << "\n";

  SweepPlan plan = plan_sweep(options, discovery);
  if (options.dry_run) {
    outcome.dry_run_listing = plan_listing(plan);
    if (options.remove_originals) outcome.dry_run_listing += removal_listing(plan, discovery);
    return outcome;
  }
  remove_stale_temporaries(plan);
  // Slurm sends SIGTERM some time (KillWait) before SIGKILL: the sweep then stops starting
  // work, ends what is in flight at its next step and writes the report of what it did;
  // the next sweep resumes. A second signal ends it at once.
  if (stop_gracefully) stop_gracefully_on_signals();
  run_sweep_graph(options, plan);
  // Only once every output is written, and not on the way out after a stop.
  if (options.remove_originals && !stop_requested())
    outcome.removals = remove_verified_originals(options, plan, discovery, whole_tree_refusal);
  outcome.report = make_report(options, take_plan_rows(plan), discovery, plan, seconds_since(started));
  // The tasks and the tree's listing are done with (the report holds the rows): released
  // before the report's files are made, the sweep's peak for a tree of many iterations.
  plan = SweepPlan();
  discovery = Discovery();
  try {
    boost::system::error_code ec;
    fs::create_directories(options.report_dir, ec);
    outcome.written = write_report(outcome.report, options.report_dir);
  } catch (const Error& e) {
    outcome.report_error = e.what();
    outcome.report_failure = std::current_exception();
  }
  return outcome;
}

int run_sweep(int argc, char** argv) {
  SweepOptions options;
  if (auto done = parse_sweep_options(argc, argv, options)) return *done;

  if (!options.write_plan.empty()) return write_plan(options);

  SweepOutcome outcome;
  try {
    outcome = sweep_tree(options, true);
  } catch (const TreeBusy& e) {
    std::cerr << "tracelane sweep: " << printable(e.what()) << "\n";
    return kExitUsage;
  }
  if (options.dry_run) {
    std::cout << outcome.dry_run_listing;
    return kExitOk;
  }
  if (outcome.report_failure) std::cerr << printable(outcome.report_error) << "\n";
  print_outcome(options, outcome.report, outcome.written, outcome.removals);
  if (int signal_number = stop_requested()) return 128 + signal_number;  // as a shell reports a signal's end
  return has_failures(outcome.report.rows) || outcome.report_failure ? kExitFailed : kExitOk;
}

}  // namespace tracelane::cli
