#!/usr/bin/env python3
"""End-to-end tests of `tracelane sweep` on a tree that others can write (issue 9): a lock
file planted as a symlink, a rank file replaced between sweeps, an output no sweep wrote,
multi-member gzip under a small --memory, a tree deeper than PATH_MAX, absurd shard counts,
hostile names on the terminal, and stale temporaries. No corpus needed: traces are made
here.

usage: test_sweep_hostile.py --tracelane BINARY [--repo-root DIR]
"""
import gzip
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_common as e2e  # noqa: E402

MERGED = "pp_traces_merged_compacted.json.gz"


def rank_trace(rank, kernels):
    return e2e.synthetic_rank_trace(rank, kernels, name=lambda i: f"k{i % 13}_{i % 1009}")


write = e2e.write_file


def report(root):
    with open(os.path.join(root, "tracelane_report.json")) as handle:
        return json.load(handle)


def rows(root, kind, **match):
    return [row for row in report(root)["rows"]
            if row["kind"] == kind and all(row.get(k) == v for k, v in match.items())]


class Env:
    def __init__(self, args, checks):
        self.args, self.checks = args, checks

    def sweep(self, *argv, **kwargs):
        return e2e.tracelane(self.args, "sweep", *argv, **kwargs)


def test_replaced_rank_file_is_redone(env, work):
    """A rank file replaced by `mv` (keeping its old mtime) after a sweep: the rerun redoes
    its output and the merge, and reports the new file; a third run skips everything."""
    checks = env.checks
    root = os.path.join(work, "tree")
    it = os.path.join(root, "run", "profile_trace", "iteration_1")
    for rank in (0, 1):
        write(os.path.join(it, f"rank{rank}_trace.json.gz"), gzip.compress(rank_trace(rank, 300), 1, mtime=0))
    first = env.sweep(root, "--jobs", "2", "--quiet")
    checks.equal(first.returncode, 0, f"first sweep: {e2e.describe(first)}")

    rank0 = os.path.join(it, "rank0_trace.json.gz")
    replacement = write(os.path.join(it, ".incoming"), gzip.compress(rank_trace(0, 500), 1, mtime=0))
    stat = os.stat(rank0)
    os.utime(replacement, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # touch -r: same mtime
    os.rename(replacement, rank0)

    second = env.sweep(root, "--jobs", "2", "--quiet")
    checks.equal(second.returncode, 0, f"rerun: {e2e.describe(second)}")
    row0 = rows(root, "file", file="rank0_trace.json.gz")
    checks.check(len(row0) == 1 and row0[0]["status"] == "ok" and row0[0].get("events") == 500,
                 f"the replaced rank file must be redone from the new file (500 events), got {row0}")
    row1 = rows(root, "file", file="rank1_trace.json.gz")
    checks.check(len(row1) == 1 and row1[0]["status"] == "skipped", f"the other rank is up to date: {row1}")
    merge = rows(root, "merge")
    checks.check(len(merge) == 1 and merge[0]["status"] == "ok", f"the merge must be redone: {merge}")
    out = json.loads(gzip.decompress(open(os.path.join(it, "rank0_trace_compacted.json.gz"), "rb").read()))
    kernels = [e for e in out["traceEvents"] if e.get("cat") == "kernel"]
    checks.equal(len(kernels), 500, "kernels in the redone rank output")

    third = env.sweep(root, "--jobs", "2", "--quiet")
    checks.equal(third.returncode, 0, f"third run: {e2e.describe(third)}")
    statuses = sorted(row["status"] for row in report(root)["rows"])
    checks.equal(statuses, ["skipped"] * 3, "statuses of a rerun with nothing changed")


def test_output_not_made_from_the_inputs_is_redone(env, work):
    """An output newer than its input but with no record of what it was made from (copied
    in, written by another tool) is redone; one written by `compact` is skipped."""
    checks = env.checks
    root = os.path.join(work, "tree")
    it = os.path.join(root, "run", "profile_trace", "iteration_1")
    write(os.path.join(it, "rank0_trace.json"), rank_trace(0, 200))
    write(os.path.join(it, "rank1_trace.json"), rank_trace(1, 200))
    compact = e2e.tracelane(env.args, "compact", os.path.join(it, "rank1_trace.json"))
    checks.equal(compact.returncode, 0, f"compact: {e2e.describe(compact)}")
    write(os.path.join(it, "rank0_trace_compacted.json"), b'{"traceEvents": []}')  # newer, not made from it
    result = env.sweep(root, "--quiet")
    checks.equal(result.returncode, 0, f"sweep: {e2e.describe(result)}")
    row0 = rows(root, "file", file="rank0_trace.json")
    checks.check(len(row0) == 1 and row0[0]["status"] == "ok", f"an unrecorded output is redone: {row0}")
    row1 = rows(root, "file", file="rank1_trace.json")
    checks.check(len(row1) == 1 and row1[0]["status"] == "skipped", f"compact's output is up to date: {row1}")


def test_budget_holds_for_multi_member_gzip(env, work):
    """Two multi-member gzip files whose last member is tiny (ISIZE says a few bytes), under a
    --memory budget smaller than one file: each runs alone, so the sweep must not hold them
    together (peak RSS near a sweep of one of them, not two).

    The first estimate (8 x the ~1 MB on disk: 6 x 8 MB = 46 MB under the sweep's model) is
    far below the real 16 MB, and each read stops at what was admitted and goes back to the
    budget with a larger estimate. Under a budget that two first estimates fit (200M, as
    this test once used) both partial reads may overlap (within the budget, but up to
    timing), and the baseline was one `compact` (a leaner process than a sweep): CI saw
    1.53 x. Under 80M not even two first estimates fit, so at no time are two files held.
    Measured here: both at once (--memory 2G) 2.1 x a sweep of one, one after the other
    1.0 x to 1.3 x."""
    checks = env.checks
    data = rank_trace(0, 120_000)  # ~16 MB of JSON, ~1 MB gzip'd
    member = gzip.compress(data[:-16], 1, mtime=0) + gzip.compress(data[-16:], 1, mtime=0)

    def sweep_peak(names):
        root = os.path.join(work, "tree-" + "".join(names))
        for name in names:
            write(os.path.join(root, name, "profile_trace", "iteration_1", "rank0_trace.json.gz"), member)
        code, peak = e2e.peak_rss_kib([env.args.tracelane, "sweep", root, "--jobs", "2", "--memory", "80M", "--quiet"])
        checks.equal(code, 0, f"sweep of {len(names)} under --memory 80M")
        statuses = [row["status"] for row in report(root)["rows"]]
        checks.equal(statuses, ["ok"] * len(names), "every file compacted")
        return peak

    one = sweep_peak(["a"])
    both = sweep_peak(["a", "b"])
    print(f"    peak RSS: sweep of one {one} KiB, sweep of two {both} KiB", flush=True)
    checks.check(both < one * 1.4, f"peak RSS of the sweep of two ({both} KiB) must stay near one's ({one} KiB)")


def test_deep_tree_is_never_silent(env, work):
    """An iteration directory whose path is longer than PATH_MAX is found, and its rank file,
    which cannot be opened by its path, gets a failed row (exit 1) instead of vanishing."""
    checks = env.checks
    root = os.path.join(work, "tree")
    write(os.path.join(root, "shallow", "rank0_trace.json"), rank_trace(0, 50))
    name = "d" * 30
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    rel = []
    for _ in range(160):  # ~5,000 bytes
        os.mkdir(name, dir_fd=fd)
        child = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = child
        rel.append(name)
    rank = os.open("rank0_trace.json", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644, dir_fd=fd)
    os.write(rank, rank_trace(0, 50))
    os.close(rank)
    os.close(fd)
    result = env.sweep(root, "--quiet")
    checks.equal(result.returncode, 1, f"a rank file that cannot be read fails the sweep: {e2e.describe(result)}")
    deep = rows(root, "file", dir="/".join(rel))
    checks.check(len(deep) == 1 and deep[0]["status"] == "failed" and "too long" in deep[0].get("error", ""),
                 f"the deep rank file has a failed row: {deep}")
    shallow = rows(root, "file", dir="shallow")
    checks.check(len(shallow) == 1 and shallow[0]["status"] == "ok", f"the rest is swept: {shallow}")


def test_lock_symlink_is_refused(env, work):
    """ROOT/.tracelane.lock planted as a symlink to a file of ours: the sweep refuses it
    (exit 2) and the target keeps its contents."""
    checks = env.checks
    root = os.path.join(work, "tree")
    write(os.path.join(root, "it", "rank0_trace.json"), rank_trace(0, 50))
    victim = write(os.path.join(work, "victim.txt"), b"precious\n")
    os.symlink(victim, os.path.join(root, ".tracelane.lock"))
    result = env.sweep(root, "--quiet")
    checks.equal(result.returncode, 2, f"sweep with a symlinked lock: {e2e.describe(result)}")
    checks.check("symbolic link" in result.stderr, f"the message says why: {result.stderr!r}")
    checks.equal(open(victim, "rb").read(), b"precious\n", "the symlink's target")


def test_shard_count_is_bounded(env, work):
    checks = env.checks
    root = os.path.join(work, "tree")
    write(os.path.join(root, "it", "rank0_trace.json"), rank_trace(0, 50))
    huge = env.sweep(root, "--shard", "0/100000000", "--quiet")
    checks.equal(huge.returncode, 2, f"--shard 0/100000000: {e2e.describe(huge)}")
    many = env.sweep(root, "--shard", "0/100000", "--quiet")
    checks.equal(many.returncode, 0, f"--shard 0/100000: {e2e.describe(many)}")


def test_names_reach_the_terminal_printable(env, work):
    """A directory named with a terminal escape and invalid UTF-8: --dry-run and the error
    lines show it as \\xHH, never the raw bytes."""
    checks = env.checks
    root = os.path.join(work, "tree")
    evil = os.path.join(root.encode(), b"evil\x1b[2J\xff")
    write(os.path.join(evil, b"rank0_trace.json"), rank_trace(0, 50))
    write(os.path.join(evil, b"rank1_trace.json"), b"{ not json")
    dry = subprocess.run([env.args.tracelane, "sweep", root, "--dry-run"], capture_output=True)
    checks.check(b"\x1b" not in dry.stdout and b"\xff" not in dry.stdout and b"evil\\x1b[2J\\xff" in dry.stdout,
                 f"--dry-run output: {dry.stdout[:300]!r}")
    real = subprocess.run([env.args.tracelane, "sweep", root], capture_output=True)
    checks.equal(real.returncode, 1, "the sweep with a bad rank file")
    checks.check(b"\x1b" not in real.stderr and b"\xff" not in real.stderr and b"evil\\x1b" in real.stderr,
                 f"error lines: {real.stderr[:400]!r}")


def test_stale_temporaries_are_only_our_regular_files(env, work):
    """A killed sweep's temporary (its writer gone) is removed; a directory or a symlink that
    merely has such a name is left alone, and so is the symlink's target."""
    checks = env.checks
    root = os.path.join(work, "tree")
    it = os.path.join(root, "it")
    write(os.path.join(it, "rank0_trace.json"), rank_trace(0, 50))
    gone = 4194000  # above any pid in use here
    stale = write(os.path.join(it, f".rank0_trace_compacted.json.tmp.{gone}.1"), b"partial")
    planted_dir = os.path.join(it, f".rank0_trace_compacted.json.tmp.{gone}.2")
    os.mkdir(planted_dir)
    victim = write(os.path.join(work, "victim.txt"), b"precious\n")
    planted_link = os.path.join(it, f".rank0_trace_compacted.json.tmp.{gone}.3")
    os.symlink(victim, planted_link)
    result = env.sweep(root, "--quiet")
    checks.equal(result.returncode, 0, f"sweep: {e2e.describe(result)}")
    checks.check(not os.path.exists(stale), "a stale temporary of ours is removed")
    checks.check(os.path.isdir(planted_dir), "a directory named like a temporary is left alone")
    checks.check(os.path.islink(planted_link), "a symlink named like a temporary is left alone")
    checks.equal(open(victim, "rb").read(), b"precious\n", "the symlink's target")


def test_report_dir_and_merged_output_are_guarded_before_any_work(env, work):
    """A --report-dir that is a file is a usage error before anything is read or written; a
    directory planted under the merged output's name fails that merge row (before its ranks
    are read for it) and the ranks' own outputs are still written."""
    checks = env.checks
    root = os.path.join(work, "tree")
    it = os.path.join(root, "it")
    write(os.path.join(it, "rank0_trace.json"), rank_trace(0, 50))
    write(os.path.join(it, "rank1_trace.json"), rank_trace(1, 50))
    not_a_dir = write(os.path.join(work, "report-file"), b"x")
    result = env.sweep(root, "--quiet", "--report-dir", not_a_dir)
    checks.equal(result.returncode, 2, f"--report-dir naming a file: {e2e.describe(result)}")
    checks.check(not os.path.exists(os.path.join(it, "rank0_trace_compacted.json")),
                 "nothing was written before the report directory was refused")
    os.mkdir(os.path.join(it, MERGED))
    result = env.sweep(root, "--quiet")
    checks.equal(result.returncode, 1, f"sweep with a directory under the merged name: {e2e.describe(result)}")
    rows = json.load(open(os.path.join(root, "tracelane_report.json")))["rows"]
    merge_rows = [r for r in rows if r["kind"] == "merge"]
    checks.check(len(merge_rows) == 1 and merge_rows[0]["status"] == "failed" and "directory" in merge_rows[0]["error"],
                 f"the merge row: {merge_rows}")
    checks.check(all(r["status"] == "ok" for r in rows if r["kind"] == "file"), f"the file rows: {rows}")
    checks.check(os.path.isdir(os.path.join(it, MERGED)), "the planted directory is left alone")


def test_outputs_are_no_more_readable_than_their_inputs(env, work):
    """A private (0600) rank file gives a private output, even where the umask allows more."""
    checks = env.checks
    root = os.path.join(work, "tree")
    rank = write(os.path.join(root, "it", "rank0_trace.json"), rank_trace(0, 50))
    os.chmod(rank, 0o600)
    result = env.sweep(root, "--quiet")
    checks.equal(result.returncode, 0, f"sweep: {e2e.describe(result)}")
    mode = os.stat(os.path.join(root, "it", "rank0_trace_compacted.json")).st_mode & 0o777
    checks.equal(mode & 0o077, 0, f"the output's mode {oct(mode)}")


def main():
    args = e2e.parse_args(__doc__)
    checks = e2e.Checks("sweep_hostile")
    env = Env(args, checks)
    return e2e.run_tests(checks, env, "sweep-hostile", [
        test_replaced_rank_file_is_redone,
        test_output_not_made_from_the_inputs_is_redone,
        test_budget_holds_for_multi_member_gzip,
        test_deep_tree_is_never_silent,
        test_lock_symlink_is_refused,
        test_shard_count_is_bounded,
        test_names_reach_the_terminal_printable,
        test_stale_temporaries_are_only_our_regular_files,
        test_report_dir_and_merged_output_are_guarded_before_any_work,
        test_outputs_are_no_more_readable_than_their_inputs,
    ])


if __name__ == "__main__":
    sys.exit(main())
