// What a trace's top-level distributedInfo says about the job (SPEC 7, 8): the global rank
// and the pipeline-parallel process groups. Compaction reads it for its single-trace
// arrows, merge for rank identity and PP order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tracelane/trace.hpp"

namespace tracelane {

struct DistributedInfo {
  std::optional<int64_t> rank;
  std::string backend_raw;                      // raw JSON of distributedInfo.backend, empty when absent
  std::vector<std::vector<int64_t>> pp_groups;  // ranks of each PP process group, in pg_config order
};
DistributedInfo read_distributed_info(const Trace& trace);

// The pp_rank of a trace from its own distributedInfo (SPEC 7, 0 when unusable): the
// rank's index in the first PP group that holds it.
int single_trace_pp_rank(const Trace& trace);

}  // namespace tracelane
