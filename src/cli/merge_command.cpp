// `tracelane merge DIR`: every rank<N>_trace.json[.gz] of a directory read, parsed and
// compacted with the job's steps (trace_job.hpp), then merged and written by
// merge_and_write(), the same function the sweep's merge node calls.
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <exception>
#include <iostream>
#include <optional>

#include "commands.hpp"
#include "files.hpp"
#include "memory_budget.hpp"
#include "options.hpp"
#include "trace_commands.hpp"
#include "trace_job.hpp"
#include "tracelane/summary.hpp"

namespace tracelane::cli {

namespace {

// One rank: read, parsed and compacted with the job's steps. The merged file carries the
// PP arrows: none of the ranks' own.
MergeInput merge_input(const fs::path& file, NamedIdentity& identity, const JobOptions& job) {
  Timings::Scope scope(job.timings, file.filename().string());
  // Found by listing a directory others may write: regular files only (a FIFO planted
  // under a rank name must not hang an unattended merge).
  ReadOptions read;
  read.regular_only = true;
  identity.name = file.filename().string();
  identity.path = file;
  TraceBytes bytes = read_step(file, identity.identity, read, job);
  Trace trace = parse_step(std::move(bytes), file, job, true);  // the ranks are compacted concurrently
  return {file.filename().string(), compact_step(std::move(trace), job, false)};
}

TraceCommandResult merge_directory(const fs::path& input, const fs::path& dir, const fs::path& output,
                                   const SharedOptions& shared, const JobOptions& job) {
  std::vector<fs::path> files = find_rank_files(input);
  // Against every rank file, before any is read.
  guard_output(output, files, shared.overwrite);
  guard_preview(shared, output, files);
  // The ranks on the arena's threads (--jobs), each one's failure kept; then, in file
  // order, the first failure or already-laned rank is the one reported, as when they
  // ran one after another. One thread: one after another, each rank timed.
  std::vector<std::optional<MergeInput>> compacted(files.size());
  std::vector<NamedIdentity> identities(files.size());  // recorded with the output, as the sweep does
  std::vector<std::exception_ptr> failures(files.size());
  if (tbb::this_task_arena::max_concurrency() == 1) {
    for (size_t k = 0; k < files.size(); ++k) {
      compacted[k] = merge_input(files[k], identities[k], job);
      if (!already_laned(compacted[k]->compacted).empty()) break;
    }
  } else {
    Timings::Scope scope(job.timings, "ranks (" + std::to_string(files.size()) + ", concurrently)");
    JobOptions rank_job = job;
    rank_job.timings = nullptr;  // one thread at a time may time
    tbb::parallel_for(size_t(0), files.size(), [&](size_t k) {
      try {
        compacted[k] = merge_input(files[k], identities[k], rank_job);
      } catch (...) {
        failures[k] = std::current_exception();
      }
    });
  }
  std::vector<MergeInput> ranks;
  for (size_t k = 0; k < files.size(); ++k) {
    if (failures[k]) std::rethrow_exception(failures[k]);
    if (const std::string& reason = already_laned(compacted[k]->compacted); !reason.empty()) {
      TraceCommandResult result;
      result.summary = already_laned_summary(files[k], reason);
      result.already_laned = already_laned_line(files[k], reason, "merges");
      return result;
    }
    ranks.push_back(std::move(*compacted[k]));
    compacted[k].reset();
  }
  MergedOutput merged = merge_and_write(std::move(ranks), identities, output, shared.overwrite, job);
  if (!shared.preview.empty()) {
    fs::path dir_name = fs::absolute(dir).lexically_normal();
    if (dir_name.filename() == "." || dir_name.filename().empty()) dir_name = dir_name.parent_path();
    std::string title = dir_name.filename().string() + " (" + std::to_string(files.size()) + " ranks merged)";
    Timings::Scope scope(job.timings, "preview");
    write_atomically(shared.preview, timeline_svg(merged.figures, title), shared.overwrite, {}, identities);
  }
  JsonValue names = JsonValue::array();
  for (const auto& file : files) names.push(JsonValue::string(file.filename().string()));
  TraceCommandResult result;
  result.summary = with_input_output(names, output.string(), merge_summary(merged.summary));
  add_figures_json(result.summary, merged.figures);
  result.output = output;
  return result;
}

}  // namespace

TraceCommandResult merge_rank_files(const fs::path& input, const SharedOptions& shared, bool force, Timings* timings) {
  boost::system::error_code ec;
  fs::path dir = fs::is_directory(input, ec) ? input : input.parent_path();
  if (dir.empty()) dir = ".";
  fs::path output = shared.output.empty() ? dir / kMergedName : fs::path(shared.output);
  TraceCommandResult result;
  std::exception_ptr failure;
  tbb::task_arena(arena_threads(jobs_of(shared))).execute([&] {
    try {
      result = merge_directory(input, dir, output, shared, job_options(shared, force, timings));
    } catch (...) {
      failure = std::current_exception();
    }
  });
  if (failure) std::rethrow_exception(failure);
  return result;
}

int run_merge(int argc, char** argv) {
  SharedOptions shared;
  bool force = false;
  po::options_description options("merge options");
  add_shared_options(options, shared);
  add_restore_option(options, shared);
  add_parallel_options(options, shared);
  options.add_options()("force", po::bool_switch(&force), "merge ranks that are tracelane's own outputs (SPEC 9.8)");
  const CommandLine line{"merge", "usage: tracelane merge DIR_OR_ONE_RANK_FILE [options]\n",
                         std::string("\n") + kUsage};
  std::string input_arg;
  if (auto done = parse_command_line(argc, argv, line, options, "DIR_OR_ONE_RANK_FILE", input_arg)) return *done;
  if (!check_level(shared.level, "merge") || !load_rules(shared)) return kExitUsage;
  const int jobs = jobs_of(shared);
  if (jobs < 1) return usage_error(line, "--jobs must be at least 1");
  fs::path input(input_arg);
  Timings timings;
  int code = kExitOk;
  try {
    TraceCommandResult result = merge_rank_files(input, shared, force, shared.timings ? &timings : nullptr);
    print_summary(result.summary, result.already_laned);
  } catch (...) {
    code = exit_status_of_failure(input, kExitUsage);  // the original exits 2 on any merge error; scripts rely on it
  }
  if (shared.timings) std::cerr << timings.text();
  return code;
}

}  // namespace tracelane::cli
