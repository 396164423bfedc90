#!/usr/bin/env python3
"""The traces the original tool refused (golden/<name>.ref.error.txt, golden/README.md):

- error_not_a_kineto_trace: tracelane refuses too, with one line on stderr that starts with
  the input path, a non-zero exit, and no output file.
- error_cpu_only (a trace without GPU slices, SPEC 9.15): tracelane writes a copy with
  nothing to repack: exit 0, the summary says `nothing_to_repack`, every event as it was,
  and `restore` gives the input back byte for byte.
- hta_cuda_sync_alexnet (SPEC 9.2, 9.3) and kineto_legacy_2021_resnet50 (SPEC 9.4): tracelane
  accepts them; every flow endpoint lies in a slice on its track (semdiff lint's
  flows_without_slice), no lane has partially overlapping slices. There is no golden.
"""

import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_common as e2e  # noqa: E402

REFUSED = ("error_not_a_kineto_trace",)
NOTHING_TO_REPACK = ("error_cpu_only",)
ACCEPTED = ("hta_cuda_sync_alexnet", "kineto_legacy_2021_resnet50")


def find_trace(shared, name):
    for ext in (".json.gz", ".json"):
        path = os.path.join(shared, "corpus", "single", name + ext)
        if os.path.isfile(path):
            return path
    return None


def main():
    args = e2e.parse_args(__doc__)
    shared = e2e.shared_dir(args)
    checks = e2e.Checks("refusals")
    with e2e.temp_dir("refusals") as workdir:
        for name in REFUSED:
            trace = find_trace(shared, name)
            if not checks.check(trace, f"{name}: not in corpus/single"):
                continue
            output = os.path.join(workdir, name + "_out.json.gz")
            result = e2e.tracelane(args, "compact", trace, "-o", output)
            lines = result.stderr.strip().splitlines()
            print(f"{name}: rc={result.returncode} stderr={result.stderr.strip()!r}")
            checks.check(result.returncode == 1, f"{name}: expected exit 1 (bad input), {e2e.describe(result)}")
            checks.check(len(lines) == 1 and lines[0].startswith(trace + ": ") and len(lines[0]) > len(trace) + 4,
                         f"{name}: stderr must be one line 'path: reason', got {result.stderr!r}")
            checks.check(result.stdout == "", f"{name}: nothing on stdout on failure, got {result.stdout[:200]!r}")
            checks.check(not os.path.exists(output), f"{name}: output {output} created on failure")
            checks.check(not e2e.hidden_files(workdir), f"{name}: temporary files left: {e2e.hidden_files(workdir)}")

        for name in NOTHING_TO_REPACK:
            trace = find_trace(shared, name)
            if not checks.check(trace, f"{name}: not in corpus/single"):
                continue
            output = os.path.join(workdir, name + "_out.json.gz")
            result = e2e.tracelane(args, "compact", trace, "-o", output)
            if not checks.check(result.returncode == 0 and os.path.isfile(output),
                                f"{name}: a trace without GPU slices is a copy: {e2e.describe(result)}"):
                continue
            summary = e2e.summary_from_stdout(checks, result, name) or {}
            checks.check(summary.get("nothing_to_repack") is True and summary.get("compacted_lanes") == 0,
                         f"{name}: summary must say nothing_to_repack with 0 lanes: {summary}")
            checks.equal(e2e.load_exact(output)["traceEvents"], e2e.load_exact(trace)["traceEvents"],
                         f"{name}: the copy's events")
            restored = os.path.join(workdir, name + "_restored.json")
            back = e2e.tracelane(args, "restore", output, "-o", restored)
            checks.check(back.returncode == 0 and e2e.read_bytes(restored) == e2e.read_bytes(trace),
                         f"{name}: restore must give the input back byte for byte: {e2e.describe(back)}")
            print(f"{name}: nothing to repack, restored byte for byte")

        for name in ACCEPTED:
            trace = find_trace(shared, name)
            if not checks.check(trace, f"{name}: not in corpus/single"):
                continue
            output = os.path.join(workdir, name + "_out.json.gz")
            result = e2e.tracelane(args, "compact", trace, "-o", output)
            if not checks.check(result.returncode == 0 and os.path.isfile(output),
                                f"{name}: the original refused it, tracelane must accept it: {e2e.describe(result)}"):
                continue
            summary = e2e.summary_from_stdout(checks, result, name)
            input_events = e2e.load_exact(trace)["traceEvents"]
            output_events = e2e.load_exact(output)["traceEvents"]
            streams = e2e.flow_endpoints_on_old_streams(input_events)
            if summary:
                print(f"{name}: measured_slices={summary.get('measured_slices')} slice_groups={summary.get('slice_groups')} "
                      f"flow endpoints mapped={summary.get('gpu_flow_endpoints_mapped')} "
                      f"unmapped={summary.get('gpu_flow_endpoints_unmapped')} (on old streams: {dict(streams)})")
                checks.check(summary.get("gpu_flow_endpoints_unmapped") == 0,
                             f"{name}: gpu_flow_endpoints_unmapped={summary.get('gpu_flow_endpoints_unmapped')}")
                checks.check(summary.get("gpu_flow_endpoints_mapped") == sum(streams.values()),
                             f"{name}: gpu_flow_endpoints_mapped={summary.get('gpu_flow_endpoints_mapped')}, "
                             f"the input has {sum(streams.values())} on old streams")
                if name == "hta_cuda_sync_alexnet":  # SPEC 9.3: cuda_sync slices join group sync
                    checks.check((summary.get("slice_groups") or {}).get("sync", 0) > 0,
                                 f"{name}: no slice group 'sync' (SPEC 9.3): {summary.get('slice_groups')}")
                if name == "kineto_legacy_2021_resnet50":  # SPEC 9.4: Memcpy/Memset classify
                    groups = summary.get("slice_groups") or {}
                    checks.check(groups.get("memcpy", 0) > 0 and groups.get("memset", 0) > 0,
                                 f"{name}: legacy Memcpy/Memset not classified (SPEC 9.4): {groups}")

            # semdiff lint, the real tool (both traces are small enough for its quadratic scan).
            lint = e2e.semdiff(shared, "lint", output)
            counts = e2e.semdiff_lint_counts(lint.stdout)
            print(f"{name}: semdiff lint: {lint.stdout.strip()}")
            if not checks.check(counts is not None, f"{name}: semdiff lint printed no counts: {lint.stdout}{lint.stderr}"):
                continue
            unbound_in = e2e.flows_without_slice(input_events)
            unbound_out = e2e.flows_without_slice(output_events)
            lint_pids = e2e.lint_gpu_pids(output_events)
            checks.equal(sum(1 for u in unbound_out if u[0] in lint_pids), counts["flows_without_slice"],
                         f"{name}: exact flows_without_slice on GPU pids vs semdiff lint")
            if name == "hta_cuda_sync_alexnet":
                checks.equal(counts["flows_without_slice"], 0, f"{name}: semdiff lint flows_without_slice")
            else:
                # The legacy 2021 trace itself writes CPU-side flow starts with integer tids
                # (tid 25738) while the CPU slices they start in have string tids ("25738"):
                # those endpoints lie in no slice in the input already, and tracelane must not
                # move CPU-side events (SPEC 1). Every one it left unbound must be one of those,
                # untouched, and none may lie on a GPU pid.
                gpu_pids = {pid for pid, _ in e2e.old_streams(input_events)}
                stray = collections.Counter(unbound_out) - collections.Counter(unbound_in)
                checks.check(not stray, f"{name}: {sum(stray.values())} flow endpoints without a slice that "
                                        f"were inside one in the input, e.g. {list(stray)[:3]}")
                on_gpu = [u for u in unbound_out if u[0] in gpu_pids]
                checks.check(not on_gpu, f"{name}: {len(on_gpu)} GPU-side flow endpoints without a slice: {on_gpu[:3]}")
                print(f"{name}: flows_without_slice={len(unbound_out)} (input: {len(unbound_in)}; all CPU-side, "
                      f"pre-existing in the input)")
            on_annotations, on_lanes = e2e.overlap_report(output_events)
            checks.check(not on_lanes, f"{name}: partial overlaps on lane tracks: {on_lanes}")
            print(f"{name}: partial overlaps (exact ns): lanes={sum(on_lanes.values())} "
                  f"annotation tracks={sum(on_annotations.values())}")
        checks.check(not e2e.hidden_files(workdir), f"temporary files left: {e2e.hidden_files(workdir)}")
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
