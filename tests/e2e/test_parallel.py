#!/usr/bin/env python3
"""End-to-end tests of `--jobs` on compact and merge and of the gzip members (issue 11): the
output is the same byte for byte for any number of threads, a .gz output larger than one
member is several gzip members that every reader takes in turn, `--single-gzip-member`
writes one with the same text, and a merge whose ranks run concurrently reports the same
failure as one that runs them one after another.

The corpus tests need TRACELANE_SHARED (skipped loudly without it).

usage: test_parallel.py --tracelane BINARY [--repo-root DIR]
"""
import gzip
import os
import shutil
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_common as e2e  # noqa: E402

MERGED = "pp_traces_merged_compacted.json.gz"
# The largest corpus trace: its output text is several members.
BIG = "tracelens_hip_graph_capture_mi300.json.gz"


def member_texts(path):
    """The decompressed text of each gzip member of `path`, in order."""
    data, texts = open(path, "rb").read(), []
    while data:
        decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
        texts.append(decompressor.decompress(data))
        if not decompressor.eof:
            raise ValueError(f"{path}: a truncated member")
        data = decompressor.unused_data
    return texts


def members(path):
    """The decompressed size of each gzip member of `path`, in order."""
    return [len(text) for text in member_texts(path)]


class Env:
    def __init__(self, args, checks, shared):
        self.args, self.checks, self.shared = args, checks, shared

    def run(self, *argv):
        return e2e.tracelane(self.args, *argv)


def test_compact_is_the_same_for_any_jobs_and_members_read_as_one_text(env, work):
    checks = env.checks
    trace = os.path.join(env.shared, "corpus", "single", BIG)
    outputs = {}
    for name, extra in (("jobs1", ["--jobs", "1"]), ("jobs2", ["--jobs", "2"]), ("jobs3", ["-j", "3"]),
                        ("single", ["--single-gzip-member", "--jobs", "2"])):
        out = os.path.join(work, f"{name}.json.gz")
        result = env.run("compact", trace, "-o", out, *extra)
        checks.equal(result.returncode, 0, f"compact {extra}: {e2e.describe(result)}")
        outputs[name] = out
    same = [open(outputs[n], "rb").read() for n in ("jobs1", "jobs2", "jobs3")]
    checks.check(same[0] == same[1] == same[2], "the .gz bytes of --jobs 1, 2 and 3 are equal")
    sizes = members(outputs["jobs2"])
    checks.check(len(sizes) > 1, f"several members: {sizes}")
    # Blocks of whole events of about 4 MiB of text (a block closes on the event that takes
    # it to 4 MiB): each member but the last ends an event and the next starts one.
    checks.check(all(3 << 20 <= size <= (4 << 20) + (64 << 10) for size in sizes[:-1]),
                 f"about 4 MiB of text a member but the last: {sizes}")
    texts = member_texts(outputs["jobs2"])
    checks.check(all(t.endswith(b"}") for t in texts[:-1]) and all(t.startswith(b",\n  {") for t in texts[1:]),
                 "members end and start on event boundaries")
    checks.equal(len(members(outputs["single"])), 1, "members with --single-gzip-member")
    text = gzip.decompress(open(outputs["jobs2"], "rb").read())
    checks.check(text == gzip.decompress(open(outputs["single"], "rb").read()), "the same text in one member")
    single = os.path.getsize(outputs["single"])
    checks.check(os.path.getsize(outputs["jobs2"]) < single * 1.01, "members cost under 1% in size")


def test_merge_is_the_same_for_any_jobs(env, work):
    checks = env.checks
    outputs = []
    for jobs in ("1", "2"):
        it = os.path.join(work, f"pp4_{jobs}")
        os.mkdir(it)
        for name in os.listdir(os.path.join(env.shared, "golden", "pp4")):
            if name.startswith("rank"):
                shutil.copy(os.path.join(env.shared, "golden", "pp4", name), it)
        result = env.run("merge", it, "--jobs", jobs, "--timings")
        checks.equal(result.returncode, 0, f"merge --jobs {jobs}: {e2e.describe(result)}")
        if jobs == "2":
            checks.check("ranks (4, concurrently)" in result.stderr, f"--timings names the concurrent ranks: {result.stderr!r}")
        outputs.append(open(os.path.join(it, MERGED), "rb").read())
    checks.check(outputs[0] == outputs[1], "merged .gz bytes of --jobs 1 and 2 are equal")


def test_a_concurrent_merge_reports_the_first_failing_rank_in_file_order(env, work):
    checks = env.checks
    results = []
    for jobs in ("1", "2"):
        it = os.path.join(work, f"it_{jobs}")
        for rank in range(4):
            data = gzip.compress(e2e.synthetic_rank_trace(rank, 300), 1, mtime=0)
            if rank in (1, 3):  # two corrupt ranks: rank1's is the error either way
                data = data[:40] + b"\xff" * 40 + data[80:]
            e2e.write_file(os.path.join(it, f"rank{rank}_trace.json.gz"), data)
        results.append(env.run("merge", it, "--jobs", jobs))
    checks.equal(results[0].returncode, 2, f"merge --jobs 1: {e2e.describe(results[0])}")
    checks.equal(results[1].returncode, results[0].returncode, "exit of --jobs 2")
    checks.equal(results[1].stderr.replace("it_2", "it_1"), results[0].stderr, "stderr of --jobs 2")
    checks.check("rank1_trace.json.gz" in results[0].stderr, f"names rank1: {results[0].stderr!r}")
    checks.check(not os.path.exists(os.path.join(work, "it_2", MERGED)), "nothing written")


def test_jobs_below_one_is_a_usage_error(env, work):
    checks = env.checks
    trace = e2e.write_file(os.path.join(work, "rank0_trace.json"), e2e.synthetic_rank_trace(0, 10))
    for command in ("compact", "merge"):
        result = env.run(command, trace, "--jobs", "0")
        checks.equal(result.returncode, 2, f"{command} --jobs 0: {e2e.describe(result)}")
        checks.check("--jobs must be at least 1" in result.stderr, f"message: {result.stderr!r}")


def main():
    args = e2e.parse_args(__doc__)
    shared = e2e.shared_dir(args)
    checks = e2e.Checks("parallel")
    return e2e.run_tests(checks, Env(args, checks, shared), "parallel", [
        test_compact_is_the_same_for_any_jobs_and_members_read_as_one_text,
        test_merge_is_the_same_for_any_jobs,
        test_a_concurrent_merge_reports_the_first_failing_rank_in_file_order,
        test_jobs_below_one_is_a_usage_error,
    ])


if __name__ == "__main__":
    sys.exit(main())
