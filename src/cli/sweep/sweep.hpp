// `tracelane sweep ROOT`: every iteration directory of an outputs tree, compacted and
// merged in one task graph under a memory budget. The pieces, each in a file of its own:
//
//   discovery.hpp      the walk of ROOT: iteration directories, rank files, problems
//   memory_budget.hpp  sizes, memory limits, the cost model and Admission (src/cli/)
//   sweep_plan.hpp     options, shards, staleness: what to compact, merge or skip
//   sweep_graph.hpp    the tbb::flow::graph that does the work (trace_job.hpp's steps)
//   progress.hpp       the progress line on stderr
//   tree_lock.hpp      one sweep at a time per tree (src/cli/: every command takes
//                      its directory's lock)
//   sweep_command.cpp  the command (run_sweep, commands.hpp): options, the run, the report
//
// This header includes those that tests call (discovery, shards, sizes, admission).
#pragma once

#include "discovery.hpp"
#include "memory_budget.hpp"
#include "sweep_plan.hpp"
