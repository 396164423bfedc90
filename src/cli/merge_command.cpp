// `tracelane merge DIR`: every rank<N>_trace.json[.gz] of a directory read, parsed and
// compacted with the job's steps (trace_job.hpp), then merged and written by
// merge_and_write(), the same function the sweep's merge node calls.
#include <iostream>

#include "commands.hpp"
#include "files.hpp"
#include "options.hpp"
#include "trace_job.hpp"
#include "tracelane/summary.hpp"

namespace tracelane::cli {

namespace {

int merge_directory(const fs::path& input, const fs::path& dir, const fs::path& output, const SharedOptions& shared,
                    const JobOptions& job) {
  try {
    std::vector<fs::path> files = find_rank_files(input);
    // Against every rank file, before any is read.
    guard_output(output, files, shared.overwrite);
    guard_preview(shared, output, files);
    std::vector<MergeInput> ranks;
    std::vector<NamedIdentity> identities;  // recorded with the output, as the sweep does
    for (const auto& file : files) {
      Timings::Scope scope(job.timings, file.filename().string());
      FileIdentity identity;
      // Found by listing a directory others may write: regular files only (a FIFO planted
      // under a rank name must not hang an unattended merge).
      ReadOptions read;
      read.regular_only = true;
      std::string json = read_step(file, identity, read, job);
      Trace trace = parse_step(std::move(json), file, job);
      identities.push_back({file.filename().string(), identity});
      // The merged file carries the PP arrows: none of the ranks' own.
      ranks.push_back({file.filename().string(), compact_step(std::move(trace), job, false)});
      if (const std::string& reason = already_laned(ranks.back().compacted); !reason.empty()) {
        print_already_laned(file, reason, "merges");
        return kExitOk;
      }
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
    JsonValue summary = with_input_output(names, output.string(), merge_summary(merged.summary));
    add_figures_json(summary, merged.figures);
    std::cout << summary.dump(2) << std::endl;
    return kExitOk;
  } catch (...) {
    return exit_status_of_failure(input, kExitUsage);  // the original exits 2 on any merge error; scripts rely on it
  }
}

}  // namespace

int run_merge(int argc, char** argv) {
  SharedOptions shared;
  bool force = false;
  po::options_description options("merge options");
  add_shared_options(options, shared);
  add_restore_option(options, shared);
  options.add_options()("force", po::bool_switch(&force), "merge ranks that are already laned (SPEC 9.8)");
  const CommandLine line{"merge", "usage: tracelane merge DIR_OR_ONE_RANK_FILE [options]\n",
                         std::string("\n") + kUsage};
  std::string input_arg;
  if (auto done = parse_command_line(argc, argv, line, options, "DIR_OR_ONE_RANK_FILE", input_arg)) return *done;
  if (!check_level(shared.level, "merge") || !load_rules(shared)) return kExitUsage;
  fs::path input(input_arg);
  boost::system::error_code ec;
  fs::path dir = fs::is_directory(input, ec) ? input : input.parent_path();
  if (dir.empty()) dir = ".";
  fs::path output = shared.output.empty() ? dir / kMergedName : fs::path(shared.output);
  Timings timings;
  int code = merge_directory(input, dir, output, shared, job_options(shared, force, shared.timings ? &timings : nullptr));
  if (shared.timings) std::cerr << timings.text();
  return code;
}

}  // namespace tracelane::cli
