#!/usr/bin/env python3
"""--rules end to end, on synthetic traces (needs no corpus).

Issue 9: with std::regex, an ordinary name_regex ("attn.*fwd") and one templated kernel
name of ~30 kB crashed compact and sweep (SIGSEGV: the matcher recursed once per
character), and a sweep wrote no report, so every rerun crashed again. Regexes are RE2's
now: linear in the name, no recursion. This checks 30 kB and 1 MB names with ordinary and
pathological patterns through compact and a sweep (which must write its report), a pattern
RE2 refuses (exit 2 naming the rule, before any trace is read, nothing written), and that
the printed defaults given as --rules change no byte of the output.
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_common as e2e  # noqa: E402

RULES = {
    "groups": [{"id": "attention", "label": "Attention"}],
    "classify": [
        {"name_regex": "attn.*fwd", "group": "attention"},
        {"name_regex": "(a|aa)*b", "group": "ab"},
        {"name_regex": "^(x+x+)+y", "group": "xy"},
        {"group": "compute"},
    ],
    "pp_annotations": {"prefix": "PP:", "patterns": [
        {"regex": "(?:x+x+)+stage(\\d+)_(F|B|RECV_F)_mb(\\d+)", "stage": 1, "op": 2, "microbatch": 3}]},
}

# (name, group under RULES): every kernel runs alone on its own stream, so each group
# present gets exactly one lane.
def kernel_names(size):
    return [
        ("void flash_attn<" + "z" * size + ">::fwd", "attention"),
        ("void flash_attn<" + "z" * size + ">::rev", "compute"),  # no fwd, no b, no y
        ("a" * size, "compute"),
        ("x" * size, "compute"),
        ("x" * size + "y", "xy"),
        ("a" * size + "b", "ab"),
    ]


def trace(size, rank=0):
    events = [{"name": "process_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}}]
    for k, (name, _) in enumerate(kernel_names(size)):
        stream = 7 + k
        events.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": 1000 + 10 * k,
                       "dur": 5, "args": {"stream": stream, "correlation": k, "device": 0}})
    # PP annotations over the second kernel (compute), whose long names only the PP pattern
    # matches (a full match): a receive, then the compute that depends on it (one arrow).
    for name, ts, dur in (("stage0_RECV_F_mb0", 1010, 1), ("stage0_F_mb0", 1012, 3)):
        events.append({"ph": "X", "cat": "gpu_user_annotation", "name": "x" * size + name, "pid": 0,
                       "tid": 8, "ts": ts, "dur": dur, "args": {}})
    return {"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2},
            "baseTimeNanoseconds": 1_700_000_000_000_000_000, "traceEvents": events}


def write(path, document):
    with open(path, "w") as handle:
        json.dump(document, handle)


def groups_of(output):
    """{group label: slice names} from a compacted trace's lanes (thread_name metadata)."""
    events = e2e.load_exact(output)["traceEvents"]
    labels = e2e.track_labels(events)
    names = {}
    for event in events:
        if isinstance(event, dict) and event.get("ph") == "X" and event.get("cat") == "kernel":
            label = labels.get((event.get("pid"), event.get("tid")), "?")
            names.setdefault(label.split(" ")[0], []).append(event["name"])
    return names


def expected_groups(size):
    labels = {"attention": "Attention", "compute": "Compute", "xy": "Xy", "ab": "Ab"}
    names = {}
    for name, group in kernel_names(size):
        names.setdefault(labels[group], []).append(name)
    return names


def test_long_names_compact(ctx, d):
    args, checks = ctx
    rules = os.path.join(d, "rules.json")
    write(rules, RULES)
    for size in (30 << 10, 1 << 20):
        source = os.path.join(d, f"long{size}.json")
        write(source, trace(size))
        out = os.path.join(d, f"long{size}_compacted.json.gz")
        started = time.monotonic()
        result = e2e.tracelane(args, "compact", source, "-o", out, "--rules", rules)
        seconds = time.monotonic() - started
        print(f"  {size} B names: rc={result.returncode} {seconds:.2f} s")
        if not checks.equal(result.returncode, 0, f"compact with {size}-byte names: exit ({e2e.describe(result)})"):
            continue
        checks.check(seconds < 60, f"compact with {size}-byte names took {seconds:.1f} s")
        got = {label: sorted(names) for label, names in groups_of(out).items()}
        want = {label: sorted(names) for label, names in expected_groups(size).items()}
        checks.check(got == want, f"compact with {size}-byte names: lanes by group "
                                  f"{ {k: [n[:20] for n in v] for k, v in got.items()} }")
        summary = e2e.summary_from_stdout(checks, result, f"compact {size}")
        if summary:
            checks.equal(summary.get("pp_compute_dependency_pairs"), 1, f"compact {size}: PP arrows from the pattern")


def test_long_names_sweep(ctx, d):
    args, checks = ctx
    rules = os.path.join(d, "rules.json")
    write(rules, RULES)
    root = os.path.join(d, "outputs")
    iteration = os.path.join(root, "run", "profile_trace", "iteration_1")
    os.makedirs(iteration)
    for rank in (0, 1):
        write(os.path.join(iteration, f"rank{rank}_trace.json"), trace(30 << 10 if rank == 0 else 1 << 20, rank))
    result = e2e.tracelane(args, "sweep", root, "--rules", rules, "--quiet", "--jobs", "2")
    checks.equal(result.returncode, 0, f"sweep with long names: exit ({e2e.describe(result)})")
    report_path = os.path.join(root, "tracelane_report.json")
    if not checks.check(os.path.isfile(report_path), "sweep with long names wrote no report"):
        return
    with open(report_path) as handle:
        report = json.load(handle)
    statuses = sorted((row["kind"], row.get("file") or "", row["status"]) for row in report["rows"])
    checks.equal(statuses, [("file", "rank0_trace.json", "ok"), ("file", "rank1_trace.json", "ok"),
                            ("merge", "", "ok")], "sweep with long names: report rows")
    for rank, size in ((0, 30 << 10), (1, 1 << 20)):
        out = os.path.join(iteration, f"rank{rank}_trace_compacted.json")
        if checks.check(os.path.isfile(out), f"sweep: {out} missing"):
            got = {label: sorted(names) for label, names in groups_of(out).items()}
            want = {label: sorted(names) for label, names in expected_groups(size).items()}
            checks.check(got == want, f"sweep rank {rank}: lanes by group differ")


def test_pattern_re2_refuses(ctx, d):
    args, checks = ctx
    source = os.path.join(d, "t.json")
    write(source, trace(10))
    for pattern, problem in (("(?=x)", "invalid perl operator"), ("(a)\\1", "invalid escape sequence")):
        rules = os.path.join(d, "bad_rules.json")
        write(rules, {"classify": [{"group": "a"}, {"name_regex": pattern, "group": "attn"}]})
        want = f'{rules}: classify rule #2 (group "attn"): invalid name_regex "{pattern}": {problem}'
        for argv in (("compact", source, "--rules", rules), ("sweep", d, "--rules", rules, "--quiet"),
                     ("rules", "--check", rules)):
            result = e2e.tracelane(args, *argv)
            checks.equal(result.returncode, 2, f"{argv[0]} with {pattern!r}: exit")
            checks.check(want in result.stderr, f"{argv[0]} with {pattern!r}: stderr {result.stderr.strip()!r} "
                                                f"lacks {want!r}")
        left = sorted(set(os.listdir(d)) - {"t.json", "bad_rules.json"})
        checks.check(not left, f"a refused rules file still wrote {left}")


def test_printed_defaults_change_nothing(ctx, d):
    args, checks = ctx
    printed = e2e.tracelane(args, "rules", "--print-defaults")
    checks.equal(printed.returncode, 0, "rules --print-defaults: exit")
    rules = os.path.join(d, "defaults.json")
    with open(rules, "w") as handle:
        handle.write(printed.stdout)
    source = os.path.join(d, "t.json")
    document = trace(100)
    document["traceEvents"].append({"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllGather_RING", "pid": 0,
                                    "tid": 20, "ts": 2000, "dur": 5, "args": {"stream": 20, "device": 0}})
    write(source, document)
    plain, ruled = os.path.join(d, "plain.json.gz"), os.path.join(d, "ruled.json.gz")
    a = e2e.tracelane(args, "compact", source, "-o", plain)
    b = e2e.tracelane(args, "compact", source, "-o", ruled, "--rules", rules)
    checks.check(a.returncode == 0 and b.returncode == 0, f"compact: {e2e.describe(a)} / {e2e.describe(b)}")
    if a.returncode == 0 and b.returncode == 0:
        checks.check(e2e.read_bytes(plain) == e2e.read_bytes(ruled),
                     "the printed defaults as --rules change the output")


def main():
    args = e2e.parse_args(__doc__)
    checks = e2e.Checks("rules")
    return e2e.run_tests(checks, (args, checks), "rules", (test_long_names_compact, test_long_names_sweep,
                                                           test_pattern_re2_refuses,
                                                           test_printed_defaults_change_nothing))


if __name__ == "__main__":
    sys.exit(main())
