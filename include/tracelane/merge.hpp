// Merging the per-rank traces of a pipeline-parallel job into one timeline (SPEC 8).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tracelane/compact.hpp"

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
};

// Merges ranks given in file order (sorted by the number in rank<N>_trace). Throws Error.
// `rules` says which annotations are PP actions (null: built-in, SPEC 7 and 9.5).
MergeResult merge_ranks(std::vector<MergeInput> inputs, const Rules* rules = nullptr);

}  // namespace tracelane
