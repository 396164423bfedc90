#include "trace_job.hpp"

#include <algorithm>
#include <iostream>
#include <typeinfo>
#include <utility>

#include "tracelane/restore.hpp"
#include "tracelane/summary.hpp"

namespace tracelane::cli {

namespace {

// Rethrows the exception being handled; the core's plain Error, which says what is wrong
// with the trace, as BadTrace (the same message). Call it in a catch block.
[[noreturn]] void rethrow_as_bad_trace() {
  try {
    throw;
  } catch (const Error& e) {
    if (typeid(e) == typeid(Error)) throw BadTrace(e.what());
    throw;
  }
}

}  // namespace

CompactOptions JobOptions::compact_options(bool pp_flows) const {
  CompactOptions options;
  options.pp_flows = pp_flows;
  options.force = force;
  options.restore_data = restore_data;
  options.rules = rules;
  options.timings = timings;
  return options;
}

JobOptions job_options(const SharedOptions& shared, bool force, Timings* timings) {
  JobOptions job;
  job.rules = shared.rules_or_null();
  job.rules_text = shared.rules_text;
  job.force = force;
  job.restore_data = !shared.no_restore_data;
  job.level = shared.level;
  job.gzip_member_bytes = shared.single_gzip_member ? 0 : kGzipMemberBytes;
  job.timings = timings;
  return job;
}

TraceBytes read_step(const fs::path& input, FileIdentity& identity, const ReadOptions& read, const JobOptions& job,
                     bool for_restore) {
  Timings::Scope scope(job.timings, "read");
  try {
    TraceBytes bytes;  // a file's failures are FileError; gzip's are the trace's
    if (for_restore)
      bytes.json = TextBuffer(read_trace_bytes(input, &identity, read, &bytes.crc32));
    else
      bytes.json = read_trace_text(input, &identity, read, &bytes.crc32);
    return bytes;
  } catch (...) {
    rethrow_as_bad_trace();
  }
}

std::string original_text_from_copy(std::string copy_text, const std::string& copy, uint64_t max_bytes) {
  std::vector<RestoreRecordInfo> records = list_restore_records(copy_text, copy);
  if (records.empty())
    throw Error(copy +
                ": its rank file is gone and it holds no restore data (--no-restore-data): the merge cannot "
                "include this rank");
  if (records.size() != 1)
    throw Error(copy + ": holds " + std::to_string(records.size()) + " restore records, not the one of a rank");
  if (records[0].original_bytes > max_bytes)
    throw LargerThanAdmitted(copy + ": restores more than the " + std::to_string(max_bytes) + " bytes admitted",
                             records[0].original_bytes);
  std::string original = restore_original(std::move(copy_text), copy, 0);
  return is_gzip(original) ? gunzip(original, copy + " (its original, restored)", max_bytes) : original;
}

Trace parse_step(TraceBytes bytes, const fs::path& input, const JobOptions& job, bool beside_others) {
  Timings::Scope scope(job.timings, "parse");
  ParseOptions options;
  options.beside_others = beside_others;
  options.document_crc32 = bytes.crc32;
  try {
    return parse_trace(std::move(bytes.json), input.string(), options, job.timings);
  } catch (...) {
    rethrow_as_bad_trace();
  }
}

CompactedTrace compact_step(Trace trace, const JobOptions& job, bool pp_flows) {
  Timings::Scope scope(job.timings, "compact");
  try {
    return compact_trace(std::move(trace), job.compact_options(pp_flows));
  } catch (...) {
    rethrow_as_bad_trace();
  }
}

JsonValue already_laned_summary(const fs::path& input, const std::string& reason) {
  // Compacting twice would only reshuffle lanes the exporter chose: nothing is written.
  JsonValue summary = JsonValue::object();
  summary.set("input", JsonValue::string(input.string())).set("output", JsonValue::null());
  summary.set("status", JsonValue::string(status_name(RowStatus::already_laned)));
  summary.set("reason", JsonValue::string(reason));
  return summary;
}

std::string already_laned_line(const fs::path& input, const std::string& reason, const char* force_does) {
  return input.string() + ": already laned (" + reason + "); nothing written (--force " + force_does + " anyway)";
}

void print_summary(const JsonValue& summary, const std::string& already_laned_line) {
  std::cout << summary.dump(2) << std::endl;
  if (!already_laned_line.empty()) print_error(already_laned_line);
}

void mark_already_laned(Row& row, const std::string& reason) {
  row.set_status(RowStatus::already_laned).set(ColumnId::error, reason);
}

GpuFigures figures_step(const CompactedTrace& compacted, const JobOptions& job, std::optional<int64_t> rank,
                        std::optional<int64_t> pp_rank) {
  Timings::Scope scope(job.timings, "figures");
  return trace_figures(compacted, job.rules, rank, pp_rank);
}

std::optional<int64_t> rank_of(const fs::path& input, const CompactedTrace& compacted) {
  std::optional<int64_t> rank;
  if (long long from_name; is_rank_trace_name(input.filename().string(), &from_name))
    rank = from_name;
  else
    rank = read_distributed_info(compacted.trace).rank;
  if (rank && *rank < 0) rank.reset();
  return rank;
}

OutputEncoding encoding_for(const fs::path& output, const JobOptions& job) {
  OutputEncoding encoding;
  encoding.gzip = output.extension() == ".gz";
  encoding.level = job.level;
  encoding.member_bytes = job.gzip_member_bytes;
  return encoding;
}

uint64_t write_output_step(const fs::path& output, const TraceText& text, bool overwrite,
                           const std::vector<NamedIdentity>& inputs, std::string_view recipe, const JobOptions& job,
                           const RecordsOf& records) {
  Timings::Scope scope(job.timings, "write (serialise, compress)");
  AtomicOutput file(output, inputs);
  uint64_t bytes = write_trace_text(
      text, encoding_for(output, job), [&](std::string_view piece) { file.write(piece); }, job.timings);
  OutputRecords stored;
  if (records) stored = records(bytes);
  file.commit(overwrite, stored.row, recipe, stored.figures);
  return bytes;
}

void fill_compact_row(Row& row, const CompactSummary& summary) {
  row.set(ColumnId::measured_slices, int64_t(summary.measured_slices))
      .set(ColumnId::original_streams, int64_t(summary.original_streams))
      .set(ColumnId::compacted_lanes, int64_t(summary.compacted_lanes))
      .set(ColumnId::gpu_flow_endpoints_mapped, int64_t(summary.gpu_flow_endpoints_mapped))
      .set(ColumnId::gpu_flow_endpoints_unmapped, int64_t(summary.gpu_flow_endpoints_unmapped))
      .set(ColumnId::gpu_annotations_mapped, int64_t(summary.gpu_annotations_mapped))
      .set(ColumnId::gpu_annotations_coalesced, int64_t(summary.gpu_annotations_coalesced))
      .set(ColumnId::cuda_graph_launches, int64_t(summary.cuda_graph_launches));
  if (summary.compacted_lanes > 0)
    row.set(ColumnId::compaction_ratio, double(summary.original_streams) / double(summary.compacted_lanes));
}

void fill_merge_row(Row& row, const MergeSummary& summary) {
  std::vector<std::pair<int, int64_t>> order = summary.pp_ranks;
  std::sort(order.begin(), order.end());
  std::string pp_order;
  for (const auto& [pp_rank, global_rank] : order) {
    if (!pp_order.empty()) pp_order += ' ';
    pp_order += std::to_string(global_rank);
  }
  row.set(ColumnId::pp_order, pp_order).set(ColumnId::pp_order_source, summary.pp_order_source);
  row.set(ColumnId::time_alignment, summary.time_alignment);
  const PpCounts& pp = summary.pp;  // the columns are the summary's keys (pp_count_fields)
  row.set(ColumnId::pp_send_recv_pairs, int64_t(pp.send_recv_pairs))
      .set(ColumnId::pp_send_recv_unmatched, int64_t(pp.send_recv_unmatched))
      .set(ColumnId::pp_compute_dependency_pairs, int64_t(pp.compute_dependency_pairs))
      .set(ColumnId::pp_compute_dependency_unmatched, int64_t(pp.compute_dependency_unmatched))
      .set(ColumnId::pp_unshard_compute_pairs, int64_t(pp.unshard_compute_pairs))
      .set(ColumnId::pp_unshard_compute_unmatched, int64_t(pp.unshard_compute_unmatched));
}

JsonValue compact_summary_json(const fs::path& input, const fs::path& output, const CompactSummary& summary,
                               const GpuFigures& figures) {
  JsonValue json =
      with_input_output(JsonValue::string(input.string()), output.string(), compaction_summary(summary, true));
  add_figures_json(json, figures);
  return json;
}

MergedOutput merge_and_write(std::vector<MergeInput> ranks, const std::vector<NamedIdentity>& inputs,
                             const fs::path& output, bool overwrite, const JobOptions& job,
                             const MergeRecords& records) {
  MergedOutput out;
  MergeResult merged;
  {
    Timings::Scope scope(job.timings, "merge");
    // The merged text is written from inside the merge, which owns what it points into;
    // the records need the merge's summary, so the output is put in place afterwards.
    std::optional<AtomicOutput> file;
    try {
      merged = merge_ranks(std::move(ranks), job.rules, job.timings, [&](const TraceText& text) {
        file.emplace(output, inputs);
        out.output_bytes = write_trace_text(
            text, encoding_for(output, job), [&](std::string_view piece) { file->write(piece); }, job.timings);
      });
    } catch (...) {
      rethrow_as_bad_trace();  // ranks that do not merge; the output's own failures are FileError
    }
    out.summary = std::move(merged.summary);
    out.figures = std::move(merged.figures);
    if (!file) throw Error(output.string() + ": internal: the merge wrote no output");
    Timings::Scope commit(job.timings, "commit");
    OutputRecords stored;
    if (records) stored = records(out.summary, out.figures, out.output_bytes);
    file->commit(overwrite, stored.row, job.recipe(true), stored.figures);
  }
  return out;
}

}  // namespace tracelane::cli
