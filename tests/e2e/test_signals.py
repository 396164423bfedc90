#!/usr/bin/env python3
"""SIGTERM and SIGINT (Slurm's scancel and time limit, Ctrl-C) in the middle of a write:
the command ends by the signal (exit status 128 + the signal in a shell) and leaves no
temporary (".<output>.tmp.<pid>.<n>") and no output behind. The write is made long
(gzip level 12, one thread) and the signal is sent once the temporary exists.

Usage: test_signals.py --tracelane BUILD/tracelane [--repo-root DIR]
"""
import gzip
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_common as e2e  # noqa: E402

KERNELS = 300_000  # ~45 MB of trace: a level-12 write of several seconds here


def temporaries(directory):
    return [name for name in e2e.hidden_files(directory) if ".tmp." in name]


def interrupt_mid_write(args, checks, argv, directory, output, signal_number, what):
    """Runs tracelane `argv`, sends `signal_number` once a temporary appears in `directory`,
    and checks how it ended and what it left."""
    process = subprocess.Popen([args.tracelane, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               # as a terminal's foreground job gets them: not ignored
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    seen = []
    while process.poll() is None and time.monotonic() < deadline and not seen:
        seen = temporaries(directory)
        time.sleep(0.005)
    if not checks.check(seen, f"{what}: no temporary appeared before the command ended (rc={process.returncode})"):
        process.kill()
        process.communicate()
        return
    process.send_signal(signal_number)
    _, stderr = process.communicate(timeout=120)
    checks.equal(process.returncode, -signal_number, f"{what}: ended by the signal (stderr {stderr.strip()[:300]!r})")
    checks.equal(temporaries(directory), [], f"{what}: temporaries left (saw {seen})")
    checks.check(not os.path.exists(output), f"{what}: an output appeared")


def test_compact(args, checks, work):
    src = e2e.write_file(os.path.join(work, "in", "trace.json"), e2e.synthetic_rank_trace(0, KERNELS))
    for signal_number in (signal.SIGTERM, signal.SIGINT):
        out_dir = os.path.join(work, f"out-{signal_number}")
        os.mkdir(out_dir)
        output = os.path.join(out_dir, "trace_compacted.json.gz")
        interrupt_mid_write(args, checks, ["compact", src, "-o", output, "--level", "12", "--jobs", "1"], out_dir,
                            output, signal_number, f"compact, {signal.Signals(signal_number).name}")


def test_merge(args, checks, work):
    directory = os.path.join(work, "iteration_1")
    for rank in (0, 1):
        e2e.write_file(os.path.join(directory, f"rank{rank}_trace.json"), e2e.synthetic_rank_trace(rank, KERNELS // 2))
    output = os.path.join(directory, "pp_traces_merged_compacted.json.gz")
    interrupt_mid_write(args, checks, ["merge", directory, "--level", "12", "--jobs", "1"], directory, output,
                        signal.SIGTERM, "merge, SIGTERM")
    checks.equal(sorted(name for name in os.listdir(directory) if not name.startswith(".")),
                 ["rank0_trace.json", "rank1_trace.json"], "merge, SIGTERM: the ranks are all that is left")


def sweep_tree(root, iterations=4):
    for i in range(iterations):
        for rank in (0, 1):
            # .json.gz: the outputs are gzip, written at level 12 for long enough to be interrupted
            e2e.write_file(os.path.join(root, f"r/profile_trace/iteration_{i}/rank{rank}_trace.json.gz"),
                           gzip.compress(e2e.synthetic_rank_trace(rank, KERNELS // 6), 1, mtime=0))


def outputs(root):
    return sorted(os.path.relpath(os.path.join(d, n), root) for d, _, names in os.walk(root) for n in names
                  if "_compacted" in n and not n.startswith("."))


def all_temporaries(root):
    return [os.path.join(d, n) for d, _, names in os.walk(root) for n in names if ".tmp." in n]


def test_sweep(args, checks, work):
    """SIGTERM (Slurm's, before its time limit) stops a sweep: nothing more starts, what is in
    flight ends at its next step, and the report of what was done is written; exit 143. The
    next sweep does the rest and skips what was done. A second signal ends it at once."""
    root = os.path.join(work, "tree")
    sweep_tree(root)
    process = subprocess.Popen([args.tracelane, "sweep", root, "--jobs", "1", "--level", "12"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while process.poll() is None and time.monotonic() < deadline and not outputs(root):
        time.sleep(0.005)
    done_before = outputs(root)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=120)
    checks.equal(process.returncode, 128 + signal.SIGTERM, f"sweep, SIGTERM: exit status ({stderr.strip()[-300:]!r})")
    checks.equal(all_temporaries(root), [], "sweep, SIGTERM: temporaries left")
    report_path = os.path.join(root, "tracelane_report.json")
    if not checks.check(os.path.exists(report_path), "sweep, SIGTERM: no report"):
        return
    with open(report_path) as handle:
        rows = json.load(handle)["rows"]
    ok = [row for row in rows if row.get("status") == "ok"]
    stopped = [row for row in rows if "not done: the sweep was stopped by signal 15" in (row.get("error") or "")]
    checks.check(done_before and ok, f"sweep, SIGTERM: nothing was done before the stop ({done_before})")
    checks.check(stopped, "sweep, SIGTERM: no row says the sweep was stopped")
    checks.equal(len(ok) + len(stopped), len(rows), f"sweep, SIGTERM: rows neither done nor stopped: {rows}")
    written = outputs(root)
    checks.equal(len(written), len([row for row in ok if row["kind"] in ("file", "merge")]),
                 "sweep, SIGTERM: the outputs are those of the rows ok")
    result = subprocess.run([args.tracelane, "sweep", root, "--jobs", "2"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    checks.equal(result.returncode, 0, f"sweep after the stop: {result.stderr[-300:]!r}")
    with open(report_path) as handle:
        statuses = {(row["dir"], row.get("file")): row["status"] for row in json.load(handle)["rows"]}
    for row in ok:
        checks.equal(statuses.get((row["dir"], row.get("file"))), "skipped", f"sweep after the stop: {row['dir']}")
    checks.equal(len(outputs(root)), 4 * 3, "sweep after the stop: every output")
    # Two signals: the second ends the sweep by the signal, its temporaries removed.
    again = os.path.join(work, "again")
    sweep_tree(again, iterations=2)
    process = subprocess.Popen([args.tracelane, "sweep", again, "--jobs", "1", "--level", "12"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while process.poll() is None and time.monotonic() < deadline and not all_temporaries(again):
        time.sleep(0.005)
    process.send_signal(signal.SIGTERM)
    time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=120)
    checks.equal(process.returncode, -signal.SIGTERM, "sweep, two SIGTERMs: ended by the second")
    checks.equal(all_temporaries(again), [], "sweep, two SIGTERMs: temporaries left")


def main():
    args = e2e.parse_args(__doc__)
    checks = e2e.Checks("signals")
    with e2e.temp_dir("signals") as work:
        for test in (test_compact, test_merge, test_sweep):
            print(f"--- {test.__name__}", flush=True)
            failures = len(checks.failures)
            sub = os.path.join(work, test.__name__)
            os.mkdir(sub)
            test(args, checks, sub)
            print(f"    {'ok' if len(checks.failures) == failures else 'FAILED'}", flush=True)
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
