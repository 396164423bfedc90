// The sweep's work: one tbb::flow::graph over the plan's rank and iteration tasks
// (sweep_plan.hpp), under the memory budget (memory_budget.hpp). See sweep_graph.cpp.
#pragma once

#include <vector>

#include "report/report.hpp"
#include "sweep_plan.hpp"

namespace tracelane::cli {

// Runs the plan's work; the plan's rows say what became of each rank and merge.
void run_sweep_graph(const SweepOptions& options, SweepPlan& plan);

}  // namespace tracelane::cli
