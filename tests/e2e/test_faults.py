#!/usr/bin/env python3
"""Faults, end to end (needs no corpus): a full disk while writing (RLIMIT_FSIZE, i.e.
`ulimit -f`, and a small tmpfs when we may mount one), a read-only output directory,
kill -9 in the middle of a sweep and a rerun, and two sweeps started on one tree at once.

In every case: no half-written output is visible, no temporary file is left, the input is
untouched, the error names the path, a sweep goes on with the next iteration and reports
the failures. Cases that need what the machine does not allow (mounting as root, or
permission bits, which root ignores) say SKIPPED loudly and test the rest.
"""

import argparse
import gzip
import hashlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_common as e2e  # noqa: E402

TIMING = {"seconds"}
MERGED = "pp_traces_merged_compacted.json.gz"


rank_trace = e2e.synthetic_rank_trace
write = e2e.write_file


def make_tree(root, gen, runs=2, iterations=3, ranks=2, size="3M"):
    """A sweep tree: tracelane_gen's when we have it, else a Python one."""
    if gen:
        result = subprocess.run([gen, "--tree", root, "--runs", str(runs), "--iterations", str(iterations),
                                 "--ranks", str(ranks), "--size", size, "--seed", "7"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if result.returncode == 0:
            return
        print(f"  tracelane_gen failed ({result.stderr.strip()[:200]}); using the Python generator", flush=True)
    for r in range(runs):
        for i in range(iterations):
            for k in range(ranks):
                data = rank_trace(k, 20000)
                write(os.path.join(root, f"run{r}", "profile_trace", f"iteration_{i}", f"rank{k}_trace.json.gz"),
                      gzip.compress(data, 1, mtime=0))


def tree_state(root):
    """{relative path: sha256 of the (decompressed) bytes} of every file under root."""
    state = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            if rel.startswith("tracelane_report") or name in e2e.LOCK_FILES:
                continue
            state[rel] = hashlib.sha256(e2e.read_bytes(path)).hexdigest()
    return state


def hidden_anywhere(root):
    return [os.path.join(d, n) for d, _, names in os.walk(root) for n in names
            if n.startswith(".") and n not in e2e.LOCK_FILES]


def report_rows(root):
    with open(os.path.join(root, "tracelane_report.json")) as handle:
        report = json.load(handle)
    rows = sorted(({k: v for k, v in row.items() if k not in TIMING} for row in report["rows"]),
                  key=lambda r: json.dumps(r, sort_keys=True))
    totals = {k: v for k, v in report.get("totals", {}).items() if k not in TIMING}
    return rows, totals


def can_mount():
    if os.geteuid() != 0:
        return False
    probe = os.path.join("/tmp", f"tracelane-mount-probe-{os.getpid()}")
    os.makedirs(probe, exist_ok=True)
    ok = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", probe],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
    if ok:
        subprocess.run(["umount", probe])
    os.rmdir(probe)
    return ok


class Env:
    def __init__(self, args, checks):
        self.args, self.checks = args, checks

    def run(self, *argv, fsize=None, address_space=None, timeout=300):
        def limit():
            if fsize is not None:
                resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
            if address_space is not None:
                resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
        # restore_signals (the default) gives the child SIGXFSZ's default action, as a shell
        # does: tracelane must ignore it itself to get EFBIG instead of dying.
        return subprocess.run([self.args.tracelane, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, preexec_fn=limit, timeout=timeout)

    def error_names(self, result, path, what, rc=None, contains=None):
        lines = result.stderr.strip().splitlines()
        self.checks.check(result.returncode > 0 if rc is None else result.returncode == rc,
                          f"{what}: expected exit {rc or 'non-zero'} (not a signal), {e2e.describe(result)}")
        self.checks.check(len(lines) == 1 and lines[0].startswith(path + ": "),
                          f"{what}: stderr must be one line starting with '{path}: ', got {result.stderr[:400]!r}")
        if contains:
            self.checks.check(contains in result.stderr, f"{what}: stderr lacks {contains!r}: {result.stderr[:400]!r}")


def test_disk_full_compact(env, work):
    checks = env.checks
    src = write(os.path.join(work, "in", "trace.json"), rank_trace(0, 20000))  # ~2.4 MB
    digest = hashlib.sha256(open(src, "rb").read()).hexdigest()
    out_dir = os.path.join(work, "out")
    os.mkdir(out_dir)
    out = os.path.join(out_dir, "trace_compacted.json")
    result = env.run("compact", src, "-o", out, fsize=200_000)
    print(f"  ulimit -f: rc={result.returncode} {result.stderr.strip()!r}", flush=True)
    env.error_names(result, out, "compact under RLIMIT_FSIZE", rc=1, contains="File too large")
    checks.check(not os.listdir(out_dir), f"compact under RLIMIT_FSIZE: left {os.listdir(out_dir)}")
    checks.equal(hashlib.sha256(open(src, "rb").read()).hexdigest(), digest, "compact under RLIMIT_FSIZE: input")
    # the same with the default output beside the input
    result = env.run("compact", src, fsize=200_000)
    env.error_names(result, os.path.join(work, "in", "trace_compacted.json"), "compact default output, RLIMIT_FSIZE",
                    rc=1)
    checks.equal(sorted(os.listdir(os.path.join(work, "in"))), ["trace.json"], "compact default output: files left")


def test_disk_full_tmpfs(env, work, mountable):
    if not mountable:
        print("  SKIPPED: cannot mount a tmpfs here (not root or no CAP_SYS_ADMIN); RLIMIT_FSIZE covers ENOSPC's "
              "code path (the same write() failure)", flush=True)
        return
    checks = env.checks
    src = write(os.path.join(work, "trace.json"), rank_trace(0, 20000))
    small = os.path.join(work, "small")
    os.mkdir(small)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", small], check=True)
    try:
        out = os.path.join(small, "trace_compacted.json")
        result = env.run("compact", src, "-o", out)
        print(f"  tmpfs 256k: rc={result.returncode} {result.stderr.strip()!r}", flush=True)
        env.error_names(result, out, "compact onto a full tmpfs", rc=1, contains="No space left on device")
        checks.check(not os.listdir(small), f"compact onto a full tmpfs: left {os.listdir(small)}")
        # a sweep whose tree lives on a tmpfs that fills up: the small iterations still work
        subprocess.run(["umount", small], check=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", small], check=True)
        write(os.path.join(small, "a/profile_trace/iteration_1/rank0_trace.json"), rank_trace(0, 20000))
        for i in (2, 3):
            write(os.path.join(small, f"a/profile_trace/iteration_{i}/rank0_trace.json"), rank_trace(0, 30))
        report_dir = os.path.join(work, "report_tmpfs")
        result = env.run("sweep", small, "--jobs", "1", "--report-dir", report_dir)
        print(f"  sweep on full tmpfs: rc={result.returncode} {result.stderr.strip()!r}", flush=True)
        checks.equal(result.returncode, 1, "sweep on a full tmpfs: exit code")
        checks.check("iteration_1/rank0_trace_compacted.json: cannot write output: No space left on device"
                     in result.stderr, f"sweep on a full tmpfs: the failure is not named: {result.stderr!r}")
        for i in (2, 3):
            checks.check(os.path.exists(os.path.join(small, f"a/profile_trace/iteration_{i}/rank0_trace_compacted.json")),
                         f"sweep on a full tmpfs: iteration_{i} not done")
        checks.check(not hidden_anywhere(small), f"sweep on a full tmpfs: temporaries {hidden_anywhere(small)}")
    finally:
        subprocess.run(["umount", small])


def test_disk_full_sweep(env, work):
    """RLIMIT_FSIZE in a sweep: the big iteration fails, named; the others are done and the
    report (small) is written and lists the failure."""
    checks = env.checks
    root = os.path.join(work, "tree")
    write(os.path.join(root, "r/profile_trace/iteration_1/rank0_trace.json"), rank_trace(0, 20000))
    for i in (2, 3):
        write(os.path.join(root, f"r/profile_trace/iteration_{i}/rank0_trace.json"), rank_trace(0, 30))
    result = env.run("sweep", root, "--jobs", "2", fsize=200_000)
    print(f"  sweep under RLIMIT_FSIZE: rc={result.returncode} {result.stderr.strip()!r}", flush=True)
    checks.equal(result.returncode, 1, "sweep under RLIMIT_FSIZE: exit code")
    big_out = os.path.join(root, "r/profile_trace/iteration_1/rank0_trace_compacted.json")
    checks.check(f"{big_out}: cannot write output: File too large" in result.stderr,
                 f"sweep under RLIMIT_FSIZE: failure not named: {result.stderr!r}")
    checks.check(not os.path.exists(big_out), "sweep under RLIMIT_FSIZE: the big output exists")
    for i in (2, 3):
        checks.check(os.path.exists(os.path.join(root, f"r/profile_trace/iteration_{i}/rank0_trace_compacted.json")),
                     f"sweep under RLIMIT_FSIZE: iteration_{i} not done")
    checks.check(not hidden_anywhere(root), f"sweep under RLIMIT_FSIZE: temporaries {hidden_anywhere(root)}")
    rows, _ = report_rows(root)
    failed = [r for r in rows if r.get("status") == "failed"]
    checks.check(len(failed) == 1 and "File too large" in failed[0].get("error", ""),
                 f"sweep under RLIMIT_FSIZE: the report must list the one failure: {failed}")


def test_disk_full_report(env, work):
    """RLIMIT_FSIZE between the report's JSON and its page: the new set is not written, and
    the previous CSV, JSON and page are left whole, not a new table beside an old page."""
    checks = env.checks
    root = os.path.join(work, "report_tree")
    for i in (1, 2):
        write(os.path.join(root, f"r/profile_trace/iteration_{i}/rank0_trace.json"), rank_trace(0, 30))
    checks.equal(env.run("sweep", root, "--jobs", "1").returncode, 0, "report set: first sweep")
    names = ["tracelane_report.csv", "tracelane_report.json", "tracelane_report.html"]
    def report_set():
        return {name: hashlib.sha256(open(os.path.join(root, name), "rb").read()).hexdigest() for name in names}
    before = report_set()
    page_bytes = os.path.getsize(os.path.join(root, "tracelane_report.html"))
    json_bytes = os.path.getsize(os.path.join(root, "tracelane_report.json"))
    write(os.path.join(root, "r/profile_trace/iteration_3/rank0_trace.json"), rank_trace(0, 30))
    limit = (page_bytes + 2 * json_bytes) // 2  # the new JSON fits, the new page does not
    result = env.run("sweep", root, "--jobs", "1", fsize=limit)
    print(f"  report under RLIMIT_FSIZE {limit}: rc={result.returncode} {result.stderr.strip()!r}", flush=True)
    checks.equal(result.returncode, 1, "report set under RLIMIT_FSIZE: exit code")
    page = os.path.join(root, "tracelane_report.html")
    checks.check(f"{page}: cannot write output: File too large" in result.stderr,
                 f"report set under RLIMIT_FSIZE: the page's failure is not named: {result.stderr!r}")
    checks.equal(report_set(), before, "report set under RLIMIT_FSIZE: the previous set, whole")
    checks.check(not hidden_anywhere(root), f"report set under RLIMIT_FSIZE: temporaries {hidden_anywhere(root)}")
    checks.check(os.path.exists(os.path.join(root, "r/profile_trace/iteration_3/rank0_trace_compacted.json")),
                 "report set under RLIMIT_FSIZE: the new iteration's output")


def test_out_of_memory(env, work):
    """RLIMIT_AS (`ulimit -v`) below what a trace needs: the failure is "out of memory" and
    names the file, never "invalid JSON" (simdjson's failed allocation) nor a bare "out of
    memory" with no path; a failure's exit status, and no temporary."""
    checks = env.checks
    root = os.path.join(work, "tree")
    iteration = os.path.join(root, "r/profile_trace/iteration_1")
    os.makedirs(iteration)
    for rank in (0, 1):
        path = os.path.join(iteration, f"rank{rank}_trace.json")
        made = env.args.gen and subprocess.run(
            [env.args.gen, "--out", path, "--size", "60M", "--rank", str(rank), "--ranks", "2", "--quiet"]).returncode == 0
        if not made:
            write(path, rank_trace(rank, 400000))
    runs = []
    for limit_mb in (200, 320, 450):
        limit = limit_mb << 20
        runs += [(f"compact, {limit_mb} MB", env.run("compact", os.path.join(iteration, "rank0_trace.json"), "-o",
                                                       os.path.join(work, "out.json.gz"), "--overwrite", "--jobs", "2",
                                                       address_space=limit)),
                 (f"merge, {limit_mb} MB", env.run("merge", iteration, "-o", os.path.join(work, "merged.json.gz"),
                                                   "--overwrite", "--jobs", "2", address_space=limit)),
                 (f"sweep, {limit_mb} MB", env.run("sweep", root, "--overwrite", "--jobs", "2", "--report-dir",
                                                   os.path.join(work, "report"), address_space=limit))]
    failed = 0
    for what, result in runs:
        lines = [line.removeprefix("failed: ") for line in result.stderr.splitlines()
                 if "memory" in line.replace(work, "")]
        if result.returncode == 0:
            continue
        failed += 1
        # merge exits 2 on any failure, as the original tool does
        checks.equal(result.returncode, 2 if what.startswith("merge") else 1,
                     f"{what}: exit code ({result.stderr.strip()[:300]!r})")
        checks.check(lines, f"{what}: failed without saying it ran out of memory: {result.stderr.strip()[:300]!r}")
        for line in lines:
            checks.check(line.startswith(work + "/") and ": out of memory" in line and "invalid JSON" not in line,
                         f"{what}: {line!r} must name the file and say out of memory")
    checks.check(failed >= 3, f"out of memory: only {failed} of {len(runs)} runs failed; the limits are too high")
    checks.check(not hidden_anywhere(work), f"out of memory: temporaries {hidden_anywhere(work)}")


def test_read_only_output(env, work, mountable):
    checks = env.checks
    src = write(os.path.join(work, "trace.json"), rank_trace(0, 100))
    ro = os.path.join(work, "ro")
    os.mkdir(ro)
    if mountable:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,ro", "tmpfs", ro], check=True)
        how = "read-only tmpfs"
    elif os.geteuid() != 0:
        os.chmod(ro, 0o555)
        how = "chmod 0555"
    else:
        print("  SKIPPED: read-only output directory (root ignores permission bits and cannot mount here)",
              flush=True)
        return
    try:
        out = os.path.join(ro, "out.json.gz")
        result = env.run("compact", src, "-o", out)
        print(f"  {how}: rc={result.returncode} {result.stderr.strip()!r}", flush=True)
        env.error_names(result, out, f"compact into a {how}", rc=1, contains="cannot create output")
        # a read-only tree: every output fails with its path; the report goes elsewhere
        if mountable:
            tree = os.path.join(work, "tree")
            write(os.path.join(tree, "r/profile_trace/iteration_1/rank0_trace.json"), rank_trace(0, 100))
            write(os.path.join(tree, "r/profile_trace/iteration_1/rank1_trace.json"), rank_trace(1, 100))
            write(os.path.join(tree, "r/profile_trace/iteration_2/rank0_trace.json"), rank_trace(0, 100))
            subprocess.run(["mount", "--bind", "-o", "ro", tree, tree], check=True)
            try:
                report_dir = os.path.join(work, "report")
                result = env.run("sweep", tree, "--jobs", "2", "--report-dir", report_dir)
                print(f"  sweep on a read-only tree: rc={result.returncode}\n    " +
                      "\n    ".join(result.stderr.strip().splitlines()), flush=True)
                checks.equal(result.returncode, 1, "sweep on a read-only tree: exit code")
                for rel in ("iteration_1/rank0_trace_compacted.json", "iteration_1/rank1_trace_compacted.json",
                            "iteration_2/rank0_trace_compacted.json"):
                    path = os.path.join(tree, "r/profile_trace", rel)
                    checks.check(f"{path}: cannot create output: Read-only file system" in result.stderr,
                                 f"sweep on a read-only tree: {rel} not named")
                # an iteration whose rank outputs failed is not merged, and says so
                checks.check(os.path.join(tree, "r/profile_trace/iteration_1") + ": not merged" in result.stderr,
                             "sweep on a read-only tree: the unmerged iteration is not named")
                checks.check(os.path.exists(os.path.join(report_dir, "tracelane_report.json")),
                             "sweep on a read-only tree: no report in --report-dir")
            finally:
                subprocess.run(["umount", tree])
    finally:
        if mountable:
            subprocess.run(["umount", ro])
        else:
            os.chmod(ro, 0o755)


def sweep_proc(env, root, *extra):
    return subprocess.Popen([env.args.tracelane, "sweep", root, "--jobs", "2", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


OUTPUT_NAMES = {f"rank{r}_trace_compacted.json.gz" for r in range(64)} | {"pp_traces_merged_compacted.json.gz"}


def outputs_under(root):
    return [n for _, _, names in os.walk(root) for n in names if "_compacted" in n and not n.startswith(".")]


def test_kill_and_rerun(env, work):
    checks = env.checks
    clean = os.path.join(work, "clean")
    make_tree(clean, env.args.gen)
    killed = os.path.join(work, "killed")
    shutil.copytree(clean, killed, symlinks=True)
    inputs = tree_state(clean)
    result = env.run("sweep", clean, "--jobs", "2")
    checks.equal(result.returncode, 0, f"clean sweep: exit code ({result.stderr.strip()[:300]})")
    expected_files = tree_state(clean)
    expected_rows, expected_totals = report_rows(clean)
    total = len([r for r in expected_files if "_compacted" in r])

    # kill -9 once some, but not all, outputs exist
    proc = sweep_proc(env, killed)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None and len(outputs_under(killed)) < max(1, total // 3):
        time.sleep(0.01)
    done_at_kill = len(outputs_under(killed))
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    print(f"  killed with {done_at_kill}/{total} outputs written; temporaries left: "
          f"{len(hidden_anywhere(killed))}", flush=True)
    if done_at_kill >= total:
        print("  NOTE: the sweep finished before the kill: the rerun below is then just a no-op", flush=True)
    # no partial output: every output present is complete and equal to the clean one. A
    # temporary the kill interrupted (".<output>.tmp.<pid>.<n>", hidden) may remain; the
    # rerun must remove it (checked below).
    for rel, digest in tree_state(killed).items():
        name = os.path.basename(rel)
        if name.startswith("."):
            checks.check(".tmp." in name and name[1:].split(".tmp.")[0] in OUTPUT_NAMES,
                         f"after kill -9: unexpected hidden file {rel}")
            continue
        if "_compacted" in rel:
            checks.equal(digest, expected_files.get(rel), f"after kill -9: {rel} differs from the clean run's")
    result = env.run("sweep", killed, "--jobs", "2")
    checks.equal(result.returncode, 0, f"rerun after kill -9: exit code ({result.stderr.strip()[:300]})")
    checks.equal(tree_state(killed), expected_files, "rerun after kill -9: the tree differs from one clean run")
    checks.check(not hidden_anywhere(killed), f"rerun after kill -9: temporaries left: {hidden_anywhere(killed)}")
    rows, totals = report_rows(killed)
    # Outputs the killed run finished are up to date, so the rerun reports them "skipped",
    # with the numbers the killed run stored with each output; apart from that status the
    # report is the clean run's.
    checks.equal(len(rows), len(expected_rows), "rerun after kill -9: report rows")
    checks.check(all(r.get("status") in ("ok", "skipped") for r in rows),
                 f"rerun after kill -9: bad statuses {[r.get('status') for r in rows]}")
    skipped = sum(r.get("status") == "skipped" for r in rows)
    # A skipped row has the GPU figures the killed run stored with its output
    # (user.tracelane.figures, docs/report.md), so it is the clean run's row, figures too.
    as_if_clean = sorted(({**r, "status": "ok"} for r in rows), key=lambda r: json.dumps(r, sort_keys=True))
    checks.check(as_if_clean == expected_rows,
                 f"rerun after kill -9: {skipped} skipped rows; rows differ from the clean run's other than in status: "
                 f"{[r for r in as_if_clean if r not in expected_rows][:2]}")
    checks.check(all(r in expected_rows for r in rows if r.get("status") == "ok"),
                 "rerun after kill -9: a row the rerun made differs from the clean run's")
    checks.check(any("timeline" in r for r in rows if r.get("status") == "skipped") or not skipped,
                 "rerun after kill -9: no skipped row kept its GPU figures")
    # with --overwrite the rerun's report is exactly the clean run's
    result = env.run("sweep", killed, "--jobs", "2", "--overwrite")
    checks.equal(result.returncode, 0, "rerun --overwrite: exit code")
    rows, totals = report_rows(killed)
    checks.check(rows == expected_rows, "rerun --overwrite after kill -9: report rows differ from a clean run's")
    checks.check(totals == expected_totals, f"rerun --overwrite: totals differ: {totals} vs {expected_totals}")
    checks.equal(tree_state(killed), expected_files, "rerun --overwrite: tree")
    # the inputs were never touched
    now = tree_state(killed)
    checks.check(all(now.get(rel) == digest for rel, digest in inputs.items()), "kill/rerun: an input changed")


def test_concurrent_sweeps(env, work):
    checks = env.checks
    root = os.path.join(work, "tree")
    make_tree(root, env.args.gen)
    first = sweep_proc(env, root)
    # wait until the first one holds the tree: its pid is in the lock file, which it writes
    # only once it holds the flock (the file alone may exist a moment before that, and a
    # second sweep started then could take the lock first)
    lock_file = os.path.join(root, ".tracelane.lock")

    def holds_lock():
        try:
            with open(lock_file) as f:
                return f.read().strip().split()[:1] == [str(first.pid)]
        except (OSError, ValueError):
            return False
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and first.poll() is None and not holds_lock():
        time.sleep(0.005)
    second = env.run("sweep", root, "--jobs", "1")
    out, err = first.communicate(timeout=600)
    print(f"  first: rc={first.returncode}; second: rc={second.returncode} {second.stderr.strip()!r}", flush=True)
    checks.equal(first.returncode, 0, f"first sweep: exit code ({err.strip()[:300]})")
    if second.returncode == 0 and "another sweep" not in second.stderr:
        print("  NOTE: the first sweep finished before the second started; lock not exercised", flush=True)
    else:
        checks.equal(second.returncode, 2, "second sweep: exit code")
        checks.check(second.stderr.startswith(f"tracelane sweep: another sweep is running on {root} (pid {first.pid})"),
                     f"second sweep: message: {second.stderr!r}")
    # the first run's report and outputs are whole
    rows, _ = report_rows(root)
    checks.check(rows and all(r.get("status") == "ok" for r in rows), f"concurrent sweeps: report rows {rows[:3]}")
    checks.check(not hidden_anywhere(root), f"concurrent sweeps: temporaries left: {hidden_anywhere(root)}")
    # a dry run does not lock; a sweep after the first ended runs (the lock is released)
    result = env.run("sweep", root, "--jobs", "1")
    checks.equal(result.returncode, 0, f"sweep after the first ended: {result.stderr.strip()[:200]}")
    # shards of one tree (a Slurm array) run at once: different shards do not block each other
    shard0 = sweep_proc(env, root, "--overwrite", "--shard", "0/2", "--report-dir", os.path.join(work, "s0"))
    shard1 = env.run("sweep", root, "--jobs", "1", "--overwrite", "--shard", "1/2", "--report-dir", os.path.join(work, "s1"))
    shard0.communicate(timeout=600)
    checks.equal((shard0.returncode, shard1.returncode), (0, 0), f"two shards at once: {shard1.stderr.strip()[:300]}")


def main():
    def extra(parser):
        parser.add_argument("--gen", default="", help="tracelane_gen (bench/); a Python generator otherwise")
    args = e2e.parse_args(__doc__, extra)
    if args.gen and not os.access(args.gen, os.X_OK):
        args.gen = ""
    checks = e2e.Checks("faults")
    env = Env(args, checks)
    mountable = can_mount()
    print(f"mount available: {mountable}; running as {'root' if os.geteuid() == 0 else 'a user'}", flush=True)
    with e2e.temp_dir("faults") as work:
        for test in (test_disk_full_compact, test_disk_full_sweep, test_disk_full_report, test_out_of_memory,
                     test_disk_full_tmpfs,
                     test_read_only_output, test_kill_and_rerun, test_concurrent_sweeps):
            print(f"--- {test.__name__}", flush=True)
            failures = len(checks.failures)
            sub = os.path.join(work, test.__name__)
            os.mkdir(sub)
            if test in (test_disk_full_tmpfs, test_read_only_output):
                test(env, sub, mountable)
            else:
                test(env, sub)
            print(f"    {'ok' if len(checks.failures) == failures else 'FAILED'}", flush=True)
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
