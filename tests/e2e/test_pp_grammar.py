#!/usr/bin/env python3
"""SPEC 9.5 on real-shaped ranks: the pp4 corpus run rewritten as a zero-bubble schedule
(every backward B becomes an input-gradient I plus a weight-gradient W right after it) and
with overlapped F/B spans (PP:(sFm;sBn)OVERLAP_F_B), merged by tracelane.

Checks: the zero-bubble merge has exactly the arrows of the B merge with I in place of B
(I sits between RECV_B and SEND_B like B, W has none); the overlapped form makes both
sub-actions compute blocks; every output is Perfetto-clean (no crossing spans on any GPU
track, every flow end inside a slice of its track)."""
import collections
import json
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_common as e2e  # noqa: E402

B_NAME = re.compile(r"^PP:(\d+)B(\d+)$")
F_NAME = re.compile(r"^PP:(\d+)F(\d+)$")


def rewrite(src_dir, dst_dir, transform):
    """Copies pp4's rank files to dst_dir as .json, with events passed through transform."""
    for name in sorted(os.listdir(src_dir)):
        if not re.fullmatch(r"rank\d+_trace\.json(\.gz)?", name):
            continue
        trace = json.loads(e2e.read_bytes(os.path.join(src_dir, name)))
        events = []
        for event in trace["traceEvents"]:
            events.extend(transform(event))
        trace["traceEvents"] = events
        with open(os.path.join(dst_dir, name.replace(".gz", "")), "w") as handle:
            json.dump(trace, handle)


def zero_bubble(event):
    # CUDA-graph kernels carry their annotation in args.name (SPEC 5, per-kernel runs).
    args = event.get("args")
    if isinstance(args, dict) and isinstance(args.get("name"), str) and B_NAME.match(args["name"]):
        event = dict(event, args=dict(args, name=re.sub(r"^PP:(\d+)B", r"PP:\1I", args["name"])))
    match = B_NAME.match(event.get("name", "")) if event.get("cat") == "gpu_user_annotation" else None
    if not match:
        return [event]
    stage, microbatch = match.groups()
    i_event = dict(event, name=f"PP:{stage}I{microbatch}")
    # W runs right after, on the same track; it has no send/recv.
    w_event = dict(event, name=f"PP:{stage}W{microbatch}", ts=event["ts"] + event["dur"], dur=1)
    return [i_event, w_event]


def overlapped(event):
    args = event.get("args")
    if isinstance(args, dict) and isinstance(args.get("name"), str) and F_NAME.match(args["name"]):
        stage, microbatch = F_NAME.match(args["name"]).groups()
        event = dict(event, args=dict(args, name=f"PP:({stage}F{microbatch};{stage}B{int(microbatch) + 100})OVERLAP_F_B"))
    match = F_NAME.match(event.get("name", "")) if event.get("cat") == "gpu_user_annotation" else None
    if not match:
        return [event]
    stage, microbatch = match.groups()
    # The overlapped form of a schedule that runs F(m) with the B of an earlier microbatch.
    return [dict(event, name=f"PP:({stage}F{microbatch};{stage}B{int(microbatch) + 100})OVERLAP_F_B")]


def merge(args, checks, directory, what):
    result = e2e.tracelane(args, "merge", directory, "--overwrite")
    if not checks.check(result.returncode == 0, f"{what}: merge failed: {e2e.describe(result)}"):
        return None, None
    summary = json.loads(result.stdout)
    merged = e2e.load_exact(os.path.join(directory, "pp_traces_merged_compacted.json.gz"))
    events = merged["traceEvents"]
    on_annotations, on_lanes = e2e.overlap_report(events)
    checks.check(not on_annotations and not on_lanes,
                 f"{what}: crossing spans: annotations {on_annotations}, lanes {on_lanes}")
    unbound = [u for u in e2e.flows_without_slice(events) if str(u[4]).startswith("pp_")]
    checks.check(not unbound, f"{what}: PP flow ends outside any slice of their track: {unbound[:3]}")
    return summary, events


def flow_names(events, cat):
    return collections.Counter(e["name"] for e in events if e.get("cat") == cat and e.get("ph") == "s")


def main():
    args = e2e.parse_args(__doc__)
    shared = e2e.shared_dir(args)
    checks = e2e.Checks("pp_grammar")
    pp4 = os.path.join(shared, "golden", "pp4")
    with e2e.temp_dir("pp-grammar") as tmp:
        plain, zb, ov = (os.path.join(tmp, d) for d in ("plain", "zero_bubble", "overlap"))
        for d in (plain, zb, ov):
            os.makedirs(d)
        rewrite(pp4, plain, lambda e: [e])
        rewrite(pp4, zb, zero_bubble)
        rewrite(pp4, ov, overlapped)

        base, base_events = merge(args, checks, plain, "pp4")
        zero, zero_events = merge(args, checks, zb, "pp4 zero-bubble")
        if base and zero:
            for key in ("pp_send_recv_pairs", "pp_send_recv_unmatched", "pp_compute_dependency_pairs",
                        "pp_compute_dependency_unmatched", "pp_unshard_compute_pairs"):
                checks.equal(zero[key], base[key], f"zero-bubble {key} (I takes B's place)")
            expected = collections.Counter({re.sub(r"(\d)B(\d)", r"\1I\2", name): n
                                            for name, n in flow_names(base_events, "pp_compute_dependency").items()})
            checks.equal(flow_names(zero_events, "pp_compute_dependency"), expected,
                         "zero-bubble rank-local arrows are B's with I")
            with_w = [name for name in flow_names(zero_events, "pp_compute_dependency") if re.search(r"\dW\d", name)]
            checks.check(not with_w, f"W blocks must have no send/recv arrows: {with_w[:3]}")

        over, over_events = merge(args, checks, ov, "pp4 overlap")
        if over:
            names = flow_names(over_events, "pp_compute_dependency")
            into_f = sum(n for name, n in names.items() if re.search(r"RECV_F\d+ -> \d+F\d+$", name))
            checks.check(into_f > 0, f"overlap: RECV_F -> F arrows into the F sub-actions: {into_f}")
            checks.check(over["pp_send_recv_pairs"] == base["pp_send_recv_pairs"],
                         "overlap: cross-rank send/recv pairs are unchanged")
            checks.equal(flow_names(over_events, "pp_compute_dependency"),
                         flow_names(base_events, "pp_compute_dependency"),
                         "overlap: the F sub-actions take the plain F spans' place in the arrows")
            print(f"overlap: {sum(names.values())} rank-local arrows, pairs={over['pp_compute_dependency_pairs']} "
                  f"unmatched={over['pp_compute_dependency_unmatched']}")
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
