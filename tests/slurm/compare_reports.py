#!/usr/bin/env python3
"""Compare tracelane sweep reports, ignoring the timing columns (README.md, "The sweep report").

    compare_reports.py REFERENCE OTHER...

Each argument is a path without extension: REFERENCE.json and REFERENCE.csv are compared
with OTHER.json and OTHER.csv. Ignored: the `seconds` column (and any other column the JSON
lists in `timing_columns`) in rows and totals, the JSON `runs` array and `shard` (null for a
single-node report, and for a combined one). Everything else must be equal. Exit 0 when
all are equal, 1 otherwise (the differences are printed). Standard library only.
"""
import csv
import io
import json
import sys


def timing_columns(report):
    return set(report.get("timing_columns") or []) | {"seconds"}


def strip_json(report):
    timing = timing_columns(report)
    out = {k: v for k, v in report.items() if k not in ("runs", "shard")}
    out["totals"] = {k: v for k, v in report.get("totals", {}).items() if k not in timing}
    out["rows"] = [{k: v for k, v in row.items() if k not in timing} for row in report.get("rows", [])]
    return out


def read_csv(path, timing):
    with open(path, "rb") as f:
        raw = f.read()
    text = raw.decode("utf-8")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    if not rows:
        return raw, [], []
    header = rows[0]
    keep = [i for i, name in enumerate(header) if name not in timing]
    return raw, [header[i] for i in keep], [[row[i] if i < len(row) else None for i in keep] for row in rows[1:]]


def diff_values(a, b, where, out, limit=20):
    if len(out) >= limit:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                out.append(f"{where}.{key}: only in {'reference' if key in a else 'other'}")
            else:
                diff_values(a[key], b[key], f"{where}.{key}", out, limit)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{where}: {len(a)} entries vs {len(b)}")
        for i, (x, y) in enumerate(zip(a, b)):
            diff_values(x, y, f"{where}[{i}]", out, limit)
    elif a != b:
        out.append(f"{where}: {a!r} vs {b!r}")


def compare(reference, other):
    problems = []
    with open(reference + ".json") as f:
        ref_json = json.load(f)
    with open(other + ".json") as f:
        other_json = json.load(f)
    if other_json.get("shard") is not None:
        problems.append(f"{other}.json: shard is {other_json['shard']!r}, expected null (a complete report)")
    diff_values(strip_json(ref_json), strip_json(other_json), "json", problems)

    timing = timing_columns(ref_json)
    ref_raw, ref_header, ref_rows = read_csv(reference + ".csv", timing)
    other_raw, other_header, other_rows = read_csv(other + ".csv", timing)
    if b"\r\n" in ref_raw and b"\n" in other_raw.replace(b"\r\n", b""):
        problems.append(f"{other}.csv: line ends differ from the reference (CRLF expected)")
    if ref_header != other_header:
        problems.append(f"csv header: {ref_header} vs {other_header}")
    if len(ref_rows) != len(other_rows):
        problems.append(f"csv: {len(ref_rows)} rows vs {len(other_rows)}")
    for i, (x, y) in enumerate(zip(ref_rows, other_rows)):
        if x != y:
            cols = [f"{name}: {a!r} vs {b!r}" for name, a, b in zip(ref_header, x, y) if a != b]
            problems.append(f"csv row {i + 1}: " + "; ".join(cols))
            if len(problems) > 40:
                break
    if not ref_json.get("rows"):
        problems.append(f"{reference}.json has no rows: nothing was compared")
    return problems, len(ref_json.get("rows", []))


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    reference, others = argv[1], argv[2:]
    failed = False
    for other in others:
        problems, rows = compare(reference, other)
        if problems:
            failed = True
            print(f"{other} differs from {reference} (timing columns aside):")
            for p in problems:
                print("  " + p)
        else:
            print(f"{other} == {reference} ({rows} rows; timing columns aside)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
