#!/usr/bin/env python3
"""End-to-end tests of `tracelane sweep --remove-originals` (issue 14): a rank file is removed
only when its compacted copy, read back from disk, restores it byte for byte, and every
refusal keeps the file and says why in the report's `original` column.

The corpus test (sweep_tree) needs TRACELANE_SHARED and is skipped loudly without it; the
refusals use traces made here.

usage: test_remove_originals.py --tracelane BINARY [--repo-root DIR]
"""
import gzip
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_common as e2e  # noqa: E402

MERGED = "pp_traces_merged_compacted.json.gz"
write = e2e.write_file


def rank_trace(rank, kernels):
    return e2e.synthetic_rank_trace(rank, kernels, name=lambda i: f"k{i % 13}_{i % 1009}")


def md5_text(path):
    return hashlib.md5(e2e.read_bytes(path)).hexdigest()


def report_rows(root, kind="file"):
    with open(os.path.join(root, "tracelane_report.json")) as handle:
        return [row for row in json.load(handle)["rows"] if row["kind"] == kind]


def originals(root):
    """{dir/file: original cell} of the report's file rows."""
    return {f"{row['dir']}/{row['file']}": row.get("original") for row in report_rows(root)}


def rank_files(root):
    found = []
    for dirpath, _, names in os.walk(root):
        found += [os.path.join(dirpath, n) for n in names if n.startswith("rank") and "_compacted" not in n]
    return sorted(found)


class Env:
    def __init__(self, args, checks):
        self.args, self.checks = args, checks

    def sweep(self, *argv, **kwargs):
        return e2e.tracelane(self.args, "sweep", *argv, **kwargs)


def two_rank_iteration(root, rel, kernels=200, suffix=".json.gz"):
    it = os.path.join(root, rel)
    for rank in (0, 1):
        data = rank_trace(rank, kernels)
        write(os.path.join(it, f"rank{rank}_trace{suffix}"), gzip.compress(data, 1, mtime=0) if suffix.endswith(".gz") else data)
    return it


def test_corpus_tree_originals_are_removed_and_restore_md5_equal(env, work):
    """On a copy of the corpus's sweep_tree, every original goes, each compacted copy
    restores to the original's md5 (saved before), and the summary says so."""
    checks = env.checks
    shared = os.environ.get("TRACELANE_SHARED") or os.path.join(env.args.repo_root, "..", "shared")
    source = os.path.join(shared, "corpus", "sweep_tree")
    if not os.path.isdir(source):
        print(f"    SKIPPED: corpus not found; set TRACELANE_SHARED (looked for {source})", flush=True)
        return
    root = os.path.join(work, "tree")
    shutil.copytree(source, root)
    before = {os.path.relpath(p, root): md5_text(p) for p in rank_files(root)}
    checks.check(len(before) >= 3, f"rank files in the corpus tree: {sorted(before)}")
    result = env.sweep(root, "--remove-originals", "--jobs", "2")
    checks.equal(result.returncode, 0, f"sweep --remove-originals: {e2e.describe(result)}")
    checks.equal(rank_files(root), [], "rank files left after the sweep")
    cells = originals(root)
    checks.equal(sorted(cells), sorted(before), "report rows")
    checks.check(all(cell == "removed" for cell in cells.values()), f"original cells: {cells}")
    checks.check(f"removed {len(before)} originals" in result.stdout, f"summary line: {result.stdout!r}")
    restored_dir = os.path.join(work, "restored")
    os.mkdir(restored_dir)
    for rel, digest in sorted(before.items()):
        name = os.path.basename(rel)
        compacted = os.path.join(root, rel.replace("_trace.json", "_trace_compacted.json"))
        out = os.path.join(restored_dir, name.replace("/", "_"))
        restored = e2e.tracelane(env.args, "restore", compacted, "-o", out)
        if checks.equal(restored.returncode, 0, f"restore {rel}: {e2e.describe(restored)}"):
            checks.equal(md5_text(out), digest, f"md5 of {rel} restored")
        os.unlink(out)
    checks.check(all(os.path.exists(os.path.join(os.path.dirname(os.path.join(root, rel)), MERGED))
                     for rel in before if "resnet" not in rel), "merged outputs stay")
    # A rerun finds nothing to do: the originals are gone, so are the iterations.
    again = env.sweep(root, "--remove-originals", "--quiet")
    checks.equal(again.returncode, 0, f"rerun: {e2e.describe(again)}")


def test_without_the_flag_nothing_is_removed(env, work):
    checks = env.checks
    root = os.path.join(work, "tree")
    two_rank_iteration(root, "a/iteration_1")
    before = rank_files(root)
    result = env.sweep(root, "--quiet")
    checks.equal(result.returncode, 0, f"sweep: {e2e.describe(result)}")
    checks.equal(rank_files(root), before, "rank files after a plain sweep")
    checks.check(all(cell is None for cell in originals(root).values()), f"original cells: {originals(root)}")


def test_up_to_date_outputs_qualify(env, work):
    """A plain sweep, then the same sweep with the flag: every row "skipped", every original
    verified from the outputs on disk and removed."""
    checks = env.checks
    root = os.path.join(work, "tree")
    it = two_rank_iteration(root, "a/iteration_1")
    digests = {p: md5_text(p) for p in rank_files(root)}
    checks.equal(env.sweep(root, "--quiet").returncode, 0, "plain sweep")
    result = env.sweep(root, "--remove-originals")
    checks.equal(result.returncode, 0, f"sweep --remove-originals: {e2e.describe(result)}")
    statuses = [row["status"] for row in report_rows(root)]
    checks.equal(statuses, ["skipped", "skipped"], "statuses of the second sweep")
    checks.equal(rank_files(root), [], "rank files left")
    for path, digest in digests.items():
        out = path + ".restored"
        e2e.tracelane(env.args, "restore", path.replace("_trace.json", "_trace_compacted.json"), "-o", out)
        checks.equal(md5_text(out), digest, f"md5 of {os.path.relpath(path, it)} restored")


def test_failed_merge_keeps_the_whole_iteration(env, work):
    """One corrupt rank: that rank and its merge fail, and neither original of the iteration
    is removed; another iteration of the same sweep is."""
    checks = env.checks
    root = os.path.join(work, "tree")
    bad_it = two_rank_iteration(root, "a/iteration_1")
    with open(os.path.join(bad_it, "rank1_trace.json.gz"), "r+b") as handle:
        handle.seek(30)
        handle.write(b"\xff" * 40)  # corrupt deflate data
    good_it = two_rank_iteration(root, "b/iteration_1")
    result = env.sweep(root, "--remove-originals", "--quiet")
    checks.equal(result.returncode, 1, f"sweep with a corrupt rank: {e2e.describe(result)}")
    for rank in (0, 1):
        checks.check(os.path.exists(os.path.join(bad_it, f"rank{rank}_trace.json.gz")), f"a/rank{rank} kept")
        checks.check(not os.path.exists(os.path.join(good_it, f"rank{rank}_trace.json.gz")), f"b/rank{rank} removed")
    cells = originals(root)
    for rank in (0, 1):
        cell = cells.get(f"a/iteration_1/rank{rank}_trace.json.gz") or ""
        checks.check(cell.startswith("kept: iteration not wholly done"), f"a/rank{rank}'s cell: {cell!r}")
        checks.equal(cells.get(f"b/iteration_1/rank{rank}_trace.json.gz"), "removed", f"b/rank{rank}'s cell")


def test_hard_linked_original_is_kept(env, work):
    """A rank file with a second hard link, and (all or none) the other rank of its iteration."""
    checks = env.checks
    root = os.path.join(work, "tree")
    it = two_rank_iteration(root, "a/iteration_1")
    os.link(os.path.join(it, "rank0_trace.json.gz"), os.path.join(work, "elsewhere.json.gz"))
    result = env.sweep(root, "--remove-originals", "--quiet")
    checks.equal(result.returncode, 0, f"sweep: {e2e.describe(result)}")
    cells = originals(root)
    checks.equal(cells.get("a/iteration_1/rank0_trace.json.gz"), "kept: has 2 hard links", "rank0's cell")
    checks.check("rank0_trace.json.gz of this iteration is kept" in (cells.get("a/iteration_1/rank1_trace.json.gz") or ""),
                 f"rank1's cell: {cells}")
    checks.equal(len(rank_files(root)), 2, "rank files left")


def test_symlinked_rank_is_kept(env, work):
    """A rank name that is a symbolic link (ours, so the sweep reads it): neither the link
    nor its target is removed."""
    checks = env.checks
    root = os.path.join(work, "tree")
    target = write(os.path.join(work, "store", "trace.json.gz"), gzip.compress(rank_trace(0, 100), 1, mtime=0))
    os.makedirs(os.path.join(root, "a"))
    os.symlink(target, os.path.join(root, "a", "rank0_trace.json.gz"))
    result = env.sweep(root, "--remove-originals", "--quiet")
    checks.equal(result.returncode, 0, f"sweep: {e2e.describe(result)}")
    cell = originals(root).get("a/rank0_trace.json.gz") or ""
    checks.check(cell.startswith("kept: reached through a symbolic link"), f"the link's cell: {cell!r}")
    checks.check(os.path.islink(os.path.join(root, "a", "rank0_trace.json.gz")) and os.path.exists(target),
                 "the link and its target stay")


def test_original_changed_after_it_was_read_is_kept(env, work):
    """An original appended to after the sweep found it up to date (while the sweep is
    stopped between its discovery and the verification) is kept. The sweep is stopped
    (SIGSTOP) once a rank output of another iteration is in place (so discovery is done) and
    before that iteration's merge is: the verification comes after every merge, so it has
    not started."""
    checks = env.checks
    root = os.path.join(work, "tree")
    early = write(os.path.join(root, "a", "rank0_trace.json"), rank_trace(0, 100))
    checks.equal(env.sweep(root, "--quiet").returncode, 0, "plain sweep (a's output up to date)")
    late = two_rank_iteration(root, "b/iteration_1", kernels=60000, suffix=".json")
    process = subprocess.Popen([env.args.tracelane, "sweep", root, "--remove-originals", "--jobs", "1", "--quiet"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    marker = os.path.join(late, "rank0_trace_compacted.json")
    deadline = time.monotonic() + 120
    while not os.path.exists(marker) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.001)
    stopped = process.poll() is None
    if stopped:
        process.send_signal(signal.SIGSTOP)
    in_time = stopped and not os.path.exists(os.path.join(late, MERGED))
    checks.check(in_time, "the sweep must be stopped before the later iteration's merge (make it larger)")
    with open(early, "ab") as handle:
        handle.write(b"\n")
    if stopped:
        process.send_signal(signal.SIGCONT)
    out, err = process.communicate(timeout=300)
    checks.equal(process.returncode, 0, f"sweep: rc={process.returncode} {err[:300]!r}")
    row = [r for r in report_rows(root) if r["dir"] == "a"]
    checks.check(len(row) == 1 and row[0]["status"] == "skipped", f"a's row: {row}")
    cell = originals(root).get("a/rank0_trace.json") or ""
    checks.check(cell.startswith("kept: changed since the sweep read it"), f"the appended original's cell: {cell!r}")
    checks.check(os.path.exists(early), "the appended original stays")
    if in_time:
        checks.equal(rank_files(late), [], "the later iteration's originals are removed")


def test_damaged_restore_data_is_kept_and_fails(env, work):
    """An up-to-date output (skipped by its inputs record) whose restore data has one byte
    changed: the original is kept and the sweep exits 1."""
    checks = env.checks
    root = os.path.join(work, "tree")
    rank = write(os.path.join(root, "a", "rank0_trace.json"), rank_trace(0, 300))
    checks.equal(env.sweep(root, "--quiet").returncode, 0, "plain sweep")
    output = os.path.join(root, "a", "rank0_trace_compacted.json")
    with open(output, "r+b") as handle:  # in place: the file keeps its attributes
        text = handle.read()
        at = text.rindex(b'"tracelane_restore": ["') + 40
        handle.seek(at)
        handle.write(b"B" if text[at:at + 1] == b"A" else b"A")
    result = env.sweep(root, "--remove-originals")
    checks.equal(result.returncode, 1, f"sweep with a damaged copy: {e2e.describe(result)}")
    row = report_rows(root)[0]
    checks.equal(row["status"], "skipped", "the damaged copy's row status (up to date by its recipe)")
    checks.check((row.get("original") or "").startswith("kept: restore differs"), f"its original cell: {row}")
    checks.check(os.path.exists(rank), "the original stays")
    checks.check("kept: restore differs" in result.stderr, f"stderr names it: {result.stderr!r}")
    checks.check("kept 1" in result.stdout, f"summary: {result.stdout!r}")


def test_no_restore_data_with_the_flag_is_a_usage_error(env, work):
    checks = env.checks
    root = os.path.join(work, "tree")
    two_rank_iteration(root, "a/iteration_1")
    result = env.sweep(root, "--remove-originals", "--no-restore-data")
    checks.equal(result.returncode, 2, f"exit: {e2e.describe(result)}")
    checks.check("--no-restore-data" in result.stderr, f"message: {result.stderr!r}")
    checks.equal(len(os.listdir(os.path.join(root, "a", "iteration_1"))), 2, "files in the iteration")


def test_dry_run_removes_nothing(env, work):
    checks = env.checks
    root = os.path.join(work, "tree")
    it = two_rank_iteration(root, "a/iteration_1")
    os.link(os.path.join(it, "rank0_trace.json.gz"), os.path.join(work, "other.json.gz"))
    two_rank_iteration(root, "b/iteration_1")
    before = sorted(os.listdir(it))
    result = env.sweep(root, "--remove-originals", "--dry-run")
    checks.equal(result.returncode, 0, f"dry run: {e2e.describe(result)}")
    checks.equal(sorted(os.listdir(it)), before, "files after a dry run")
    checks.equal(len(rank_files(root)), 4, "rank files after a dry run")
    checks.check("remove  b/iteration_1/rank0_trace.json.gz" in result.stdout, f"plan: {result.stdout!r}")
    checks.check("keep    a/iteration_1/rank0_trace.json.gz (has 2 hard links)" in result.stdout,
                 f"plan: {result.stdout!r}")
    checks.check("keep    a/iteration_1/rank1_trace.json.gz" in result.stdout, f"plan: {result.stdout!r}")


# A pause at the sweep's first malloc_trim (the graph's admit node after a job, and the
# verification after each file), so a test can change the tree at a known point: the hook
# creates MARKER and sleeps; later calls do not pause.
PAUSE_HOOK = r"""
#include <stddef.h>
#include <stdlib.h>
#include <fcntl.h>
#include <unistd.h>
int malloc_trim(size_t pad) {
  (void)pad;
  const char* marker = getenv("TRACELANE_TEST_PAUSE_MARKER");
  if (!marker) return 0;
  int fd = open(marker, O_CREAT | O_EXCL | O_WRONLY, 0600);
  if (fd < 0) return 0;
  close(fd);
  sleep(4);
  return 0;
}
"""


def pause_hook(work):
    """The LD_PRELOAD library, or None (said loudly) where no C compiler is found."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if not compiler:
        print("    SKIPPED: no C compiler (cc, gcc) to build the pause hook", flush=True)
        return None
    source, library = os.path.join(work, "pause.c"), os.path.join(work, "pause.so")
    write(source, PAUSE_HOOK.encode())
    subprocess.run([compiler, "-shared", "-fPIC", "-o", library, source], check=True)
    return library


def sweep_paused(env, work, root, change, *argv):
    """`sweep ROOT ARGV...` with `change()` run while the sweep sleeps at its first pause."""
    library = pause_hook(work)
    if not library:
        return None
    marker = os.path.join(work, "paused")
    environ = dict(os.environ, LD_PRELOAD=library, TRACELANE_TEST_PAUSE_MARKER=marker)
    process = subprocess.Popen([env.args.tracelane, "sweep", root, *argv], env=environ, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while not os.path.exists(marker) and process.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    paused = os.path.exists(marker)
    if paused:
        change()
    out, err = process.communicate(timeout=120)
    env.checks.check(paused, "the sweep reached its pause")
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def test_copy_replaced_after_verification_is_kept(env, work):
    """The copy verified, then replaced (here by a `compact --overwrite --no-restore-data`,
    as a user or another sweep might) before the removal: the original stays. Before the
    fix it was removed and its only copy could not restore it."""
    checks = env.checks
    root = os.path.join(work, "tree")
    rank = write(os.path.join(root, "a", "iteration_1", "rank0_trace.json.gz"), gzip.compress(rank_trace(0, 300), 1, mtime=0))
    checks.equal(env.sweep(root, "--quiet").returncode, 0, "plain sweep")

    def replace_copy():
        e2e.tracelane(env.args, "compact", rank, "--overwrite", "--no-restore-data")

    result = sweep_paused(env, work, root, replace_copy, "--remove-originals", "--jobs", "1")
    if result is None:
        return
    checks.equal(result.returncode, 0, f"sweep: {e2e.describe(result)}")
    checks.check(os.path.exists(rank), "the original stays")
    cell = originals(root).get("a/iteration_1/rank0_trace.json.gz") or ""
    checks.check(cell.startswith("kept: ") and "changed after it was verified" in cell, f"its cell: {cell!r}")


def test_rank_changed_before_the_merge_read_it_is_kept_not_unfaithful(env, work):
    """Rank outputs up to date, the merged output missing: the ranks are read again for the
    merge. rank1 changes between discovery and that read: its copy was made from the file
    as it was, so it is kept as changed (exit 0), not reported as a copy that does not
    restore (exit 1, before the fix)."""
    checks = env.checks
    root = os.path.join(work, "tree")
    it = two_rank_iteration(root, "a/iteration_1")
    checks.equal(env.sweep(root, "--quiet").returncode, 0, "plain sweep")
    os.unlink(os.path.join(it, MERGED))

    def change_rank1():
        with open(os.path.join(it, "rank1_trace.json.gz"), "ab") as handle:
            handle.write(gzip.compress(b"\n", 1, mtime=0))  # one more member: a newline more

    result = sweep_paused(env, work, root, change_rank1, "--remove-originals", "--jobs", "1", "--memory", "16K")
    if result is None:
        return
    checks.equal(result.returncode, 0, f"sweep: {e2e.describe(result)}")
    cells = originals(root)
    cell = cells.get("a/iteration_1/rank1_trace.json.gz") or ""
    checks.check(cell == "kept: changed since its compacted copy was made", f"rank1's cell: {cell!r}")
    checks.equal(len(rank_files(root)), 2, "rank files left (all or none)")


def test_iteration_reached_through_a_directory_link_is_kept(env, work):
    """ROOT/a/iteration_1 is a symbolic link to a directory elsewhere: its ranks are swept,
    but their originals are not ROOT's to remove (before the fix both were removed)."""
    checks = env.checks
    root = os.path.join(work, "tree")
    elsewhere = two_rank_iteration(work, "elsewhere/iteration_1")
    os.makedirs(os.path.join(root, "a"))
    os.symlink(elsewhere, os.path.join(root, "a", "iteration_1"))
    result = env.sweep(root, "--remove-originals", "--quiet")
    checks.equal(result.returncode, 0, f"sweep: {e2e.describe(result)}")
    for rank in (0, 1):
        checks.check(os.path.exists(os.path.join(elsewhere, f"rank{rank}_trace.json.gz")), f"rank{rank} stays")
    for name, cell in originals(root).items():
        checks.check((cell or "").startswith("kept: its directory was reached through a symbolic link"),
                     f"{name}'s cell: {cell!r}")


def test_iteration_with_an_unaccounted_rank_is_kept(env, work):
    """rank2_trace.json.gz is a dangling link (its scratch not mounted): the merge of ranks 0
    and 1 lacks it, so neither original goes (before the fix both did, and the full merge
    could never be made again)."""
    checks = env.checks
    root = os.path.join(work, "tree")
    it = two_rank_iteration(root, "a/iteration_1")
    os.symlink(os.path.join(work, "unmounted", "rank2_trace.json.gz"), os.path.join(it, "rank2_trace.json.gz"))
    result = env.sweep(root, "--remove-originals", "--quiet")
    checks.equal(result.returncode, 0, f"sweep: {e2e.describe(result)}")
    checks.equal(len([n for n in os.listdir(it) if n.endswith("_trace.json.gz")]), 3, "rank names left")
    for name, cell in originals(root).items():
        checks.check("could not account for" in (cell or ""), f"{name}'s cell: {cell!r}")


def three_rank_iteration(root, rel, no_restore_data=False):
    """An iteration of three ranks, swept: (its directory, the merged output's text md5)."""
    it = os.path.join(root, rel)
    for rank in (0, 1, 2):
        write(os.path.join(it, f"rank{rank}_trace.json.gz"), gzip.compress(rank_trace(rank, 150), 1, mtime=0))
    return it


def merge_row(root):
    rows = report_rows(root, "merge")
    return rows[0] if len(rows) == 1 else {}


def test_a_rank_file_gone_is_merged_from_its_copy(env, work):
    """An iteration left partly removed (a sweep killed while it removed originals, ranks
    restored in place): the next sweep merges each rank from its original or, where that is
    gone, from its compacted copy, and the merged output keeps every rank, unchanged."""
    checks = env.checks
    root = os.path.join(work, "tree")
    it = three_rank_iteration(root, "a/iteration_1")
    checks.equal(env.sweep(root, "--quiet").returncode, 0, "first sweep")
    merged = os.path.join(it, MERGED)
    merged_md5 = md5_text(merged)
    # --remove-originals, then two ranks restored in place as docs/restore.md shows; the
    # same as a removal that stopped after rank2.
    checks.equal(env.sweep(root, "--remove-originals", "--quiet").returncode, 0, "sweep --remove-originals")
    for rank in (0, 1):
        result = e2e.tracelane(env.args, "restore", os.path.join(it, f"rank{rank}_trace_compacted.json.gz"), "-o",
                               os.path.join(it, f"rank{rank}_trace.json.gz"))
        checks.equal(result.returncode, 0, f"restore rank{rank} in place: {e2e.describe(result)}")
    result = env.sweep(root)
    checks.equal(result.returncode, 0, f"sweep of the partly removed iteration: {e2e.describe(result)}")
    checks.equal(md5_text(merged), merged_md5, "the merged output's text, merged again with rank2 from its copy")
    row = merge_row(root)
    checks.equal((row.get("status"), row.get("ranks")), ("ok", 3), f"merge row: {row}")
    files = {row["file"]: row["status"] for row in report_rows(root)}
    # The restored files are new files (their copies are made again, the same bytes); rank2's
    # copy stands in for it, up to date.
    checks.equal(files, {"rank0_trace.json.gz": "ok", "rank1_trace.json.gz": "ok",
                         "rank2_trace.json.gz": "skipped"}, "file rows")
    checks.check(not os.path.exists(os.path.join(it, "rank2_trace.json.gz")), "rank2's original is not written back")
    # Then the originals restored go again, and the merge stays as it is.
    result = env.sweep(root, "--remove-originals")
    checks.equal(result.returncode, 0, f"sweep --remove-originals again: {e2e.describe(result)}")
    checks.equal(rank_files(root), [], "rank files left")
    checks.equal(md5_text(merged), merged_md5, "the merged output after the second removal")


def test_a_merge_never_shrinks(env, work):
    """A rank gone with its copy (or a copy that cannot give it back): merging the ranks left
    would replace the merge of all of them. The merged output is kept, the row says why, and
    the sweep fails."""
    checks = env.checks
    root = os.path.join(work, "tree")
    it = three_rank_iteration(root, "a/iteration_1")
    checks.equal(env.sweep(root, "--quiet").returncode, 0, "first sweep")
    merged = os.path.join(it, MERGED)
    before = hashlib.md5(open(merged, "rb").read()).hexdigest()
    os.unlink(os.path.join(it, "rank2_trace.json.gz"))
    os.unlink(os.path.join(it, "rank2_trace_compacted.json.gz"))
    result = env.sweep(root, "--quiet")
    checks.equal(result.returncode, 1, f"sweep with a rank and its copy gone: {e2e.describe(result)}")
    checks.equal(hashlib.md5(open(merged, "rb").read()).hexdigest(), before, "the merged output of three ranks")
    row = merge_row(root)
    checks.check(row.get("status") == "failed" and "covers 3 ranks and only 2 are here" in row.get("error", ""),
                 f"merge row: {row}")
    # A copy without restore data cannot stand in for its rank: the merge is not done either.
    root = os.path.join(work, "no_restore_data")
    it = three_rank_iteration(root, "a/iteration_1")
    checks.equal(env.sweep(root, "--quiet", "--no-restore-data").returncode, 0, "sweep --no-restore-data")
    merged = os.path.join(it, MERGED)
    before = hashlib.md5(open(merged, "rb").read()).hexdigest()
    os.unlink(os.path.join(it, "rank2_trace.json.gz"))
    result = env.sweep(root, "--quiet", "--no-restore-data")
    checks.equal(result.returncode, 1, f"sweep with a copy that cannot restore: {e2e.describe(result)}")
    checks.check("holds no restore data" in result.stderr, f"the copy's failure: {result.stderr[:300]!r}")
    checks.equal(hashlib.md5(open(merged, "rb").read()).hexdigest(), before, "the merged output, kept")


def main():
    args = e2e.parse_args(__doc__)
    checks = e2e.Checks("remove_originals")
    env = Env(args, checks)
    return e2e.run_tests(checks, env, "remove-originals", [
        test_corpus_tree_originals_are_removed_and_restore_md5_equal,
        test_without_the_flag_nothing_is_removed,
        test_up_to_date_outputs_qualify,
        test_failed_merge_keeps_the_whole_iteration,
        test_hard_linked_original_is_kept,
        test_symlinked_rank_is_kept,
        test_original_changed_after_it_was_read_is_kept,
        test_damaged_restore_data_is_kept_and_fails,
        test_no_restore_data_with_the_flag_is_a_usage_error,
        test_dry_run_removes_nothing,
        test_copy_replaced_after_verification_is_kept,
        test_rank_changed_before_the_merge_read_it_is_kept_not_unfaithful,
        test_iteration_reached_through_a_directory_link_is_kept,
        test_iteration_with_an_unaccounted_rank_is_kept,
        test_a_rank_file_gone_is_merged_from_its_copy,
        test_a_merge_never_shrinks,
    ])


if __name__ == "__main__":
    sys.exit(main())
