#!/usr/bin/env python3
"""GPU busy figures, timeline data and `--preview FILE.svg` (docs/figures.md) on the corpus.

- compact --preview on every corpus/single trace tracelane accepts: the SVG is well-formed
  XML (xml.etree parses it), has no script and no external reference, and one strip per
  lane group of the summary's timeline; the summary's figures are in range and agree with
  each other (gpu_busy's groups are the strips', occupancy strings have `bins` digits).
- merge --preview on golden/pp4: one strip per rank and group, ranks in PP order, every
  rank with compute slices has a bubble fraction.
- the preview goes through the output guard: an existing preview without --overwrite, a
  preview named like the output or an input, a name not ending in .svg: exit 2, nothing
  read or written.
- sweep over corpus/sweep_tree: every ok file row's figures equal `compact`'s summary of
  the same file, merge rows have theirs, the CSV has the scalar ones; the figures survive
  `report --combine` of two shards (equal to the single run's), and a partial report
  without them (as older tracelane wrote) still combines.
- a rerun of that sweep (plus golden/pp4 as one more iteration) skips every output and
  reports the same figures, read back from user.tracelane.figures; a damaged or truncated
  one gives that row no figures. Prints the attributes' sizes.
"""

import csv
import glob
import io
import json
import os
import re
import shutil
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_common as e2e  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"
FIGURE_KEYS = ("gpu_window_us", "gpu_busy", "bubble_fraction", "timeline")


class Context:
    def __init__(self, args, checks, shared):
        self.args = args
        self.checks = checks
        self.shared = shared


def svg_strips(checks, path, what):
    """(rank, pp_rank, group) of each strip of the SVG at `path`, or None when it is not
    well-formed; checks it holds no script and no external reference."""
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as error:
        checks.check(False, f"{what}: not well-formed XML: {error}")
        return None
    checks.equal(root.tag, SVG + "svg", f"{what}: root element")
    for element in root.iter():
        checks.check(element.tag not in (SVG + "script", SVG + "foreignObject", SVG + "image", SVG + "use"),
                     f"{what}: has a {element.tag} element")
        for name, value in element.attrib.items():
            checks.check("href" not in name and not name.startswith("on") and "url(" not in value,
                         f"{what}: attribute {name}={value!r} refers outside the file or runs script")
    strips = []
    for element in root.iter(SVG + "g"):
        if element.get("class") == "strip":
            rank, pp_rank = element.get("data-rank"), element.get("data-pp-rank")
            strips.append((int(rank) if rank is not None else None, int(pp_rank) if pp_rank is not None else None,
                           element.get("data-group")))
    return strips


def check_timeline(checks, timeline, what):
    checks.check(timeline["start_us"] <= timeline["end_us"], f"{what}: timeline starts after it ends")
    bins = timeline["bins"]
    checks.equal(bins, 100, f"{what}: bins")
    for strip in timeline["strips"]:
        checks.check(re.fullmatch(r"[0-9]{%d}" % bins, strip["occupancy"]) is not None,
                     f"{what}: occupancy {strip['occupancy']!r} is not {bins} digits")


def file_figures(summary):
    return {key: summary[key] for key in ("gpu_window_us", "gpu_busy", "timeline")}


def test_compact_preview_on_the_corpus(ctx, work):
    checks = ctx.checks
    traces = [path for path in sorted(glob.glob(os.path.join(ctx.shared, "corpus", "single", "*.json*")))
              if not os.path.basename(path).startswith("error_")]

    def one(path):
        name = re.sub(r"\.json(\.gz)?$", "", os.path.basename(path))
        svg = os.path.join(work, name + ".svg")
        result = e2e.tracelane(ctx.args, "compact", path, "-o", os.path.join(work, name + ".json.gz"), "--preview", svg)
        return name, svg, result

    compacted = 0
    for name, svg, result in e2e.parallel_map(one, traces):
        if result.returncode != 0 or '"already laned"' in result.stdout:
            checks.check(not os.path.exists(svg), f"{name}: a preview written though nothing was compacted")
            continue
        compacted += 1
        summary = e2e.summary_from_stdout(checks, result, name)
        if summary is None:
            continue
        busy, timeline = summary["gpu_busy"], summary["timeline"]
        checks.check(summary["gpu_window_us"] > 0, f"{name}: gpu_window_us {summary['gpu_window_us']}")
        checks.check(all(0 <= value <= 1 for value in busy.values()), f"{name}: gpu_busy out of [0, 1]: {busy}")
        checks.check(set(busy) <= set(summary["lanes_by_group"]) and set(summary["lanes_by_group"]) <= set(busy),
                     f"{name}: gpu_busy groups {sorted(busy)} are not the lane groups {sorted(summary['lanes_by_group'])}")
        checks.equal([strip["group"] for strip in timeline["strips"]], sorted(busy), f"{name}: strips, by group name")
        check_timeline(checks, timeline, name)
        strips = svg_strips(checks, svg, f"{name}.svg")
        if strips is not None:
            checks.equal([group for _, _, group in strips], sorted(busy), f"{name}.svg: one strip per group")
    checks.check(compacted >= 5, f"only {compacted} corpus traces compacted")


def test_merge_preview_on_the_pp_set(ctx, work):
    checks = ctx.checks
    pp4 = os.path.join(ctx.shared, "golden", "pp4")
    svg = os.path.join(work, "pp4.svg")
    result = e2e.tracelane(ctx.args, "merge", pp4, "-o", os.path.join(work, "merged.json.gz"), "--preview", svg)
    if not checks.check(result.returncode == 0, f"merge pp4 --preview: {e2e.describe(result)}"):
        return
    summary = e2e.summary_from_stdout(checks, result, "merge pp4")
    if summary is None:
        return
    checks.check("gpu_busy" not in summary, "a merge's summary has bubble_fraction, not gpu_busy")
    order = [entry["global_rank"] for entry in sorted(summary["pp_ranks"], key=lambda entry: entry["pp_rank"])]
    timeline = summary["timeline"]
    check_timeline(checks, timeline, "merge pp4")
    groups = sorted({strip["group"] for strip in timeline["strips"]})
    expected = [(rank, pp, group) for pp, rank in enumerate(order) for group in groups]
    checks.equal([(s["rank"], s["pp_rank"], s["group"]) for s in timeline["strips"]], expected,
                 "merge pp4: one strip per rank and group, PP order then group name")
    bubbles = summary["bubble_fraction"]
    checks.equal(sorted(bubbles), sorted(str(rank) for rank in order), "merge pp4: a bubble fraction per rank")
    checks.check(all(0 < value < 1 for value in bubbles.values()), f"merge pp4: bubble fractions {bubbles}")
    strips = svg_strips(checks, svg, "pp4.svg")
    if strips is not None:
        checks.equal(strips, expected, "pp4.svg: one strip per rank and group, in PP order")


def test_the_preview_goes_through_the_output_guard(ctx, work):
    checks = ctx.checks
    trace = os.path.join(work, "trace.json")
    shutil.copyfile(os.path.join(ctx.args.repo_root, "tests", "data", "example_trace.json"), trace)
    out = os.path.join(work, "out.json")
    existing = e2e.write_file(os.path.join(work, "existing.svg"), b"<svg/>")

    def refused(what, *argv):
        result = e2e.tracelane(ctx.args, "compact", trace, "-o", out, *argv)
        checks.check(result.returncode == 2, f"{what}: expected exit 2, {e2e.describe(result)}")
        checks.check(not os.path.exists(out), f"{what}: the output was written")
        return result

    refused("an existing preview", "--preview", existing)
    checks.equal(e2e.read_bytes(existing), b"<svg/>", "an existing preview was written over")
    result = refused("the preview named like the output", "--preview", out)
    checks.check("svg" in result.stderr, f"the preview named like the output: {result.stderr.strip()!r}")
    refused("the preview is the output", "--preview", os.path.join(work, "same.svg"), "-o", os.path.join(work, "same.svg"))
    refused("a preview not named .svg", "--preview", os.path.join(work, "picture.png"))
    refused("a preview in a missing directory", "--preview", os.path.join(work, "missing", "p.svg"))
    result = e2e.tracelane(ctx.args, "compact", trace, "-o", out, "--preview", existing, "--overwrite")
    checks.check(result.returncode == 0, f"--overwrite replaces a preview: {e2e.describe(result)}")
    checks.check(svg_strips(checks, existing, "overwritten preview") is not None, "the replaced preview is no SVG")


def strip_timing(report):
    """Rows by (dir, kind, file) without the timing columns."""
    timing = set(report["timing_columns"])
    return {(row["dir"], row["kind"], row.get("file")): {k: v for k, v in row.items() if k not in timing}
            for row in report["rows"]}


def test_sweep_report_figures_equal_compact_summaries(ctx, work):
    checks = ctx.checks
    root = os.path.join(work, "tree")
    shutil.copytree(os.path.join(ctx.shared, "corpus", "sweep_tree"), root)
    reports = os.path.join(work, "reports")
    result = e2e.tracelane(ctx.args, "sweep", root, "--jobs", "2", "--quiet", "--report-dir", reports)
    if not checks.check(result.returncode in (0, 1), f"sweep: {e2e.describe(result)}"):
        return
    with open(os.path.join(reports, "tracelane_report.json")) as handle:
        report = json.load(handle)
    with open(os.path.join(reports, "tracelane_report.csv"), newline="") as handle:
        table = {(row["dir"], row["kind"], row["file"]): row for row in csv.DictReader(io.StringIO(handle.read()))}
    files = merges = 0
    for row in report["rows"]:
        what = f"{row['dir']} {row['kind']} {row.get('file')}"
        if row["status"] != "ok":
            checks.check(not any(key in row for key in FIGURE_KEYS), f"{what}: status {row['status']} with figures")
            continue
        csv_row = table[(row["dir"], row["kind"], row.get("file") or "")]
        if row["kind"] == "file":
            files += 1
            path = os.path.join(root, row["dir"], row["file"])
            result = e2e.tracelane(ctx.args, "compact", path, "-o", os.path.join(work, "one.json.gz"), "--overwrite")
            summary = e2e.summary_from_stdout(checks, result, f"compact {what}")
            if summary is not None:
                checks.equal(file_figures(row), file_figures(summary), f"{what}: report figures vs compact's summary")
            expected_csv = ";".join(f"{group}={value:.4f}" for group, value in sorted(row["gpu_busy"].items()))
            checks.equal(csv_row["gpu_busy"], expected_csv, f"{what}: CSV gpu_busy")
        elif row["kind"] == "merge":
            merges += 1
            checks.check("bubble_fraction" in row and "gpu_busy" not in row, f"{what}: merge rows have bubble_fraction")
            groups = {strip["group"] for strip in row["timeline"]["strips"]}
            checks.equal(len(row["timeline"]["strips"]), row["ranks"] * len(groups), f"{what}: strips = ranks x groups")
            checks.equal(csv_row["gpu_busy"], "", f"{what}: a merge row's CSV gpu_busy")
        checks.equal(float(csv_row["gpu_window_us"]), row["gpu_window_us"], f"{what}: CSV gpu_window_us")
        checks.check("timeline" not in csv_row, f"{what}: the CSV has no timeline column")
    checks.check(files >= 3 and merges >= 2, f"only {files} file rows and {merges} merge rows with figures")

    # Two shards, combined: the same figures as the single run.
    shards = os.path.join(work, "shards")
    for k in range(2):
        tree = os.path.join(work, f"tree{k}")
        shutil.copytree(os.path.join(ctx.shared, "corpus", "sweep_tree"), tree)
        result = e2e.tracelane(ctx.args, "sweep", tree, "--quiet", "--shard", f"{k}/2", "--report-dir", shards)
        checks.check(result.returncode in (0, 1), f"sweep --shard {k}/2: {e2e.describe(result)}")
        # Each tree has its own root: make the partial reports name the same one.
        path = os.path.join(shards, f"tracelane_report.shard-{k}-of-2.json")
        with open(path) as handle:
            text = handle.read()
        with open(path, "w") as handle:
            handle.write(text.replace(json.dumps(tree)[1:-1], json.dumps(root)[1:-1]))
    combined_dir = os.path.join(work, "combined")
    result = e2e.tracelane(ctx.args, "report", "--combine", shards, "--report-dir", combined_dir, "--quiet")
    checks.check(result.returncode in (0, 1), f"combine: {e2e.describe(result)}")
    with open(os.path.join(combined_dir, "tracelane_report.json")) as handle:
        combined = json.load(handle)
    single, joined = strip_timing(report), strip_timing(combined)
    for key, row in single.items():
        if key in joined:
            for figure in FIGURE_KEYS:
                checks.equal(joined[key].get(figure), row.get(figure), f"combined {key}: {figure}")
    checks.equal(sorted(joined), sorted(single), "combined rows")

    # A partial report without the figures, as tracelane wrote before them, still combines.
    old = os.path.join(work, "old")
    os.mkdir(old)
    for k in range(2):
        with open(os.path.join(shards, f"tracelane_report.shard-{k}-of-2.json")) as handle:
            partial = json.load(handle)
        if k == 1:
            for row in partial["rows"]:
                for figure in FIGURE_KEYS:
                    row.pop(figure, None)
        with open(os.path.join(old, f"tracelane_report.shard-{k}-of-2.json"), "w") as handle:
            json.dump(partial, handle, indent=2)
    result = e2e.tracelane(ctx.args, "report", "--combine", old, "--report-dir", os.path.join(work, "old_out"), "--quiet")
    checks.check(result.returncode in (0, 1) and "rows[" not in result.stderr,
                 f"combine with a partial report without figures: {e2e.describe(result)}")
    with open(os.path.join(work, "old_out", "tracelane_report.json")) as handle:
        mixed = json.load(handle)
    checks.check(not any(row["kind"] == "problem" and "figure" in (row["error"] or "") for row in mixed["rows"]),
                 "combine with an older partial report made problem rows")
    with_figures = sum(1 for row in mixed["rows"] if "timeline" in row)
    checks.check(0 < with_figures < sum(1 for row in combined["rows"] if "timeline" in row) + 1,
                 f"combined old + new: {with_figures} rows with figures")


FIGURES_XATTR = "user.tracelane.figures"


def outputs_of(report, root):
    """{(dir, kind, file): output path} of the report's rows that name an output."""
    return {(row["dir"], row["kind"], row.get("file")): os.path.join(root, row["dir"], row["output"])
            for row in report["rows"] if row["kind"] != "problem" and row.get("output")}


def sweep_report(ctx, root, reports, what):
    result = e2e.tracelane(ctx.args, "sweep", root, "--jobs", "2", "--quiet", "--report-dir", reports)
    if not ctx.checks.check(result.returncode in (0, 1), f"{what}: {e2e.describe(result)}"):
        return None
    with open(os.path.join(reports, "tracelane_report.json")) as handle:
        return json.load(handle)


def test_skipped_rows_keep_their_figures(ctx, work):
    """A rerun that skips every up-to-date output reports the figures the first run stored
    with it (user.tracelane.figures); a damaged one gives that row no figures."""
    checks = ctx.checks
    root = os.path.join(work, "tree")
    shutil.copytree(os.path.join(ctx.shared, "corpus", "sweep_tree"), root)
    # The golden PP set as one more iteration: a 4-rank merge with bubble fractions.
    pp = os.path.join(root, "pp4", "profile_trace", "iteration_0")
    os.makedirs(pp)
    for name in os.listdir(os.path.join(ctx.shared, "golden", "pp4")):
        if name.startswith("rank"):
            shutil.copy(os.path.join(ctx.shared, "golden", "pp4", name), pp)
    first = sweep_report(ctx, root, os.path.join(work, "first"), "sweep")
    if first is None:
        return
    outputs = outputs_of(first, root)
    probe = next(iter(outputs.values()), None)
    try:
        os.getxattr(probe, "user.tracelane.report_row")
    except (OSError, TypeError) as error:
        print(f"  SKIPPED: {work} keeps no user extended attributes ({error}); figures of skipped rows untested",
              flush=True)
        return
    # The sizes the figures take beside each output (README/docs: they must fit ext4's 4 KiB).
    sizes = {}
    for key, path in sorted(outputs.items()):
        total = sum(len(os.getxattr(path, name)) for name in os.listxattr(path) if name.startswith("user.tracelane."))
        try:
            sizes[key] = (len(os.getxattr(path, FIGURES_XATTR)), total)
        except OSError:
            sizes[key] = (None, total)
        print(f"  xattr bytes {key[0]} {key[1]} {key[2] or ''}: figures {sizes[key][0]}, all {total}", flush=True)
    ok_rows = {key for key, row in strip_timing(first).items() if row["status"] == "ok" and "timeline" in row}
    checks.check(any(key[0].startswith("pp4") and key[1] == "merge" for key in ok_rows), "no pp4 merge row with figures")
    for key in ok_rows:
        checks.check(sizes.get(key, (None,))[0] is not None, f"{key}: ok row's output has no {FIGURES_XATTR}")
        checks.check(sizes.get(key, (0, 0))[1] <= 4000, f"{key}: attributes take {sizes.get(key)} bytes, over ext4's room")

    second = sweep_report(ctx, root, os.path.join(work, "second"), "rerun")
    if second is None:
        return
    before, after = strip_timing(first), strip_timing(second)
    checks.equal(sorted(after), sorted(before), "rerun rows")
    skipped = 0
    for key, row in before.items():
        again = dict(after.get(key, {}))
        if row["status"] == "ok":
            skipped += again.get("status") == "skipped"
            checks.equal(again.get("status"), "skipped", f"rerun {key}: status")
            again["status"] = "ok"
        checks.equal(again, row, f"rerun {key}: the row (figures included) but status and seconds")
    checks.check(skipped >= len(ok_rows) and skipped > 0, f"rerun skipped {skipped} rows")
    # A report with skipped rows that carry figures reads back (report --html re-reads it).
    result = e2e.tracelane(ctx.args, "report", "--html", os.path.join(work, "second", "tracelane_report.json"),
                           "-o", os.path.join(work, "second.html"))
    checks.check(result.returncode in (0, 1), f"report --html of the rerun's report: {e2e.describe(result)}")
    result = e2e.tracelane(ctx.args, "report", "--combine", os.path.join(work, "second", "tracelane_report.json"),
                           "--report-dir", os.path.join(work, "combined"), "--quiet")
    if checks.check(result.returncode in (0, 1), f"report --combine of the rerun's report: {e2e.describe(result)}"):
        with open(os.path.join(work, "combined", "tracelane_report.json")) as handle:
            checks.equal(strip_timing(json.load(handle)), after, "the rerun's report read back by report --combine")

    # Damage the figures of one file output and of the pp4 merge: those rows lose their
    # figures (and nothing else); every other row keeps its own.
    damaged = [key for key in sorted(ok_rows) if key[1] == "merge" and key[0].startswith("pp4")][:1]
    damaged += [key for key in sorted(ok_rows) if key[1] == "file"][:1]
    for n, key in enumerate(damaged):
        if sizes[key][0] is None:
            continue  # already failed above
        value = bytearray(os.getxattr(outputs[key], FIGURES_XATTR))
        if n == 0:
            value[len(value) // 2] ^= 0x55  # a flipped byte in the compressed data
        else:
            value = value[:len(value) - 3]  # truncated
        os.setxattr(outputs[key], FIGURES_XATTR, bytes(value))
    third = sweep_report(ctx, root, os.path.join(work, "third"), "rerun after damage")
    if third is None:
        return
    for key, row in strip_timing(third).items():
        if key not in ok_rows:
            continue
        expected = {k: v for k, v in before[key].items() if k not in FIGURE_KEYS or key not in damaged}
        expected["status"] = "skipped"
        checks.equal(row, expected, f"rerun after damage {key}: " + ("no figures" if key in damaged else "its figures"))
    checks.check(len(damaged) == 2, f"damaged {damaged}")


def main():
    args = e2e.parse_args(__doc__)
    shared = e2e.shared_dir(args)
    checks = e2e.Checks("e2e figures")
    return e2e.run_tests(checks, Context(args, checks, shared), "figures", (
        test_compact_preview_on_the_corpus,
        test_merge_preview_on_the_pp_set,
        test_the_preview_goes_through_the_output_guard,
        test_sweep_report_figures_equal_compact_summaries,
        test_skipped_rows_keep_their_figures,
    ))


if __name__ == "__main__":
    sys.exit(main())
