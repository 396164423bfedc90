#!/usr/bin/env python3
"""Writes small seed traces for fuzz_compact into corpus/: excerpts (the first events of
each interesting kind) of tests/data/example_trace.json and of the shared corpus when it
is present (TRACELANE_SHARED, default <repo>/../shared), plus literal two-rank inputs
joined by the "\\n#RANK#\\n" marker. Run once; the output is checked in (keep < 1 MB)."""
import gzip, json, os, pathlib, sys

here = pathlib.Path(__file__).resolve().parent
repo = here.parent.parent
shared = pathlib.Path(os.environ.get("TRACELANE_SHARED", repo.parent / "shared"))
out = here / "corpus"
out.mkdir(exist_ok=True)

def load(p):
    b = p.read_bytes()
    if b[:2] == b"\x1f\x8b":
        b = gzip.decompress(b)
    return json.loads(b)

def kind(e):
    cat = e.get("cat", "")
    if cat in ("kernel", "Kernel", "gpu_memcpy", "gpu_memset", "Memcpy", "Memset", "cuda_sync", "gpu_user_annotation"):
        return cat
    if e.get("ph") in ("s", "t", "f"):
        return "flow:" + str(cat)
    if e.get("ph") == "M":
        return "meta:" + str(e.get("name"))
    return "other"

def excerpt(doc, per_kind=6):
    counts = {}
    events = []
    for e in doc.get("traceEvents", []):
        if not isinstance(e, dict):
            continue
        k = kind(e)
        if counts.get(k, 0) < per_kind:
            counts[k] = counts.get(k, 0) + 1
            events.append(e)
    top = {k: v for k, v in doc.items() if k not in ("traceEvents", "deviceProperties")}
    top["traceEvents"] = events
    return json.dumps(top, separators=(",", ":")).encode()

sources = [repo / "tests/data/example_trace.json"]
if shared.is_dir():
    sources += sorted((shared / "corpus").rglob("*.json*"))
else:
    print(f"make_seeds: {shared} absent; only the bundled example is excerpted", file=sys.stderr)
written = 0
seen_dirs = set()
for src in sources:
    # one rank per sweep_tree iteration, except the pair used for merge seeds below
    if "sweep_tree" in src.parts and src.parent in seen_dirs:
        continue
    seen_dirs.add(src.parent)
    try:
        doc = load(src)
    except Exception as exc:  # error_* traces may not be JSON objects
        print(f"skip {src}: {exc}", file=sys.stderr)
        continue
    if not isinstance(doc, dict):
        continue
    name = "seed_" + src.name.replace(".json.gz", "").replace(".json", "")
    if "sweep_tree" in src.parts:
        name += "_" + src.parts[src.parts.index("sweep_tree") + 1]
    data = excerpt(doc)
    (out / name).write_bytes(data)
    written += len(data)

# Two-rank merge seeds: rank excerpts of real PP/DDP trees, joined by the marker.
for tree in sorted((shared / "corpus/sweep_tree").glob("*/profile_trace/iteration_*")) if shared.is_dir() else []:
    ranks = sorted(tree.glob("rank*_trace.json*"))[:2]
    if len(ranks) == 2:
        a, b = (excerpt(load(r), per_kind=4) for r in ranks)
        data = a + b"\n#RANK#\n" + b
        (out / f"merge_{tree.parent.parent.name}").write_bytes(data)
        written += len(data)

k = lambda pid, tid, ts, dur, name="k", extra="": (
    f'{{"ph":"X","cat":"kernel","name":"{name}","pid":{pid},"tid":{tid},"ts":{ts},"dur":{dur},"args":{{"stream":{tid}{extra}}}}}')
ann = lambda pid, tid, ts, dur, name: (
    f'{{"ph":"X","cat":"gpu_user_annotation","name":"{name}","pid":{pid},"tid":{tid},"ts":{ts},"dur":{dur},"args":{{}}}}')
def doc(events, top='"schemaVersion":1'):
    return ("{" + top + ',"traceEvents":[' + ",".join(events) + "]}").encode()
literal = {
    "lit_minimal": doc([k(0, 7, "1.000", "2.500")]),
    "lit_touching": doc([k(0, 7, "1", "1"), k(0, 8, "2", "1"), k(0, 9, "2", "0"), k(0, 7, "1.5", "1", "ncclAllGather")]),
    "lit_annotations": doc([k(0, 7, 10, 5, "a", ',"name":"PP:0F0"'), k(0, 7, 15, 5, "b", ',"name":"PP:0F0"'),
                            ann(0, 7, 9, 12, "PP:0F0"), ann(0, 7, 9, 12, "PP:0F0"), ann(0, 8, 30, 4, "PP:0SEND_F0"),
                            k(0, 8, 30, 4, "ncclSend"),
                            '{"ph":"s","cat":"ac2g","id":5,"pid":0,"tid":7,"ts":10,"name":"f"}',
                            '{"ph":"f","cat":"ac2g","id":5,"pid":0,"tid":8,"ts":31,"bp":"e","name":"f"}',
                            '{"ph":"M","name":"thread_name","pid":0,"tid":7,"args":{"name":"stream 7"}}']),
    "lit_legacy": doc(['{"ph":"X","cat":"Kernel","name":"k","pid":1,"tid":"stream 7","ts":1,"dur":2,"args":{"stream":7}}',
                       '{"ph":"X","cat":"Memcpy","name":"m","pid":1,"tid":"stream 9","ts":1,"dur":2,"args":{"stream":9}}']),
    "lit_sync": doc([k(0, 7, 1, 2), '{"ph":"X","cat":"cuda_sync","name":"Stream Sync","pid":0,"tid":7,"ts":4,"dur":1,"args":{"stream":7}}']),
    "lit_strings": doc([k(0, 7, 1, 2, "\\u00e9\\ud83d\\ude00\\n"), '{"ph":"i","name":"x","pid":"Spans","tid":"PyTorch Profiler","ts":1e3}']),
}
rank_top = lambda r: f'"schemaVersion":1,"baseTimeNanoseconds":{1000 + r * 7},"distributedInfo":{{"rank":{r},"backend":"nccl"}}'
literal["lit_merge"] = (doc([k(0, 7, 1, 2), ann(0, 7, 1, 2, "PP:0SEND_F0")], rank_top(0)) + b"\n#RANK#\n" +
                        doc([k(0, 7, 3, 2), ann(0, 7, 3, 2, "PP:1RECV_F0")], rank_top(1)))
literal["lit_gzip"] = gzip.compress(doc([k(0, 7, 1, 2)]), mtime=0)
for name, data in literal.items():
    (out / name).write_bytes(data)
    written += len(data)
print(f"make_seeds: {written} bytes in {out}")
