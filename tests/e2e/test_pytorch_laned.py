#!/usr/bin/env python3
"""PyTorch-laned traces are made whole (issue 27, SPEC 9.8).

PyTorch's streaming exporter (`export_chrome_trace(..., graph_lanes="all")`) moves every
graphed kernel onto the lane its annotation names, and every unannotated one onto stream 7,
where they overlap. bench/pytorch_lanes.py writes such traces from an un-laned one (and the
un-laned twin with `--graph-lanes none`); tracelane_gen (`--gen`) makes the un-laned ones.

- test_pile_up_is_repacked: a generated `all` trace whose stream 7 holds overlapping slices
  compacts without --force (exit 0, not "already laned"); the output lints clean (semdiff
  lint: no partial overlap, no flow outside a slice); every measured slice of the input is
  in the output with the same name, cat, pid, ts, dur and args but args.stream; each moved
  slice (one with args.original_stream, which stays) has args.stream equal to its
  original_stream and every other slice its own args.stream; the summary's pytorch_lanes
  names "stream 7" among the repacked lanes, lists every lane as kept or repacked and counts
  every moved slice as put back; `tracelane check` passes; and `restore` gives the input
  back byte for byte (decompressed).
- test_clean_lanes_are_kept: a small trace written by the generator with rules that keep
  every lane free of overlaps: each lane keeps its tid and its thread_name, the summary
  lists every lane as kept and none as repacked, the slices and streams are as above, the
  output lints clean, `tracelane check` passes and `restore` is byte-exact.
- test_pp_arrows_match_the_twin: the four PP ranks of one iteration of `tracelane_gen
  --tree`, each re-exported with `all` and with `none`: `merge` of each set gives the same
  PP arrows (semdiff.digest's flows of cats pp_*: endpoints, times, track labels), compared
  as sets. The `none` set draws every SEND/RECV arrow twice (once from the
  gpu_user_annotation spans, once from the kernels' args.name); the exporter drops those
  spans with `all` (their streams' work moved away), so there each arrow is drawn once: the
  counts are printed, not compared.
- test_own_output_is_refused: tracelane's output of a PyTorch-laned trace is its own: a
  second compact says "already laned" and writes nothing.

Without tracelane_gen the generated cases say SKIPPED and the small trace is still tested;
without the corpus's tools/semdiff.py the script exits 77.
"""

import collections
import importlib.util
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_common as e2e  # noqa: E402

SEED = "11"
# Kept small so the whole script stays well under 30 s: a 4 MB trace (about 5,000 measured
# slices, ~4,600 of them graphed) and a tree of 4 ranks of 2 MB.
SIZE = "4M"
TREE_SIZE = "2M"


class Context:
    def __init__(self, args, shared, checks):
        self.args, self.shared, self.checks = args, shared, checks
        self.gen = args.gen if args.gen and os.access(args.gen, os.X_OK) else ""
        self.exporter = os.path.join(os.path.abspath(args.repo_root), "bench", "pytorch_lanes.py")
        self.compacted = []  # outputs that test_own_output_is_refused compacts again


def skip_without_gen(ctx, what):
    if ctx.gen:
        return False
    print(f"    SKIPPED: {what} needs tracelane_gen (--gen {ctx.args.gen or '<not given>'} is not an "
          f"executable); build the bench/ targets", flush=True)
    return True


def generate(ctx, *argv):
    result = e2e.run([ctx.gen, *argv, "--seed", SEED, "--quiet"])
    return ctx.checks.check(result.returncode == 0, f"tracelane_gen {' '.join(argv)}: {e2e.describe(result)}")


def export(ctx, source, target, graph_lanes, *rules):
    argv = [sys.executable, "-B", ctx.exporter, source, target, "--graph-lanes", graph_lanes, "--quiet"]
    for rule in rules:
        argv += ["--annotate", rule]
    result = e2e.run(argv)
    return ctx.checks.check(result.returncode == 0, f"pytorch_lanes.py {graph_lanes} {source}: {e2e.describe(result)}")


def lint(ctx, path):
    result = e2e.semdiff(ctx.shared, "lint", path)
    counts = e2e.semdiff_lint_counts(result.stdout)
    ctx.checks.check(counts is not None, f"semdiff lint {path}: no counts in {result.stdout[:300]!r}")
    return counts or {}


def compact(ctx, source, target, what):
    """(summary or None) of `compact source -o target`; checks it ran and wrote an output."""
    result = e2e.tracelane(ctx.args, "compact", source, "-o", target, "--jobs", "2")
    if not ctx.checks.check(result.returncode == 0, f"{what}: compact: {e2e.describe(result)}"):
        return None
    summary = e2e.summary_from_stdout(ctx.checks, result, f"{what}: compact")
    if summary is None:
        return None
    ctx.checks.check("status" not in summary and summary.get("output"),
                     f"{what}: compact refused the trace: status {summary.get('status')!r}, "
                     f"reason {summary.get('reason')!r}")
    ctx.checks.check(os.path.isfile(target), f"{what}: no output written at {target}")
    if os.path.isfile(target):
        ctx.compacted.append(target)
    return summary


def measured(events):
    return [e for e in events if isinstance(e, dict) and e.get("ph") == "X" and e.get("cat") in e2e.MEASURED_CATS]


def slice_key(event, without=("stream",)):
    args = {k: v for k, v in (event.get("args") or {}).items() if k not in without}
    return (event.get("name"), event.get("cat"), event.get("pid"), e2e.ns(event["ts"]), e2e.ns(event.get("dur", 0)),
            json.dumps(args, sort_keys=True, default=str))


def moved(event):
    return "original_stream" in (event.get("args") or {})


def pytorch_lanes(events):
    """{(pid, tid): thread_name} of the tracks holding a moved slice (PyTorch's lanes)."""
    labels = e2e.track_labels(events)
    return {(e.get("pid"), e.get("tid")): labels.get((e.get("pid"), e.get("tid")))
            for e in measured(events) if moved(e)}


def check_slices_kept(checks, before, after, what):
    """Every measured slice kept but args.stream; streams put back (moved) or unchanged."""
    slices_in, slices_out = measured(before), measured(after)
    lost = collections.Counter(map(slice_key, slices_in)) - collections.Counter(map(slice_key, slices_out))
    extra = collections.Counter(map(slice_key, slices_out)) - collections.Counter(map(slice_key, slices_in))
    checks.check(not lost and not extra and len(slices_in) == len(slices_out),
                 f"{what}: measured slices differ beyond args.stream: {sum(lost.values())} lost "
                 f"(e.g. {list(lost)[:1]}), {sum(extra.values())} extra (e.g. {list(extra)[:1]})")
    wrong = [e for e in slices_out if moved(e) and e["args"].get("stream") != e["args"]["original_stream"]]
    checks.check(not wrong, f"{what}: {len(wrong)} moved slices whose args.stream is not their original_stream, "
                 f"e.g. {wrong[:1]}")
    def unmoved(events):
        return collections.Counter(slice_key(e, ()) for e in measured(events) if not moved(e))
    checks.check(unmoved(before) == unmoved(after), f"{what}: a slice that was not moved changed its args.stream")
    return sum(1 for e in slices_in if moved(e))


def check_independently(ctx, original, compacted, what):
    result = e2e.tracelane(ctx.args, "check", original, compacted)
    ctx.checks.check(result.returncode == 0, f"{what}: tracelane check: {e2e.describe(result)}")


def check_restore(ctx, compacted, original, work, what):
    restored = os.path.join(work, "restored.json")
    result = e2e.tracelane(ctx.args, "restore", compacted, "-o", restored)
    if ctx.checks.check(result.returncode == 0, f"{what}: restore: {e2e.describe(result)}"):
        ctx.checks.check(e2e.read_bytes(restored) == e2e.read_bytes(original),
                         f"{what}: restore did not give the input back byte for byte")


def test_pile_up_is_repacked(ctx, work):
    if skip_without_gen(ctx, "the stream-7 pile-up"):
        return
    checks = ctx.checks
    plain, laned, out = (os.path.join(work, name) for name in ("plain.json.gz", "laned.json.gz", "laned_out.json.gz"))
    if not (generate(ctx, "--size", SIZE, "--out", plain) and export(ctx, plain, laned, "all")):
        return
    before = e2e.load_exact(laned)["traceEvents"]
    lanes = pytorch_lanes(before)
    checks.check(any(tid == 7 for _, tid in lanes) and lint(ctx, laned).get("partial_overlaps", 0) > 0,
                 f"the generated input has no stream-7 pile-up to repack (lanes {sorted(lanes.values(), key=str)})")
    summary = compact(ctx, laned, out, "pile-up")
    if summary is None:
        return
    counts = lint(ctx, out)
    checks.equal((counts.get("partial_overlaps"), counts.get("flows_without_slice")), (0, 0),
                 "pile-up: semdiff lint of the output (partial_overlaps, flows_without_slice)")
    after = e2e.load_exact(out)["traceEvents"]
    moved_count = check_slices_kept(checks, before, after, "pile-up")
    found = summary.get("pytorch_lanes") or {}
    checks.check("stream 7" in found.get("repacked", []),
                 f"pile-up: summary pytorch_lanes.repacked lacks 'stream 7': {found!r}")
    checks.equal(found.get("streams_put_back"), moved_count, "pile-up: pytorch_lanes.streams_put_back")
    names = sorted(name.rstrip() for name in lanes.values() if name)
    checks.equal(sorted(found.get("kept", []) + found.get("repacked", [])), names,
                 "pile-up: pytorch_lanes kept + repacked (every lane of the input)")
    check_independently(ctx, laned, out, "pile-up")
    check_restore(ctx, out, laned, work, "pile-up")
    print(f"    {moved_count} moved slices on {len(lanes)} lanes; kept {found.get('kept')}, "
          f"repacked {found.get('repacked')}", flush=True)


def small_unlaned_trace():
    """An un-laned trace (bytes) of three CUDA-graph replays: per replay two gemm_a nodes on
    stream 20, reduce_b on 21 (overlapping gemm_a in time), a SendRecv on 22, misc_c on 23,
    each with its launch's ac2g flow, and an ungraphed memcpy on stream 7."""
    events = []
    for step in range(3):
        start = 2000 + step * 1000
        corr = 101 + step
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 4242, "tid": 4242,
                       "ts": start - 100, "dur": 5, "args": {"External id": corr, "cbid": 311, "correlation": corr}})
        events.append({"ph": "s", "id": corr, "pid": 4242, "tid": 4242, "ts": start - 100,
                       "cat": "ac2g", "name": "ac2g"})
        kernels = (("gemm_a", 20, 0, 100, 11), ("gemm_a", 20, 150, 100, 12), ("reduce_b", 21, 50, 120, 13),
                   ("ncclDevKernel_SendRecv", 22, 0, 300, 14), ("misc_c", 23, 500, 50, 15))
        for name, stream, offset, dur, node in kernels:
            events.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": start + offset,
                           "dur": dur, "args": {"External id": corr, "queued": 0, "device": 0, "context": 1,
                                                "stream": stream, "correlation": corr, "graph id": 1,
                                                "graph node id": node}})
            events.append({"ph": "f", "id": corr, "pid": 0, "tid": stream, "ts": start + offset, "cat": "ac2g",
                           "name": "ac2g", "bp": "e"})
        events.append({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD (Device -> Device)", "pid": 0, "tid": 7,
                       "ts": start + 700, "dur": 20, "args": {"queued": 0, "device": 0, "context": 1, "stream": 7,
                                                              "correlation": 900 + step, "bytes": 1024}})
    trace = {"schemaVersion": 1, "deviceProperties": [], "distributedInfo": {"rank": 0, "world_size": 1},
             "baseTimeNanoseconds": 1_700_000_000_000_000_000, "traceEvents": events}
    return json.dumps(trace).encode()


def test_clean_lanes_are_kept(ctx, work):
    checks = ctx.checks
    plain = e2e.write_file(os.path.join(work, "small.json"), small_unlaned_trace())
    laned, out = os.path.join(work, "small_laned.json"), os.path.join(work, "small_laned_out.json")
    # Two named lanes, one lane named "stream 52 " by the exporter, and misc_c unannotated
    # onto stream 7 beside the memcpys: no lane's slices overlap.
    if not export(ctx, plain, laned, "all", "gemm_a=50:lane_a", "reduce_b=51:lane_b", "SendRecv=52"):
        return
    before = e2e.load_exact(laned)["traceEvents"]
    lanes = pytorch_lanes(before)
    checks.equal(sorted(lanes), [(0, 7), (0, 50), (0, 51), (0, 52)], "small: the generator's lanes")
    summary = compact(ctx, laned, out, "clean lanes")
    if summary is None:
        return
    counts = lint(ctx, out)
    checks.equal((counts.get("partial_overlaps"), counts.get("flows_without_slice")), (0, 0),
                 "clean lanes: semdiff lint of the output (partial_overlaps, flows_without_slice)")
    after = e2e.load_exact(out)["traceEvents"]
    moved_count = check_slices_kept(checks, before, after, "clean lanes")
    found = summary.get("pytorch_lanes") or {}
    checks.equal(sorted(found.get("kept", [])), sorted(name.rstrip() for name in lanes.values()),
                 "clean lanes: pytorch_lanes.kept")
    checks.equal(found.get("repacked"), [], "clean lanes: pytorch_lanes.repacked")
    checks.equal(found.get("streams_put_back"), moved_count, "clean lanes: pytorch_lanes.streams_put_back")
    # Each lane keeps its tid (every slice moved to it is still there) and its name.
    placed_in = collections.Counter((slice_key(e), e["tid"]) for e in measured(before) if moved(e))
    placed_out = collections.Counter((slice_key(e), e["tid"]) for e in measured(after) if moved(e))
    checks.check(placed_in == placed_out, f"clean lanes: moved slices changed track: "
                 f"{list((placed_in - placed_out).items())[:2]}")
    labels = e2e.track_labels(after)
    for key, name in sorted(lanes.items()):
        checks.equal(labels.get(key), name, f"clean lanes: thread_name of lane (pid, tid) {key}")
    check_independently(ctx, laned, out, "clean lanes")
    check_restore(ctx, out, laned, work, "clean lanes")


def semdiff_module(shared):
    """The corpus's tools/semdiff.py as a module (its digest is what "by meaning" means)."""
    spec = importlib.util.spec_from_file_location("semdiff", os.path.join(shared, "tools", "semdiff.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pp_arrows(semdiff, path):
    """The PP arrows of a merged output, as semdiff.digest sees flows: (cat and each
    endpoint's cat, name, ph, pid and args; the endpoints' times; their track labels)."""
    items = semdiff.digest(semdiff.load(path))
    return collections.Counter((ident, times, label) for part, ident, times, label in items
                               if part == "flows" and str(ident[0]).startswith("pp_"))


def test_pp_arrows_match_the_twin(ctx, work):
    if skip_without_gen(ctx, "the PP ranks of a tree"):
        return
    checks = ctx.checks
    tree = os.path.join(work, "tree")
    if not generate(ctx, "--tree", tree, "--runs", "1", "--iterations", "1", "--ranks", "4", "--size", TREE_SIZE):
        return
    iterations = [d for d, _, names in os.walk(tree) if any(n.startswith("rank") for n in names)]
    if not checks.equal(len(iterations), 1, "tree: iteration directories"):
        return
    ranks = sorted(n for n in os.listdir(iterations[0]) if n.startswith("rank"))
    merged = {}
    for lanes in ("all", "none"):
        directory = os.path.join(work, lanes)
        os.mkdir(directory)
        jobs = [(os.path.join(iterations[0], name), os.path.join(directory, name), lanes) for name in ranks]
        if not all(e2e.parallel_map(lambda job: export(ctx, *job), jobs)):
            return
        merged[lanes] = os.path.join(work, f"merged_{lanes}.json.gz")
        result = e2e.tracelane(ctx.args, "merge", directory, "-o", merged[lanes], "--jobs", "2")
        if not checks.check(result.returncode == 0 and os.path.isfile(merged[lanes]),
                            f"merge of the {lanes} ranks: {e2e.describe(result)}"):
            return
        counts = lint(ctx, merged[lanes])
        checks.equal((counts.get("partial_overlaps"), counts.get("flows_without_slice")), (0, 0),
                     f"merge of the {lanes} ranks: semdiff lint")
    semdiff = semdiff_module(ctx.shared)
    laned, twin = pp_arrows(semdiff, merged["all"]), pp_arrows(semdiff, merged["none"])
    checks.check(any(ident[0] == "pp_send_recv" for ident, _, _ in twin),
                 "merge of the none twins drew no pp_send_recv arrow (nothing to compare)")
    only_laned, only_twin = set(laned) - set(twin), set(twin) - set(laned)
    checks.check(not only_laned and not only_twin,
                 f"PP arrows differ: {len(only_laned)} only from the laned ranks (e.g. {sorted(only_laned)[:1]}), "
                 f"{len(only_twin)} only from the twins (e.g. {sorted(only_twin)[:1]})")
    def by_cat(arrows):
        return dict(sorted(collections.Counter(ident[0] for ident, _, _ in arrows.elements()).items()))
    print(f"    {len(set(laned))} distinct PP arrows; drawn from the laned ranks {by_cat(laned)}, "
          f"from the twins {by_cat(twin)}", flush=True)


def test_own_output_is_refused(ctx, work):
    if not ctx.checks.check(ctx.compacted, "no compacted output to compact again (the cases above failed)"):
        return
    for index, path in enumerate(ctx.compacted):
        again = os.path.join(work, f"again_{index}.json.gz")
        result = e2e.tracelane(ctx.args, "compact", path, "-o", again)
        summary = e2e.summary_from_stdout(ctx.checks, result, f"compact of {os.path.basename(path)}")
        ctx.checks.check(result.returncode == 0 and summary is not None
                         and summary.get("status") == "already laned",
                         f"compact of tracelane's own output {os.path.basename(path)}: expected status "
                         f"'already laned', got {e2e.describe(result)}")
        ctx.checks.check(not os.path.exists(again), f"compact of {os.path.basename(path)} wrote {again}")


def main():
    def extra(parser):
        parser.add_argument("--gen", default="", help="tracelane_gen (bench/); its cases are SKIPPED without it")
    args = e2e.parse_args(__doc__, extra)
    shared = e2e.shared_dir(args)
    checks = e2e.Checks("e2e_pytorch_laned")
    return e2e.run_tests(checks, Context(args, shared, checks), "pytorch-laned",
                         [test_pile_up_is_repacked, test_clean_lanes_are_kept, test_pp_arrows_match_the_twin,
                          test_own_output_is_refused])


if __name__ == "__main__":
    sys.exit(main())
