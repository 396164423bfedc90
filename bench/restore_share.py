#!/usr/bin/env python3
"""Restore data (SPEC 9.12, docs/restore.md) as a share of each gzip output: every corpus
single trace compacted, and the golden pp4 set and the dlrm_8gpu and sampled_128gpu sweep_tree
iterations merged. Run it with the binary before and after a change to the record format:

    bench/restore_share.py [TRACELANE]      (default build/tracelane)

The corpus comes from TRACELANE_SHARED (default ../shared beside the checkout). Columns:
input, restore data (base64 characters), gzip output bytes, share.
"""
import glob
import gzip
import json
import os
import subprocess
import sys
import tempfile

repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
binary = sys.argv[1] if len(sys.argv) > 1 else os.path.join(repo, "build", "tracelane")
shared = os.environ.get("TRACELANE_SHARED") or os.path.join(repo, "..", "shared")
if not os.path.isdir(os.path.join(shared, "corpus")):
    sys.exit(f"restore_share: no corpus under {shared} (set TRACELANE_SHARED)")


def restore_bytes(path):
    with open(path, "rb") as handle:
        data = handle.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return sum(len(r) for r in json.loads(data)["cuda_graph_stream_compaction"]["tracelane_restore"])


jobs = [("compact", t) for t in sorted(glob.glob(os.path.join(shared, "corpus", "single", "*")))]
jobs.append(("merge", os.path.join(shared, "golden", "pp4")))
for name in ("dlrm_8gpu", "sampled_128gpu"):
    pattern = os.path.join(shared, "corpus", "sweep_tree", name, "**", "iteration_*")
    jobs += [("merge", it) for it in sorted(glob.glob(pattern, recursive=True))]
with tempfile.TemporaryDirectory() as d:
    for k, (command, source) in enumerate(jobs):
        out = os.path.join(d, f"out{k}.json.gz")
        result = subprocess.run([binary, command, source, "-o", out], capture_output=True)
        name = os.path.relpath(source, shared)
        if result.returncode != 0:
            print(f"{name:62s} (no output: exit {result.returncode})")
            continue
        restore, size = restore_bytes(out), os.path.getsize(out)
        print(f"{name:62s} {restore:8d} {size:9d} {100 * restore / size:6.2f}%")
