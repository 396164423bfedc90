#!/usr/bin/env python3
"""A real torch.profiler session with tracelane.profiler.on_trace_ready (issue 26): a tiny
model trained on the CPU over a schedule of three profiler cycles, once per handler
configuration, and every file the handler left checked: named as documented, compacted,
restorable. Skipped (exit 77), saying so, when torch is not installed (Debian 12:
python3-torch, 1.13, whose CPU profiler writes a JSON Array Format trace with no GPU slices:
compacted to a copy with nothing to repack, `"nothing_to_repack": true`).

- layout "tensorboard": DIR/<worker>.<ms>.pt.trace.json and beside each its
  <...>.pt.trace_compacted.json; the copy restores the trace byte for byte.
- layout "torchtitan", use_gzip, keep_original=False: only
  DIR/iteration_<step>/rank0_trace_compacted.json.gz, each restoring a trace of its
  cycle's steps (the restore data is checked against the original's checksums).
"""

import json
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import e2e_common  # noqa: E402

args = e2e_common.parse_args(__doc__)
try:
    import torch
    import torch.profiler
except ImportError as error:
    print(f"SKIPPED: torch is not installed ({error}); apt-get install python3-torch (.ci/run does)", flush=True)
    sys.exit(e2e_common.SKIP)

import tracelane  # noqa: E402
import tracelane.profiler  # noqa: E402

checks = e2e_common.Checks("python_torch_profiler")
WAIT, WARMUP, ACTIVE, REPEAT = 1, 1, 2, 3
STEPS = (WAIT + WARMUP + ACTIVE) * REPEAT + 2


def train(handler):
    """Trains a tiny model for STEPS steps under the profiler; the steps each cycle ends on."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    schedule = torch.profiler.schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE, repeat=REPEAT)
    ended = []

    def on_trace_ready(prof):
        ended.append(prof.step_num)
        handler(prof)

    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=schedule,
                                on_trace_ready=on_trace_ready) as prof:
        for _ in range(STEPS):
            loss = model(torch.randn(8, 16)).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            prof.step()
    return ended


def files_under(root):
    return sorted(os.path.relpath(os.path.join(folder, name), root) for folder, _, names in os.walk(root)
                  for name in names if name != ".tracelane.dir.lock")


def check_summary(what, summary):
    checks.equal(summary.get("measured_slices"), 0, f"{what}: measured_slices")
    checks.equal(summary.get("compacted_lanes"), 0, f"{what}: compacted_lanes")
    checks.equal(summary.get("nothing_to_repack"), True, f"{what}: nothing_to_repack")


def check_restored(what, path):
    """The restored text is a trace of profiler steps (JSON Array or Object Format)."""
    with open(path, "rb") as handle:
        trace = json.loads(handle.read())
    events = trace if isinstance(trace, list) else trace.get("traceEvents", [])
    checks.check(any(str(e.get("name", "")).startswith("ProfilerStep#") for e in events),
                 f"{what}: the restored trace holds ProfilerStep events")


work = tempfile.mkdtemp(prefix="tracelane_torch_profiler_")
try:
    print(f"-- torch {torch.__version__}, layout tensorboard", flush=True)
    traces = os.path.join(work, "tb")
    handler = tracelane.profiler.on_trace_ready(traces, on_error="raise")
    ended = train(handler)
    checks.equal(len(ended), REPEAT, f"profiler cycles ({ended})")
    names = files_under(traces)
    pattern = re.compile(r"(.+_\d+)\.(\d{13})\.pt\.trace\.json")
    exported = [n for n in names if pattern.fullmatch(n)]
    checks.equal(len(exported), REPEAT, f"tensorboard: traces named <host>_<pid>.<ms>.pt.trace.json ({names})")
    checks.equal(len(names), 2 * REPEAT, f"tensorboard: every file is a trace or its copy ({names})")
    for name, result in zip(exported, handler.results):
        checks.equal(pattern.fullmatch(name).group(1), "%s_%d" % (os.uname().nodename, os.getpid()),
                     f"tensorboard: {name}'s worker")
        copy = name[:-len(".json")] + "_compacted.json"
        checks.check(copy in names, f"tensorboard: {copy} beside {name}")
        checks.equal(result["trace"], os.path.join(traces, name), "tensorboard: the result's trace")
        checks.equal(result["original"], "kept", f"tensorboard: {name} kept")
        if result["summary"]:
            check_summary(f"tensorboard: {copy}", result["summary"])
            checks.equal(result["summary"]["output"], os.path.join(traces, copy), f"tensorboard: {copy} summary")
        restored = os.path.join(work, "restored.json")
        summary = tracelane.restore(os.path.join(traces, copy), restored, overwrite=True)
        checks.check(summary["verified"], f"tensorboard: {copy} restores")
        with open(restored, "rb") as a, open(os.path.join(traces, name), "rb") as b:
            checks.check(a.read() == b.read(), f"tensorboard: {copy} restores {name} byte for byte")
        check_restored(f"tensorboard: {copy}", restored)

    print("-- layout torchtitan, gzip, keep_original=False", flush=True)
    traces = os.path.join(work, "outputs", "run", "profile_trace")
    handler = tracelane.profiler.on_trace_ready(traces, layout="torchtitan", use_gzip=True, keep_original=False,
                                                on_error="raise")
    ended = train(handler)
    names = files_under(traces)
    checks.equal(names, sorted(f"iteration_{step}/rank0_trace_compacted.json.gz" for step in ended),
                 "torchtitan: only each cycle's copy is left, named as torchtitan names the trace")
    for step, result in zip(ended, handler.results):
        copy = os.path.join(traces, f"iteration_{step}", "rank0_trace_compacted.json.gz")
        checks.equal(result["original"], "removed", f"torchtitan: iteration_{step}'s trace removed once verified")
        if result["summary"]:
            check_summary(f"torchtitan: iteration_{step}", result["summary"])
        restored = os.path.join(work, f"rank0_iteration_{step}.json")
        summary = tracelane.restore(copy, restored)
        checks.check(summary["verified"], f"torchtitan: iteration_{step}'s copy restores its trace")
        check_restored(f"torchtitan: iteration_{step}", restored)
finally:
    shutil.rmtree(work, ignore_errors=True)
sys.exit(checks.finish())
