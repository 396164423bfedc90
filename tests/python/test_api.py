#!/usr/bin/env python3
"""The Python package against the command line on the corpus (issue 26): every function,
called as the command is run, gives what the command gives.

- compact: every trace of corpus/single (the error_* traces and those the original tool
  refused included) and, with preview, one more: the same summary dict as the command's
  stdout, the same output bytes (md5), or the same failure: the exception's class for the
  kind, str(exception) the command's stderr line, exit_status its exit status.
- merge: every iteration of corpus/sweep_tree (the one-rank iteration fails as the command
  does); restore: every compacted and merged output back, and the refusals; sweep: the
  tree swept by both (rows but the timing columns, and every output's md5, equal), then
  --dry-run and --remove-originals.
- errors: level, jobs, rules, an output that exists, an output named like a rank, a
  missing input, a directory that is not one.
- already laned: the same summary, the stderr line as an AlreadyLanedWarning.
- jobs: the same output for 1 and 3 threads; jobs=1 starts no thread, jobs=2 does.
- the GIL: another Python thread runs while compact works.

The command runs in one directory and the package in another, with the same relative
output names, so that paths in summaries and messages are the same text.
"""

import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import e2e_common  # noqa: E402

import tracelane  # noqa: E402  (PYTHONPATH: BUILD/python, set by ctest)

args = e2e_common.parse_args(__doc__)
shared = e2e_common.shared_dir(args)
checks = e2e_common.Checks("python_api")
corpus = os.path.join(shared, "corpus")


def md5(path):
    with open(path, "rb") as handle:
        return hashlib.md5(handle.read()).hexdigest()


def text_of(path):
    with open(path, "rb") as handle:
        data = handle.read()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def run_cli(cwd, *argv):
    done = subprocess.run([args.tracelane, *argv], cwd=cwd, capture_output=True, text=True,
                          errors="surrogateescape")
    return done.returncode, done.stdout, done.stderr


def run_py(cwd, function, *call_args, **call_kwargs):
    """("ok", value, [warning messages]) or ("error", exception, [])."""
    here = os.getcwd()
    os.chdir(cwd)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            value = function(*call_args, **call_kwargs)
        return "ok", value, [str(w.message) for w in caught]
    except tracelane.Error as error:
        return "error", error, []
    finally:
        os.chdir(here)


def same(what, cli, py, outputs=()):
    """The command's (rc, stdout, stderr) and the package's outcome agree; `outputs` are
    (command's file, package's file) pairs that must hold the same bytes."""
    rc, stdout, stderr = cli
    kind, value, warned = py
    if rc == 0:
        if not checks.check(kind == "ok", f"{what}: the command succeeded, the package raised {value!r}"):
            return
        checks.equal(value, json.loads(stdout), f"{what}: summary")
        lines = stderr.splitlines()
        checks.equal(warned, lines, f"{what}: warnings (the command's stderr)")
        for cli_file, py_file in outputs:
            if checks.check(os.path.exists(cli_file) and os.path.exists(py_file),
                            f"{what}: {cli_file} and {py_file} written"):
                checks.equal(md5(py_file), md5(cli_file), f"{what}: md5 of {os.path.basename(py_file)}")
    else:
        if not checks.check(kind == "error", f"{what}: the command exited {rc} ({stderr.strip()}), the package "
                                             f"returned {value!r}"):
            return
        checks.equal(value.exit_status, rc, f"{what}: exit_status")
        checks.equal(str(value), stderr.splitlines()[0] if stderr else "", f"{what}: message")
        for cli_file, py_file in outputs:
            checks.equal(os.path.exists(py_file), os.path.exists(cli_file), f"{what}: {py_file} exists")
    return value


def expect_class(what, outcome, cls, exit_status):
    kind, value, _ = outcome
    if checks.check(kind == "error" and isinstance(value, cls), f"{what}: expected {cls.__name__}, got {value!r}"):
        checks.equal(value.exit_status, exit_status, f"{what}: exit_status")
    return value


work = tempfile.mkdtemp(prefix="tracelane_python_api_")
cli_dir, py_dir = os.path.join(work, "cli"), os.path.join(work, "py")
os.makedirs(cli_dir)
os.makedirs(py_dir)
try:
    print("-- compact: every trace of corpus/single", flush=True)
    singles = sorted(os.listdir(os.path.join(corpus, "single")))
    compacted = []
    for name in singles:
        source = os.path.join(corpus, "single", name)
        out = name.split(".json")[0] + "_compacted.json.gz"
        cli = run_cli(cli_dir, "compact", source, "-o", out)
        py = run_py(py_dir, tracelane.compact, source, out)
        same(f"compact {name}", cli, py, [(os.path.join(cli_dir, out), os.path.join(py_dir, out))])
        if cli[0] == 0:
            compacted.append(out)
        elif py[0] == "error":
            checks.check(isinstance(py[1], (tracelane.TraceError, tracelane.FileError)),
                         f"compact {name}: a bad trace is a TraceError, got {type(py[1]).__name__}")
            checks.equal(py[1].path, source, f"compact {name}: the error's path")
    checks.check(len(compacted) >= 8, f"compact: {len(compacted)} corpus traces compacted, expected 8 or more")

    source = os.path.join(corpus, "single", "hta_cuda_graph_sendrecv_a100.json.gz")
    options = ["--level", "6", "--no-pp-flows", "--single-gzip-member", "--jobs", "2", "--no-restore-data",
               "--preview", "sendrecv.svg"]
    same("compact with options",
         run_cli(cli_dir, "compact", source, "-o", "sendrecv.json", *options),
         run_py(py_dir, tracelane.compact, source, "sendrecv.json", level=6, no_pp_flows=True,
                single_gzip_member=True, jobs=2, no_restore_data=True, preview="sendrecv.svg"),
         [(os.path.join(cli_dir, n), os.path.join(py_dir, n)) for n in ("sendrecv.json", "sendrecv.svg")])

    print("-- jobs: the same output for 1 and 3 threads", flush=True)
    run_py(py_dir, tracelane.compact, source, "jobs1.json.gz", jobs=1)
    run_py(py_dir, tracelane.compact, source, "jobs3.json.gz", jobs=3)
    checks.equal(md5(os.path.join(py_dir, "jobs3.json.gz")), md5(os.path.join(py_dir, "jobs1.json.gz")),
                 "jobs=3 and jobs=1: md5")

    print("-- jobs: threads started (a fresh interpreter each)", flush=True)
    probe = (
        "import os, sys, threading, tracelane\n"
        "most = [0]\n"
        "def watch():\n"
        "    while not done.is_set():\n"
        "        most[0] = max(most[0], len(os.listdir('/proc/self/task')))\n"
        "done = threading.Event()\n"
        "watcher = threading.Thread(target=watch)\n"
        "watcher.start()\n"
        "tracelane.compact(sys.argv[1], sys.argv[2], jobs=int(sys.argv[3]))\n"
        "done.set()\n"
        "watcher.join()\n"
        "print(most[0])\n")
    big = os.path.join(corpus, "single", "tracelens_hip_graph_capture_mi300.json.gz")
    threads = {}
    for jobs in (1, 2):
        done = subprocess.run([sys.executable, "-c", probe, big, os.path.join(py_dir, f"threads{jobs}.json.gz"),
                               str(jobs)], capture_output=True, text=True)
        if checks.check(done.returncode == 0, f"jobs={jobs} probe: {done.stderr.strip()}"):
            threads[jobs] = int(done.stdout.split()[-1])
    print(f"   threads of the process while compacting, by jobs: {threads}", flush=True)
    if len(threads) == 2:
        # The main thread and the watcher: jobs=1 compacts on the caller's thread alone.
        checks.equal(threads[1], 2, "jobs=1: threads of the process while it compacts")
        checks.check(threads[2] > threads[1], f"jobs=2 starts a thread beyond jobs=1's: {threads}")

    print("-- the GIL is released while the core works", flush=True)
    window = {}

    def work_in_thread():
        window["start"] = time.perf_counter()
        tracelane.compact(big, os.path.join(py_dir, "gil.json.gz"), jobs=1)
        window["end"] = time.perf_counter()

    worker = threading.Thread(target=work_in_thread)
    ticks = []
    worker.start()
    while worker.is_alive():
        ticks.append(time.perf_counter())
        time.sleep(0.001)
    worker.join()
    inside = [t for t in ticks if window["start"] < t < window["end"]]
    length = window["end"] - window["start"]
    gaps = [b - a for a, b in zip([window["start"]] + inside, inside + [window["end"]])]
    print(f"   compact took {length:.3f} s; the main thread's longest pause in it {max(gaps):.4f} s", flush=True)
    checks.check(length > 0.05, f"compact of {os.path.basename(big)} took {length:.3f} s, too short to tell")
    checks.check(max(gaps) < length / 2,
                 f"the main thread ran while compact worked: longest pause {max(gaps):.3f} s of {length:.3f} s")

    print("-- already laned", flush=True)
    again = compacted[0]
    same("compact of a compacted output", run_cli(cli_dir, "compact", again, "-o", "again.json.gz"),
         run_py(py_dir, tracelane.compact, again, "again.json.gz"))

    print("-- restore: every compacted output", flush=True)
    for out in compacted:
        restored = out.replace("_compacted", "_restored")
        same(f"restore {out}", run_cli(cli_dir, "restore", out, "-o", restored),
             run_py(py_dir, tracelane.restore, out, restored),
             [(os.path.join(cli_dir, restored), os.path.join(py_dir, restored))])
    name = compacted[0].replace("_compacted.json.gz", "")
    original = [s for s in singles if s.startswith(name + ".json")][0]
    checks.check(text_of(os.path.join(py_dir, compacted[0].replace("_compacted", "_restored")))
                 == text_of(os.path.join(corpus, "single", original)), f"restore gives {original} back")
    same("restore: default output beside it, overwritten", run_cli(cli_dir, "restore", compacted[1], "--overwrite"),
         run_py(py_dir, tracelane.restore, compacted[1], overwrite=True),
         [(os.path.join(cli_dir, n), os.path.join(py_dir, n)) for n in [compacted[1].replace("_compacted",
                                                                                             "_restored")]])
    kept = os.path.join(corpus, "single", "hta_cuda_sync_alexnet.json.gz")
    outcome = run_py(py_dir, tracelane.restore, kept, "nothing.json.gz")
    same("restore of an original", run_cli(cli_dir, "restore", kept, "-o", "nothing.json.gz"), outcome,
         [(os.path.join(cli_dir, "nothing.json.gz"), os.path.join(py_dir, "nothing.json.gz"))])
    expect_class("restore of an original", outcome, tracelane.RestoreError, 1)

    print("-- merge: every iteration of corpus/sweep_tree", flush=True)
    merged = []
    for run in sorted(os.listdir(os.path.join(corpus, "sweep_tree"))):
        trace_dir = os.path.join(corpus, "sweep_tree", run, "profile_trace")
        iteration = os.path.join(trace_dir, os.listdir(trace_dir)[0])
        out = f"{run}_merged.json.gz"
        cli = run_cli(cli_dir, "merge", iteration, "-o", out, "--jobs", "2")
        py = run_py(py_dir, tracelane.merge, iteration, out, jobs=2)
        same(f"merge {run}", cli, py, [(os.path.join(cli_dir, out), os.path.join(py_dir, out))])
        if cli[0] == 0:
            merged.append((out, json.loads(cli[1])))
        else:
            expect_class(f"merge {run} (one rank)", py, tracelane.UsageError, 2)
    checks.equal(len(merged), 2, "merged iterations")
    out, summary = merged[0]
    rank = sorted(int(r) for r in summary["per_rank_compaction"])[-1]
    same(f"restore {out} rank {rank}", run_cli(cli_dir, "restore", out, "--rank", str(rank), "-o", "rank.json"),
         run_py(py_dir, tracelane.restore, out, "rank.json", rank),
         [(os.path.join(cli_dir, "rank.json"), os.path.join(py_dir, "rank.json"))])
    outcome = run_py(py_dir, tracelane.restore, out, "norank.json")
    same(f"restore {out} without a rank", run_cli(cli_dir, "restore", out, "-o", "norank.json"), outcome)
    expect_class(f"restore {out} without a rank", outcome, tracelane.UsageError, 2)
    outcome = run_py(py_dir, tracelane.restore, out, "rank999.json", 999)
    same(f"restore {out} rank 999", run_cli(cli_dir, "restore", out, "--rank", "999", "-o", "rank999.json"), outcome)
    expect_class(f"restore {out} rank 999", outcome, tracelane.RestoreError, 1)
    missing_dir = os.path.join(work, "no", "such", "dir")
    outcome = run_py(py_dir, tracelane.merge, missing_dir, "m.json.gz")
    same("merge of a missing directory", run_cli(cli_dir, "merge", missing_dir, "-o", "m.json.gz"), outcome)
    expect_class("merge of a missing directory", outcome, tracelane.FileError, 2)

    print("-- errors", flush=True)
    example = os.path.join(args.repo_root, "tests", "data", "example_trace.json")
    bad_rules = os.path.join(work, "bad_rules.json")
    with open(bad_rules, "w") as handle:
        handle.write('{"lane_groups": 3}')
    with open(os.path.join(cli_dir, "exists.json"), "w") as handle:
        handle.write("{}")
    shutil.copy(os.path.join(cli_dir, "exists.json"), os.path.join(py_dir, "exists.json"))
    cases = [
        ("level 13", ["--level", "13"], dict(level=13), tracelane.UsageError, 2),
        ("jobs 0", ["--jobs", "0"], dict(jobs=0), tracelane.UsageError, 2),
        ("bad rules", ["--rules", bad_rules], dict(rules=bad_rules), tracelane.UsageError, 2),
        ("output exists", ["-o", "exists.json"], dict(out="exists.json"), tracelane.OutputExists, 2),
        ("output named like a rank", ["-o", "rank3_trace.json"], dict(out="rank3_trace.json"),
         tracelane.OutputRefused, 2),
        ("output in a missing directory", ["-o", "no/such/x.json"], dict(out="no/such/x.json"),
         tracelane.OutputRefused, 2),
        ("preview not .svg", ["-o", "p.json", "--preview", "p.png"], dict(out="p.json", preview="p.png"),
         tracelane.OutputRefused, 2),
    ]
    for what, argv, kwargs, cls, status in cases:
        outcome = run_py(py_dir, tracelane.compact, example, **kwargs)
        same(f"compact: {what}", run_cli(cli_dir, "compact", example, *argv), outcome)
        expect_class(f"compact: {what}", outcome, cls, status)
    error = expect_class("compact: output exists (as FileExistsError)",
                         run_py(py_dir, tracelane.compact, example, "exists.json"), FileExistsError, 2)
    checks.equal(getattr(error, "path", None), "exists.json", "output exists: the error's path")
    missing = os.path.join(work, "missing_trace.json")
    outcome = run_py(py_dir, tracelane.compact, missing, "m.json")
    same("compact of a missing file", run_cli(cli_dir, "compact", missing, "-o", "m.json"), outcome)
    error = expect_class("compact of a missing file", outcome, tracelane.FileError, 1)
    if error:
        checks.check(isinstance(error, OSError), "a FileError is an OSError")
        checks.equal((error.path, error.reason), (missing, "cannot open: No such file or directory"),
                     "a missing file: path and reason")
    outcome = run_py(py_dir, tracelane.sweep, example)
    same("sweep of a file", run_cli(cli_dir, "sweep", example), outcome)
    expect_class("sweep of a file", outcome, tracelane.UsageError, 2)
    outcome = run_py(py_dir, tracelane.sweep, py_dir, shard="5/2")
    same("sweep --shard 5/2", run_cli(cli_dir, "sweep", cli_dir, "--shard", "5/2"), outcome)
    expect_class("sweep --shard 5/2", outcome, tracelane.UsageError, 2)

    print("-- sweep: corpus/sweep_tree, by each", flush=True)
    for where in (cli_dir, py_dir):
        shutil.copytree(os.path.join(corpus, "sweep_tree"), os.path.join(where, "tree"))
        for folder, dirs, files in os.walk(os.path.join(where, "tree")):
            os.chmod(folder, 0o755)
            for name in files:
                os.chmod(os.path.join(folder, name), 0o644)
    cli = run_cli(cli_dir, "sweep", "tree", "--dry-run")
    py = run_py(py_dir, tracelane.sweep, "tree", dry_run=True)
    checks.equal(py[1], cli[1].splitlines(), "sweep --dry-run: the listing")
    cli = run_cli(cli_dir, "sweep", "tree", "--jobs", "2", "--quiet")
    py = run_py(py_dir, tracelane.sweep, "tree", jobs=2, quiet=True)
    checks.equal(cli[0], 0, f"sweep: the command's exit status ({cli[2].strip()})")

    def rows_without_timing(where):
        with open(os.path.join(where, "tree", "tracelane_report.json")) as handle:
            report = json.load(handle)
        timing = set(report["timing_columns"])
        return report["rows"], [{k: v for k, v in row.items() if k not in timing} for row in report["rows"]]

    if checks.check(py[0] == "ok", f"sweep: the package raised {py[1]!r}"):
        written, py_rows = rows_without_timing(py_dir)
        checks.equal(py[1], written, "sweep: the rows returned are the report's")
        checks.equal(py_rows, rows_without_timing(cli_dir)[1], "sweep: rows but the timing columns")
        checks.check(len(py_rows) >= 12, f"sweep: {len(py_rows)} rows")

    def outputs(where):
        found = {}
        for folder, _, files in os.walk(os.path.join(where, "tree")):
            for name in files:
                if "_compacted" in name:
                    path = os.path.join(folder, name)
                    found[os.path.relpath(path, where)] = md5(path)
        return found

    cli_outputs = outputs(cli_dir)
    checks.equal(outputs(py_dir), cli_outputs, "sweep: every output's md5")
    checks.check(len(cli_outputs) >= 11, f"sweep: {len(cli_outputs)} outputs")
    cli = run_cli(cli_dir, "sweep", "tree", "--remove-originals", "--quiet")
    py = run_py(py_dir, tracelane.sweep, "tree", remove_originals=True, quiet=True)
    if checks.check(py[0] == "ok", f"sweep remove_originals: the package raised {py[1]!r}"):
        checks.equal(rows_without_timing(py_dir)[1], rows_without_timing(cli_dir)[1],
                     "sweep remove_originals: rows but the timing columns")
        checks.check(any(row.get("original") == "removed" for row in py[1]), "sweep remove_originals: removed some")

    def files_left(where):
        return sorted(os.path.relpath(os.path.join(f, n), where) for f, _, names in os.walk(os.path.join(where, "tree"))
                      for n in names if not n.startswith("tracelane_report"))

    checks.equal(files_left(py_dir), files_left(cli_dir), "sweep remove_originals: the files left")
finally:
    shutil.rmtree(work, ignore_errors=True)
sys.exit(checks.finish())
