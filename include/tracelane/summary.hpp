// The JSON summaries printed by `compact` and `merge` (SPEC 6 and 8).
#pragma once

#include <string>
#include <vector>

#include "tracelane/compact.hpp"
#include "tracelane/json_value.hpp"
#include "tracelane/merge.hpp"

namespace tracelane {

// SPEC 6 keys in order; pp_* keys only when with_pp and the summary has them.
JsonValue compaction_summary(const CompactSummary& summary, bool with_pp);
// The merge summary without input/output (the cuda_graph_pp_merge top-level key).
JsonValue merge_summary(const MergeSummary& summary);
// Microseconds as a JSON number from nanoseconds ("192.088", "0").
JsonValue json_us(Ns ns);
// Puts `input` and `output` first, then the rest of `body`.
JsonValue with_input_output(JsonValue input, std::string output, const JsonValue& body);

}  // namespace tracelane
