#!/usr/bin/env python3
"""End-to-end test of `tracelane sweep` and `tracelane report --combine` on the corpus's
sweep_tree: outputs for every rank, merged files, the report, a rerun that skips
everything, failure isolation on a truncated gzip, and shards combining into the report a
single node writes (except the timing columns).

usage: sweep_e2e.py TRACELANE_BINARY   (corpus from $TRACELANE_SHARED, default <repo>/../shared)
"""
import csv
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile

SKIP = 77
TIMING = {"seconds"}


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def copy_tree(source, target):
    shutil.copytree(source, target)
    for directory, _, files in os.walk(target):  # the corpus is read-only
        os.chmod(directory, os.stat(directory).st_mode | stat.S_IWUSR)
        for name in files:
            path = os.path.join(directory, name)
            os.chmod(path, os.stat(path).st_mode | stat.S_IWUSR)


def sweep(binary, *args):
    result = subprocess.run([binary, "sweep", *args], capture_output=True, text=True)
    return result.returncode, result.stdout + result.stderr


def load(path):
    with open(path) as f:
        report = json.load(f)
    if report.get("schema_version") != 4:
        fail(f"{path}: schema_version {report.get('schema_version')}")
    return report


def without_timing(report):
    rows = [{k: v for k, v in row.items() if k not in TIMING} for row in report["rows"]]
    totals = {k: v for k, v in report["totals"].items() if k not in TIMING}
    return rows, totals


def rows_of(report, kind):
    return [row for row in report["rows"] if row["kind"] == kind]


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    binary = os.path.abspath(sys.argv[1])
    here = os.path.dirname(os.path.abspath(__file__))
    shared = os.environ.get("TRACELANE_SHARED", os.path.join(here, "..", "..", "..", "shared"))
    corpus = os.path.join(shared, "corpus", "sweep_tree")
    if not os.path.isdir(corpus):
        print(f"SKIPPED: {corpus} not found; set TRACELANE_SHARED to the shared directory")
        return SKIP

    with tempfile.TemporaryDirectory(prefix="tracelane-sweep-e2e-") as tmp:
        root = os.path.join(tmp, "tree")
        copy_tree(corpus, root)
        inputs = []
        for directory, _, files in os.walk(root):
            inputs += [os.path.join(directory, f) for f in files if f.startswith("rank") and "_compacted" not in f]

        # 1. A full sweep: every rank compacted, both multi-rank iterations merged.
        code, log = sweep(binary, root, "--jobs", "2")
        if code != 0:
            fail(f"first sweep exited {code}:\n{log}")
        for path in inputs:
            name = os.path.basename(path)
            out = name.replace(".json.gz", "_compacted.json.gz") if name.endswith(".gz") else name.replace(".json", "_compacted.json")
            if not os.path.isfile(os.path.join(os.path.dirname(path), out)):
                fail(f"no output for {path}")
        for iteration, ranks in (("dlrm_8gpu/profile_trace/iteration_12", 8), ("sampled_128gpu/profile_trace/iteration_5", 2)):
            if not os.path.isfile(os.path.join(root, iteration, "pp_traces_merged_compacted.json.gz")):
                fail(f"no merged output in {iteration}")
        report = load(os.path.join(root, "tracelane_report.json"))
        files, merges = rows_of(report, "file"), rows_of(report, "merge")
        if len(files) != len(inputs) or any(r["status"] != "ok" for r in files):
            fail(f"file rows: {[(r['file'], r['status']) for r in files]}")
        merge_ranks = {r["dir"]: r["ranks"] for r in merges}
        if merge_ranks != {"dlrm_8gpu/profile_trace/iteration_12": 8, "sampled_128gpu/profile_trace/iteration_5": 2}:
            fail(f"merge rows: {merge_ranks}")
        for r in merges:
            if r["status"] != "ok" or r["time_alignment"] != "absolute timestamps" or not r["pp_order_source"]:
                fail(f"merge row {r}")
        for r in files:
            if r["run"] != r["dir"].split("/")[0] or r["iteration"] != r["dir"].split("/")[-1]:
                fail(f"run/iteration of {r}")
            if r["events"] <= 0 or r["output_bytes"] <= 0:
                fail(f"empty numbers in {r}")
        with open(os.path.join(root, "tracelane_report.csv"), newline="") as f:
            table = list(csv.DictReader(f))
        if [row["kind"] for row in table].count("file") != len(inputs) or table[-1]["kind"] != "total":
            fail("CSV rows do not match the JSON")
        single = report

        # 2. A rerun skips everything.
        code, log = sweep(binary, root, "--jobs", "2")
        rerun = load(os.path.join(root, "tracelane_report.json"))
        if code != 0 or any(r["status"] != "skipped" for r in rerun["rows"]):
            fail(f"rerun: exit {code}, statuses {[r['status'] for r in rerun['rows']]}\n{log}")

        # 3. Shards 0/2 and 1/2, combined, equal the single-node report but for timing.
        for k in (0, 1):
            code, log = sweep(binary, root, "--jobs", "2", "--overwrite", "--shard", f"{k}/2", "--quiet")
            if code != 0:
                fail(f"shard {k}/2 exited {code}:\n{log}")
        combined_dir = os.path.join(tmp, "combined")
        result = subprocess.run([binary, "report", "--combine", root, "--report-dir", combined_dir],
                                capture_output=True, text=True)
        if result.returncode != 0:
            fail(f"report --combine exited {result.returncode}:\n{result.stderr}")
        combined = load(os.path.join(combined_dir, "tracelane_report.json"))
        if without_timing(combined) != without_timing(single):
            fail("combined report differs from the single-node report")
        os.remove(os.path.join(root, "tracelane_report.shard-1-of-2.json"))
        result = subprocess.run([binary, "report", "--combine", root, "--report-dir", combined_dir],
                                capture_output=True, text=True)
        if result.returncode != 1 or "missing shards: 1" not in result.stderr:
            fail(f"a missing shard: exit {result.returncode}, {result.stderr}")

        # 4. A truncated gzip fails alone; its iteration is not merged; the rest is ok.
        broken_root = os.path.join(tmp, "broken")
        copy_tree(corpus, broken_root)
        broken = os.path.join(broken_root, "sampled_128gpu/profile_trace/iteration_5/rank1_trace.json.gz")
        with open(broken, "r+b") as f:
            f.truncate(os.path.getsize(broken) // 2)
        code, log = sweep(binary, broken_root, "--jobs", "2")
        if code != 1 or broken not in log:
            fail(f"truncated gzip: exit {code}\n{log}")
        report = load(os.path.join(broken_root, "tracelane_report.json"))
        for r in report["rows"]:
            is_broken = r["kind"] == "file" and r["file"] == "rank1_trace.json.gz" and r["dir"].startswith("sampled")
            broken_merge = r["kind"] == "merge" and r["dir"].startswith("sampled")
            expected = "failed" if is_broken or broken_merge else "ok"
            if r["status"] != expected:
                fail(f"after truncation {r['dir']} {r.get('file')}: {r['status']}, expected {expected}")
            if expected == "failed" and not r["error"]:
                fail(f"failed row without error: {r}")
    print("sweep e2e: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
