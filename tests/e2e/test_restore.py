#!/usr/bin/env python3
"""SPEC 9.12: `tracelane restore` gives back the original of every compacted output.

- every corpus/single trace that compacts: restore(compact(x)) == x after decompression
  (md5), with the default rules and with a --rules file that groups differently;
- the golden PP set and every corpus sweep_tree iteration with two or more ranks, merged:
  each rank's original back with --rank, and a merged output without --rank is a usage
  error naming its ranks;
- outputs of `sweep` restore the same way;
- a copy with one byte of its restore data changed, or an event edited, or written with
  --no-restore-data, is refused (exit 1, naming the file) and nothing is written;
- `check` reports the restore data as verified;
- a .gz original is written as it is rebuilt, in 4 MiB gzip members (one member with
  --single-gzip-member), and a refused restore leaves neither output nor temporary;
- the restore data stays small: under 3% of each single trace's gzip output.
"""

import base64
import glob
import gzip
import hashlib
import itertools
import json
import os
import shutil
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_common as e2e  # noqa: E402

RULES = {
    "groups": [{"id": "attention", "label": "Attention"}, {"id": "compute", "label": "Compute"},
               {"id": "memcpy", "label": "GPU memcpy"}, {"id": "memset", "label": "GPU memset"},
               {"id": "sync", "label": "GPU sync"}],
    "classify": [{"cat": ["gpu_memcpy", "Memcpy"], "group": "memcpy"},
                 {"cat": ["gpu_memset", "Memset"], "group": "memset"},
                 {"cat": ["cuda_sync"], "group": "sync"},
                 {"name_regex": "(?i)attn|attention|gemm|nccl", "group": "attention"},
                 {"group": "compute"}],
}


def md5(path):
    return hashlib.md5(e2e.read_bytes(path)).hexdigest()


def restore_key_bytes(path):
    return sum(len(r) for r in json.loads(e2e.read_bytes(path))["cuda_graph_stream_compaction"]["tracelane_restore"])


RESTORED = itertools.count()


def check_restore(args, checks, compacted, original, d, *extra, what):
    out = os.path.join(d, f"restored{next(RESTORED)}.json.gz")
    result = e2e.tracelane(args, "restore", compacted, "-o", out, *extra)
    if checks.equal(result.returncode, 0, f"{what}: restore exit ({e2e.describe(result)})"):
        checks.equal(md5(out), md5(original), f"{what}: md5 of the restored original")


def test_single(ctx, d):
    args, checks, shared = ctx
    rules = os.path.join(d, "rules.json")
    with open(rules, "w") as handle:
        json.dump(RULES, handle)
    traces = sorted(glob.glob(os.path.join(shared, "corpus", "single", "*")))

    def one(trace):
        name = os.path.basename(trace).split(".")[0]
        rows = []
        for label, extra in (("default", ()), ("rules", ("--rules", rules))):
            out = os.path.join(d, f"{name}_{label}_compacted.json.gz")
            result = e2e.tracelane(args, "compact", trace, "-o", out, *extra)
            rows.append((label, out, result))
        return trace, rows

    restored = 0
    for trace, rows in e2e.parallel_map(one, traces):
        for label, out, result in rows:
            if result.returncode != 0:  # the corpus's error traces: nothing to restore
                checks.check(not os.path.exists(out), f"{trace}: a failed compact wrote {out}")
                continue
            check_restore(args, checks, out, trace, d, what=f"{os.path.basename(trace)} ({label})")
            restored += 1
            if label == "default":
                key = restore_key_bytes(out)
                share = key / os.path.getsize(out)
                print(f"  {os.path.basename(trace)}: restore data {100 * share:.2f}% of the gzip output ({key} bytes)")
                # A record's fixed part (lengths, hashes, head and tail) is ~150 bytes: on a
                # copy of a few KB (error_cpu_only, nothing to repack) that is its share.
                checks.check(share < 0.03 or key < 200, f"{trace}: restore data is {100 * share:.1f}% of the output")
    checks.check(restored >= 18, f"only {restored} compactions were restored")


def merge_dirs(shared):
    dirs = [os.path.join(shared, "golden", "pp4")]
    for it in sorted(glob.glob(os.path.join(shared, "corpus", "sweep_tree", "**", "iteration_*"), recursive=True)):
        if len(glob.glob(os.path.join(it, "rank*_trace.json*"))) >= 2:
            dirs.append(it)
    return dirs


def rank_files(directory):
    found = {}
    for path in glob.glob(os.path.join(directory, "rank*_trace.json*")):
        name = os.path.basename(path)
        found[int(name[4:name.index("_")])] = path
    return found


def test_merged(ctx, d):
    args, checks, shared = ctx
    dirs = merge_dirs(shared)
    checks.check(len(dirs) >= 3, f"expected the pp4 set and two multi-rank iterations, found {dirs}")
    for k, directory in enumerate(dirs):
        out = os.path.join(d, f"merged{k}.json.gz")
        result = e2e.tracelane(args, "merge", directory, "-o", out)
        if not checks.equal(result.returncode, 0, f"merge {directory}: exit ({e2e.describe(result)})"):
            continue
        ranks = rank_files(directory)
        for rank, original in sorted(ranks.items()):
            check_restore(args, checks, out, original, d, "--rank", str(rank), what=f"{directory} rank {rank}")
        # The original back under its own name, in a directory of its own (docs/restore.md).
        rank, original = max(ranks.items())
        back = os.path.join(d, f"back{k}", os.path.basename(original))
        os.makedirs(os.path.dirname(back))
        result = e2e.tracelane(args, "restore", out, "--rank", str(rank), "-o", back)
        if checks.equal(result.returncode, 0, f"{out}: restore --rank {rank} -o {back} ({e2e.describe(result)})"):
            checks.equal(md5(back), md5(original), f"{back}: the original under its rank<N>_trace name")
        result = e2e.tracelane(args, "restore", out, "-o", os.path.join(d, "x.json"))
        checks.equal(result.returncode, 2, f"{out}: restore without --rank: exit")
        checks.check("--rank" in result.stderr and str(max(ranks)) in result.stderr,
                     f"{out}: restore without --rank names the ranks ({result.stderr.strip()!r})")
        checks.check(not os.path.exists(os.path.join(d, "x.json")), "restore without --rank wrote a file")


def test_sweep_outputs(ctx, d):
    args, checks, shared = ctx
    tree = os.path.join(d, "tree")
    shutil.copytree(os.path.join(shared, "corpus", "sweep_tree"), tree)
    for root, dirs, files in os.walk(tree):
        for name in dirs + files:
            os.chmod(os.path.join(root, name), 0o755 if name in dirs else 0o644)
    result = e2e.tracelane(args, "sweep", tree, "--quiet", "--jobs", "2")
    checks.equal(result.returncode, 0, f"sweep: exit ({e2e.describe(result)})")
    outputs = sorted(glob.glob(os.path.join(tree, "**", "*_compacted.json*"), recursive=True))
    checks.check(outputs, "sweep wrote no outputs")
    for out in outputs:
        directory, name = os.path.split(out)
        if name.startswith("pp_traces_merged"):
            for rank, original in sorted(rank_files(directory).items()):
                check_restore(args, checks, out, original, d, "--rank", str(rank), what=f"sweep {out} rank {rank}")
        else:
            original = glob.glob(os.path.join(directory, name.replace("_compacted", "").split(".")[0] + ".json*"))
            if checks.check(len(original) == 1, f"sweep output {out}: its original {original}"):
                check_restore(args, checks, out, original[0], d, what=f"sweep {out}")


def test_restore_directory(ctx, d):
    """`restore DIR --into OUT` after `sweep --remove-originals`: every rank's original comes
    back byte for byte, one file per rank (as HTA reads a multi-rank set), from its own copy
    or, when the copy is gone, from the merged output; a planted link is not followed; an
    output that exists is a failed row (exit 1), the others are still written."""
    args, checks, shared = ctx
    source = os.path.join(shared, "corpus", "sweep_tree", "dlrm_8gpu")
    tree = os.path.join(d, "dir_tree")
    shutil.copytree(source, tree)
    for root, dirs, files in os.walk(tree):
        for name in dirs + files:
            os.chmod(os.path.join(root, name), 0o755 if name in dirs else 0o644)
    result = e2e.tracelane(args, "sweep", tree, "--quiet", "--jobs", "2", "--remove-originals")
    checks.equal(result.returncode, 0, f"sweep --remove-originals: exit ({e2e.describe(result)})")
    iteration = os.path.join(tree, "profile_trace", "iteration_12")
    originals = rank_files(os.path.join(source, "profile_trace", "iteration_12"))
    checks.check(not rank_files(iteration), "sweep --remove-originals left originals")
    os.remove(os.path.join(iteration, "rank3_trace_compacted.json"))  # rank 3: from the merged output
    os.symlink(os.path.join(iteration, "rank0_trace_compacted.json"), os.path.join(iteration, "rank9_trace_compacted.json"))
    into = os.path.join(d, "restored_dir")
    os.mkdir(into)
    result = e2e.tracelane(args, "restore", iteration, "--into", into)
    checks.equal(result.returncode, 0, f"restore DIR --into: exit ({e2e.describe(result)})")
    written = sorted(name for name in os.listdir(into) if not name.startswith("."))  # but the directory's lock
    checks.equal(written, sorted([f"rank{r}_trace.json" for r in originals if r != 3] + ["rank3_trace.json.gz"]),
                 "restore DIR --into: the files written")
    for rank, original in sorted(originals.items()):
        name = f"rank{rank}_trace.json" + (".gz" if rank == 3 else "")
        path = os.path.join(into, name)
        checks.check(os.path.exists(path) and e2e.read_bytes(path) == e2e.read_bytes(original),
                     f"restore DIR --into: rank {rank} is not its original")
    os.remove(os.path.join(into, "rank5_trace.json"))
    again = e2e.tracelane(args, "restore", iteration, "--into", into)
    checks.equal(again.returncode, 1, f"restore DIR --into over existing outputs: exit ({e2e.describe(again)})")
    checks.check(os.path.exists(os.path.join(into, "rank5_trace.json")) and "output exists" in again.stderr,
                 f"restore DIR --into: the missing rank is written, the others refused ({again.stderr[:300]!r})")
    nowhere = e2e.tracelane(args, "restore", iteration)
    checks.equal(nowhere.returncode, 2, "restore DIR without --into: exit")


def test_sweep_redoes_outputs_made_another_way(ctx, d):
    """An output is up to date only when it was made from the same inputs the same way: a
    sweep after one with --no-restore-data (or other rules) redoes every output, so each
    can give its original back; one with the same options skips them all. Before, the
    second sweep kept the outputs without restore data as "skipped", all green."""
    args, checks, shared = ctx
    tree = os.path.join(d, "tree")
    shutil.copytree(os.path.join(shared, "corpus", "sweep_tree", "sampled_128gpu"), os.path.join(tree, "sampled_128gpu"))
    for root, dirs, files in os.walk(tree):
        for name in dirs + files:
            os.chmod(os.path.join(root, name), 0o755 if name in dirs else 0o644)
    rules = os.path.join(d, "rules.json")
    e2e.write_file(rules, json.dumps(RULES).encode())

    def statuses(*options):
        result = e2e.tracelane(args, "sweep", tree, "--quiet", *options)
        checks.equal(result.returncode, 0, f"sweep {options}: exit ({e2e.describe(result)})")
        report = json.loads(e2e.read_bytes(os.path.join(tree, "tracelane_report.json")))
        return sorted({row["status"] for row in report["rows"] if row["kind"] in ("file", "merge")})

    checks.equal(statuses("--no-restore-data"), ["ok"], "first sweep, --no-restore-data")
    checks.equal(statuses("--no-restore-data"), ["skipped"], "the same again: up to date")
    checks.equal(statuses(), ["ok"], "a sweep with restore data after one without: every output redone")
    checks.equal(statuses(), ["skipped"], "the same again: up to date")
    checks.equal(statuses("--rules", rules), ["ok"], "other rules: every output redone")
    checks.equal(statuses(), ["ok"], "built-in rules again: every output redone")
    for out in glob.glob(os.path.join(tree, "**", "*_compacted.json*"), recursive=True):
        if not os.path.basename(out).startswith("pp_traces_merged"):
            result = e2e.tracelane(args, "restore", out, "-o", os.path.join(d, "r.json"), "--overwrite")
            checks.equal(result.returncode, 0, f"restore {out} after the sweeps ({e2e.describe(result)})")


def compact_alexnet(ctx, d):
    """(trace, its compacted copy in d, the copy's bytes or None when compact failed)."""
    args, checks, shared = ctx
    trace = os.path.join(shared, "corpus", "single", "hta_cuda_sync_alexnet.json.gz")
    out = os.path.join(d, "alexnet_compacted.json")
    result = e2e.tracelane(args, "compact", trace, "-o", out)
    if not checks.equal(result.returncode, 0, f"compact {trace}: exit ({e2e.describe(result)})"):
        return trace, out, None
    return trace, out, e2e.read_bytes(out)


def test_refusals(ctx, d):
    args, checks, shared = ctx
    trace, out, text = compact_alexnet(ctx, d)
    if text is None:
        return
    key = text.rindex(b'"tracelane_restore"')
    dur = text.index(b'"dur": ')
    flip = lambda data, at: data[:at] + (b"B" if data[at:at + 1] == b"A" else b"A") + data[at + 1:]  # noqa: E731
    copies = {
        "one byte of the restore data changed": (flip(text, key + 60), "restore data"),
        "an event edited": (text[:dur + 7] + (b"9" if text[dur + 7:dur + 8] != b"9" else b"8") + text[dur + 8:],
                            "changed after it was written"),
    }
    without = os.path.join(d, "plain_compacted.json")
    result = e2e.tracelane(args, "compact", trace, "-o", without, "--no-restore-data")
    checks.equal(result.returncode, 0, f"compact --no-restore-data: exit ({e2e.describe(result)})")
    copies["written with --no-restore-data"] = (e2e.read_bytes(without), "no restore data")
    for what, (data, says) in copies.items():
        path = os.path.join(d, "copy_compacted.json")
        e2e.write_file(path, data)
        target = os.path.join(d, "copy_restored.json")
        result = e2e.tracelane(args, "restore", path)  # the default output name
        checks.equal(result.returncode, 1, f"restore of a copy with {what}: exit ({e2e.describe(result)})")
        checks.check(result.stderr.startswith(path + ":") and says in result.stderr,
                     f"restore of a copy with {what}: message {result.stderr.strip()!r}")
        checks.check(not os.path.exists(target), f"restore of a copy with {what} wrote {target}")
    # The good copy, to the default name beside it (never the original's name).
    result = e2e.tracelane(args, "restore", out)
    restored = os.path.join(d, "alexnet_restored.json")
    if checks.equal(result.returncode, 0, f"restore to the default name: exit ({e2e.describe(result)})"):
        checks.equal(md5(restored), md5(trace), "restore to the default name: md5")
    result = e2e.tracelane(args, "restore", out)
    checks.equal(result.returncode, 2, "restore onto an existing output without --overwrite: exit")
    result = e2e.tracelane(args, "check", trace, out)
    checks.equal(result.returncode, 0, f"check: exit ({e2e.describe(result)})")
    checks.check("restore data: present, complete, verified" in result.stdout, f"check reports {result.stdout[:400]!r}")
    damaged = os.path.join(d, "damaged_compacted.json")
    e2e.write_file(damaged, flip(text, key + 60))
    result = e2e.tracelane(args, "check", trace, damaged)
    checks.equal(result.returncode, 1, "check of damaged restore data: exit")
    checks.check("restore data: VIOLATION" in result.stdout, f"check of damaged restore data: {result.stdout[:400]!r}")


def gzip_members(path):
    """How many gzip members the file holds."""
    with open(path, "rb") as handle:
        data = handle.read()
    members = 0
    while data:
        stream = zlib.decompressobj(31)
        stream.decompress(data)
        if not stream.eof:
            raise ValueError(f"{path}: a gzip member is cut short")
        members += 1
        data = stream.unused_data
    return members


def test_gzip_members(ctx, d):
    args, checks, shared = ctx
    trace = os.path.join(shared, "corpus", "single", "tracelens_hip_graph_capture_mi300.json.gz")
    copy = os.path.join(d, "mi300_compacted.json.gz")
    result = e2e.tracelane(args, "compact", trace, "-o", copy)
    if not checks.equal(result.returncode, 0, f"compact {trace}: exit ({e2e.describe(result)})"):
        return
    size = len(e2e.read_bytes(trace))
    for extra, members in (((), (size + (4 << 20) - 1) // (4 << 20)), (("--single-gzip-member",), 1)):
        out = os.path.join(d, f"mi300_restored{len(extra)}.json.gz")
        result = e2e.tracelane(args, "restore", copy, "-o", out, *extra)
        what = "restore " + " ".join(extra) if extra else "restore"
        if checks.equal(result.returncode, 0, f"{what}: exit ({e2e.describe(result)})"):
            checks.equal(gzip_members(out), members, f"{what}: gzip members of a {size}-byte original")
            checks.equal(md5(out), md5(trace), f"{what}: md5 of the restored original")
    # Refused with the output already begun (the copy lost an event): nothing is left.
    text = e2e.read_bytes(copy)
    cut = text.index(b"\n", text.index(b'"traceEvents"') + 20)
    damaged = os.path.join(d, "cut_compacted.json")
    e2e.write_file(damaged, text[:cut] + text[text.index(b"\n", cut + 1):])
    target = os.path.join(d, "cut_restored.json.gz")
    result = e2e.tracelane(args, "restore", damaged, "-o", target)
    checks.equal(result.returncode, 1, f"restore of a copy without one event: exit ({e2e.describe(result)})")
    checks.check(sorted(n for n in os.listdir(d) if n.startswith("cut_")) == ["cut_compacted.json"],
                 f"restore of a copy without one event left {sorted(os.listdir(d))}")


def craft_record(compacted, raw_of):
    """The compacted text with its (one) restore record replaced by a crafted one that still
    passes every check a damaged copy fails: the record's own CRC, DEFLATE, and the header of
    the real record (so its checksum of the output still matches). raw_of(header, raw, head)
    makes the new decompressed record from the real header bytes, the real record, and the
    output's text before its first event."""
    pattern = b', "tracelane_restore": ["'
    key = compacted.rindex(pattern)
    start = key + len(pattern)
    end = compacted.index(b'"', start)
    record = base64.b64decode(compacted[start:end])
    raw = zlib.decompress(record[16:], -15)
    at = 0

    def varint():
        nonlocal at
        value, shift = 0, 0
        while True:
            byte = raw[at]
            at += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value
    varint(), varint()  # format version, original bytes
    at += 4 + 8 + 8  # CRC-32, XXH64, XXH64 of the output
    varint()  # global rank
    prefix = varint()  # the name prefix's length (read before `at` moves past it)
    at += prefix
    varint(), varint()  # clock offset, output events
    without = compacted[:key] + compacted[compacted.index(b"]", end) + 1:]
    head = without[:without.index(b"{", without.index(b'"traceEvents"'))]
    new_raw = raw_of(raw[:at], raw, head)
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    packed = packer.compress(new_raw) + packer.flush()
    new_record = (b"TLR1" + len(new_raw).to_bytes(8, "little") + (zlib.crc32(new_raw) & 0xFFFFFFFF).to_bytes(4, "little")
                  + packed)
    return compacted[:start] + base64.b64encode(new_record) + compacted[end:]


def varint_bytes(value):
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def test_crafted_records_stay_small(ctx, d):
    """A crafted record (valid CRC and DEFLATE, the real header) is refused without taking
    memory beyond a small multiple of the files: the checksums sit inside the record, so a
    record is untrusted input (docs/threat-model.md). Before: a 4 KB record asking for the
    output's head a million times took 5.1 GB; one claiming 2 GiB decompressed zero-filled
    2 GiB before DEFLATE failed."""
    args, checks, shared = ctx
    trace, out, text = compact_alexnet(ctx, d)
    if text is None:
        return
    _, plain_peak = e2e.peak_rss_kib([args.tracelane, "restore", out, "-o", os.path.join(d, "good.json"), "--overwrite"])

    def million_heads(header, raw, head):
        lines = head.count(b"\n") + (0 if head.endswith(b"\n") else 1)
        first = varint_bytes(lines << 1) + varint_bytes(0)
        again = varint_bytes(lines << 1) + varint_bytes(2 * lines - 1)  # back to the start: zigzag(-lines)
        ops = first + again * 999_999
        return header + varint_bytes(1_000_000) + varint_bytes(len(ops)) + ops

    def many_literals(header, raw, head):  # 2^40 lines of its own, of which 1,000 are there
        ops = varint_bytes(((1 << 40) << 1) | 1) + (varint_bytes(4096) + b"x" * 4096) * 1000
        return header + varint_bytes(1) + varint_bytes(len(ops)) + ops

    crafted = {"the output's head a million times": craft_record(text, million_heads),
               "2^40 literal lines": craft_record(text, many_literals)}
    # A record that claims 2 GiB decompressed from a few bytes.
    pattern = b', "tracelane_restore": ["'
    start = text.rindex(pattern) + len(pattern)
    end = text.index(b'"', start)
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    tiny = packer.compress(b"\0" * 1000) + packer.flush()
    claim = b"TLR1" + (1 << 31).to_bytes(8, "little") + (0).to_bytes(4, "little") + tiny
    crafted["a record claiming 2 GiB"] = text[:start] + base64.b64encode(claim) + text[end:]
    for what, data in crafted.items():
        path = os.path.join(d, "crafted_compacted.json")
        e2e.write_file(path, data)
        target = os.path.join(d, "crafted_restored.json")
        code, peak = e2e.peak_rss_kib([args.tracelane, "restore", path, "-o", target, "--overwrite"])
        checks.equal(code, 1, f"restore of {what}: exit")
        checks.check(peak < plain_peak + 64 * 1024,
                     f"restore of {what}: peak RSS {peak} KiB, a good restore {plain_peak} KiB")
        checks.check(not os.path.exists(target), f"restore of {what} wrote {target}")
        code, peak = e2e.peak_rss_kib([args.tracelane, "check", trace, path])
        checks.equal(code, 1, f"check of {what}: exit")
        checks.check(peak < plain_peak + 128 * 1024, f"check of {what}: peak RSS {peak} KiB")


def main():
    args = e2e.parse_args(__doc__)
    shared = e2e.shared_dir(args)
    checks = e2e.Checks("e2e_restore")
    tests = [test_single, test_merged, test_sweep_outputs, test_restore_directory, test_sweep_redoes_outputs_made_another_way, test_refusals, test_gzip_members, test_crafted_records_stay_small]
    return e2e.run_tests(checks, (args, checks, shared), "restore", tests)


if __name__ == "__main__":
    sys.exit(main())
