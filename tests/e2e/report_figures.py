#!/usr/bin/env python3
"""Adds the figures of the report contract (issue 12: gpu_window_us, gpu_busy, timeline,
bubble_fraction) to a JSON report, in exactly the contract's form, with made-up but
plausible values: the HTML page's tests and benchmark draw them without depending on the
code that computes them. Deterministic (seeded by each row's directory and rank).

    report_figures.py REPORT.json OUT.json

Contract (one line each):
- file rows: gpu_window_us (number), gpu_busy {group: fraction, 4 decimals},
  timeline {start_us, end_us, bins: 100, strips: [{rank, pp_rank, group, occupancy}]},
  strips ordered by group name, occupancy = `bins` digits 0-9;
- merge rows: gpu_window_us, timeline with strips for every rank (PP order, then group
  name) on the merge's common clock, bubble_fraction {global rank as a string: fraction};
- failed, skipped or already laned rows: none of these.
"""

import json
import random
import sys

BINS = 100
GROUPS = ["compute", "memcpy", "nccl_all_reduce", "nccl_send_recv"]


def occupancy(rng, busy, shift=0):
    """`BINS` digits: a busy block pattern shifted by `shift` bins (a pipeline stage)."""
    digits = []
    for b in range(BINS):
        phase = ((b - shift) % 25) / 25
        level = busy * 9 * (1.2 if phase < 0.7 else 0.2) + rng.uniform(-1.5, 1.5)
        if b < shift:
            level = 0  # the stage has not started: a bubble
        digits.append(str(max(0, min(9, round(level)))))
    return "".join(digits)


def busy_of(strips):
    """gpu_busy as the mean level of each strip (a fraction, 4 decimals)."""
    return {s["group"]: round(sum(int(d) for d in s["occupancy"]) / (9 * BINS), 4) for s in strips}


def file_strips(rng, rank, pp_rank, groups, shift):
    strips = []
    for group in sorted(groups):
        busy = 0.8 if group == "compute" else 0.15
        strips.append({"rank": rank, "pp_rank": pp_rank, "group": group, "occupancy": occupancy(rng, busy, shift)})
    return strips


def decorate(report, groups=GROUPS):
    """Adds the figures to every ok row of `report` (a dict from json.load), in place."""
    by_dir = {}
    for row in report["rows"]:
        if row["kind"] == "file" and row.get("status") == "ok":
            by_dir.setdefault(row["dir"], []).append(row)
    for row in report["rows"]:
        if row.get("status") != "ok" or row["kind"] == "problem":
            continue
        rng = random.Random(f"{row['dir']}/{row.get('rank')}")
        if row["kind"] == "file":
            pp = row.get("pp_rank") or 0
            strips = file_strips(rng, row["rank"], row.get("pp_rank"), groups, pp * 6)
            window = round(rng.uniform(20000, 90000), 3)
            row["gpu_window_us"] = window
            row["gpu_busy"] = busy_of(strips)
            row["timeline"] = {"start_us": 1000.0, "end_us": 1000.0 + window, "bins": BINS, "strips": strips}
        else:
            files = sorted(by_dir.get(row["dir"], []), key=lambda f: ((f.get("pp_rank") or 0), f["rank"]))
            strips, bubble = [], {}
            for f in files:
                pp = f.get("pp_rank") or 0
                rank_strips = file_strips(random.Random(f"{row['dir']}/{f['rank']}"), f["rank"], f.get("pp_rank"),
                                          groups, pp * 6)
                strips.extend(rank_strips)
                bubble[str(f["rank"])] = round(min(1.0, 0.05 + pp * 0.06), 4)
            window = round(rng.uniform(40000, 120000), 3)
            row["gpu_window_us"] = window
            row["bubble_fraction"] = bubble
            row["timeline"] = {"start_us": 0.0, "end_us": window, "bins": BINS, "strips": strips}
    return report


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1], encoding="utf-8") as handle:
        report = json.load(handle)
    with open(sys.argv[2], "w", encoding="utf-8") as handle:
        json.dump(decorate(report), handle, indent=2)


if __name__ == "__main__":
    main()
