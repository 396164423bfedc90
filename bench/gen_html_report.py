#!/usr/bin/env python3
"""A generated sweep report for the HTML page's benchmark: ITERATIONS iterations x RANKS
ranks (one run, a 4-stage pipeline), every row ok, with the report contract's figures
(tests/e2e/report_figures.py: a 100-bin timeline of 4 lane groups per rank, busy and
bubble fractions). Deterministic.

    gen_html_report.py OUT.json [--iterations 2000] [--ranks 8]
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
import report_figures  # noqa: E402

COUNTED = ["input_bytes", "output_bytes", "events", "measured_slices", "original_streams", "compacted_lanes",
           "gpu_flow_endpoints_mapped", "gpu_flow_endpoints_unmapped", "gpu_annotations_mapped", "gpu_annotations_coalesced", "cuda_graph_launches"]
MERGE_COUNTED = ["pp_send_recv_pairs", "pp_send_recv_unmatched", "pp_compute_dependency_pairs",
                 "pp_compute_dependency_unmatched", "pp_unshard_compute_pairs", "pp_unshard_compute_unmatched"]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--iterations", type=int, default=2000)
    parser.add_argument("--ranks", type=int, default=8)
    args = parser.parse_args()
    rows = []
    stages = 4
    for it in range(args.iterations):
        directory = f"llama3_pp4/profile_trace/iteration_{10000 + it}"
        base = dict(dir=directory, run="llama3_pp4", iteration=f"iteration_{10000 + it}")
        merge_in = 0
        for rank in range(args.ranks):
            streams, lanes = 96 + rank % 7, 10 + (it + rank) % 3
            row = dict(kind="file", file=f"rank{rank}_trace.json.gz", rank=rank, pp_rank=rank % stages, **base)
            row.update(input_bytes=40_000_000 + 1009 * it + rank, output_bytes=41_000_000 + 917 * it + rank,
                       events=180_000 + it, measured_slices=90_000 + rank, original_streams=streams,
                       compacted_lanes=lanes, compaction_ratio=round(streams / lanes, 4), gpu_flow_endpoints_mapped=4000,
                       gpu_flow_endpoints_unmapped=0, gpu_annotations_mapped=3000, gpu_annotations_coalesced=12, cuda_graph_launches=40,
                       output=f"rank{rank}_trace_compacted.json.gz", seconds=round(1.5 + (it % 10) / 10, 3),
                       status="ok", error=None)
            merge_in += row["input_bytes"]
            rows.append(row)
        order = sorted(range(args.ranks), key=lambda r: (r % stages, r))
        rows.append(dict(kind="merge", ranks=args.ranks, pp_order=" ".join(map(str, order)), pp_order_source="pg_config",
                         time_alignment="baseTimeNanoseconds", input_bytes=merge_in, output_bytes=9_000_000 + it,
                         pp_send_recv_pairs=380, pp_send_recv_unmatched=1 if it % 97 == 0 else 0,
                         pp_compute_dependency_pairs=384, pp_compute_dependency_unmatched=0, pp_unshard_compute_pairs=64,
                         pp_unshard_compute_unmatched=0, output="pp_traces_merged_compacted.json.gz", seconds=2.5,
                         status="ok", error=None, **base))
    totals = {"files": args.iterations * args.ranks, "merges": args.iterations}
    for key in COUNTED:
        totals[key] = sum(r[key] for r in rows if r["kind"] == "file")
    for key in MERGE_COUNTED:
        totals[key] = sum(r[key] for r in rows if r["kind"] == "merge")
    totals["seconds"] = round(sum(r["seconds"] for r in rows), 3)
    totals["iterations_with_unmatched_send_recv"] = [r["dir"] for r in rows if r["kind"] == "merge" and r["pp_send_recv_unmatched"]]
    report = {"schema_version": 3, "tool": "tracelane (generated)", "root": "/scratch/sweep", "shard": None,
              "timing_columns": ["seconds"], "runs": [{"shard": None, "wall_seconds": 3600.0, "jobs": 64,
                                                       "memory_budget_bytes": 64 << 30}],
              "totals": totals, "rows": report_figures.decorate({"rows": rows})["rows"]}
    with open(args.out, "w", encoding="utf-8") as handle:
        json.dump(report, handle, indent=2)


if __name__ == "__main__":
    main()
