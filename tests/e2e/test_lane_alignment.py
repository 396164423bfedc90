#!/usr/bin/env python3
"""Lanes line up across ranks (SPEC 9.11, issue 14).

Every rank is compacted on its own, yet the same lane (group and number, and each of its
annotation tracks) must get the same tid on every rank of a job, so per-lane comparisons
across ranks pair up. On the corpus's multi-rank iterations (sweep_tree dlrm_8gpu and
sampled_128gpu) and the golden PP set (pp4), after `compact` of each rank, after `sweep`
(rank outputs and merged outputs) and after `merge`: each track label has exactly one tid
on every rank, the same on all of them, and some labels are shared (so the check is not
vacuous). HTA's straggler analysis, as hta_stragglers.py does it, must pair (stream,
kernel) across the compacted ranks and name the same stragglers as on the originals (it
failed before: lane tids counted up from each rank's largest tid).
"""

import glob
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_common as e2e  # noqa: E402
import hta_stragglers  # noqa: E402

MERGE_PREFIX = re.compile(r"^PP rank \d+ \| ")
ITERATIONS = ["dlrm_8gpu/profile_trace/iteration_12", "sampled_128gpu/profile_trace/iteration_5"]


def lane_tids(events):
    """{GPU pid: {track label: {tids}}} for the tracks tracelane labels on GPU pids."""
    gpu_pids = {e.get("pid") for e in events if isinstance(e, dict) and e.get("cat") in e2e.MEASURED_CATS}
    tracks = {}
    for (pid, tid), label in e2e.track_labels(events).items():
        if pid in gpu_pids:
            tracks.setdefault(pid, {}).setdefault(MERGE_PREFIX.sub("", label), set()).add(tid)
    return tracks


def check_aligned(checks, units, what):
    """units: {rank name: {label: {tids}}}. One tid per label on each rank, the same on all."""
    tid_of = {}
    for unit, labels in sorted(units.items()):
        for label, tids in labels.items():
            checks.check(len(tids) == 1, f"{what}: {unit}: track {label!r} has tids {sorted(tids)}")
            tid_of.setdefault(label, {}).setdefault(min(tids), []).append(unit)
    shared = [label for label, by_tid in tid_of.items() if sum(len(u) for u in by_tid.values()) > 1]
    checks.check(len(units) > 1 and shared, f"{what}: no track label on two ranks ({len(units)} ranks)")
    for label, by_tid in sorted(tid_of.items()):
        checks.check(len(by_tid) == 1, f"{what}: track {label!r} has different tids across ranks: "
                     + ", ".join(f"{tid} on {sorted(units)[:4]}" for tid, units in sorted(by_tid.items())))
    print(f"    {what}: {len(units)} ranks, {len(tid_of)} track labels, {len(shared)} on several ranks", flush=True)


def per_file(paths):
    units = {}
    for path in paths:
        for pid, labels in lane_tids(e2e.load_exact(path)["traceEvents"]).items():
            units[f"{os.path.basename(path)} pid {pid}"] = labels
    return units


def per_merged_rank(path):
    """In a merged file each rank's GPU is its own pid: the ranks are the GPU pids."""
    return {f"merged pid {pid}": labels
            for pid, labels in lane_tids(e2e.load_exact(path)["traceEvents"]).items()}


def rank_inputs(shared):
    sets = [(name.split("/")[0], sorted(glob.glob(os.path.join(shared, "corpus", "sweep_tree", name, "rank*_trace.json*"))))
            for name in ITERATIONS]
    sets.append(("pp4", sorted(glob.glob(os.path.join(shared, "golden", "pp4", "rank*_trace.json*")))))
    return sets


def test_compact(context, work):
    args, shared, checks = context
    for name, inputs in rank_inputs(shared):
        checks.check(len(inputs) >= 2, f"compact {name}: expected several ranks, found {inputs}")
        out_dir = os.path.join(work, name)
        os.mkdir(out_dir)
        outputs = []
        for path in inputs:
            out = os.path.join(out_dir, os.path.basename(path).split(".")[0] + "_compacted.json.gz")
            result = e2e.tracelane(args, "compact", path, "-o", out)
            if checks.check(result.returncode == 0, f"compact {path}: {e2e.describe(result)}"):
                summary = e2e.summary_from_stdout(checks, result, f"compact {path}")
                checks.check(summary is None or "lane_tids_unaligned" not in summary,
                             f"compact {path}: tracks fell back to unaligned tids: {summary and summary.get('lane_tids_unaligned')}")
                outputs.append(out)
        check_aligned(checks, per_file(outputs), f"compact {name}")
        if name == "pp4":
            continue
        # HTA's pairing of (stream, kernel) across ranks: the same choice and stragglers as
        # on the originals (timestamps do not move; streams are lanes now).
        def rows(paths):
            return {int(re.search(r"rank(\d+)_", os.path.basename(p)).group(1)):
                    hta_stragglers.rank_rows(hta_stragglers.load_events(p)) for p in paths}
        original = hta_stragglers.stragglers(rows(inputs))
        compacted = hta_stragglers.stragglers(rows(outputs))
        checks.check(original is not None, f"hta stragglers {name}: the originals do not pair up")
        if checks.check(compacted is not None, f"hta stragglers {name}: no (stream, kernel) pairs up across "
                        "the compacted ranks (HTA: cannot unpack non-iterable float object)"):
            checks.equal(compacted[0][1], original[0][1], f"hta stragglers {name}: chosen kernel")
            checks.equal(compacted[1], original[1], f"hta stragglers {name}: stragglers")
            print(f"    hta stragglers {name}: originals {original[1]}, compacted {compacted[1]}", flush=True)


def test_sweep(context, work):
    args, shared, checks = context
    tree = os.path.join(work, "tree")
    shutil.copytree(os.path.join(shared, "corpus", "sweep_tree"), tree)
    shutil.copytree(os.path.join(shared, "golden", "pp4"), os.path.join(tree, "pp4", "profile_trace", "iteration_1"),
                    ignore=shutil.ignore_patterns("ref_*"))
    for root, dirs, files in os.walk(tree):
        for entry in dirs + files:
            os.chmod(os.path.join(root, entry), 0o755 if entry in dirs else 0o644)
    result = e2e.tracelane(args, "sweep", tree, "--quiet", "--jobs", "2")
    checks.check(result.returncode == 0, f"sweep: {e2e.describe(result)}")
    for name in ITERATIONS + ["pp4/profile_trace/iteration_1"]:
        directory = os.path.join(tree, name)
        outputs = sorted(glob.glob(os.path.join(directory, "rank*_trace_compacted.json*")))
        check_aligned(checks, per_file(outputs), f"sweep {name.split('/')[0]} ranks")
        merged = os.path.join(directory, "pp_traces_merged_compacted.json.gz")
        if checks.check(os.path.isfile(merged), f"sweep {name}: no merged output"):
            check_aligned(checks, per_merged_rank(merged), f"sweep {name.split('/')[0]} merged")


def test_merge(context, work):
    args, shared, checks = context
    directory = os.path.join(work, "pp4")
    shutil.copytree(os.path.join(shared, "golden", "pp4"), directory, ignore=shutil.ignore_patterns("ref_*"))
    result = e2e.tracelane(args, "merge", directory)
    checks.check(result.returncode == 0, f"merge pp4: {e2e.describe(result)}")
    merged = os.path.join(directory, "pp_traces_merged_compacted.json.gz")
    if checks.check(os.path.isfile(merged), "merge pp4: no merged output"):
        units = per_merged_rank(merged)
        check_aligned(checks, units, "merge pp4")
        checks.equal(len(units), 4, "merge pp4: GPU pids (one per rank)")


def main():
    args = e2e.parse_args(__doc__)
    shared = e2e.shared_dir(args)
    checks = e2e.Checks("e2e_lane_alignment")
    return e2e.run_tests(checks, (args, shared, checks), "lanes", [test_compact, test_sweep, test_merge])


if __name__ == "__main__":
    sys.exit(main())
