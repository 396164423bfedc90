"""Shared helpers for tracelane's end-to-end tests (stdlib only).

Every script takes `--tracelane PATH` (the built binary) and `--repo-root DIR`; the corpus is
found through TRACELANE_SHARED (default <repo-root>/../shared). Scripts that need the corpus
exit 77 (ctest SKIP_RETURN_CODE) with a loud SKIPPED line when it is absent. Outputs go to a
tempfile directory only: shared/ is read-only.
"""

import argparse
import collections
import concurrent.futures
import decimal
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
import time

SKIP = 77

MEASURED_CATS = {"kernel", "Kernel", "gpu_memcpy", "gpu_memset", "Memcpy", "Memset"}
GPU_TRACK_CATS = MEASURED_CATS | {"gpu_user_annotation", "cuda_sync"}
FLOW_PH = {"s", "t", "f"}
# An annotation track's label: "<lane label> annotations", possibly split into sub-tracks
# "<lane label> annotations (N)" (SPEC 4, 9.6).
ANNOTATION_TRACK = re.compile(r" annotations( \(\d+\))?$")


def parse_args(description, extra=None):
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--tracelane", required=True, help="path of the tracelane binary")
    parser.add_argument("--repo-root", default=os.path.join(os.path.dirname(__file__), "..", ".."),
                        help="repository root; the corpus defaults to <repo-root>/../shared")
    if extra:
        extra(parser)
    args = parser.parse_args()
    args.tracelane = os.path.abspath(args.tracelane)
    if not os.access(args.tracelane, os.X_OK):
        print(f"FAIL: tracelane binary not found or not executable: {args.tracelane}")
        sys.exit(1)
    return args


def shared_dir(args):
    """The corpus root, or exit 77 with a loud SKIPPED line."""
    path = os.environ.get("TRACELANE_SHARED") or os.path.join(args.repo_root, "..", "shared")
    path = os.path.abspath(path)
    if not (os.path.isdir(os.path.join(path, "corpus")) and os.path.isdir(os.path.join(path, "golden"))
            and os.path.isfile(os.path.join(path, "tools", "semdiff.py"))):
        print(f"SKIPPED: corpus not found; set TRACELANE_SHARED to the shared/ directory "
              f"(with corpus/, golden/, tools/semdiff.py); looked in {path}", flush=True)
        sys.exit(SKIP)
    return path


class Checks:
    """Collects failures so one run reports all of them; `finish` sets the exit code."""

    def __init__(self, name):
        self.name = name
        self.failures = []
        self.passed = 0
        self.started = time.monotonic()

    def check(self, condition, message):
        if condition:
            self.passed += 1
        else:
            self.failures.append(message)
            print(f"FAIL: {message}", flush=True)
        return bool(condition)

    def equal(self, actual, expected, what):
        return self.check(actual == expected, f"{what}: expected {expected!r}, got {actual!r}")

    def finish(self):
        elapsed = time.monotonic() - self.started
        if self.failures:
            print(f"{self.name}: {len(self.failures)} check(s) FAILED, {self.passed} passed ({elapsed:.1f} s)")
            return 1
        print(f"{self.name}: all {self.passed} checks passed ({elapsed:.1f} s)")
        return 0


def run(cmd, **kwargs):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def tracelane(args, *argv, **kwargs):
    return run([args.tracelane, *argv], **kwargs)


def describe(result):
    return (f"rc={result.returncode} stderr={result.stderr.strip()[:400]!r} "
            f"stdout={result.stdout.strip()[:200]!r}")


def read_bytes(path):
    with open(path, "rb") as handle:
        data = handle.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data


def load_exact(path):
    """A trace with every non-integer number as a Decimal (no double rounding)."""
    return json.loads(read_bytes(path), parse_float=decimal.Decimal)


def ns(value):
    """Microseconds (int, Decimal or number text) to integer nanoseconds, exactly."""
    if isinstance(value, int):
        return value * 1000
    return int(decimal.Decimal(value).scaleb(3).to_integral_value(rounding=decimal.ROUND_HALF_EVEN))


def is_number(value):
    return isinstance(value, (int, decimal.Decimal)) and not isinstance(value, bool)


def track_labels(events):
    labels = {}
    for event in events:
        if isinstance(event, dict) and event.get("ph") == "M" and event.get("name") == "thread_name":
            name = (event.get("args") or {}).get("name")
            if isinstance(name, str):
                labels[(event.get("pid"), event.get("tid"))] = name
    return labels


def x_intervals(events):
    """{(pid, tid): [(start_ns, end_ns)]} of every X event with a numeric ts."""
    tracks = collections.defaultdict(list)
    for event in events:
        if isinstance(event, dict) and event.get("ph") == "X" and is_number(event.get("ts")):
            start = ns(event["ts"])
            dur = event.get("dur", 0)
            tracks[(event.get("pid"), event.get("tid"))].append((start, start + ns(dur if is_number(dur) else 0)))
    return tracks


def partial_overlaps(intervals):
    """Partially overlapping pairs on one track, counted the way semdiff lint counts them
    (nesting and touching are fine), but in exact integer ns."""
    crossings = 0
    stack = []
    for start, end in sorted(intervals, key=lambda item: (item[0], -item[1])):
        while stack and stack[-1] <= start:
            stack.pop()
        if stack and end > stack[-1]:
            crossings += 1
            continue
        stack.append(end)
    return crossings


def overlap_report(events):
    """Partial overlaps on the GPU tracks (those holding a measured slice, gpu_user_annotation
    or cuda_sync X event), split into annotation tracks and the rest:
    ({label: count} on annotation tracks, {label: count} on other GPU tracks)."""
    labels = track_labels(events)
    gpu_tracks = {(e.get("pid"), e.get("tid")) for e in events
                  if isinstance(e, dict) and e.get("ph") == "X" and e.get("cat") in GPU_TRACK_CATS}
    tracks = x_intervals(events)
    on_annotations, on_lanes = {}, {}
    for key in gpu_tracks:
        count = partial_overlaps(tracks[key])
        if not count:
            continue
        label = labels.get(key)
        target = on_annotations if label and ANNOTATION_TRACK.search(label) else on_lanes
        target[f"{label!r} (pid {key[0]!r}, tid {key[1]!r})"] = count
    return on_annotations, on_lanes


def flows_without_slice(events):
    """Flow events (ph s/t/f) whose ts lies in no X event on their own (pid, tid); the
    definition of semdiff lint's flows_without_slice, computed in exact ns with a sweep
    instead of semdiff's quadratic scan. Returns a list of (pid, tid, ts_ns, ph, cat, id)."""
    tracks = x_intervals(events)
    index = {}
    for key, intervals in tracks.items():
        intervals.sort()
        starts = [start for start, _ in intervals]
        reach, best = [], None  # reach[k]: the largest end among intervals[0..k]
        for _, end in intervals:
            best = end if best is None or end > best else best
            reach.append(best)
        index[key] = (starts, reach)
    import bisect
    unbound = []
    for event in events:
        if not (isinstance(event, dict) and event.get("ph") in FLOW_PH):
            continue
        key = (event.get("pid"), event.get("tid"))
        ts = ns(event["ts"]) if is_number(event.get("ts")) else 0
        starts, reach = index.get(key, ((), ()))
        k = bisect.bisect_right(starts, ts) - 1  # intervals[0..k] start <= ts
        if k < 0 or reach[k] < ts:
            unbound.append((key[0], key[1], ts, event.get("ph"), event.get("cat"), json.dumps(event.get("id"), default=str)))
    return unbound


def flow_ids_shared_across_pairs(events):
    """For a merged trace: flow ids (ph s/t/f) that more than one pair uses, where a pair is
    one PP arrow (cat pp_*, by name) or one rank's own flows (by the "PP rank <p> (global
    rank <g>)" process_name of the pid; a rank's input may pair several under one id).
    Returns {id: sorted owners} for each shared id; empty when every id is one pair's."""
    rank_of = {}
    for event in events:
        if isinstance(event, dict) and event.get("ph") == "M" and event.get("name") == "process_name":
            label = (event.get("args") or {}).get("name")
            match = re.match(r"PP rank (\d+) \(global rank", label) if isinstance(label, str) else None
            if match:
                rank_of[json.dumps(event.get("pid"))] = int(match.group(1))
    owners = {}
    for event in events:
        if not (isinstance(event, dict) and event.get("ph") in FLOW_PH and "id" in event):
            continue
        cat = event.get("cat")
        if isinstance(cat, str) and cat.startswith("pp_"):
            owner = f"PP arrow {event.get('name')}"
        else:
            owner = f"rank {rank_of.get(json.dumps(event.get('pid')), '?')}"
        owners.setdefault(json.dumps(event["id"]), set()).add(owner)
    return {key: sorted(who) for key, who in owners.items() if len(who) > 1}


def lint_gpu_pids(events):
    """The pids semdiff lint counts flow ends on: those with an X event of a measured,
    gpu_user_annotation or cuda_sync cat (its "GPU processes"; CPU-side flows are the
    profiler's business)."""
    return {e.get("pid") for e in events
            if isinstance(e, dict) and e.get("ph") == "X" and "ts" in e
            and (e.get("cat") in MEASURED_CATS or e.get("cat") in ("gpu_user_annotation", "cuda_sync"))}


def old_streams(events):
    return {(e.get("pid"), e.get("tid")) for e in events
            if isinstance(e, dict) and e.get("cat") in MEASURED_CATS and e.get("ph") == "X"}


def legacy_stream_key(pid, tid):
    """SPEC 9.4: a legacy GPU tid "stream 7" names stream 7."""
    if isinstance(tid, str):
        match = re.fullmatch(r"stream (\d+)", tid)
        if match:
            return (pid, int(match.group(1)))
    return (pid, tid)


def flow_endpoints_on_old_streams(events):
    """Flow endpoints (ph s/t/f) on an old stream, by cat."""
    streams = old_streams(events)
    return collections.Counter(e.get("cat") for e in events
                               if isinstance(e, dict) and e.get("ph") in FLOW_PH
                               and (e.get("pid"), e.get("tid")) in streams)


def semdiff(shared, *argv):
    return run([sys.executable, os.path.join(shared, "tools", "semdiff.py"), *argv])


def semdiff_lint_counts(output):
    """Parse `semdiff.py lint` output: {'gpu_tracks': .., 'partial_overlaps': .., 'flows_without_slice': ..}."""
    match = re.search(r"gpu_tracks=(\d+) partial_overlaps=(\d+) flows_without_slice=(\d+)", output)
    if not match:
        return None
    return dict(zip(("gpu_tracks", "partial_overlaps", "flows_without_slice"), map(int, match.groups())))


# The lock files tracelane leaves in place: the sweep's tree lock at ROOT and the lock of a
# directory it wrote an output into (src/cli/tree_lock.hpp).
LOCK_FILES = (".tracelane.lock", ".tracelane.dir.lock")


def hidden_files(directory):
    """Names starting with '.' (tracelane's temporary files) left in a directory, lock files aside."""
    return sorted(name for name in os.listdir(directory) if name.startswith(".") and name not in LOCK_FILES)


def parallel_map(function, items, workers=2):
    """Runs function over items on `workers` threads (the work is mostly subprocesses),
    yielding results in item order."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        yield from pool.map(function, items)


def temp_dir(prefix):
    return tempfile.TemporaryDirectory(prefix=f"tracelane-e2e-{prefix}-")


def summary_from_stdout(checks, result, what):
    try:
        summary = json.loads(result.stdout, object_pairs_hook=collections.OrderedDict)
    except ValueError as error:
        checks.check(False, f"{what}: stdout is not one JSON summary ({error}): {result.stdout[:300]!r}")
        return None
    checks.check(isinstance(summary, dict) and list(summary)[:2] == ["input", "output"],
                 f"{what}: summary must be an object with input and output first, got keys {list(summary)[:4]}")
    return summary


def run_tests(checks, context, prefix, tests):
    """Runs each test(context, its own scratch directory) and prints ok/FAILED per test."""
    with temp_dir(prefix) as work:
        for test in tests:
            print(f"--- {test.__name__}", flush=True)
            failures = len(checks.failures)
            sub = os.path.join(work, test.__name__)
            os.mkdir(sub)
            test(context, sub)
            print(f"    {'ok' if len(checks.failures) == failures else 'FAILED'}", flush=True)
    return checks.finish()


def kernel_event(pid, stream, ts, dur, name="k"):
    """One kernel slice as Kineto writes it (text), on `stream`."""
    return (f'{{"ph": "X", "cat": "kernel", "name": "{name}", "pid": {pid}, "tid": {stream}, "ts": {ts}, '
            f'"dur": {dur}, "args": {{"stream": {stream}, "correlation": 1}}}}')


def synthetic_rank_trace(rank, kernels, name=lambda i: f"k{i % 13}"):
    """A small rank trace (bytes): `kernels` kernels 0.75 us apart on five streams, with
    baseTimeNanoseconds and distributedInfo for `rank`."""
    events = [kernel_event(0, 7 + i % 5, f"{1000 + i * 0.75:.3f}", "1.000", name(i)) for i in range(kernels)]
    return ('{"schemaVersion": 1, "baseTimeNanoseconds": %d, "distributedInfo": {"rank": %d, "backend": "nccl"}, '
            '"traceEvents": [\n%s\n]}' % (1_700_000_000_000_000_000 + rank * 1234, rank, ",\n".join(events))).encode()


def write_file(path, data):
    """Writes `data` (bytes) to `path`, making its directories; returns `path`."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(data)
    return path


def peak_rss_kib(argv):
    """(exit code, peak RSS in KiB) of one command, measured by a wrapper process of its own."""
    probe = ("import resource, subprocess, sys\n"
             "code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode\n"
             "print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    result = run([sys.executable, "-c", probe, *argv])
    code, kib = result.stdout.split()
    return int(code), int(kib)
