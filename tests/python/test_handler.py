#!/usr/bin/env python3
"""tracelane.profiler.on_trace_ready without torch (issue 26): a stand-in for
torch.profiler.profile that exports a corpus trace with GPU slices drives the handler
through several profiler cycles, and every file it leaves is checked.

- layout "tensorboard" (keep_original): DIR/<worker>.<ms>.pt.trace.json as
  torch.profiler.tensorboard_trace_handler names it, beside it <...>_compacted.json, the
  very bytes `tracelane compact` writes for that file, restoring it byte for byte.
- layout "torchtitan", use_gzip, two ranks: DIR/iteration_<step>/rank<N>_trace.json.gz and
  its copy; `tracelane sweep` of the tree finds every copy up to date and merges.
- the same with keep_original=False: DIR/iteration_<step>/ holds only
  rank<N>_trace_compacted.json.gz, the original removed once verified, and restore() gives
  back exactly what was exported.
- a trace tracelane cannot compact: a RuntimeWarning and the trace kept as exported, or
  with on_error="raise" the TraceError; bad arguments are UsageErrors.
- torch is never imported (the stand-in gives the rank for torchtitan's layout).
"""

import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import e2e_common  # noqa: E402

import tracelane  # noqa: E402
import tracelane.profiler  # noqa: E402

args = e2e_common.parse_args(__doc__)
shared = e2e_common.shared_dir(args)
checks = e2e_common.Checks("python_handler")
corpus = os.path.join(shared, "corpus")


class StandIn:
    """What the handler uses of torch.profiler.profile: step_num and export_chrome_trace,
    which writes `source`'s text (gzip'd for a .gz name, as torch does)."""

    def __init__(self, source):
        self.text = e2e_common.read_bytes(source)
        self.step_num = 0
        self.exported = {}  # path -> md5 of the text written

    def export_chrome_trace(self, path):
        data = gzip.compress(self.text) if path.endswith(".gz") else self.text
        with open(path, "wb") as handle:
            handle.write(data)
        self.exported[path] = hashlib.md5(self.text).hexdigest()


def cycles(handler, profiler, steps):
    for step in steps:
        profiler.step_num = step
        handler(profiler)


def files_under(root):
    return sorted(os.path.relpath(os.path.join(folder, name), root) for folder, _, names in os.walk(root)
                  for name in names if name != ".tracelane.dir.lock")


def md5_text(path):
    return hashlib.md5(e2e_common.read_bytes(path)).hexdigest()


gpu_trace = os.path.join(corpus, "single", "hta_cuda_graph_sendrecv_a100.json.gz")
# Two ranks of one job (distinct distributedInfo ranks: a merge takes each rank once).
rank_trace = os.path.join(corpus, "sweep_tree", "sampled_128gpu", "profile_trace", "iteration_5", "rank%d_trace.json.gz")
work = tempfile.mkdtemp(prefix="tracelane_python_handler_")
try:
    print("-- layout tensorboard, originals kept", flush=True)
    traces = os.path.join(work, "tb")
    handler = tracelane.profiler.on_trace_ready(traces, worker_name="host_42", jobs=2)
    profiler = StandIn(gpu_trace)
    cycles(handler, profiler, [4, 8, 12])
    names = files_under(traces)
    checks.equal(len(names), 6, f"tensorboard: files written ({names})")
    exported = [n for n in names if re.fullmatch(r"host_42\.\d{13}\.pt\.trace\.json", n)]
    checks.equal(len(exported), 3, "tensorboard: traces named <worker>.<ms>.pt.trace.json")
    for name in exported:
        copy = name[:-len(".json")] + "_compacted.json"
        checks.check(copy in names, f"tensorboard: {copy} beside {name}")
        # The command's output for the same file, name and options.
        other = os.path.join(work, "cli_" + name.split(".")[1])
        os.makedirs(other)
        shutil.copy(os.path.join(traces, name), os.path.join(other, name))
        done = e2e_common.tracelane(args, "compact", os.path.join(other, name), "--jobs", "2")
        if checks.check(done.returncode == 0, f"tracelane compact {name}: {e2e_common.describe(done)}"):
            checks.equal(md5_text(os.path.join(traces, copy)), md5_text(os.path.join(other, copy)),
                         f"tensorboard: {copy} is what `tracelane compact` writes")
        restored = os.path.join(work, name + ".restored.json")
        summary = tracelane.restore(os.path.join(traces, copy), restored)
        checks.check(summary["verified"], f"tensorboard: {copy} restores")
        checks.equal(md5_text(restored), profiler.exported[os.path.join(traces, name)],
                     f"tensorboard: {copy} restores {name} byte for byte")
    checks.equal([r["original"] for r in handler.results], ["kept"] * 3, "tensorboard: results' originals")
    checks.equal([r["error"] for r in handler.results], [None] * 3, "tensorboard: results' errors")
    checks.check(all(r["summary"]["compacted_lanes"] > 0 for r in handler.results),
                 "tensorboard: results hold the summaries")

    print("-- layout torchtitan, gzip, originals kept: the sweep finds every copy up to date", flush=True)
    outputs = os.path.join(work, "outputs")
    traces = os.path.join(outputs, "run", "profile_trace")
    for rank in (0, 1):
        handler = tracelane.profiler.on_trace_ready(traces, layout="torchtitan", rank=rank, use_gzip=True)
        cycles(handler, StandIn(rank_trace % rank), [10, 20])
    checks.equal(files_under(traces), [f"iteration_{s}/rank{r}_trace{c}.json.gz" for s in (10, 20) for r in (0, 1)
                                       for c in ("", "_compacted")], "torchtitan: traces and copies")
    done = e2e_common.tracelane(args, "sweep", outputs, "--quiet", "--jobs", "2")
    checks.equal(done.returncode, 0, f"sweep of the handler's tree: {e2e_common.describe(done)}")
    with open(os.path.join(outputs, "tracelane_report.json")) as handle:
        rows = json.load(handle)["rows"]
    statuses = sorted((row["kind"], row["status"]) for row in rows)
    checks.equal(statuses, [("file", "skipped")] * 4 + [("merge", "ok")] * 2,
                 "sweep: the copies are up to date, the iterations merged")

    print("-- layout torchtitan, gzip, keep_original=False", flush=True)
    traces = os.path.join(work, "kept_copies")
    for rank in (0, 1):
        handler = tracelane.profiler.on_trace_ready(traces, layout="torchtitan", rank=rank, use_gzip=True,
                                                    keep_original=False)
        profiler = StandIn(gpu_trace)
        cycles(handler, profiler, [10, 20])
        checks.equal([r["original"] for r in handler.results], ["removed"] * 2,
                     f"torchtitan rank {rank}: originals removed ({[r['error'] for r in handler.results]})")
        for path, text_md5 in profiler.exported.items():
            checks.check(re.search(r"/iteration_(10|20)/rank%d_trace\.json\.gz$" % rank, path),
                         f"torchtitan: {path} named as torchtitan names it")
            copy = path.replace("_trace.json.gz", "_trace_compacted.json.gz")
            restored = os.path.join(work, "restored_%d.json" % rank)
            summary = tracelane.restore(copy, restored, overwrite=True)
            checks.check(summary["verified"], f"torchtitan: {copy} restores")
            checks.equal(md5_text(restored), text_md5, f"torchtitan: {copy} restores the exported trace")
    checks.equal(files_under(traces), [f"iteration_{s}/rank{r}_trace_compacted.json.gz" for s in (10, 20)
                                       for r in (0, 1)], "torchtitan: only the compacted copies are left")

    print("-- failures", flush=True)
    traces = os.path.join(work, "bad")
    bad = os.path.join(corpus, "single", "error_not_a_kineto_trace.json.gz")
    handler = tracelane.profiler.on_trace_ready(traces, worker_name="w", keep_original=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        handler(StandIn(bad))
    checks.check(len(caught) == 1 and issubclass(caught[0].category, RuntimeWarning)
                 and "not a Kineto trace" in str(caught[0].message), f"a bad trace warns: {caught}")
    checks.equal(len(files_under(traces)), 1, "a bad trace is kept as exported, nothing else written")
    checks.check(handler.results[0]["error"] and handler.results[0]["summary"] is None,
                 f"a bad trace's result: {handler.results[0]}")
    handler = tracelane.profiler.on_trace_ready(traces, worker_name="v", on_error="raise")
    try:
        handler(StandIn(bad))
        checks.check(False, "on_error='raise': a bad trace raises")
    except tracelane.TraceError as error:
        checks.check(error.path.startswith(traces), f"on_error='raise': the TraceError names the trace: {error}")
    for kwargs in (dict(layout="nvidia"), dict(on_error="ignore"), dict(keep_original=False, no_restore_data=True)):
        try:
            tracelane.profiler.on_trace_ready(traces, **kwargs)
            checks.check(False, f"on_trace_ready({kwargs}) raises")
        except tracelane.UsageError:
            checks.passed += 1
    checks.check("torch" not in sys.modules, "torch was not imported")
finally:
    shutil.rmtree(work, ignore_errors=True)
sys.exit(checks.finish())
