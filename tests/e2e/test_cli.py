#!/usr/bin/env python3
"""tracelane's command line, end to end, on synthetic traces (needs no corpus).

Default output names, refusing an existing output (exit 2, untouched) unless --overwrite,
--level 0..12 giving one gzip member, .json outputs uncompressed, --help/--version, usage
errors, one-line "path: reason" errors for bad inputs with no output file, merge errors,
and no temporary files ('.'-names) left behind after success or failure.
"""

import gzip
import json
import os
import shutil
import sys
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_common as e2e  # noqa: E402

MERGED_NAME = "pp_traces_merged_compacted.json.gz"


def synthetic_trace(rank=0, base_ns=1_700_000_000_000_000_000, kernels=3000, with_base=True):
    """A small Kineto-like trace: CPU launches, kernels on three streams (some overlapping,
    so that more than one lane is needed), memcpys, ac2g flows, GPU annotations."""
    events = [
        {"name": "process_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}},
        {"name": "process_name", "ph": "M", "pid": 100, "tid": 0, "args": {"name": "python"}},
        {"name": "thread_name", "ph": "M", "pid": 0, "tid": 7, "args": {"name": "stream 7"}},
        {"name": "thread_name", "ph": "M", "pid": 100, "tid": 100, "args": {"name": "thread 100"}},
    ]
    t = 1000.0
    for k in range(kernels):
        stream = (7, 8, 9)[k % 3]
        start = t + (k % 3) * 0.25  # streams overlap each other
        cat = "gpu_memcpy" if k % 50 == 0 else "kernel"
        name = "Memcpy HtoD" if cat == "gpu_memcpy" else f"void kernel_{k % 17}<float>(int)"
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 100,
                       "ts": float(f"{start - 5:.3f}"), "dur": 2.5, "args": {"correlation": k}})
        events.append({"ph": "s", "cat": "ac2g", "name": "ac2g", "id": k, "pid": 100, "tid": 100,
                       "ts": float(f"{start - 4:.3f}")})
        events.append({"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream, "ts": float(f"{start:.3f}"),
                       "dur": 1.125, "args": {"stream": stream, "correlation": k, "device": 0}})
        events.append({"ph": "f", "cat": "ac2g", "name": "ac2g", "id": k, "pid": 0, "tid": stream,
                       "ts": float(f"{start:.3f}"), "bp": "e"})
        if k % 100 == 0:
            events.append({"ph": "X", "cat": "gpu_user_annotation", "name": f"step{k // 100}", "pid": 0,
                           "tid": stream, "ts": float(f"{start:.3f}"), "dur": 30.0, "args": {}})
        if k % 3 == 2:
            t += 2.0
    trace = {"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2},
             "traceEvents": events, "traceName": f"rank{rank}"}
    if with_base:
        trace["baseTimeNanoseconds"] = base_ns + rank * 123_456
    return trace


def write_json(path, trace, compress=False):
    data = json.dumps(trace).encode()
    with open(path, "wb") as handle:
        handle.write(gzip.compress(data) if compress else data)


def file_state(path):
    with open(path, "rb") as handle:
        data = handle.read()
    return data, os.stat(path).st_mtime_ns


def single_gzip_member(data):
    """True when data is exactly one gzip member (Perfetto reads only the first)."""
    if data[:2] != b"\x1f\x8b":
        return False, "not gzip"
    decompressor = zlib.decompressobj(wbits=31)
    first = decompressor.decompress(data) + decompressor.flush()
    if not decompressor.eof:
        return False, "first member does not end"
    if decompressor.unused_data:
        return False, f"{len(decompressor.unused_data)} bytes after the first member"
    return first == gzip.decompress(data), "first member differs from the whole stream"


class Cli:
    def __init__(self, args, checks):
        self.args, self.checks = args, checks

    def run(self, *argv, cwd=None):
        return e2e.tracelane(self.args, *argv, cwd=cwd)

    def no_hidden(self, directory, what):
        self.checks.check(not e2e.hidden_files(directory),
                          f"{what}: temporary files left in {directory}: {e2e.hidden_files(directory)}")

    def ok(self, result, what):
        return self.checks.check(result.returncode == 0, f"{what}: expected success, {e2e.describe(result)}")

    def one_line_error(self, result, prefixes, what, rc=None, contains=None):
        lines = result.stderr.strip().splitlines()
        prefixes = tuple(p + ": " for p in prefixes)
        self.checks.check(result.returncode != 0 if rc is None else result.returncode == rc,
                          f"{what}: expected exit {rc if rc is not None else 'non-zero'}, {e2e.describe(result)}")
        good = len(lines) == 1 and lines[0].startswith(prefixes)
        self.checks.check(good, f"{what}: stderr must be one line starting with {prefixes}, got {result.stderr!r}")
        if contains:
            self.checks.check(contains in result.stderr, f"{what}: stderr lacks {contains!r}: {result.stderr!r}")
        self.checks.check(result.stdout.strip() == "", f"{what}: stdout on failure: {result.stdout[:200]!r}")


def test_default_names(cli, work):
    checks = cli.checks
    d = os.path.join(work, "names")
    os.mkdir(d)
    trace = synthetic_trace()
    write_json(os.path.join(d, "X.json.gz"), trace, compress=True)
    write_json(os.path.join(d, "Y.json"), trace)
    write_json(os.path.join(d, "trace_dump"), trace, compress=True)  # neither .json nor .json.gz
    for name, expected, gz in (("X.json.gz", "X_compacted.json.gz", True), ("Y.json", "Y_compacted.json", False),
                               ("trace_dump", "trace_dump_compacted.json.gz", True)):
        result = cli.run("compact", os.path.join(d, name))
        out = os.path.join(d, expected)
        if cli.ok(result, f"default name for {name}") and checks.check(
                os.path.isfile(out), f"{name}: default output {expected} not written; dir has {sorted(os.listdir(d))}"):
            summary = e2e.summary_from_stdout(checks, result, f"compact {name}")
            if summary:
                checks.equal(os.path.abspath(summary.get("output")), out, f"{name}: summary output")
                checks.equal(summary.get("input"), os.path.join(d, name), f"{name}: summary input")
            with open(out, "rb") as handle:
                head = handle.read(2)
            checks.check((head == b"\x1f\x8b") == gz, f"{name}: {expected} must be {'gzip' if gz else 'plain JSON'}")
    # a relative input name writes beside it, in the working directory
    os.mkdir(os.path.join(d, "rel"))
    write_json(os.path.join(d, "rel", "Z.json"), trace)
    result = cli.run("compact", "Z.json", cwd=os.path.join(d, "rel"))
    cli.ok(result, "relative input")
    checks.check(os.path.isfile(os.path.join(d, "rel", "Z_compacted.json")), "relative input: Z_compacted.json not written")
    cli.no_hidden(d, "default names")
    cli.no_hidden(os.path.join(d, "rel"), "default names")


def make_ranks(directory, with_base=(True, True), compress=(False, True)):
    os.makedirs(directory, exist_ok=True)
    paths = []
    for rank, (base, gz) in enumerate(zip(with_base, compress)):
        path = os.path.join(directory, f"rank{rank}_trace.json" + (".gz" if gz else ""))
        write_json(path, synthetic_trace(rank=rank, kernels=600, with_base=base), compress=gz)
        paths.append(path)
    return paths


def test_merge(cli, work):
    checks = cli.checks
    d = os.path.join(work, "ranks")
    paths = make_ranks(d)
    out = os.path.join(d, MERGED_NAME)
    result = cli.run("merge", d)
    if cli.ok(result, "merge DIR") and checks.check(os.path.isfile(out), f"merge: {MERGED_NAME} not in the rank dir"):
        summary = e2e.summary_from_stdout(checks, result, "merge")
        if summary:
            checks.equal(summary.get("input"), ["rank0_trace.json", "rank1_trace.json.gz"], "merge summary input")
            checks.equal(os.path.abspath(summary.get("output")), out, "merge summary output")
            checks.equal(summary.get("time_alignment"), "baseTimeNanoseconds", "merge time_alignment")
        ok, why = single_gzip_member(open(out, "rb").read())
        checks.check(ok, f"merge output is not a single gzip member: {why}")
    cli.no_hidden(d, "merge")

    # an existing output is refused (exit 2) and left untouched, unless --overwrite
    before = file_state(out)
    time.sleep(0.01)
    result = cli.run("merge", paths[0])  # one rank file names its directory
    cli.one_line_error(result, (out,), "merge onto an existing output", rc=2)
    checks.check(file_state(out) == before, "merge: an existing output was modified without --overwrite")
    result = cli.run("merge", paths[1], "--overwrite")
    cli.ok(result, "merge ONE_RANK_FILE --overwrite")
    checks.check(file_state(out)[0] != b"" and gzip.decompress(file_state(out)[0])[:1] == b"{",
                 "merge --overwrite: output is not a gzip JSON")
    cli.no_hidden(d, "merge --overwrite")

    # -o with .json: uncompressed; --level 0 and 12 work
    for level in ("0", "12"):
        o = os.path.join(work, f"merged_l{level}.json.gz")
        result = cli.run("merge", d, "-o", o, "--level", level)
        if cli.ok(result, f"merge --level {level}"):
            ok, why = single_gzip_member(open(o, "rb").read())
            checks.check(ok, f"merge --level {level}: not a single gzip member: {why}")
    o = os.path.join(work, "merged.json")
    if cli.ok(cli.run("merge", d, "-o", o), "merge -o merged.json"):
        data = open(o, "rb").read()
        checks.check(data[:1] == b"{" and isinstance(json.loads(data), dict), "merge -o .json: not plain JSON")

    # SPEC 9.7: no input has baseTimeNanoseconds -> absolute timestamps, no key written
    d2 = os.path.join(work, "ranks_nobase")
    make_ranks(d2, with_base=(False, False))
    result = cli.run("merge", d2)
    if cli.ok(result, "merge without baseTimeNanoseconds"):
        summary = e2e.summary_from_stdout(checks, result, "merge without base")
        if summary:
            checks.equal(summary.get("time_alignment"), "absolute timestamps", "merge without base: time_alignment")
            checks.equal(set((summary.get("time_offsets_us") or {}).values()), {0}, "merge without base: offsets")
        merged = json.loads(gzip.decompress(open(os.path.join(d2, MERGED_NAME), "rb").read()))
        checks.check("baseTimeNanoseconds" not in merged, "merge without base: wrote a baseTimeNanoseconds key")
    cli.no_hidden(d2, "merge without base")

    # only some ranks have baseTimeNanoseconds: fail naming the file without it
    d3 = os.path.join(work, "ranks_partial")
    paths3 = make_ranks(d3, with_base=(True, False))
    result = cli.run("merge", d3)
    cli.one_line_error(result, (d3, paths3[1]), "merge with baseTimeNanoseconds on some ranks only", rc=2,
                       contains="rank1_trace.json.gz")
    checks.check(not os.path.exists(os.path.join(d3, MERGED_NAME)), "merge partial base: output written")
    cli.no_hidden(d3, "merge partial base")

    # a rank without an integer distributedInfo.rank: exit 2, the message names that file
    d6 = os.path.join(work, "ranks_norank")
    paths6 = make_ranks(d6, compress=(False, False))
    broken = synthetic_trace(rank=1, kernels=60)
    del broken["distributedInfo"]["rank"]
    write_json(paths6[1], broken)
    result = cli.run("merge", d6)
    cli.one_line_error(result, (paths6[1],), "merge with a rank lacking distributedInfo.rank", rc=2)
    checks.check(not os.path.exists(os.path.join(d6, MERGED_NAME)), "merge without rank: output written")
    cli.no_hidden(d6, "merge without rank")

    # a single rank file is not a merge
    d4 = os.path.join(work, "ranks_single")
    paths4 = make_ranks(d4, with_base=(True,), compress=(False,))
    for arg in (d4, paths4[0]):
        result = cli.run("merge", arg)
        cli.one_line_error(result, (d4, paths4[0]), f"merge with one rank file ({os.path.basename(arg)})", rc=2)
    checks.check(not os.path.exists(os.path.join(d4, MERGED_NAME)), "merge single rank: output written")
    cli.no_hidden(d4, "merge single rank")

    # a bad rank file: exit 2, the message names that file
    d5 = os.path.join(work, "ranks_bad")
    paths5 = make_ranks(d5)
    with open(paths5[0], "w") as handle:
        handle.write('{"traceEvents": [')
    result = cli.run("merge", d5)
    cli.one_line_error(result, (paths5[0],), "merge with an invalid rank file", rc=2)
    checks.check(not os.path.exists(os.path.join(d5, MERGED_NAME)), "merge bad rank: output written")
    cli.no_hidden(d5, "merge bad rank")


def test_overwrite_and_levels(cli, work):
    checks = cli.checks
    d = os.path.join(work, "levels")
    os.mkdir(d)
    src = os.path.join(d, "in.json.gz")
    write_json(src, synthetic_trace(), compress=True)
    out = os.path.join(d, "out.json.gz")
    with open(out, "wb") as handle:
        handle.write(b"sentinel: not tracelane's\n")
    before = file_state(out)
    time.sleep(0.01)
    result = cli.run("compact", src, "-o", out)
    cli.one_line_error(result, (out,), "compact onto an existing output", rc=2)
    checks.check(file_state(out) == before, "compact: an existing output was modified without --overwrite")
    # refused before the input is read (SPEC 10): even a missing input gives exit 2
    result = cli.run("compact", os.path.join(d, "missing.json"), "-o", out)
    checks.equal(result.returncode, 2, "compact onto an existing output with a missing input: exit code")
    checks.check(file_state(out) == before, "compact: an existing output was modified")
    cli.no_hidden(d, "existing output")

    texts = {}
    for level in (None, "0", "12"):
        extra = ["--level", level] if level else []
        result = cli.run("compact", src, "-o", out, "--overwrite", *extra)
        what = f"compact --overwrite --level {level or 'default'}"
        if not cli.ok(result, what):
            continue
        data = open(out, "rb").read()
        ok, why = single_gzip_member(data)
        checks.check(ok, f"{what}: not a single gzip member: {why}")
        if ok:
            texts[level] = gzip.decompress(data)
        cli.no_hidden(d, what)
    if len(texts) == 3:
        checks.check(texts["0"] == texts["12"] == texts[None], "compact: the JSON text depends on --level")
        checks.check(texts["0"] != before[0], "compact --overwrite did not replace the output")
    sizes = {}
    for level in ("0", "12"):
        o = os.path.join(d, f"l{level}.json.gz")
        if cli.ok(cli.run("compact", src, "-o", o, "--level", level), f"compact --level {level}"):
            sizes[level] = os.path.getsize(o)
    if len(sizes) == 2:
        checks.check(sizes["0"] > sizes["12"], f"--level 0 ({sizes['0']} B) should be larger than --level 12 ({sizes['12']} B)")
    for level in ("13", "-1"):
        o = os.path.join(d, f"bad{level}.json.gz")
        result = cli.run("compact", src, "-o", o, f"--level={level}")
        checks.equal(result.returncode, 2, f"compact --level {level}: exit code ({e2e.describe(result)})")
        checks.check(not os.path.exists(o), f"compact --level {level}: output written")

    # .json output is uncompressed, whatever the input
    o = os.path.join(d, "plain.json")
    if cli.ok(cli.run("compact", src, "-o", o, "--level", "12"), "compact -o plain.json"):
        data = open(o, "rb").read()
        checks.check(data[:1] == b"{", "compact -o .json: output is not plain JSON")
        checks.check(json.loads(data).get("cuda_graph_stream_compaction") is not None,
                     "compact -o .json: no cuda_graph_stream_compaction")
        checks.check(texts.get(None) in (None, data), "compact: .json and .json.gz outputs differ in content")
    # --no-pp-flows is accepted
    cli.ok(cli.run("compact", src, "-o", os.path.join(d, "nopp.json.gz"), "--no-pp-flows"), "compact --no-pp-flows")
    cli.no_hidden(d, "levels")


def test_help_and_usage(cli, work):
    checks = cli.checks
    for argv in (["--help"], ["--version"], ["compact", "--help"], ["merge", "--help"]):
        result = cli.run(*argv)
        checks.check(result.returncode == 0 and result.stdout.strip(),
                     f"tracelane {' '.join(argv)}: expected exit 0 with output, {e2e.describe(result)}")
    version = cli.run("--version").stdout
    checks.check(version.startswith("tracelane "), f"--version prints 'tracelane <version>', got {version!r}")
    src = os.path.join(work, "usage.json")
    write_json(src, synthetic_trace(kernels=30))
    for argv, what in ((["compact", src, "--bogus"], "unknown option"),
                       (["merge", work, "--bogus"], "unknown merge option"),
                       (["frobnicate"], "unknown command"),
                       (["compact"], "missing TRACE"),
                       ([], "no command")):
        result = cli.run(*argv)
        checks.equal(result.returncode, 2, f"tracelane {' '.join(argv)} ({what}): exit code")
        checks.check("usage" in result.stderr.lower(), f"{what}: no usage on stderr: {result.stderr[:200]!r}")
    checks.check(not os.path.exists(os.path.join(work, "usage_compacted.json")), "usage error wrote an output")
    cli.no_hidden(work, "usage")


def test_bad_inputs(cli, work):
    checks = cli.checks
    d = os.path.join(work, "bad")
    os.mkdir(d)
    good = json.dumps(synthetic_trace(kernels=300)).encode()
    good_gz = gzip.compress(good)
    crc = bytearray(good_gz)
    crc[-6] ^= 0xFF  # the CRC32 in the trailer (bytes -8..-5)
    no_stream = synthetic_trace(kernels=30)
    victim = next(i for i, e in enumerate(no_stream["traceEvents"]) if e.get("cat") == "kernel")
    del no_stream["traceEvents"][victim]["args"]["stream"]
    cases = [
        ("empty.json", b"", None),
        ("truncated.json.gz", good_gz[:len(good_gz) // 2], None),
        ("bad_crc.json.gz", bytes(crc), None),
        ("invalid.json", good[:len(good) // 2], None),
        ("not_json.json", b"hello, world\n", None),
        ("array.json", b'[1, 2]', "event #0"),  # a JSON Array Format trace whose events are not objects
        ("scalar.json", b'42', "not a JSON object or array"),
        ("events_not_list.json", b'{"traceEvents": {"ph": "X"}}', None),
        ("no_stream.json", json.dumps(no_stream).encode(), "event #"),
        ("trailing.json", good + b"\n}garbage", None),
        ("trailing_gz.json.gz", gzip.compress(good + b" 42"), None),
    ]
    for name, data, contains in cases:
        path = os.path.join(d, name)
        with open(path, "wb") as handle:
            handle.write(data)
    for name, data, contains in cases:
        path = os.path.join(d, name)
        out = os.path.join(d, "out_" + name.replace(".gz", "") + ".gz")
        result = cli.run("compact", path, "-o", out)
        print(f"  {name}: rc={result.returncode} {result.stderr.strip()!r}")
        cli.one_line_error(result, (path,), f"compact {name}", rc=1, contains=contains)
        checks.check(not os.path.exists(out), f"compact {name}: output file created")
        # the default output name too
        result = cli.run("compact", path)
        checks.equal(result.returncode, 1, f"compact {name} (default output): exit code")
        cli.no_hidden(d, f"compact {name}")
    # a directory given as TRACE
    sub = os.path.join(d, "a_directory.json")
    os.mkdir(sub)
    result = cli.run("compact", sub, "-o", os.path.join(d, "dir_out.json.gz"))
    cli.one_line_error(result, (sub,), "compact DIRECTORY", rc=1)
    result = cli.run("compact", os.path.join(d, "does_not_exist.json"), "-o", os.path.join(d, "dne_out.json.gz"))
    cli.one_line_error(result, (os.path.join(d, "does_not_exist.json"),), "compact MISSING_FILE", rc=1)
    left = sorted(n for n in os.listdir(d) if "out" in n or "_compacted" in n)
    checks.check(not left, f"bad inputs: output files created: {left}")
    cli.no_hidden(d, "bad inputs")


def timing_phases(stderr):
    """The phase names of --timings' lines ("timing: <indent><name> ..."), indented by depth."""
    phases = []
    for line in stderr.splitlines():
        if line.startswith("timing: "):
            rest = line[len("timing: "):]
            name = rest.strip().split()[0]
            phases.append(" " * (len(rest) - len(rest.lstrip(" "))) + name)
    return phases


def test_timings(cli, work):
    """--timings prints the job's steps as a tree on stderr, after the work; stdout keeps
    the summary alone."""
    checks = cli.checks
    d = os.path.join(work, "timings")
    os.makedirs(d)
    src = os.path.join(d, "rank0_trace.json")
    write_json(src, synthetic_trace(rank=0, kernels=300))
    write_json(os.path.join(d, "rank1_trace.json"), synthetic_trace(rank=1, kernels=300))
    result = cli.run("compact", src, "-o", os.path.join(d, "one.json.gz"), "--timings")
    if cli.ok(result, "compact --timings"):
        json.loads(result.stdout)  # the summary, nothing else
        top = [p for p in timing_phases(result.stderr) if not p.startswith(" ")]
        checks.equal(top, ["read", "parse", "compact", "figures", "write"],
                     "compact --timings: top-level phases")
        # The streamed write: what is left of the restore data once the blocks are out, and
        # the CPU time the blocks took serialising and compressing.
        phases = timing_phases(result.stderr)
        write_at = phases.index("write")
        checks.equal(phases[write_at + 1:write_at + 4], ["  restore", "  serialise", "  compress"],
                     "compact --timings: the streamed write's phases")
    # One thread: the ranks one after another, each timed (with more, one phase for all).
    result = cli.run("merge", d, "-o", os.path.join(d, "merged.json.gz"), "--timings", "--jobs", "1")
    if cli.ok(result, "merge --timings"):
        json.loads(result.stdout)
        phases = timing_phases(result.stderr)
        top = [p for p in phases if not p.startswith(" ")]
        checks.equal(top, ["rank0_trace.json", "rank1_trace.json", "merge"],
                     "merge --timings: top-level phases")
        checks.check("    compress" in phases and phases.index("    compress") > phases.index("  serialise"),
                     f"merge --timings: the streamed write inside the merge's serialise: {phases}")
        for step in ("read", "parse", "compact"):
            checks.equal(phases.count("  " + step), 2, f"merge --timings: {step} once per rank")
    result = cli.run("compact", src, "-o", os.path.join(d, "quiet.json.gz"))
    checks.check(cli.ok(result, "compact") and "timing:" not in result.stderr,
                 f"compact without --timings printed timings: {result.stderr[:200]!r}")
    cli.no_hidden(d, "timings")


def test_more_jobs_than_cores(cli, work):
    """--jobs beyond the cores: the work is done on the cores there are, and --quiet stays
    quiet (oneTBB warned on stderr about the workers it would not start)."""
    checks = cli.checks
    d = os.path.join(work, "jobs", "profile_trace", "iteration_1")
    rank0 = make_ranks(d)[0]
    root = os.path.join(work, "jobs")
    result = cli.run("sweep", root, "--jobs", "100000", "--quiet")
    if cli.ok(result, "sweep --jobs 100000 --quiet"):
        checks.equal(result.stderr, "", "sweep --jobs 100000 --quiet: stderr")
    for command, target in (("compact", rank0), ("merge", d)):
        out = os.path.join(work, f"{command}_many_jobs.json.gz")
        result = cli.run(command, target, "-o", out, "--jobs", "100000")
        if cli.ok(result, f"{command} --jobs 100000"):
            checks.equal(result.stderr, "", f"{command} --jobs 100000: stderr")


def test_small_events_memory(cli, work):
    """A trace of many small events: with one thread the list is cut as it is read, and its
    event records are reserved from the density read so far, not grown by doubling (which
    copies every record while both copies live). Its peak stays that of two threads, which
    reserve them from a scan's count (a 124 MB list of 20-byte events had peaked at 848 MB
    against 599)."""
    checks = cli.checks
    path = os.path.join(work, "small_events.json")
    count = 2_000_000
    with open(path, "w") as handle:
        handle.write('{"traceEvents": [\n')
        handle.write(",\n".join('{"ph":"i","ts":%d}' % i for i in range(count)))
        handle.write("\n]}\n")
    peaks = {}
    for jobs in ("1", "2"):
        out = os.path.join(work, f"small_events_{jobs}.json.gz")
        code, peaks[jobs] = e2e.peak_rss_kib([cli.args.tracelane, "compact", path, "-o", out, "--jobs", jobs])
        checks.equal(code, 0, f"compact --jobs {jobs} of {count} small events: exit code")
    checks.check(peaks["1"] <= peaks["2"] * 1.15,
                 f"compact --jobs 1 of {count} small events peaked at {peaks['1']} KiB, --jobs 2 at {peaks['2']} KiB")
    os.remove(path)


def main():
    args = e2e.parse_args(__doc__)
    checks = e2e.Checks("cli")
    cli = Cli(args, checks)
    return e2e.run_tests(checks, cli, "cli", (test_help_and_usage, test_default_names, test_overwrite_and_levels, test_bad_inputs, test_merge,
                                                   test_timings, test_more_jobs_than_cores, test_small_events_memory))


if __name__ == "__main__":
    sys.exit(main())
