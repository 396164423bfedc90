// `tracelane compact TRACE`: one trace file through the job's steps (trace_job.hpp), in
// order: read, parse, compact, figures, serialise, compress, write, summary.
#include <tbb/task_arena.h>

#include <exception>
#include <iostream>

#include "commands.hpp"
#include "files.hpp"
#include "memory_budget.hpp"
#include "options.hpp"
#include "trace_commands.hpp"
#include "trace_job.hpp"

namespace tracelane::cli {

namespace {

TraceCommandResult compact_steps(const fs::path& input, const fs::path& output, const SharedOptions& shared,
                                 const JobOptions& job, bool pp_flows) {
  TraceCommandResult result;
  TraceBytes bytes = read_step(input, result.input, {}, job);  // recorded with the output, for the sweep
  result.input_bytes = bytes.json.size();
  CompactedTrace compacted = compact_step(parse_step(std::move(bytes), input, job), job, pp_flows);
  if (const std::string& reason = already_laned(compacted); !reason.empty()) {
    result.summary = already_laned_summary(input, reason);
    result.already_laned = already_laned_line(input, reason, "compacts");
    return result;
  }
  const CompactSummary summary = compacted.summary;
  GpuFigures figures = figures_step(compacted, job, rank_of(input, compacted),
                                    summary.has_pp ? summary.pp_rank : single_trace_pp_rank(compacted.trace));
  std::vector<NamedIdentity> inputs_read{{input.filename().string(), result.input, input}};
  write_output_step(output, compacted_text(compacted), shared.overwrite, inputs_read, job.recipe(pp_flows), job);
  compacted = CompactedTrace{};   // the input document and events are no longer needed
  if (!shared.preview.empty()) {  // no more readable than the input, as the output
    Timings::Scope scope(job.timings, "preview");
    write_atomically(shared.preview, timeline_svg(figures, input.filename().string()), shared.overwrite, {},
                     inputs_read);
  }
  result.summary = compact_summary_json(input, output, summary, figures);
  result.output = output;
  return result;
}

}  // namespace

TraceCommandResult compact_file(const fs::path& input, const SharedOptions& shared, bool pp_flows, bool force,
                                Timings* timings) {
  fs::path output = shared.output.empty() ? default_compact_output(input) : fs::path(shared.output);
  // Every refusal of the output path before the input is read (exit 2). Without -o the
  // output is beside the input: if their directory is missing, so is the input, and
  // reading it says so at once (exit 1, as for any missing input).
  boost::system::error_code ec;
  fs::path beside = output.parent_path();
  if (beside.empty()) beside = ".";
  const bool input_dir_missing = shared.output.empty() && !fs::is_directory(beside, ec);
  if (shared.output.empty()) require_output_option_unless_regular(input);
  if (!input_dir_missing) guard_output(output, {input}, shared.overwrite);
  guard_preview(shared, output, {input});
  // The steps' parallel parts (the gzip members) run on the arena's threads.
  TraceCommandResult result;
  std::exception_ptr failure;
  tbb::task_arena(arena_threads(jobs_of(shared))).execute([&] {
    try {
      result = compact_steps(input, output, shared, job_options(shared, force, timings), pp_flows);
    } catch (...) {
      failure = std::current_exception();
    }
  });
  if (failure) std::rethrow_exception(failure);
  return result;
}

int run_compact(int argc, char** argv) {
  SharedOptions shared;
  bool no_pp_flows = false, force = false;
  po::options_description options("compact options");
  add_shared_options(options, shared);
  add_restore_option(options, shared);
  add_parallel_options(options, shared);
  options.add_options()("no-pp-flows", po::bool_switch(&no_pp_flows), "do not add rank-local PP arrows")(
      "force", po::bool_switch(&force), "compact tracelane's own output again (SPEC 9.8)");
  const CommandLine line{"compact", "usage: tracelane compact TRACE [options]\n", std::string("\n") + kUsage};
  std::string input_arg;
  if (auto done = parse_command_line(argc, argv, line, options, "TRACE", input_arg)) return *done;
  if (!check_level(shared.level, "compact") || !load_rules(shared)) return kExitUsage;
  const int jobs = jobs_of(shared);
  if (jobs < 1) return usage_error(line, "--jobs must be at least 1");
  fs::path input(input_arg);
  Timings timings;
  int code = kExitOk;
  try {
    TraceCommandResult result = compact_file(input, shared, !no_pp_flows, force, shared.timings ? &timings : nullptr);
    print_summary(result.summary, result.already_laned);
  } catch (...) {
    code = exit_status_of_failure(input);
  }
  if (shared.timings) std::cerr << timings.text();
  return code;
}

}  // namespace tracelane::cli
