#!/usr/bin/env python3
"""The sweep report as others read it, and `tracelane report --combine` against partial
reports it must not trust (needs no corpus: the trees hold copies of tests/data's example).

- Names with invalid UTF-8, terminal escapes and backslashes: the JSON and the CSV are
  valid UTF-8 that json.load and the csv module read, every name comes back byte for byte
  with codecs.escape_decode, and shards combine into the single-node report.
- Directory names that a spreadsheet would run as formulas get a leading ' in the CSV only.
- Corrupt partial reports (a status `weird`, input_bytes "lots" / 1e300 / 2^63+5, a shard
  count of 100000000) are errors naming the file and the field; the combined report holds
  a failed problem row for each, and the exit status is 1.
- A huge shard count never turns into a huge log: missing shards are summarised.
- The combined report never replaces one of its inputs (same name, a symlink or a hard
  link to it): exit 2, the input untouched.
- Reports of older releases (schema 2, four columns named otherwise; schema 3): they draw
  as a page and their outputs' records fill skipped rows, but they record no iteration
  plan, so the combine leaves such a shard out, saying why; schema 1 is refused, naming
  the file and the version.
- Shards of one array must split one list of iteration directories: an iteration that
  appears between two shards' runs makes their plans differ, and the combine refuses the
  later shard, naming both reports (exit 1); shards that split one plan file (`sweep
  --write-plan`, then `--plan`) agree whatever appears or goes in between, and each
  iteration of the plan has a row (a warning for an iteration not in the plan, a failed
  row for one gone); a plan file is checked as strictly as a partial report, and one of
  another root, with a name leading out of ROOT, edited, or not a regular file is refused
  before any work (exit 2).
"""

import codecs
import csv
import io
import json
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_common as e2e  # noqa: E402

# Iteration directories under ROOT/run/profile_trace, as bytes: invalid UTF-8, an escape
# sequence, a backslash (the escaped form must stay reversible), spreadsheet formulas.
ODD_DIRS = [b"it\xff\x1b[31m\\x41", b'=HYPERLINK("http:example.com")', b"-1+2", b"@SUM(A1)", b"plain"]


class Context:
    def __init__(self, args, checks):
        self.args = args
        self.checks = checks
        self.example = os.path.join(args.repo_root, "tests", "data", "example_trace.json")


def make_tree(ctx, root):
    for name in ODD_DIRS:
        directory = os.path.join(os.fsencode(root), b"run", b"profile_trace", name)
        os.makedirs(directory)
        shutil.copyfile(ctx.example, os.path.join(directory, b"rank0_trace.json"))


def read_report(checks, path, what):
    """The JSON report and the CSV rows, both decoded as strict UTF-8; None when unreadable."""
    try:
        with open(path + ".json", "rb") as handle:
            report = json.loads(handle.read().decode("utf-8"))
        with open(path + ".csv", "rb") as handle:
            table = list(csv.DictReader(io.StringIO(handle.read().decode("utf-8"), newline="")))
    except (OSError, ValueError) as error:
        checks.check(False, f"{what}: the report does not load: {error}")
        return None, None
    checks.passed += 1
    return report, table


def raw(text):
    """A name's bytes from the report's escaped form (README: codecs.escape_decode)."""
    return codecs.escape_decode(text.encode("utf-8"))[0]


def from_csv(cell):
    """A CSV text cell without the spreadsheet guard's leading '."""
    return cell[1:] if cell.startswith("'") else cell


def without_timing(rows):
    return [{k: v for k, v in row.items() if k != "seconds"} for row in rows]


def sweep_shards(ctx, root, count):
    for k in range(count):
        result = e2e.tracelane(ctx.args, "sweep", root, "--quiet", "--jobs", "1", "--overwrite",
                               "--shard", f"{k}/{count}")
        ctx.checks.check(result.returncode == 0, f"sweep --shard {k}/{count}: {e2e.describe(result)}")
    return [os.path.join(root, f"tracelane_report.shard-{k}-of-{count}.json") for k in range(count)]


def test_odd_names_load_and_round_trip(ctx, work):
    checks = ctx.checks
    root = os.path.join(work, "tree")
    make_tree(ctx, root)
    result = e2e.tracelane(ctx.args, "sweep", root, "--quiet", "--jobs", "1")
    checks.check(result.returncode == 0, f"sweep: {e2e.describe(result)}")
    report, table = read_report(checks, os.path.join(root, "tracelane_report"), "single-node report")
    if report is None:
        return
    expected = sorted(b"run/profile_trace/" + name for name in ODD_DIRS)
    files = [row for row in report["rows"] if row["kind"] == "file"]
    checks.equal(sorted(raw(row["dir"]) for row in files), expected, "JSON dir -> raw bytes")
    checks.equal({raw(row["iteration"]) for row in files}, set(ODD_DIRS), "JSON iteration -> raw bytes")
    csv_files = [row for row in table if row["kind"] == "file"]
    checks.equal(sorted(raw(from_csv(row["dir"])) for row in csv_files), expected, "CSV dir -> raw bytes")
    for row in csv_files:
        for column in ("dir", "iteration", "output", "file"):
            checks.check(row[column][:1] not in ("=", "+", "-", "@"), f"CSV {column} {row[column]!r} is a live formula")
        checks.check(raw(from_csv(row["iteration"])) in ODD_DIRS, f"CSV iteration {row['iteration']!r}")
        checks.check(not row["input_bytes"].startswith("'"), f"CSV number prefixed: {row['input_bytes']!r}")
    checks.check(any(row["iteration"].startswith("=") for row in files), "the JSON keeps a name's leading =")
    checks.check(all(row["status"] == "ok" for row in files), f"statuses {[row['status'] for row in files]}")

    sweep_shards(ctx, root, 2)
    combined_dir = os.path.join(work, "combined")
    result = e2e.tracelane(ctx.args, "report", "--combine", root, "--report-dir", combined_dir)
    checks.check(result.returncode == 0, f"report --combine: {e2e.describe(result)}")
    combined, combined_table = read_report(checks, os.path.join(combined_dir, "tracelane_report"), "combined report")
    if combined is not None:
        checks.equal(without_timing(combined["rows"]), without_timing(report["rows"]), "combined JSON rows")
        checks.equal(without_timing(combined_table), without_timing(table), "combined CSV rows")


def test_corrupt_partial_reports_are_errors(ctx, work):
    checks = ctx.checks
    root = os.path.join(work, "tree")
    make_tree(ctx, root)
    shard0, shard1 = sweep_shards(ctx, root, 2)
    with open(shard0) as handle:
        good = json.load(handle)

    def file_row(report):
        return next(i for i, row in enumerate(report["rows"]) if row["kind"] == "file")

    corruptions = [("status", "weird"), ("input_bytes", "lots"), ("input_bytes", 1e300), ("input_bytes", 2**63 + 5),
                   ("input_bytes", -4), ("dir", "a\x1bb")]
    for column, value in corruptions:
        bad = json.loads(json.dumps(good))
        index = file_row(bad)
        bad["rows"][index][column] = value
        directory = os.path.join(work, f"bad-{column}-{len(os.listdir(work))}")
        os.mkdir(directory)
        bad_path = os.path.join(directory, os.path.basename(shard0))
        with open(bad_path, "w") as handle:
            json.dump(bad, handle)
        shutil.copyfile(shard1, os.path.join(directory, os.path.basename(shard1)))
        what = f"{column} = {value!r}"
        result = e2e.tracelane(ctx.args, "report", "--combine", directory)
        checks.equal(result.returncode, 1, f"{what}: exit status")
        checks.check(f"{bad_path}: rows[{index}].{column}: " in result.stderr,
                     f"{what}: no error naming the file and rows[{index}].{column}: {result.stderr!r}")
        report, table = read_report(checks, os.path.join(directory, "tracelane_report"), what)
        if report is None:
            continue
        problems = [row for row in report["rows"] if row["kind"] == "problem" and row["status"] == "failed"]
        checks.check(any(bad_path in row["error"] for row in problems), f"{what}: no failed problem row: {problems}")
        checks.equal(table[-1]["status"], "failed", f"{what}: the CSV total's status")

    # A shard count of 100000000: refused when read, and no log of the missing shards.
    def as_shard(index, count):
        """`good` claiming to be shard index/count, written under that shard's name."""
        report = json.loads(json.dumps(good))
        report["shard"] = {"index": index, "count": count}
        report["runs"][0]["shard"] = f"{index}/{count}"
        # A plan in which the shard's share is still the iterations the report lists.
        report["plan"]["count"] = (len(report["plan"]["iterations"]) - 1) * count + index + 1
        path = os.path.join(work, f"tracelane_report.shard-{index}-of-{count}.json")
        with open(path, "w") as handle:
            json.dump(report, handle)
        return path

    huge_path = as_shard(0, 100000000)
    started = time.monotonic()
    result = e2e.tracelane(ctx.args, "report", "--combine", huge_path, shard1, "--report-dir", os.path.join(work, "h"))
    checks.equal(result.returncode, 1, "0/100000000: exit status")
    checks.check(f"{huge_path}: shard.count: " in result.stderr, f"0/100000000: {result.stderr[:400]!r}")
    checks.check(len(result.stderr) < 10000 and time.monotonic() - started < 10,
                 f"0/100000000: {len(result.stderr)} bytes of stderr in {time.monotonic() - started:.1f} s")
    # The largest count allowed: the missing shards are summarised, in the log and the report.
    big_path = as_shard(7, 100000)
    result = e2e.tracelane(ctx.args, "report", "--combine", big_path, "--report-dir", os.path.join(work, "b"))
    checks.equal(result.returncode, 1, "7/100000: exit status")
    checks.check("missing shards: 0 1 2 3 4 5 6 8 9 10 ... and 99989 more (of 100000)" in result.stderr
                 and len(result.stderr) < 2000, f"7/100000: {len(result.stderr)} bytes: {result.stderr[:400]!r}")


def test_combine_never_writes_over_an_input(ctx, work):
    checks = ctx.checks
    root = os.path.join(work, "tree")
    make_tree(ctx, root)
    shard0, shard1 = sweep_shards(ctx, root, 2)

    def refused(what, *argv, protected):
        before = {path: e2e.read_bytes(path) for path in protected}
        links = {path: os.readlink(path) for path in protected if os.path.islink(path)}
        result = e2e.tracelane(ctx.args, "report", "--combine", *argv)
        checks.equal(result.returncode, 2, f"{what}: exit status ({result.stderr.strip()[:300]})")
        for path in protected:
            checks.check(e2e.read_bytes(path) == before[path], f"{what}: {path} was written over")
            if path in links:
                checks.check(os.path.islink(path) and os.readlink(path) == links[path], f"{what}: link {path} replaced")

    # An input named like the combined report, in the directory it would be written to.
    named = os.path.join(work, "named")
    os.mkdir(named)
    shutil.copyfile(shard0, os.path.join(named, "tracelane_report.json"))
    refused("an input named tracelane_report.json", os.path.join(named, "tracelane_report.json"), shard1,
            protected=[os.path.join(named, "tracelane_report.json")])
    # The same through another spelling of its directory.
    refused("the same name spelt differently", os.path.join(named, ".", "tracelane_report.json"),
            "--report-dir", os.path.join(named, "..", "named"), protected=[os.path.join(named, "tracelane_report.json")])
    # A --report-dir whose report names are a symlink or a hard link to an input.
    for kind, make in (("symlink", os.symlink), ("hard link", os.link)):
        for extension in (".json", ".csv"):
            directory = os.path.join(work, f"{kind.replace(' ', '_')}{extension}")
            os.mkdir(directory)
            target = os.path.join(directory, "tracelane_report" + extension)
            make(shard1, target)
            refused(f"tracelane_report{extension} a {kind} to an input", root, "--report-dir", directory,
                    protected=[shard1, target])
    # And an ordinary --report-dir still works.
    result = e2e.tracelane(ctx.args, "report", "--combine", root, "--report-dir", os.path.join(work, "fine"))
    checks.check(result.returncode == 0, f"combine into a new directory: {e2e.describe(result)}")


# Schema 3 renamed these columns to the summary keys (src/cli/report/report.hpp kRenamedColumns).
SCHEMA2_NAMES = {"gpu_flow_endpoints_mapped": "flows_mapped", "gpu_flow_endpoints_unmapped": "flows_unmapped",
                 "gpu_annotations_mapped": "annotations_mapped", "gpu_annotations_coalesced": "annotations_coalesced"}


def as_schema2(report):
    """The report release 2 wrote for the same tree (schema 2, the old names, no plan)."""
    old = dict(report, schema_version=2)
    old.pop("plan", None)
    old["totals"] = {SCHEMA2_NAMES.get(k, k): v for k, v in report["totals"].items()}
    old["rows"] = [{SCHEMA2_NAMES.get(k, k): v for k, v in row.items()} for row in report["rows"]]
    return old


def as_schema3(schema2):
    """The report release 3 wrote: the names now, no plan."""
    renamed = {old: new for new, old in SCHEMA2_NAMES.items()}
    report = dict(schema2, schema_version=3)
    report["totals"] = {renamed.get(k, k): v for k, v in schema2["totals"].items()}
    report["rows"] = [{renamed.get(k, k): v for k, v in row.items()} for row in schema2["rows"]]
    return report


def test_previous_release_reports_and_records_still_read(ctx, work):
    checks = ctx.checks
    root = os.path.join(work, "tree")
    make_tree(ctx, root)
    result = e2e.tracelane(ctx.args, "sweep", root, "--quiet", "--jobs", "1")
    checks.check(result.returncode == 0, f"sweep: {e2e.describe(result)}")
    single, single_table = read_report(checks, os.path.join(root, "tracelane_report"), "single-node report")
    if single is None:
        return
    checks.equal(single["schema_version"], 4, "schema_version")
    files = [row for row in single["rows"] if row["kind"] == "file"]
    checks.check(files and all(row.get("gpu_flow_endpoints_mapped") == 72 for row in files),
                 f"gpu_flow_endpoints_mapped of the example: {[row.get('gpu_flow_endpoints_mapped') for row in files]}")
    checks.check(all(name not in single_table[0] for name in SCHEMA2_NAMES.values()), "schema 2 names in the CSV")

    shard0, shard1 = sweep_shards(ctx, root, 2)
    with open(shard0) as handle:
        old = as_schema2(json.load(handle))
    with open(shard0, "w") as handle:
        json.dump(old, handle, indent=2)
    # Nothing shows that an older release's shard split the list this release's did.
    for version in (2, 3):
        with open(shard0, "w") as handle:
            json.dump(old if version == 2 else as_schema3(old), handle, indent=2)
        combined_dir = os.path.join(work, f"mixed{version}")
        result = e2e.tracelane(ctx.args, "report", "--combine", shard0, shard1, "--report-dir", combined_dir)
        checks.check(result.returncode == 1 and f"{shard0}: shard 0/2 records no iteration plan" in result.stderr
                     and "left out (sweep it again)" in result.stderr and "missing shards: 0 (of 2)" in result.stderr,
                     f"report --combine of a schema {version} and a schema 4 shard: {e2e.describe(result)}")
        combined, _ = read_report(checks, os.path.join(combined_dir, "tracelane_report"), "mixed combination")
        if combined is not None:
            checks.equal(combined["schema_version"], 4, "the combined report's schema_version")
            checks.equal(combined["plan"], None, "the plan of a combined report that lacks a shard")
            checks.check(any(row["kind"] == "problem" and row["status"] == "failed" and "no iteration plan" in row["error"]
                             for row in combined["rows"]), f"schema {version}: no failed row for the shard left out")
    with open(shard0, "w") as handle:
        json.dump(old, handle, indent=2)
    page = os.path.join(work, "old.html")
    result = e2e.tracelane(ctx.args, "report", "--html", shard0, "-o", page)
    checks.check(result.returncode == 0 and os.path.getsize(page) > 0, f"report --html of schema 2: {e2e.describe(result)}")

    # Schema 1 wrote names raw: refused, naming the file and the version, exit 1.
    ancient = os.path.join(work, "ancient")
    os.mkdir(ancient)
    ancient_shard = os.path.join(ancient, "tracelane_report.shard-0-of-2.json")
    with open(ancient_shard, "w") as handle:
        json.dump(dict(old, schema_version=1), handle)
    shutil.copy(shard1, ancient)
    result = e2e.tracelane(ctx.args, "report", "--combine", ancient)
    checks.check(result.returncode == 1 and f"{ancient_shard}: a report of schema_version 1" in result.stderr,
                 f"report --combine of schema 1: {e2e.describe(result)}")
    result = e2e.tracelane(ctx.args, "report", "--html", ancient_shard)
    checks.check(result.returncode == 1 and f"{ancient_shard}: a report of schema_version 1" in result.stderr,
                 f"report --html of schema 1: {e2e.describe(result)}")

    # An output the previous release wrote is up to date for this one: the record it stored
    # (old names) gives the skipped row its numbers.
    outputs = [os.path.join(os.fsencode(root), raw(row["dir"]), raw(row["output"])) for row in files]
    try:
        records = {path: json.loads(os.getxattr(path, "user.tracelane.report_row")) for path in outputs}
    except OSError as error:
        print(f"  SKIPPED: {work} keeps no user extended attributes ({error}); old records untested", flush=True)
        return
    for path, record in records.items():
        os.setxattr(path, "user.tracelane.report_row",
                    json.dumps({SCHEMA2_NAMES.get(k, k): v for k, v in record.items()}).encode())
    result = e2e.tracelane(ctx.args, "sweep", root, "--quiet", "--jobs", "1")
    checks.check(result.returncode == 0, f"sweep over the previous release's outputs: {e2e.describe(result)}")
    again, _ = read_report(checks, os.path.join(root, "tracelane_report"), "report of skipped rows")
    if again is None:
        return
    skipped = [row for row in again["rows"] if row["kind"] == "file" and row["status"] == "skipped"]
    checks.equal(len(skipped), len(files), "skipped file rows")
    for row in skipped:
        for name in SCHEMA2_NAMES:
            checks.check(row[name] is not None, f"{row['dir']}: {name} of a skipped row is {row[name]!r}")


def add_iteration(ctx, root, name):
    directory = os.path.join(os.fsencode(root), b"run", b"profile_trace", name)
    os.makedirs(directory)
    shutil.copyfile(ctx.example, os.path.join(directory, b"rank0_trace.json"))


def sweep_shard(ctx, root, k, count, *extra):
    return e2e.tracelane(ctx.args, "sweep", root, "--quiet", "--jobs", "1", "--shard", f"{k}/{count}", *extra)


def failed_problems(report):
    return [row["error"] for row in report["rows"] if row["kind"] == "problem" and row["status"] == "failed"]


def test_shards_of_different_plans_are_refused(ctx, work):
    """The array of the issue: shard 0/2 runs, an iteration appears, shard 1/2 runs. Every
    position after the new name shifts, so shard 1 takes iterations shard 0 took and leaves
    others to no shard; the combine used to exit 0 with them listed twice and missing."""
    checks = ctx.checks
    root = os.path.join(work, "tree")
    make_tree(ctx, root)
    result = sweep_shard(ctx, root, 0, 2)
    checks.check(result.returncode == 0, f"shard 0/2: {e2e.describe(result)}")
    add_iteration(ctx, root, b"a-new")
    result = sweep_shard(ctx, root, 1, 2)
    checks.check(result.returncode == 0, f"shard 1/2: {e2e.describe(result)}")
    shard0, shard1 = (os.path.join(root, f"tracelane_report.shard-{k}-of-2.json") for k in (0, 1))
    combined_dir = os.path.join(work, "combined")
    result = e2e.tracelane(ctx.args, "report", "--combine", root, "--report-dir", combined_dir)
    checks.equal(result.returncode, 1, f"combine of shards of different plans ({result.stderr.strip()[:600]})")
    checks.check(f"{shard1}: shard 1/2 worked from another plan (6 iterations, digest " in result.stderr
                 and f") than {shard0}, shard 0/2 (5 iterations, digest " in result.stderr,
                 f"the refusal names both shards and their plans: {result.stderr!r}")
    report, table = read_report(checks, os.path.join(combined_dir, "tracelane_report"), "combined report")
    if report is None:
        return
    problems = failed_problems(report)
    checks.check(any("worked from another plan" in error for error in problems), f"no failed problem row: {problems}")
    checks.check(any(error.startswith("missing shards: 1 (of 2)") for error in problems), f"shard 1 not missing: {problems}")
    checks.equal(report["plan"], None, "the plan of a combined report of disagreeing shards")
    files = [(row["dir"], row["file"]) for row in report["rows"] if row["kind"] == "file"]
    checks.equal(len(files), len(set(files)), "file rows given twice")
    checks.equal(table[-1]["status"], "failed", "the CSV total's status")


def test_shards_sharing_a_plan_file_agree(ctx, work):
    """`sweep ROOT --write-plan FILE` once, then every shard with --plan FILE: the shards
    split one list, whatever appears or goes between their runs."""
    checks = ctx.checks
    root = os.path.join(work, "tree")
    make_tree(ctx, root)
    single = e2e.tracelane(ctx.args, "sweep", root, "--quiet", "--jobs", "1", "--report-dir", os.path.join(work, "single"))
    checks.check(single.returncode == 0, f"single-node sweep: {e2e.describe(single)}")
    expected, _ = read_report(checks, os.path.join(work, "single", "tracelane_report"), "single-node report")
    plan = os.path.join(work, "plan.json")
    result = e2e.tracelane(ctx.args, "sweep", root, "--write-plan", plan)
    checks.check(result.returncode == 0 and "plan of 5 iteration directories" in result.stdout,
                 f"--write-plan: {e2e.describe(result)}")
    with open(plan) as handle:
        written = json.load(handle)
    checks.equal((written["count"], written["digest"], written["root"]),
                 (5, expected["plan"]["digest"], os.path.realpath(root)), "the plan file's count, digest and root")
    for k in (0, 1):
        result = sweep_shard(ctx, root, k, 2, "--plan", plan, "--overwrite")
        checks.check(result.returncode == 0, f"shard {k}/2 --plan: {e2e.describe(result)}")
        add_iteration(ctx, root, f"a-new{k}".encode())  # appears after each shard: in no plan
    combined_dir = os.path.join(work, "combined")
    result = e2e.tracelane(ctx.args, "report", "--combine", root, "--report-dir", combined_dir)
    checks.equal(result.returncode, 0, f"combine of shards of one plan ({result.stderr.strip()[:600]})")
    combined, _ = read_report(checks, os.path.join(combined_dir, "tracelane_report"), "combined report")
    if combined is not None and expected is not None:
        checks.equal(without_timing(combined["rows"]), without_timing(expected["rows"]), "combined rows")
        checks.equal(combined["plan"], expected["plan"], "the combined report's plan")

    # An iteration that appeared after the plan is a warning of shard 0 (not swept); one of
    # the plan that is gone is a failed row of the shard whose position it has.
    shutil.rmtree(os.path.join(os.fsencode(root), b"run", b"profile_trace", b"plain"))
    for k in (0, 1):
        sweep_shard(ctx, root, k, 2, "--plan", plan)
    result = e2e.tracelane(ctx.args, "report", "--combine", root, "--report-dir", combined_dir)
    checks.equal(result.returncode, 1, f"combine with an iteration of the plan gone ({result.stderr.strip()[:600]})")
    combined, _ = read_report(checks, os.path.join(combined_dir, "tracelane_report"), "combined report")
    if combined is not None:
        problems = {(row["dir"], row["status"]): row["error"] for row in combined["rows"] if row["kind"] == "problem"}
        checks.check(("run/profile_trace/plain", "failed") in problems, f"no failed row for the iteration gone: {problems}")
        for name in ("a-new0", "a-new1"):
            checks.check(problems.get((f"run/profile_trace/{name}", "warning"), "").startswith("not in the plan"),
                         f"no warning for {name}, not in the plan: {problems}")
        checks.check(not any(row["kind"] == "file" and "a-new" in row["dir"] for row in combined["rows"]),
                     "an iteration not in the plan was swept")
        checks.check(combined["plan"] is not None, "the combined report accounts for its plan")


def test_plan_files_are_checked(ctx, work):
    """A plan file may be written by someone else: it is read as strictly as a partial
    report, matched to the iterations discovery finds by name (it never leads the sweep
    anywhere), and a bad one stops the shard before any work (exit 2)."""
    checks = ctx.checks
    root = os.path.join(work, "tree")
    make_tree(ctx, root)
    plan = os.path.join(work, "plan.json")
    # Written for "tree/", read by a shard of "tree": one root.
    result = e2e.tracelane(ctx.args, "sweep", root + "/", "--write-plan", plan, "--quiet")
    checks.check(result.returncode == 0 and result.stdout == "", f"--write-plan --quiet: {e2e.describe(result)}")
    with open(plan) as handle:
        good = json.load(handle)

    def refused(what, document=None, path=None, expect=""):
        if path is None:
            path = os.path.join(work, f"bad-{len(os.listdir(work))}.json")
            with open(path, "w") as handle:
                json.dump(document, handle)
        result = sweep_shard(ctx, root, 0, 2, "--plan", path)
        checks.check(result.returncode == 2 and expect in result.stderr, f"{what}: {e2e.describe(result)}")
        checks.check(not any(name.endswith("_compacted.json") for _, _, names in os.walk(root) for name in names),
                     f"{what}: the shard did work")

    for name, field in (("../../../etc", "iterations[0]"), ("/etc", "iterations[0]"), ("", "iterations[0]"),
                        ("run//x", "iterations[0]")):
        bad = json.loads(json.dumps(good))
        bad["iterations"][0] = name
        refused(f"a plan naming {name!r}", bad, expect=f"--plan: {work}")
        refused(f"a plan naming {name!r} (the field)", bad, expect=f"{field}: not a directory under the root")
    edited = json.loads(json.dumps(good))
    edited["iterations"].pop()
    edited["count"] -= 1
    refused("a plan whose list was cut", edited, expect="digest: not the digest of the iterations listed")
    other = json.loads(json.dumps(good))
    other["root"] = "/somewhere/else"
    refused("a plan of another root", other, expect="a plan of /somewhere/else, not of ")
    fifo = os.path.join(work, "plan.fifo")
    os.mkfifo(fifo)
    refused("a FIFO as the plan", path=fifo, expect="--plan: ")
    refused("no plan file", path=os.path.join(work, "absent.json"), expect="--plan: ")
    # --write-plan writes only the plan, through the guard every output goes through.
    for argv, what in ((["--shard", "0/2"], "with --shard"), (["--plan", plan], "with --plan"),
                       (["--dry-run"], "with --dry-run")):
        result = e2e.tracelane(ctx.args, "sweep", root, "--write-plan", os.path.join(work, "p2.json"), *argv)
        checks.check(result.returncode == 2 and "--write-plan only writes the plan" in result.stderr,
                     f"--write-plan {what}: {e2e.describe(result)}")
    rank_name = os.path.join(work, "rank0_trace.json")
    result = e2e.tracelane(ctx.args, "sweep", root, "--write-plan", rank_name)
    checks.check(result.returncode == 2 and not os.path.exists(rank_name), f"--write-plan to a rank name: {e2e.describe(result)}")
    # The good plan still works, for ROOT however it is spelt.
    for spelling in (root, os.path.join(root, "."), os.path.join(work, ".", "tree") + "/"):
        result = sweep_shard(ctx, spelling, 0, 2, "--plan", plan)
        checks.check(result.returncode == 0, f"the good plan, ROOT {spelling}: {e2e.describe(result)}")


def main():
    args = e2e.parse_args(__doc__)
    checks = e2e.Checks("e2e report")
    return e2e.run_tests(checks, Context(args, checks), "report", (
        test_odd_names_load_and_round_trip,
        test_corrupt_partial_reports_are_errors,
        test_combine_never_writes_over_an_input,
        test_previous_release_reports_and_records_still_read,
        test_shards_of_different_plans_are_refused,
        test_shards_sharing_a_plan_file_agree,
        test_plan_files_are_checked,
    ))


if __name__ == "__main__":
    sys.exit(main())
