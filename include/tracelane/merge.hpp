// Merging the per-rank traces of a pipeline-parallel job into one timeline (SPEC 8).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tracelane/compact.hpp"
#include "tracelane/distributed_info.hpp"  // what merge reads of each rank; callers use it too
#include "tracelane/figures.hpp"
#include "tracelane/summary.hpp"
#include "tracelane/trace_output.hpp"

namespace tracelane {

class Timings;

// baseTimeNanoseconds, when present and an integer.
std::optional<int64_t> read_base_time_ns(const Trace& trace, bool& present_but_invalid);

// Flow ids of a merged file (SPEC 8): rank p's k-th distinct id becomes (p + 1) * 1e9 + k
// while that lies below 1e12, where the synthetic PP ids start (SPEC 7). Ids that would
// not (pp_rank 999 and up, or a rank's ids beyond its 1e9) come from one counter from
// 1e12 on, and the PP ids follow them: no two pairs of a merged file share an id,
// whatever the rank count, and files that fit keep SPEC 8's ids.
struct MergeFlowIds {
  static constexpr int64_t kRankIdStride = 1000000000;  // 1e9 ids a rank
  int64_t next_shared = kFirstPpFlowId;                 // then the first PP arrow id
  int64_t id(int pp_rank, size_t k);
  // Whether rank p's ids all come from its own range (then they never touch next_shared:
  // no rank holds 1e9 distinct flow ids in memory).
  static bool own_range(int pp_rank) { return pp_rank >= 0 && pp_rank < kFirstPpFlowId / kRankIdStride - 1; }
};

struct MergeInput {
  std::string name;          // file name, for the summary and messages
  CompactedTrace compacted;  // compacted on its own; single-trace PP arrows, if any, are replaced
};

struct MergeResult {
  std::string json;  // the merged trace, uncompressed (empty when a writer took it)
  MergeSummary summary;
  GpuFigures figures;  // over the merged, time-aligned ranks (docs/figures.md)
};

// Takes the merged trace's text as it is made (write_trace_text), instead of the result's
// `json`: the text points into the merge, which lives only while this runs.
using MergeTextWriter = std::function<void(const TraceText& text)>;

// Merges ranks given in file order (sorted by the number in rank<N>_trace). Throws Error.
// `rules` says which annotations are PP actions (null: built-in, SPEC 7 and 9.5). With
// `timings`, each step of the merge is a phase there, at the depth merge_ranks is called.
// With `write`, the merged text goes there (MergeResult::json stays empty).
MergeResult merge_ranks(std::vector<MergeInput> inputs, const Rules* rules = nullptr, Timings* timings = nullptr,
                        const MergeTextWriter& write = {});

}  // namespace tracelane
