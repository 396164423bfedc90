#!/usr/bin/env python3
"""SPEC 9.1: events tracelane does not change are written exactly as they were read.

For one .json and one .json.gz corpus trace, compact to an uncompressed out.json and, on
the raw bytes of input and output:
- every input event that tracelane does not change (cat not kernel / gpu_memcpy /
  gpu_memset / cuda_sync / gpu_user_annotation, ph not s/t/f, not thread_name /
  thread_sort_index metadata) is, byte for byte, an event of the output (multiset);
- every measured slice and every flow event is in the output with the same bytes except
  the value of `tid` ("changed events keep the original text of every number they keep";
  the check masks `args.stream` too, which outputs before SPEC 9.14 rewrote);
- every top-level value other than traceEvents is carried unchanged.
"""

import collections
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_common as e2e  # noqa: E402

TRACES = ("deepseek_train_h800.json", "hta_nccl_pgconfig_a100.json.gz")
CHANGED_CATS = {"kernel", "Kernel", "gpu_memcpy", "gpu_memset", "Memcpy", "Memset", "cuda_sync",
                "gpu_user_annotation"}
MEASURED_CATS = {"kernel", "Kernel", "gpu_memcpy", "gpu_memset", "Memcpy", "Memset"}
TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[{}\[\],:]', re.S)
TID = re.compile(rb'("tid"\s*:\s*)(-?[0-9]+|"(?:[^"\\]|\\.)*")')
STREAM = re.compile(rb'("stream"\s*:\s*)(-?[0-9]+)')


def split_raw(text):
    """The raw bytes of a trace's top level: ({key: raw value}, [raw traceEvents objects]).

    Walks strings (with escapes) and brackets; numbers and literals need no tokens because
    values are cut between the structural characters around them.
    """
    top, events = {}, []
    depth = 0
    key = None
    value_start = None
    expect_key = False
    in_events = False
    event_start = None
    for match in TOKEN.finditer(text):
        token = match.group()
        first = token[:1]
        if first == b'"':
            if depth == 1 and expect_key:
                key = json.loads(token)
                expect_key = False
            continue
        if token == b":" and depth == 1:
            value_start = match.end()
            in_events = key == "traceEvents"
        elif token == b"," and depth == 1:
            top[key] = text[value_start:match.start()].strip()
            expect_key = True
        elif first in (b"{", b"["):
            if in_events and depth == 2 and first == b"{":
                event_start = match.start()
            depth += 1
            if depth == 1:
                expect_key = True
        elif first in (b"}", b"]"):
            depth -= 1
            if in_events and depth == 2 and first == b"}":
                events.append(text[event_start:match.end()])
            if depth == 0:
                if key is not None and value_start is not None:
                    top[key] = text[value_start:match.start()].strip()
                break
    return top, events


def masked(raw):
    """An event's bytes with the values of tid and stream (what tracelane may change) masked."""
    return STREAM.sub(rb"\1@", TID.sub(rb"\1@", raw))


def check_trace(args, shared, workdir, name, checks):
    trace = os.path.join(shared, "corpus", "single", name)
    if not checks.check(os.path.isfile(trace), f"{name}: not in corpus/single"):
        return
    output = os.path.join(workdir, name.split(".")[0] + "_out.json")
    result = e2e.tracelane(args, "compact", trace, "-o", output)
    if not checks.check(result.returncode == 0, f"{name}: compact failed: {e2e.describe(result)}"):
        return
    text_in = e2e.read_bytes(trace)
    with open(output, "rb") as handle:
        text_out = handle.read()
    checks.check(text_out[:1] == b"{", f"{name}: -o out.json must be uncompressed JSON")
    top_in, raw_in = split_raw(text_in)
    top_out, raw_out = split_raw(text_out)
    parsed_in = json.loads(text_in)["traceEvents"]
    parsed_out = json.loads(text_out)["traceEvents"]
    # The splitter must agree with json on what the events are.
    if not checks.check(len(raw_in) == len(parsed_in) and len(raw_out) == len(parsed_out),
                        f"{name}: raw splitter found {len(raw_in)}/{len(raw_out)} events, json "
                        f"{len(parsed_in)}/{len(parsed_out)}"):
        return
    for raw, event in zip(raw_in[:200] + raw_in[-200:], parsed_in[:200] + parsed_in[-200:]):
        checks.check(json.loads(raw) == event, f"{name}: raw splitter misaligned at {raw[:120]!r}")

    out_verbatim = collections.Counter(raw_out)
    wanted = collections.Counter()
    changed_in, changed_out = collections.Counter(), collections.Counter()
    for raw, event in zip(raw_in, parsed_in):
        ph, cat = event.get("ph"), event.get("cat")
        if ph in ("s", "t", "f") or (ph == "X" and cat in MEASURED_CATS):
            changed_in[masked(raw)] += 1
        if cat in CHANGED_CATS or ph in ("s", "t", "f"):
            continue
        if ph == "M" and event.get("name") in ("thread_name", "thread_sort_index"):
            continue
        wanted[raw] += 1
    for raw, event in zip(raw_out, parsed_out):
        if event.get("ph") in ("s", "t", "f") or (event.get("ph") == "X" and event.get("cat") in MEASURED_CATS):
            changed_out[masked(raw)] += 1
    missing = wanted - out_verbatim
    checked = sum(wanted.values())
    print(f"{name}: {len(raw_in)} input events, {checked} unchanged ones checked byte for byte, "
          f"{sum(changed_in.values())} slices/flows checked with tid/stream masked")
    checks.check(checked > 1000, f"{name}: only {checked} events checked; the test would be vacuous")
    checks.check(not missing, f"{name}: {sum(missing.values())} unchanged events not in the output verbatim, "
                              f"e.g. {[m[:200] for m in list(missing)[:3]]}")
    lost = changed_in - changed_out
    checks.check(not lost, f"{name}: {sum(lost.values())} slices/flows whose bytes changed beyond tid/stream, "
                           f"e.g. {[m[:300] for m in list(lost)[:2]]}")
    measured = sum(1 for e in parsed_in if e.get("ph") == "X" and e.get("cat") in MEASURED_CATS)
    checks.check(measured > 100, f"{name}: only {measured} measured slices")
    # Top-level keys other than traceEvents are carried unchanged (SPEC 1).
    for key, raw in top_in.items():
        if key == "traceEvents":
            continue
        checks.check(top_out.get(key) == raw, f"{name}: top-level {key!r} changed: {raw[:100]!r} -> "
                                              f"{(top_out.get(key) or b'<missing>')[:100]!r}")
    checks.check("cuda_graph_stream_compaction" in top_out, f"{name}: no cuda_graph_stream_compaction key")


def main():
    args = e2e.parse_args(__doc__)
    shared = e2e.shared_dir(args)
    checks = e2e.Checks("byte_faithfulness")
    with e2e.temp_dir("bytes") as workdir:
        for name in TRACES:
            try:
                check_trace(args, shared, workdir, name, checks)
            except Exception as error:  # an unreadable output is a failure, not a crash
                checks.check(False, f"{name}: {type(error).__name__}: {error}")
        checks.check(not e2e.hidden_files(workdir), f"temporary files left: {e2e.hidden_files(workdir)}")
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
