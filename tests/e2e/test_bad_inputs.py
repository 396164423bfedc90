#!/usr/bin/env python3
"""Bad inputs, end to end (needs no corpus): every class of malformed trace that users
meet, each with exit 1 from `compact`, one stderr line starting with "<path>: ", nothing
on stdout and no output or temporary file left; plus the inputs JSON allows that a user
expects to work (exponent numbers, duplicate keys: the last one wins, as in Python), and
the sweep's handling of odd rank files (symlink loops, symlinks to directories,
directories named like traces, unreadable files, files that vanish or grow mid-sweep).

The cases test_cli.py already covers (empty .json, truncated gzip, bad CRC, truncated
JSON, non-JSON, a top-level list of non-objects, traceEvents not a list, a kernel without args.stream,
trailing garbage, a directory named a.json, a missing file) are not repeated here.
"""

import gzip
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_common as e2e  # noqa: E402

KERNEL = ('{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1.000, "dur": 2.500, '
          '"args": {"stream": 7, "correlation": 1}}')
CPU_OP = '{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 100, "tid": 100, "ts": 0.5, "dur": 3}'


def doc(*events, top='"schemaVersion": 1'):
    return ("{" + top + ', "traceEvents": [\n' + ",\n".join(events) + "\n]}").encode()


def kernel(**replace):
    """KERNEL with some value texts replaced: kernel(ts='"1"') -> "ts": "1"."""
    text = KERNEL
    for key, value in replace.items():
        old = {"ts": '"ts": 1.000', "dur": '"dur": 2.500', "pid": '"pid": 0', "tid": '"tid": 7',
               "name": '"name": "k"', "stream": '"stream": 7', "args": '"args": {"stream": 7, "correlation": 1}'}[key]
        text = text.replace(old, f'"{key}": {value}' if value is not None else "").replace("{, ", "{").replace(", }", "}")
    return text


GOOD = doc(CPU_OP, KERNEL, kernel(ts="2.000", tid="8", stream="8"))

# name, file bytes, text the message must contain (lower-cased), or None
BAD_COMPACT = [
    ("top_string.json", b'"a string"', "not a json object"),
    ("top_number.json", b"42", "not a json object"),
    ("top_null.json", b"null", "not a json object"),
    ("events_null.json", b'{"traceEvents": null}', "traceevents"),
    ("events_string.json", b'{"traceEvents": "[]"}', "traceevents"),
    ("event_number.json", doc(KERNEL, "1"), "event #1"),
    ("event_string.json", doc(KERNEL, '"x"'), "event #1"),
    ("event_array.json", doc("[]", KERNEL), "event #0"),
    ("event_null.json", doc(KERNEL, "null"), "event #1"),
    # numbers tracelane cannot hold exactly
    ("pid_too_big.json", doc(kernel(pid="99999999999999999999")), "event #0"),
    ("tid_too_big.json", doc(kernel(tid="99999999999999999999", stream="99999999999999999999")), "event #0"),
    ("ts_too_big.json", doc(kernel(ts="99999999999999999999999")), "event #0"),
    ("ts_ns_overflow.json", doc(kernel(ts="9300000000000000")), "event #0"),
    ("end_overflow.json", doc(kernel(ts="9223372036854775", dur="9223372036854775")), "event #0"),
    ("ts_exp_huge.json", doc(kernel(ts="1e300")), "1e300 is beyond"),
    ("dur_too_big.json", doc(kernel(dur="3000000000000001")), "is beyond"),
    ("ts_string.json", doc(kernel(ts='"1.000"')), "event #0"),
    ("dur_string.json", doc(kernel(dur='"2.5"')), "event #0"),
    ("ts_null.json", doc(kernel(ts="null")), "event #0"),
    ("nan.json", doc(kernel(ts="NaN")), None),
    ("nan_in_instant.json", doc(KERNEL, '{"ph": "i", "name": "x", "pid": 1, "tid": 1, "ts": NaN}'), "event #1"),
    ("bad_number_pid.json", doc(KERNEL, '{"ph": "i", "name": "x", "pid": 1.5R1, "tid": 1, "ts": 1}'), "event #1"),
    ("infinity.json", doc(kernel(dur="Infinity")), None),
    ("minus_infinity.json", doc(kernel(ts="-Infinity")), None),
    ("bad_utf8_name.json", doc(CPU_OP, KERNEL).replace(b'"k"', b'"k\xff\xfe"'), "utf-8"),
    ("bad_utf8_other_event.json", doc(CPU_OP.replace('aten::mm', 'aten::\xe9').encode('latin-1').decode('latin-1'),
                                      KERNEL).replace(b"aten::\xc3\xa9", b"aten::\xe9"), "utf-8"),
    # JSON sets no depth limit, but the output's readers do (Python, simdjson's DOM in
    # `tracelane check`, Perfetto): more than 1024 levels is refused up front.
    ("deep_args.json", doc(kernel(args='{"stream": 7, "x": ' + "[" * 10000 + "]" * 10000 + "}")), "deeper than 1024"),
    ("deep_args_objects.json", doc(CPU_OP.replace('"dur": 3}', '"dur": 3, "args": ' + '{"a": ' * 10000 + "1" + "}" * 10001),
                                   KERNEL), "event #0 nests deeper"),
    ("deep_top_level_key.json", b'{"deviceProperties": ' + b"[" * 1100 + b"]" * 1100 + b', "traceEvents": [' +
     KERNEL.encode() + b"]}", "deviceproperties"),
    ("deep_top.json", b"[" * 10000 + b"]" * 10000, None),
    ("kernel_no_args.json", doc(kernel(args=None)), "event #0"),
    ("memcpy_no_args.json", doc(KERNEL, kernel(args=None).replace('"kernel"', '"gpu_memcpy"')), "event #1"),
    ("negative_dur.json", doc(KERNEL, kernel(dur="-0.001")), "event #1"),
    ("tid_stream_mismatch.json", doc(KERNEL, kernel(stream="8")), "event #1"),
    ("stream_string.json", doc(kernel(stream='"7"')), "event #0"),
    ("empty.json.gz", b"", None),
    ("gzip_header_only.json.gz", gzip.compress(GOOD)[:10], None),
    ("gzip_of_nothing.json.gz", gzip.compress(b""), None),
    ("gzip_then_garbage.json.gz", gzip.compress(GOOD) + b"garbage!", None),
    ("whitespace.json", b"  \n\t ", None),
    ("nul_in_string.json", GOOD.replace(b'"k"', b'"k\x00"'), None),
    ("bom.json", b"\xef\xbb\xbf" + GOOD, None),
    ("two_documents.json", GOOD + b"\n" + GOOD, None),
    ("traceevents_twice.json", b'{"traceEvents": [], "traceEvents": [' + KERNEL.encode() + b"]}", "traceevents"),
]


class Cli:
    def __init__(self, args, checks):
        self.args, self.checks = args, checks

    def run(self, *argv, **kwargs):
        return e2e.tracelane(self.args, *argv, timeout=120, **kwargs)

    def one_line_error(self, result, path, what, rc=1, contains=None):
        lines = result.stderr.strip().splitlines()
        self.checks.check(result.returncode == rc, f"{what}: expected exit {rc}, {e2e.describe(result)}")
        self.checks.check(result.returncode >= 0, f"{what}: killed by signal {-result.returncode}")
        self.checks.check(len(lines) == 1 and lines[0].startswith(path + ": "),
                          f"{what}: stderr must be one line starting with '{path}: ', got {result.stderr[:500]!r}")
        if contains:
            self.checks.check(contains in result.stderr.lower(),
                              f"{what}: stderr lacks {contains!r}: {result.stderr[:500]!r}")
        self.checks.check(result.stdout.strip() == "", f"{what}: stdout on failure: {result.stdout[:200]!r}")

    def nothing_left(self, directory, keep, what):
        left = sorted(set(os.listdir(directory)) - set(keep) - set(e2e.LOCK_FILES))
        self.checks.check(not left, f"{what}: files left in {directory}: {left}")


def write(path, data):
    with open(path, "wb") as handle:
        handle.write(data)
    return path


def test_bad_compact_inputs(cli, work):
    for name, data, contains in BAD_COMPACT:
        d = os.path.join(work, name + ".d")
        os.mkdir(d)
        path = write(os.path.join(d, name), data)
        before = open(path, "rb").read()
        result = cli.run("compact", path)  # default output name beside the input
        print(f"  {name}: rc={result.returncode} {result.stderr.strip()[:160]!r}", flush=True)
        cli.one_line_error(result, path, f"compact {name}", contains=contains)
        result = cli.run("compact", path, "-o", os.path.join(d, "out.json.gz"))
        cli.one_line_error(result, path, f"compact {name} -o", contains=contains)
        cli.checks.check(open(path, "rb").read() == before, f"compact {name}: the input changed")
        cli.nothing_left(d, [name], f"compact {name}")


def test_odd_files(cli, work):
    """Paths that are not regular trace files: every one a clean one-line error."""
    d = os.path.join(work, "odd")
    os.mkdir(d)
    loop = os.path.join(d, "loop.json")
    os.symlink("loop.json", loop)
    to_dir = os.path.join(d, "to_dir.json.gz")
    os.mkdir(os.path.join(d, "sub"))
    os.symlink("sub", to_dir)
    dir_gz = os.path.join(d, "rank0_trace.json.gz")
    os.mkdir(dir_gz)
    dangling = os.path.join(d, "dangling.json")
    os.symlink("nowhere.json", dangling)
    fifo_free = ["loop.json", "to_dir.json.gz", "sub", "rank0_trace.json.gz", "dangling.json"]
    for path, contains in ((loop, "symbolic links"), (to_dir, "directory"), (dir_gz, "directory"),
                           (dangling, "no such file")):
        result = cli.run("compact", path, "-o", os.path.join(d, "out.json.gz"))
        print(f"  {os.path.basename(path)}: rc={result.returncode} {result.stderr.strip()[:160]!r}", flush=True)
        cli.one_line_error(result, path, f"compact {os.path.basename(path)}", contains=contains)
    # /proc/self/mem stats as a regular file but every read at offset 0 fails (EIO): a
    # read error that needs no root-defeated permission bits.
    link = os.path.join(d, "unreadable.json")
    os.symlink("/proc/self/mem", link)
    result = cli.run("compact", link, "-o", os.path.join(d, "out.json.gz"))
    print(f"  unreadable.json: rc={result.returncode} {result.stderr.strip()[:160]!r}", flush=True)
    cli.one_line_error(result, link, "compact unreadable.json", contains="read error")
    fifo_free.append("unreadable.json")
    # permission bits: they stop reads only when we are not root
    if os.geteuid() == 0:
        print("  SKIPPED: permission-denied input (running as root: permission bits do not stop reads; "
              "the read-error case above covers the path)", flush=True)
    else:
        secret = write(os.path.join(d, "secret.json"), GOOD)
        os.chmod(secret, 0)
        result = cli.run("compact", secret, "-o", os.path.join(d, "out.json.gz"))
        cli.one_line_error(result, secret, "compact permission denied", contains="permission denied")
        fifo_free.append("secret.json")
    cli.nothing_left(d, fifo_free, "odd files")


def test_accepted_inputs(cli, work):
    """JSON a user expects to work: what tracelane does with it, exactly."""
    checks = cli.checks
    d = os.path.join(work, "accepted")
    os.mkdir(d)

    def compact(name, data):
        path = write(os.path.join(d, name), data)
        out = os.path.join(d, name + ".out.json")
        result = cli.run("compact", path, "-o", out)
        if not checks.check(result.returncode == 0, f"compact {name}: expected success, {e2e.describe(result)}"):
            return None, None
        return json.loads(result.stdout), json.loads(open(out, "rb").read())

    def slices(trace):
        return [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]

    # Exponent numbers are numbers: 1e3 µs is 1000 µs exactly; their text is kept.
    summary, out = compact("exponents.json", doc(kernel(ts="1e3", dur="2.5E1"), kernel(ts="1.0e3", dur="25", tid="8", stream="8"),
                                                 kernel(ts="1010", dur="0.5e1", tid="9", stream="9")))
    if out:
        checks.equal(summary["measured_slices"], 3, "exponents: measured slices")
        # [1000, 1025] twice overlap (two lanes); [1010, 1015] overlaps both: three lanes
        checks.equal(summary["compacted_lanes"], 3, "exponents: lanes")
        raw = open(os.path.join(d, "exponents.json.out.json"), "rb").read()
        checks.check(b'"ts": 1e3' in raw and b'"dur": 2.5E1' in raw, "exponents: number text not kept")
    # Touching exactly through an exponent: [1e3, +1] then ts 1.001e3 -> one lane
    summary, out = compact("exponent_touch.json", doc(kernel(ts="1e3", dur="1"), kernel(ts="1.001e3", dur="1e0", tid="8", stream="8")))
    if out:
        checks.equal(summary["compacted_lanes"], 1, "exponent touch: lanes")
    # Duplicate keys: the last one wins (Python's json, JavaScript, Perfetto all do so).
    summary, out = compact("duplicate_ts.json", doc(kernel(ts="1, \"ts\": 5"), kernel(ts="2", dur="1", tid="8", stream="8")))
    if out:
        # ts 5 (last) for the first slice: [5, 7.5] and [2, 3] do not overlap -> one lane
        checks.equal(summary["compacted_lanes"], 1, "duplicate ts: lanes (the last ts must win)")
    summary, out = compact("duplicate_tid.json", doc(kernel(tid="9, \"tid\": 7")))
    if out:
        lane = slices(out)[0]
        # A reader that takes the last key must see the lane, not the old stream, as tid;
        # args.stream stays the stream the slice ran on (SPEC 9.14).
        checks.check(lane["tid"] not in (7, 9) and lane["args"]["stream"] == 7,
                     f"duplicate tid: the output's last tid must be the lane: {lane}")
    summary, out = compact("duplicate_stream.json", doc(kernel(stream="9, \"stream\": 7")))
    if out:
        lane = slices(out)[0]
        checks.check(lane["tid"] not in (7, 9) and lane["args"]["stream"] == 7,
                     f"duplicate args.stream: the output's last stream must be the one recorded: {lane}")
    # Escaped and non-ASCII names, a lone surrogate escape (valid JSON text): kept.
    summary, out = compact("unicode.json", doc(kernel(name='"k\\u00e9\\ud83d\\ude00 \\"q\\" é"')))
    if out:
        checks.equal(slices(out)[0]["name"], 'k\u00e9\U0001F600 "q" é', "unicode name")
    # A top-level key that ends in an escaped backslash, and one with an escaped quote:
    # kept exactly (the output must stay valid JSON).
    summary, out = compact("escaped_keys.json", b'{"a\\\\": 1, "b\\"c": [2], "traceEvents": [' + KERNEL.encode() + b"]}")
    if out:
        checks.equal((out.get("a\\"), out.get('b"c')), (1, [2]), "escaped top-level keys")
    # Deep but reasonable nesting (100 levels) in args is kept as it was.
    deep = "[" * 100 + "]" * 100
    summary, out = compact("deep_ok.json", doc(kernel(args='{"stream": 7, "x": ' + deep + "}")))
    if out:
        checks.equal(json.dumps(slices(out)[0]["args"]["x"], separators=(",", ":")), deep, "100-level args")


def sweep_tree(root, iterations):
    """iterations: {rel dir: {file name: bytes}}"""
    for rel, files in iterations.items():
        os.makedirs(os.path.join(root, rel), exist_ok=True)
        for name, data in files.items():
            write(os.path.join(root, rel, name), data)


def rank_trace(rank):
    return doc(CPU_OP, KERNEL, kernel(ts="2.000", tid="8", stream="8"),
               top=f'"schemaVersion": 1, "baseTimeNanoseconds": {1000 + rank}, "distributedInfo": {{"rank": {rank}}}')


def load_report(checks, root, what):
    path = os.path.join(root, "tracelane_report.json")
    if not checks.check(os.path.exists(path), f"{what}: no report"):
        return None
    return json.load(open(path))


def test_sweep_odd_rank_files(cli, work):
    checks = cli.checks
    root = os.path.join(work, "sweep_odd")
    sweep_tree(root, {"run/profile_trace/iteration_1": {"rank0_trace.json": rank_trace(0), "rank1_trace.json": rank_trace(1)},
                      "run/profile_trace/iteration_2": {"rank0_trace.json": rank_trace(0)},
                      "run/profile_trace/iteration_3": {"rank0_trace.json": rank_trace(0)},
                      "run/profile_trace/iteration_4": {"rank0_trace.json": rank_trace(0)},
                      "run/profile_trace/iteration_5": {"rank0_trace.json": b'{"traceEvents": [1]}'}})
    it2 = os.path.join(root, "run/profile_trace/iteration_2")
    os.symlink("rank1_trace.json", os.path.join(it2, "rank1_trace.json"))  # a loop
    it3 = os.path.join(root, "run/profile_trace/iteration_3")
    os.mkdir(os.path.join(it3, "elsewhere"))
    os.symlink("elsewhere", os.path.join(it3, "rank1_trace.json"))  # a symlink to a directory
    it4 = os.path.join(root, "run/profile_trace/iteration_4")
    os.mkdir(os.path.join(it4, "rank1_trace.json.gz"))  # a directory named like a trace
    os.symlink("/proc/self/mem", os.path.join(it4, "rank2_trace.json"))  # unreadable
    result = cli.run("sweep", root, "--jobs", "2")
    print(f"  sweep: rc={result.returncode}\n    " + "\n    ".join(result.stderr.strip().splitlines()), flush=True)
    checks.check(result.returncode == 1, f"sweep odd files: expected exit 1 (failures), {e2e.describe(result)}")
    report = load_report(checks, root, "sweep odd files")
    if not report:
        return
    rows = report["rows"]
    def rows_in(rel):
        return [r for r in rows if r.get("dir", "").startswith(rel) or rel in (r.get("error") or "")]
    # (progress lines start with "tracelane sweep:"; "warning:" lines are about PP arrows)
    errors = [l for l in result.stderr.splitlines() if not l.startswith(("warning:", "tracelane sweep:"))]
    # every stderr line names a path under the root
    for line in errors:
        checks.check(line.startswith(root) or line.startswith("failed: " + root),
                     f"sweep odd files: stderr line does not start with a path: {line!r}")
    checks.check(any("iteration_2/rank1_trace.json" in l and "symlink loop" in l for l in errors),
                 "sweep: the symlink loop is not reported")
    checks.check(any("iteration_3/rank1_trace.json" in l and "directory" in l for l in errors),
                 "sweep: the symlink to a directory named like a trace is not reported")
    checks.check(any("iteration_4/rank1_trace.json.gz" in l and "directory" in l for l in errors),
                 "sweep: the directory named like a trace is not reported")
    checks.check(any("iteration_4/rank2_trace.json" in l and "read error" in l for l in errors),
                 "sweep: the unreadable rank file is not reported")
    checks.check(any("iteration_5/rank0_trace.json" in l and "event #0" in l for l in errors),
                 "sweep: the bad rank file is not reported")
    # the good iterations are done despite the bad ones
    for rel in ("iteration_1/pp_traces_merged_compacted.json.gz", "iteration_2/rank0_trace_compacted.json",
                "iteration_3/rank0_trace_compacted.json"):
        checks.check(os.path.exists(os.path.join(root, "run/profile_trace", rel)), f"sweep odd files: {rel} missing")
    checks.check(not os.path.exists(os.path.join(it4, "pp_traces_merged_compacted.json.gz")),
                 "sweep odd files: iteration_4 merged although a rank is unreadable")
    for dirpath, dirnames, filenames in os.walk(root):
        hidden = [n for n in filenames if n.startswith(".") and n not in e2e.LOCK_FILES]
        checks.check(not hidden, f"sweep odd files: temporary files left in {dirpath}: {hidden}")


def test_sweep_vanishing_and_growing(cli, work):
    """Rank files deleted or appended to while the sweep runs: each such rank is reported
    (ok when it was read before the change) with its path; nothing crashes; no temporary
    files remain."""
    checks = cli.checks
    root = os.path.join(work, "sweep_vanish")
    big = doc(CPU_OP, *[kernel(ts=f"{i}.000", tid=str(7 + i % 4), stream=str(7 + i % 4)) for i in range(60000)])
    iterations = {"run/profile_trace/iteration_0": {"rank0_trace.json": big}}
    for i in range(1, 13):
        iterations[f"run/profile_trace/iteration_{i:02d}"] = {"rank0_trace.json": rank_trace(0)}
    sweep_tree(root, iterations)
    victims = [os.path.join(root, f"run/profile_trace/iteration_{i:02d}/rank0_trace.json") for i in range(1, 13)]
    stop = threading.Event()

    def vandal():
        k = 0
        while not stop.is_set() and k < len(victims):
            path = victims[k]
            try:
                if k % 2 == 0:
                    os.unlink(path)
                else:
                    with open(path, "ab") as handle:
                        handle.write(b" " * 100 + b"{\"grown\": 1}")
            except OSError:
                pass
            k += 1
            time.sleep(0.005)

    proc = subprocess.Popen([cli.args.tracelane, "sweep", root, "--jobs", "1"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    thread = threading.Thread(target=vandal)
    thread.start()
    out, err = proc.communicate(timeout=300)
    stop.set()
    thread.join()
    print(f"  sweep: rc={proc.returncode}\n    " + "\n    ".join(err.strip().splitlines()[:20]), flush=True)
    checks.check(proc.returncode in (0, 1), f"sweep vanishing files: exit {proc.returncode}: {err[-500:]!r}")
    report = load_report(checks, root, "sweep vanishing files")
    if report:
        for row in report["rows"]:
            if row.get("status") == "failed":
                checks.check(bool(row.get("error")) and row["error"].startswith(root),
                             f"sweep vanishing files: failed row without a path-first error: {row}")
    for dirpath, dirnames, filenames in os.walk(root):
        hidden = [n for n in filenames if n.startswith(".") and n not in e2e.LOCK_FILES]
        checks.check(not hidden, f"sweep vanishing files: temporary files left in {dirpath}: {hidden}")


def main():
    args = e2e.parse_args(__doc__)
    checks = e2e.Checks("bad_inputs")
    cli = Cli(args, checks)
    return e2e.run_tests(checks, cli, "bad-inputs", (test_bad_compact_inputs, test_odd_files, test_accepted_inputs, test_sweep_odd_rank_files,
                     test_sweep_vanishing_and_growing))


if __name__ == "__main__":
    sys.exit(main())
