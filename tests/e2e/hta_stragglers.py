#!/usr/bin/env python3
"""What HTA's straggler analysis needs from a multi-rank trace directory, without pandas.

HTA (hta/analyzers/straggler.py, find_stragglers_with_late_start_comm_kernels) takes the
long NCCL kernels of every rank (name starting "ncclKernel", args.stream > 0, in a profiler
step > 0, at least 1% of the mean step), keeps the last one per (rank, stream, step,
name), and picks the (stream, name) whose duration varies most across ranks: the standard
deviation across ranks of each (stream, step, name), averaged over steps. When no
(stream, name) occurs on two ranks every deviation is NaN, idxmax returns NaN, and HTA
fails with "TypeError: cannot unpack non-iterable float object" (issue 14: compacted
copies whose lane tids differed from rank to rank). The stragglers are then the ranks
whose chosen kernel starts latest (top 2 per step).

  hta_stragglers.py DIR_OR_FILES...   prints the chosen (stream, name) and the stragglers,
                                      exit 1 where HTA would fail
"""

import gzip
import json
import math
import re
import statistics
import sys

STEP = re.compile(r"ProfilerStep\s*#\s*(\d+)")


def load_events(path):
    with open(path, "rb") as handle:
        data = handle.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return json.loads(data)["traceEvents"]


def rank_rows(events):
    """(stream, step, name, ts, dur) of each kernel, and every (ts, dur) for the step span."""
    steps = [(e["ts"], e["ts"] + e["dur"], int(STEP.match(e["name"]).group(1))) for e in events
             if e.get("ph") == "X" and isinstance(e.get("name"), str) and STEP.match(e["name"])
             and e.get("cat") != "gpu_user_annotation"]
    step_of_correlation = {}
    for e in events:
        if e.get("cat") == "cuda_runtime" and "correlation" in (e.get("args") or {}):
            step = next((n for start, end, n in steps if start <= e["ts"] <= end), -1)
            step_of_correlation[e["args"]["correlation"]] = step
    kernels = []
    for e in events:
        if e.get("cat") != "kernel" or e.get("ph") != "X":
            continue
        args = e.get("args") or {}
        step = step_of_correlation.get(args.get("correlation"), -1)
        kernels.append((args.get("stream"), step, e["name"], e["ts"], e["dur"]))
    return kernels


def stragglers(ranks, n_stragglers=2, min_normalized_duration=0.01):
    """ranks: {rank: kernel rows}. Returns ((stream, name), [straggler ranks]), or None
    where HTA fails (no (stream, name) pairs up across ranks)."""
    rows = [(rank, *row) for rank, kernels in ranks.items() for row in kernels]
    steps = {row[2] for row in rows if row[2] > 0}
    if not steps:
        return None
    t_min = min(row[4] for row in rows)
    mean_step = (max(row[4] + row[5] for row in rows) - t_min) / len(steps)
    last = {}
    for rank, stream, step, name, ts, dur in rows:
        if not (isinstance(stream, int) and stream > 0 and step > 0 and dur >= mean_step * min_normalized_duration
                and name.startswith("ncclKernel")):
            continue
        key = (rank, stream, step, name)
        if key not in last or ts >= last[key][0]:
            last[key] = (ts, dur)
    across = {}
    for (rank, stream, step, name), (ts, dur) in last.items():
        across.setdefault((stream, step, name), []).append(dur / mean_step)
    deviations = {}
    for (stream, step, name), durations in across.items():
        if len(durations) > 1:  # pandas' std of one value is NaN, and mean() skips NaN
            deviations.setdefault((stream, name), []).append(statistics.stdev(durations))
    if not deviations:
        return None
    chosen = max(deviations, key=lambda k: (statistics.mean(deviations[k]), k))
    late = set()
    for step in sorted(steps):
        metric = [((ts - t_min) / mean_step, rank) for (rank, stream, s, name), (ts, dur) in last.items()
                  if (stream, name) == chosen and s == step]
        if not metric:
            continue
        values = sorted((m for m, _ in metric), reverse=True)
        threshold = values[min(n_stragglers, len(values)) - 1]
        late |= {rank for m, rank in metric if m >= threshold and not math.isnan(m)}
    return chosen, sorted(late)


def main(paths):
    import glob
    import os
    files = []
    for path in paths:
        files += sorted(glob.glob(os.path.join(path, "rank*_trace*.json*"))) if os.path.isdir(path) else [path]
    ranks = {}
    for path in files:
        match = re.search(r"rank(\d+)_", os.path.basename(path))
        ranks[int(match.group(1)) if match else len(ranks)] = rank_rows(load_events(path))
    result = stragglers(ranks)
    if result is None:
        print(f"HTA would fail: no (stream, kernel) pairs up across the {len(ranks)} ranks "
              "(TypeError: cannot unpack non-iterable float object)")
        return 1
    (stream, name), late = result
    print(f"{len(ranks)} ranks; chosen stream {stream} kernel {name[:60]}; potential stragglers {late}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
