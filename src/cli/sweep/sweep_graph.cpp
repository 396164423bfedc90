// The sweep graph.
//
// Discovery walks ROOT once, sequentially (sharding needs the whole sorted list before any
// work starts, and a walk costs nothing next to parsing), and plans every iteration
// directory: which rank outputs are stale, which merges are stale. The work is then one
// tbb::flow::graph:
//
//   admit -> load+parse -> compact -> write rank output -> collect -+-> admit (budget back)
//     ^                                                             |
//     +--------------------- merge + write merged output <----------+
//
// `admit` is a serial node owning the memory budget (Admission): it starts rank jobs in
// sorted order while their estimated cost fits, and every finished job or merge sends the
// bytes back to it. Independent files run concurrently on up to --jobs threads (the task
// arena's size). A rank of an iteration that will be merged is compacted as `compact`
// compacts it (with its single-trace PP arrows, which the merge replaces with the merged
// file's), its own output written first, and the compacted trace is kept for the merge, so
// each rank file is read and parsed exactly once. The last rank of an iteration to finish
// hands the iteration to `merge`; an iteration with a failed rank is not merged and its
// merge row says why.
//
// The nodes run the steps of trace_job.hpp: load_parse (read, parse), compact_rank
// (compact, figures, the row's numbers), write_rank (serialise, compress, write with the
// row as its record), merge_iteration (merge_and_write, as `tracelane merge`).
//
// Every output goes to a temporary name and is renamed into place, so a killed sweep
// leaves no partial file and a rerun redoes only what is missing or stale.
#include "sweep_graph.hpp"

#include <malloc.h>

#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/task_arena.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <tuple>

#include "files.hpp"
#include "memory_budget.hpp"
#include "options.hpp"
#include "progress.hpp"
#include "trace_job.hpp"
#include "tracelane/compact.hpp"
#include "tracelane/gzip.hpp"
#include "tracelane/merge.hpp"
#include "tracelane/trace.hpp"

namespace tracelane::cli {

namespace {

// Each requeue at least doubles a file's estimate; a file that outgrows this many is
// being written while we read it.
constexpr int kMaxRequeues = 16;

class Sweep {
 public:
  Sweep(const SweepOptions& options, SweepPlan& plan)
      : options_(options), ranks_(plan.ranks), iterations_(plan.iterations) {}

  // Runs the graph over the plan's tasks. It returns nothing: each rank task's row and each
  // iteration's merge row is filled in place (take_plan_rows collects and sorts them afterwards).
  void run() {
    size_t files = 0;
    uint64_t bytes = 0;
    for (const auto& task : ranks_)
      if (task->process) files++, bytes += task->file->bytes_uncompressed;
    Progress progress(options_.quiet, files, bytes);
    progress_ = &progress;

    Admission admission(options_.memory_budget);
    for (size_t i = 0; i < ranks_.size(); ++i)
      if (ranks_[i]->process) admission.enqueue(job_of(i));

    tbb::task_arena arena(arena_threads(options_.jobs));
    arena.execute([&] { run_graph(admission); });
    progress.stop();
    progress_ = nullptr;
    if (stop_requested()) mark_not_done();
  }

 private:
  // The budget's messages: start (first kick), a rank job done, an iteration's merge done,
  // a rank job that found its file larger than admitted (requeue with its new estimate).
  struct AdmitMessage {
    enum Kind { start, job_done, group_done, requeue } kind = start;
    size_t id = 0;
  };

  // A rank job's costs from the current estimates (which a requeue raises).
  Admission::Job job_of(size_t id) const {
    const RankTask& task = *ranks_[id];
    Admission::Job job;
    job.id = id;
    if (task.for_merge) {
      // The retained part of every rank and the merged text are held by the iteration.
      job.group = task.iteration->index;
      job.transient = kTransientFactor * task.estimate;
      uint64_t total = 0;
      for (size_t r : task.iteration->ranks) total += ranks_[r]->estimate;
      job.group_reserve = (kRetainedFactor + kMergeFactor) * total;
    } else {
      job.transient = (kTransientFactor + kRetainedFactor) * task.estimate;
    }
    return job;
  }

  void run_graph(Admission& admission) {
    namespace flow = tbb::flow;
    flow::graph graph;
    using AdmitNode = flow::multifunction_node<AdmitMessage, std::tuple<size_t>>;
    using CollectNode = flow::multifunction_node<size_t, std::tuple<AdmitMessage, size_t>>;

    // Serial: the only place that touches the budget.
    AdmitNode admit(graph, flow::serial, [&](const AdmitMessage& message, AdmitNode::output_ports_type& ports) {
      // The budget counts a finished job's memory as free, but glibc keeps what it freed in
      // the arena of the thread that allocated it (blocks below its dynamic mmap threshold,
      // up to 32 MB each), where the next job, on another thread, cannot reuse it: hand it
      // back before admitting more (two 16 MB traces run one after the other under 200M
      // peaked at 1.75 x one file's RSS without this, 1.0x with it).
      if (message.kind != AdmitMessage::start) ::malloc_trim(0);
      if (message.kind == AdmitMessage::job_done) admission.finish_job(message.id);
      if (message.kind == AdmitMessage::group_done) admission.finish_group(message.id);
      if (message.kind == AdmitMessage::requeue) {
        Admission::Job job = job_of(message.id);
        admission.requeue(message.id, job.transient, job.group_reserve);
      }
      // Asked to stop: nothing more starts; what is in flight ends at its next step.
      if (stop_requested()) return;
      for (size_t id : admission.admit()) std::get<0>(ports).try_put(id);
    });
    flow::function_node<size_t, size_t> load(graph, flow::unlimited, [&](size_t id) { return load_parse(id); });
    flow::function_node<size_t, size_t> compact(graph, flow::unlimited, [&](size_t id) { return compact_rank(id); });
    flow::function_node<size_t, size_t> write(graph, flow::unlimited, [&](size_t id) { return write_rank(id); });
    CollectNode collect(graph, flow::unlimited,
                        [&](size_t id, CollectNode::output_ports_type& ports) { collect_rank(id, ports); });
    flow::function_node<size_t, AdmitMessage> merge(graph, flow::unlimited, [&](size_t iteration) {
      merge_iteration(iteration);
      return AdmitMessage{AdmitMessage::group_done, iteration};
    });

    flow::make_edge(flow::output_port<0>(admit), load);
    flow::make_edge(load, compact);
    flow::make_edge(compact, write);
    flow::make_edge(write, collect);
    flow::make_edge(flow::output_port<0>(collect), admit);
    flow::make_edge(flow::output_port<1>(collect), merge);
    flow::make_edge(merge, admit);

    admit.try_put(AdmitMessage{AdmitMessage::start, 0});
    graph.wait_for_all();
  }

  // What a stop (stop_requested()) left undone: a failed row each, which the next sweep
  // redoes. In flight, a rank ends at its next step with that row (stopped()).
  std::string not_done(const fs::path& path) const {
    return path.string() + ": not done: the sweep was stopped by signal " + std::to_string(stop_requested());
  }
  bool stopped(RankTask& task) {
    if (!stop_requested() || task.failed || task.requeued) return false;
    if (task.write_output) {
      fail(task, not_done(task.file->path));
    } else {  // its output is up to date (its row stands); only its iteration's merge is not done
      task.failed = true;
      task.trace.reset();
      task.compacted.reset();
    }
    return true;
  }
  void mark_not_done() {
    auto has_status = [](const Row& row) { return row.status().has_value(); };
    for (auto& task : ranks_)
      if (task->process && !has_status(task->row))
        task->row.set_status(RowStatus::failed).set(ColumnId::error, not_done(task->file->path));
    for (auto& iteration : iterations_)
      if (iteration->merge && !has_status(iteration->merge_row))
        iteration->merge_row.set_status(RowStatus::failed).set(ColumnId::error, not_done(iteration->dir->dir));
  }

  void fail(RankTask& task, const std::string& message) {
    task.failed = true;
    task.trace.reset();
    task.compacted.reset();
    task.row.figures.reset();
    task.row.set_status(RowStatus::failed).set(ColumnId::error, message);
    progress_->error(message);
  }

  size_t load_parse(size_t id) {
    RankTask& task = *ranks_[id];
    task.started = std::chrono::steady_clock::now();
    task.requeued = false;
    if (stopped(task)) return id;
    try {
      // The guard every writing command goes through (a planted link or hard link from the
      // output's name to the input is refused, and the row says so).
      if (task.write_output) guard_output(task.output, {task.file->path}, true);
      if (task.estimate > memory_limit_)
        throw Error(task.file->path.string() + ": decompresses to about " + std::to_string(task.estimate) +
                    " bytes, more than this machine's or job's memory (" + std::to_string(memory_limit_) +
                    " bytes); not read");
      ReadOptions read;
      read.regular_only = true;
      read.no_follow = !task.file->through_link;
      read.max_bytes = task.estimate;  // what the budget admitted: never hold more
      TraceBytes bytes;
      const bool from_copy = task.file->from_copy;
      try {
        bytes = read_step(task.file->path, task.read_identity, read, options_.job, from_copy);
      } catch (const InputChanged&) {
        // Once more: a writer may just have finished. Still changing: failed, not kept.
        bytes = read_step(task.file->path, task.read_identity, read, options_.job, from_copy);
      }
      if (from_copy)
        bytes = {TextBuffer(original_text_from_copy(std::move(bytes.json).release_string(), task.file->path.string(),
                                                    read.max_bytes)),
                 {}};
      else
        task.row.set(ColumnId::input_bytes, int64_t(task.read_identity.size));  // the file read
      task.trace = std::make_unique<Trace>(parse_step(std::move(bytes), task.file->path, options_.job, true));
      task.row.set(ColumnId::events, int64_t(task.trace->events.size()));
      task.row.set(ColumnId::pp_rank, int64_t(single_trace_pp_rank(*task.trace)));
    } catch (const LargerThanAdmitted& e) {
      // Back to the budget with the better estimate (at least double: see Admission).
      if (++task.requeues > kMaxRequeues) {
        fail(task, std::string(e.what()) + " (still growing after " + std::to_string(kMaxRequeues) + " new estimates)");
      } else if (e.estimate > memory_limit_) {
        // A file "larger than the budget runs alone", but one that cannot fit in the
        // machine's (or the job's) memory at all (a gzip bomb) would only get the whole
        // sweep OOM-killed, report and all: fail it instead.
        fail(task, std::string(e.what()) + ": decompresses to more than this machine's or job's memory (" +
                       std::to_string(memory_limit_) + " bytes); not read");
      } else {
        task.estimate = std::max(e.estimate, task.estimate * 2);
        task.requeued = true;
      }
    } catch (...) {
      fail(task, describe_exception(task.file->path));
    }
    return id;
  }

  size_t compact_rank(size_t id) {
    RankTask& task = *ranks_[id];
    if (task.failed || task.requeued || stopped(task)) return id;
    try {
      // Every rank output gets its single-trace arrows, as `compact` writes it; the merge
      // replaces them with the merged file's own (SPEC 7, 8).
      task.compacted = std::make_unique<CompactedTrace>(compact_step(std::move(*task.trace), options_.job, true));
      task.trace.reset();
      if (const std::string& reason = already_laned(*task.compacted); !reason.empty()) {
        // Not a failure: the exporter laned it already; nothing to write (SPEC 9.8).
        task.already_laned = true;
        task.write_output = false;
        mark_already_laned(task.row, reason);
        return id;
      }
      fill_compact_row(task.row, task.compacted->summary);
      // Only a row whose output this run writes gets figures computed (a skipped one has its
      // output's, mark_skipped).
      if (task.write_output)
        task.row.figures =
            figures_step(*task.compacted, options_.job, int64_t(task.file->rank), task.compacted->summary.pp_rank);
    } catch (...) {
      fail(task, describe_exception(task.file->path));
    }
    return id;
  }

  size_t write_rank(size_t id) {
    RankTask& task = *ranks_[id];
    if (task.failed || task.requeued || stopped(task)) return id;
    try {
      if (task.write_output) {
        // Written before the merge, which renumbers the trace in place.
        Row done = task.row;  // the row only once the output is in place
        write_output_step(task.output, compacted_text(*task.compacted), true,
                          {{task.file->path.filename().string(), task.read_identity, task.file->path}}, recipe_,
                          options_.job, [&](uint64_t output_bytes) {
                            done.set(ColumnId::output_bytes, int64_t(output_bytes)).set_status(RowStatus::ok);
                            return OutputRecords{row_record(done), figures_record(done)};
                          });
        task.row = std::move(done);
      }
      if (!task.for_merge) task.compacted.reset();
    } catch (...) {
      fail(task, describe_exception(task.file->path));
    }
    task.row.set(ColumnId::seconds, seconds_since(task.started));
    return id;
  }

  template <typename Ports>
  void collect_rank(size_t id, Ports& ports) {
    RankTask& task = *ranks_[id];
    if (task.requeued) {
      std::get<0>(ports).try_put(AdmitMessage{AdmitMessage::requeue, id});
      return;
    }
    progress_->file_done(task.file->bytes_uncompressed, task.failed);
    std::get<0>(ports).try_put(AdmitMessage{AdmitMessage::job_done, id});
    if (!task.for_merge) return;
    IterationTask& iteration = *task.iteration;
    if (iteration.ranks_done.fetch_add(1) + 1 != iteration.ranks.size()) return;
    // The last rank of the iteration: every sibling has finished (acquire by the RMW).
    std::string failed_files, laned_files;
    for (size_t r : iteration.ranks) {
      if (ranks_[r]->failed)
        failed_files += (failed_files.empty() ? "" : ", ") + ranks_[r]->file->path.filename().string();
      if (ranks_[r]->already_laned)
        laned_files += (laned_files.empty() ? "" : ", ") + ranks_[r]->file->path.filename().string();
    }
    if (failed_files.empty() && laned_files.empty()) {
      std::get<1>(ports).try_put(iteration.index);
      return;
    }
    for (size_t r : iteration.ranks) ranks_[r]->compacted.reset();
    if (failed_files.empty()) {
      iteration.merge_row.set_status(RowStatus::already_laned)
          .set(ColumnId::error, iteration.dir->dir.string() + ": not merged: already laned: " + laned_files);
      std::get<0>(ports).try_put(AdmitMessage{AdmitMessage::group_done, iteration.index});
      return;
    }
    iteration.merge_row.set_status(RowStatus::failed)
        .set(ColumnId::error, stop_requested()
                                  ? not_done(iteration.dir->dir)
                                  : iteration.dir->dir.string() + ": not merged: failed rank files: " + failed_files);
    std::get<0>(ports).try_put(AdmitMessage{AdmitMessage::group_done, iteration.index});
  }

  void merge_iteration(size_t index) {
    IterationTask& iteration = *iterations_[index];
    auto started = std::chrono::steady_clock::now();
    Row& row = iteration.merge_row;
    try {
      if (stop_requested()) throw Error(not_done(iteration.dir->dir));
      Row done = row;  // the row only once the output is in place
      std::vector<MergeInput> inputs;
      std::vector<NamedIdentity> identities;  // every rank, as read
      std::vector<fs::path> rank_paths;
      for (size_t r : iteration.ranks) rank_paths.push_back(ranks_[r]->file->path);
      guard_output(iteration.merged_output, rank_paths, true);
      for (size_t r : iteration.ranks) {
        RankTask& task = *ranks_[r];
        identities.push_back({task.file->path.filename().string(), task.read_identity, task.file->path});
        inputs.push_back({original_name(*task.file), std::move(*task.compacted)});
        task.compacted.reset();
      }
      // `done` is filled once the merged size is known, and stored with the output.
      merge_and_write(std::move(inputs), identities, iteration.merged_output, true, options_.job,
                      [&](const MergeSummary& summary, const GpuFigures& figures, uint64_t output_bytes) {
                        fill_merge_row(done, summary);
                        done.set(ColumnId::output_bytes, int64_t(output_bytes)).set_status(RowStatus::ok);
                        done.figures = figures;
                        return OutputRecords{row_record(done), figures_record(done)};
                      });
      row = std::move(done);
    } catch (...) {
      std::string message = describe_exception(iteration.dir->dir);
      row.set_status(RowStatus::failed).set(ColumnId::error, message);
      progress_->error(message);
    }
    for (size_t r : iteration.ranks) ranks_[r]->compacted.reset();
    row.set(ColumnId::seconds, seconds_since(started));
  }

  const SweepOptions& options_;
  std::vector<std::unique_ptr<RankTask>>& ranks_;            // the plan's
  std::vector<std::unique_ptr<IterationTask>>& iterations_;  // the plan's
  Progress* progress_ = nullptr;
  const uint64_t memory_limit_ = memory_limit();
  // What decides the outputs besides their inputs: kept in each output's inputs record.
  const std::string recipe_ = options_.job.recipe(true);
};

}  // namespace

void run_sweep_graph(const SweepOptions& options, SweepPlan& plan) { Sweep(options, plan).run(); }

}  // namespace tracelane::cli
