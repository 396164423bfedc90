// Merging the per-rank traces of a pipeline-parallel job into one timeline (SPEC 8).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tracelane/compact.hpp"
#include "tracelane/figures.hpp"

namespace tracelane {

// What a trace's distributedInfo says about ranks and PP groups.
struct DistributedInfo {
  std::optional<int64_t> rank;
  std::string backend_raw;  // raw JSON of distributedInfo.backend, empty when absent
  std::vector<std::vector<int64_t>> pp_groups;  // ranks of each PP process group, in pg_config order
};
DistributedInfo read_distributed_info(const Trace& trace);

// baseTimeNanoseconds, when present and an integer.
std::optional<int64_t> read_base_time_ns(const Trace& trace, bool& present_but_invalid);

// Flow ids of a merged file (SPEC 8): rank p's k-th distinct id becomes (p + 1) * 1e9 + k
// while that lies below 1e12, where the synthetic PP ids start (SPEC 7). Ids that would
// not (pp_rank 999 and up, or a rank's ids beyond its 1e9) come from one counter from
// 1e12 on, and the PP ids follow them: no two pairs of a merged file share an id,
// whatever the rank count, and files that fit keep SPEC 8's ids.
struct MergeFlowIds {
  int64_t next_shared = kFirstPpFlowId;  // then the first PP arrow id
  int64_t id(int pp_rank, size_t k);
};

struct MergeInput {
  std::string name;  // file name, for the summary and messages
  CompactedTrace compacted;  // compacted on its own; single-trace PP arrows, if any, are replaced
};

struct MergeSummary {
  std::vector<std::string> inputs;  // in file order
  std::string time_alignment;
  std::vector<std::pair<int64_t, Ns>> time_offsets_ns;  // (global rank, offset), file order
  std::vector<std::pair<int, int64_t>> pp_ranks;        // (pp rank, global rank)
  std::string pp_order_source;  // "pg_config" or "sorted global ranks"
  PpCounts pp;
  std::vector<std::pair<int64_t, CompactSummary>> per_rank;  // file order
};

struct MergeResult {
  std::string json;  // the merged trace, uncompressed
  MergeSummary summary;
  GpuFigures figures;  // over the merged, time-aligned ranks (docs/figures.md)
};

// Merges ranks given in file order (sorted by the number in rank<N>_trace). Throws Error.
// `rules` says which annotations are PP actions (null: built-in, SPEC 7 and 9.5).
MergeResult merge_ranks(std::vector<MergeInput> inputs, const Rules* rules = nullptr);

}  // namespace tracelane
