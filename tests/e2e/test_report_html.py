#!/usr/bin/env python3
"""The visual sweep report (tracelane_report.html) in a real browser: headless Chromium
(Debian's `chromium`) opens the page from file:// and the test reads what a person would
check from the DOM it dumps, and from a screenshot.

- The corpus sweep tree (with the golden PP set as one more run, and a corrupt rank file
  added): the page is written beside the JSON and CSV; every file row is on it; the failure
  list names the corrupt file with its reason; the unmatched send/recv of the PP set is
  listed; every number on the page equals the report JSON's; no script error.
- The same report with the figures of the report contract added (tests/e2e/report_figures.py):
  each iteration's timeline has one strip per rank and lane group, in the data's (PP)
  order; busy and bubble fractions and GPU windows on the page equal the JSON's; a figure
  not in the contract's form is named on the page, not drawn. A screenshot is not blank.
- Hostile directory names (`</script>`, `<img onerror>`, quotes, `javascript:`, invalid
  UTF-8, terminal escapes): nothing executes, no markup is injected, links stay relative,
  and the names are shown as text.
- `report --combine` writes the page too; `report --html` refuses to overwrite its input
  and names the file and field of a corrupt report.

Skipped (exit 77, loudly) without chromium (set TRACELANE_CHROMIUM to use another binary)
or without the corpus (TRACELANE_SHARED).

usage: test_report_html.py --tracelane BINARY [--repo-root DIR] [--save-screenshot PNG]
"""

import html.parser
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_common as e2e  # noqa: E402
import report_figures  # noqa: E402

INT_COLUMNS = {"rank", "pp_rank", "events", "measured_slices", "original_streams", "compacted_lanes", "input_bytes",
               "output_bytes", "ranks", "pp_send_recv_pairs", "pp_send_recv_unmatched", "pp_compute_dependency_pairs",
               "pp_compute_dependency_unmatched"}
REAL_COLUMNS = {"compaction_ratio", "seconds"}
TEXT_COLUMNS = {"file", "output", "status", "error", "time_alignment"}


def find_chromium():
    named = os.environ.get("TRACELANE_CHROMIUM")
    if named:
        return named
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    def __init__(self, binary, work):
        self.binary, self.work, self.runs = binary, work, 0

    def _run(self, url, *extra):
        self.runs += 1
        profile = os.path.join(self.work, f"profile{self.runs}")
        # No network, no first-run work, no GPU (none on CI); virtual time lets the page's
        # script finish before the DOM or the picture is taken.
        cmd = [self.binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--disable-extensions", "--hide-scrollbars", f"--user-data-dir={profile}",
               "--virtual-time-budget=10000", *extra, url]
        result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=180)
        shutil.rmtree(profile, ignore_errors=True)
        return result

    def dom(self, path, query="?all"):
        result = self._run("file://" + path + query, "--dump-dom")
        return result.stdout.decode("utf-8", "replace"), result

    def screenshot(self, path, png, size="1280,1600"):
        return self._run("file://" + path, f"--screenshot={png}", f"--window-size={size}")


class Node:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent, self.children = tag, dict(attrs), parent, []

    def text(self):
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def walk(self):
        yield self
        for child in self.children:
            if isinstance(child, Node):
                yield from child.walk()

    def find(self, tag=None, **attrs):
        """Descendants with `tag` whose attributes have the given values (class_ for class,
        a value of True for "present")."""
        out = []
        for node in self.walk():
            if tag and node.tag != tag:
                continue
            ok = True
            for key, value in attrs.items():
                key = key.rstrip("_").replace("_", "-") if key != "class_" else "class"
                have = node.attrs.get(key)
                if value is True:
                    ok = ok and key in node.attrs
                elif key == "class":
                    ok = ok and have is not None and value in have.split()
                else:
                    ok = ok and have == value
            if ok:
                out.append(node)
        return out


class DomParser(html.parser.HTMLParser):
    VOID = {"meta", "br", "img", "input", "link", "hr", "col", "area", "base", "embed", "source", "wbr"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", [], None)
        self.current = self.root

    def handle_starttag(self, tag, attrs):
        node = Node(tag, attrs, self.current)
        self.current.children.append(node)
        if tag not in self.VOID:
            self.current = node

    def handle_startendtag(self, tag, attrs):
        self.current.children.append(Node(tag, attrs, self.current))

    def handle_endtag(self, tag):
        node = self.current
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None and node.parent is not None:
            self.current = node.parent

    def handle_data(self, data):
        self.current.children.append(data)


def parse_dom(text):
    parser = DomParser()
    parser.feed(text)
    parser.close()
    return parser.root


def png_stats(path):
    """(width, height, distinct colours, share of pixels unlike the commonest colour) of an
    8-bit RGB or RGBA PNG, decoded here with zlib (PNG filters undone by hand)."""
    with open(path, "rb") as handle:
        data = handle.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path}: not a PNG")
    pos, idat, width = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour_type = struct.unpack(">IIBB", body[:10])
            if depth != 8 or colour_type not in (2, 6):
                raise ValueError(f"{path}: PNG of depth {depth}, colour type {colour_type}")
            bpp = 3 if colour_type == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    previous = bytearray(stride)
    counts = {}
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        if kind == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif kind == 2:
            for i in range(stride):
                line[i] = (line[i] + previous[i]) & 255
        elif kind == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + previous[i]) >> 1)) & 255
        elif kind == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = previous[i]
                c = previous[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        if y % 2 == 0:  # every other row is plenty to count colours
            for x in range(0, stride, bpp * 2):
                pixel = bytes(line[x:x + 3])
                counts[pixel] = counts.get(pixel, 0) + 1
        previous = line
    total = sum(counts.values())
    commonest = max(counts.values())
    return width, height, len(counts), 1 - commonest / total


def load(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


class Context:
    def __init__(self, args, checks, shared, browser):
        self.args, self.checks, self.shared, self.browser = args, checks, shared, browser

    def tracelane(self, *argv):
        return e2e.tracelane(self.args, *argv)


def corpus_tree(ctx, work):
    """The corpus sweep tree, the golden PP set as run pp4, and a corrupt rank file."""
    root = os.path.join(work, "tree")
    shutil.copytree(os.path.join(ctx.shared, "corpus", "sweep_tree"), root)
    pp = os.path.join(root, "pp4", "profile_trace", "iteration_0")
    os.makedirs(pp)
    for name in sorted(os.listdir(os.path.join(ctx.shared, "golden", "pp4"))):
        if name.startswith("rank"):
            shutil.copy(os.path.join(ctx.shared, "golden", "pp4", name), pp)
    for directory, dirs, _ in os.walk(root):
        os.chmod(directory, 0o755)
    e2e.write_file(os.path.join(root, "dlrm_8gpu", "profile_trace", "iteration_12", "rank9_trace.json"),
                   b'{"traceEvents": [')
    return root


def page_ready(ctx, dom, what):
    checks = ctx.checks
    page = dom.find("main", id="page")
    checks.check(page and page[0].attrs.get("data-state") == "ready", f"{what}: the page did not finish drawing")
    errors = dom.find(id="js-errors")
    checks.check(errors and not errors[0].text().strip(), f"{what}: script errors: {errors[0].text() if errors else '?'}")
    checks.check(not dom.find(data_js_error=True), f"{what}: a script error was recorded")
    return bool(page)


def same_number(text, value):
    if value is None:
        return text == ""
    try:
        return float(text.replace(",", "")) == float(value)
    except ValueError:
        return False


def fractions_on_page(node):
    out = {}
    for span in node.find("span", data_group=True):
        text = span.text().rsplit(" ", 1)[-1]
        out[span.attrs["data-group"]] = float(text.rstrip("%")) / 100
    return out


def close(a, b):
    return set(a) == set(b) and all(abs(a[k] - b[k]) < 5e-7 for k in a)


def expected_strips(report, rows, directory):
    """[rank, group] of the strips the page must draw for an iteration, in order: the merge
    row's timeline when it has one, else its file rows' (in PP order)."""
    merge = [r for r in rows if r["kind"] == "merge" and r["dir"] == directory and r.get("timeline")]
    if merge:
        return [[s["rank"], s["group"]] for s in merge[0]["timeline"]["strips"]]
    files = sorted((r for r in rows if r["kind"] == "file" and r["dir"] == directory and r.get("timeline")),
                   key=lambda r: (r["pp_rank"] if r.get("pp_rank") is not None else float("inf"), r["rank"]))
    return [[s["rank"] if s["rank"] is not None else f["rank"], s["group"]] for f in files for s in f["timeline"]["strips"]]


def check_page(ctx, report, dom, what):
    """Everything a person would check, against the report JSON the page was drawn from."""
    checks = ctx.checks
    if not page_ready(ctx, dom, what):
        return
    rows = report["rows"]
    for index, row in enumerate(rows):
        label = f"{what}: rows[{index}] ({row.get('dir')}/{row.get('file') or row['kind']})"
        if row["kind"] == "file":
            found = dom.find("tr", data_row=str(index))
            if not checks.equal(len(found), 1, f"{label}: table rows on the page"):
                continue
            checks.equal(len(dom.find("a", data_row=str(index), class_="cell")), 1, f"{label}: cells in the run grid")
            cells = {td.attrs["data-col"]: td for td in found[0].find("td", data_col=True)}
        elif row["kind"] == "merge":
            found = dom.find("div", data_row=str(index), class_="merge")
            if not checks.equal(len(found), 1, f"{label}: merge facts on the page"):
                continue
            cells = {dd.attrs["data-col"]: dd for dd in found[0].find("dd", data_col=True)}
        else:
            continue
        for column, node in cells.items():
            text = node.text().strip()
            if column in INT_COLUMNS or column in REAL_COLUMNS:
                checks.check(same_number(text, row.get(column)), f"{label}.{column}: page {text!r}, JSON {row.get(column)!r}")
            elif column in TEXT_COLUMNS:
                checks.equal(text, row.get(column) or "", f"{label}.{column}")
            elif column == "gpu_window_us":
                checks.check(same_number(text, row.get("gpu_window_us")), f"{label}.gpu_window_us: page {text!r}")
            elif column == "gpu_busy":
                checks.check(close(fractions_on_page(node), row.get("gpu_busy") or {}),
                             f"{label}.gpu_busy: page {fractions_on_page(node)}, JSON {row.get('gpu_busy')}")
            elif column == "bubble_fraction" and text:
                merge = [r for r in rows if r["kind"] == "merge" and r["dir"] == row["dir"]][0]
                checks.check(abs(float(text.rstrip("%")) / 100 - merge["bubble_fraction"][str(row["rank"])]) < 5e-7,
                             f"{label}.bubble_fraction: page {text!r}")
        if row["kind"] == "file" and row.get("status") == "ok":
            checks.check("output" in cells and cells["output"].find("a", href=True),
                         f"{label}: no link to the compacted file")
        if row["kind"] == "file" and (row.get("gpu_busy") or {}) and "gpu_busy" in cells:
            pass
        elif row["kind"] == "file" and row.get("gpu_busy"):
            checks.check(False, f"{label}: gpu_busy not shown")
        if row["kind"] == "merge" and row.get("bubble_fraction"):
            for file in rows:
                if file["kind"] == "file" and file["dir"] == row["dir"] and str(file["rank"]) in row["bubble_fraction"]:
                    tr = dom.find("tr", data_row=str(rows.index(file)))
                    bubble = tr[0].find("td", data_col="bubble_fraction") if tr else []
                    checks.check(bubble and bubble[0].text().strip(), f"{label}: no bubble shown for rank {file['rank']}")

    # What went wrong: each failed row with its reason, warnings, unmatched send/recv.
    listed = " ".join(node.text() for node in dom.find("ul", class_="problems"))
    failed = [r for r in rows if r.get("status") == "failed"]
    for row in failed:
        checks.check(row["error"] in listed, f"{what}: failure not listed: {row['error']!r}")
    for row in rows:
        if row["kind"] == "merge" and (row.get("pp_send_recv_unmatched") or 0) > 0:
            unmatched = " ".join(n.text() for n in dom.find("ul", id="list-unmatched"))
            checks.check(row["dir"] in unmatched, f"{what}: unmatched send/recv of {row['dir']} not listed")
    if not failed and not any(r.get("status") == "warning" for r in rows) and not report["totals"]["iterations_with_unmatched_send_recv"]:
        checks.check(dom.find(id="nothing-wrong"), f"{what}: no 'nothing went wrong' line")

    # Totals equal the report's.
    for key, value in report["totals"].items():
        node = dom.find("td", data_total=key)
        if not checks.check(node, f"{what}: totals.{key} not on the page"):
            continue
        text = node[0].text()
        if isinstance(value, list):
            checks.equal(text, " ".join(value), f"{what}: totals.{key}")
        else:
            checks.check(same_number(text, value), f"{what}: totals.{key}: page {text!r}, JSON {value!r}")

    # One timeline per iteration with one strip per rank and group, in the data's order.
    for section in dom.find("section", class_="iter"):
        directory = section.attrs["data-dir"]
        expected = expected_strips(report, rows, directory)
        canvases = section.find("canvas", class_="timeline")
        if expected:
            if checks.check(canvases, f"{what}: {directory}: no timeline"):
                drawn = json.loads(canvases[0].attrs.get("data-keys", "[]"))
                checks.equal(drawn, expected, f"{what}: {directory}: strips drawn (rank, group)")
        else:
            checks.check(not canvases and "No timeline" in section.text(), f"{what}: {directory}: expected the no-timeline note")
    dirs = {r["dir"] for r in rows if r["kind"] != "problem"}
    checks.equal(len(dom.find("section", class_="iter")), len(dirs), f"{what}: iteration sections")


def check_screenshot(ctx, page, png, what):
    result = ctx.browser.screenshot(page, png)
    if not ctx.checks.check(os.path.exists(png), f"{what}: no screenshot: {result.stderr.decode(errors='replace')[-400:]}"):
        return
    width, height, colours, busy = png_stats(png)
    ctx.checks.equal((width, height), (1280, 1600), f"{what}: screenshot size")
    ctx.checks.check(colours >= 20 and busy > 0.02, f"{what}: screenshot looks blank ({colours} colours, {busy:.1%} drawn)")
    return busy


def save_screenshot(ctx, page, what):
    """--save-screenshot PNG: the picture for the README (docs/report.png)."""
    if not ctx.args.save_screenshot:
        return
    ctx.browser.screenshot(page, os.path.abspath(ctx.args.save_screenshot), size="1280,2200")
    print(f"    screenshot of {what} saved to {ctx.args.save_screenshot}")


def test_corpus_sweep(ctx, work):
    """A sweep of the corpus tree writes the page beside its JSON and CSV; the page shows
    every row, the corrupt file and the unmatched send/recv, with the report's numbers."""
    checks = ctx.checks
    root = corpus_tree(ctx, work)
    result = ctx.tracelane("sweep", root, "--jobs", "2", "--quiet")
    checks.equal(result.returncode, 1, f"sweep with a corrupt file: {e2e.describe(result)}")
    page = os.path.join(root, "tracelane_report.html")
    for name in ("tracelane_report.json", "tracelane_report.csv", "tracelane_report.html"):
        checks.check(os.path.isfile(os.path.join(root, name)), f"sweep wrote no {name}")
    if not os.path.isfile(page):
        return
    with open(page, encoding="utf-8") as handle:
        text = handle.read()
    for needle in ("http://", "https://", "<link", "src=", "@import", "url("):
        checks.check(needle not in text, f"the page refers to something outside itself: {needle!r}")
    report = load(os.path.join(root, "tracelane_report.json"))
    dom_text, run = ctx.browser.dom(page)
    dom = parse_dom(dom_text)
    check_page(ctx, report, dom, "corpus sweep")
    listed = " ".join(node.text() for node in dom.find("ul", id="list-failed"))
    checks.check("rank9_trace.json: invalid JSON" in listed, f"the failure list does not name the corrupt file: {listed[:300]!r}")
    # Without ?all the page fills iteration sections lazily: it still draws, and the first one.
    lazy = parse_dom(ctx.browser.dom(page, query="")[0])
    page_ready(ctx, lazy, "corpus sweep, lazily")
    check_screenshot(ctx, page, os.path.join(work, "corpus.png"), "corpus sweep")
    if any(r.get("timeline") for r in report["rows"]):
        save_screenshot(ctx, page, "the corpus sweep")


def page_dom(ctx, report, stem, what):
    """Writes `report` to STEM.json, draws it with report --html -o STEM.html and returns the
    page's DOM in the browser, or None when report --html failed (a failed check)."""
    source, page = stem + ".json", stem + ".html"
    with open(source, "w", encoding="utf-8") as handle:
        json.dump(report, handle)
    result = ctx.tracelane("report", "--html", source, "-o", page)
    if not ctx.checks.equal(result.returncode, 0, f"report --html of {what}: {e2e.describe(result)}"):
        return None
    return parse_dom(ctx.browser.dom(page)[0])


def test_figures(ctx, work):
    """The report with the contract's figures: timelines with one strip per rank and group,
    busy and bubble fractions equal to the JSON's; a malformed figure is named, not drawn."""
    checks = ctx.checks
    root = corpus_tree(ctx, work)
    ctx.tracelane("sweep", root, "--jobs", "2", "--quiet")
    report = report_figures.decorate(load(os.path.join(root, "tracelane_report.json")))
    decorated = os.path.join(root, "decorated.json")
    page = os.path.join(root, "decorated.html")
    dom = page_dom(ctx, report, os.path.join(root, "decorated"), "the decorated report")
    if dom is None:
        return
    check_page(ctx, report, dom, "figures")
    pp = [s for s in dom.find("section", class_="iter") if s.attrs["data-dir"] == "pp4/profile_trace/iteration_0"]
    if checks.check(pp, "no section for the PP set"):
        canvas = pp[0].find("canvas", class_="timeline")
        drawn = json.loads(canvas[0].attrs["data-keys"]) if canvas else []
        ranks = []
        for rank, _ in drawn:
            if not ranks or ranks[-1] != rank:
                ranks.append(rank)
        checks.equal(ranks, [4, 0, 12, 8], "PP set: ranks of the timeline, top to bottom (PP order)")
        checks.equal(len(drawn), 4 * len(report_figures.GROUPS), "PP set: strips (4 ranks x groups)")
    links = [a.attrs["href"] for a in dom.find("a", href=True) if not a.attrs["href"].startswith("#")]
    for href in links:
        checks.check(os.path.exists(os.path.join(root, href)), f"a link to a file that is not there: {href}")
    checks.check(any(h.endswith("pp_traces_merged_compacted.json.gz") for h in links), "no link to a merged file")
    check_screenshot(ctx, page, os.path.join(work, "figures.png"), "figures")
    if not any(r.get("timeline") for r in load(os.path.join(root, "tracelane_report.json"))["rows"]):
        save_screenshot(ctx, page, "the corpus sweep with made-up figures (report_figures.py)")

    # A figure not in the contract's form: named on the page, the rest still drawn.
    bad = json.loads(json.dumps(report))
    index = next(i for i, r in enumerate(bad["rows"]) if r.get("timeline"))
    bad["rows"][index]["timeline"]["strips"][0]["occupancy"] = "12"
    with open(decorated, "w", encoding="utf-8") as handle:
        json.dump(bad, handle)
    result = ctx.tracelane("report", "--html", decorated, "-o", page, "--overwrite")
    checks.equal(result.returncode, 0, f"report --html, a malformed timeline: {e2e.describe(result)}")
    dom = parse_dom(ctx.browser.dom(page)[0])
    page_ready(ctx, dom, "malformed timeline")
    warnings = " ".join(n.text() for n in dom.find("ul", id="list-warning"))
    checks.check(f"rows[{index}].timeline: strips[0].occupancy: expected 100 digits" in warnings,
                 f"the malformed timeline is not named: {warnings[:300]!r}")


HOSTILE = [
    # `</script>` split over two directory names, markup with handlers, quotes, entities.
    b"a</", b"script><img src=x onerror=\"document.body.setAttribute('data-pwned','img')\">'&amp;<",
    b"script><script>document.body.setAttribute('data-pwned','script')<\\script>\xff\x1b[31m",
]


def test_hostile_names(ctx, work):
    """Names that are markup, script ends, quotes, a javascript: URL, invalid UTF-8 and
    escapes: nothing on the page runs or becomes markup; the names are shown as text."""
    checks = ctx.checks
    root = os.path.join(work, "tree").encode()
    deep = os.path.join(root, b"a<", HOSTILE[1], HOSTILE[2])
    odd = os.path.join(root, b"javascript:document.body.setAttribute('data-pwned','href')", b"it\"'<b>")
    for directory in (deep, odd):
        for rank in (0, 1):
            e2e.write_file(os.path.join(directory, b"rank%d_trace.json" % rank), e2e.synthetic_rank_trace(rank, 40))
        e2e.write_file(os.path.join(directory, b"rank2_trace.json"), b"<script>document.body.setAttribute('data-pwned','file')</script>")
    result = ctx.tracelane("sweep", root.decode(errors="surrogateescape"), "--quiet")
    checks.equal(result.returncode, 1, f"sweep of the hostile tree: {e2e.describe(result)}")
    page = os.path.join(root.decode(errors="surrogateescape"), "tracelane_report.html")
    if not checks.check(os.path.isfile(page), "no page for the hostile tree"):
        return
    report = load(os.path.join(os.path.dirname(page), "tracelane_report.json"))
    report = report_figures.decorate(report)
    decorated = os.path.join(os.path.dirname(page), "decorated.json")
    with open(decorated, "w", encoding="utf-8") as handle:
        json.dump(report, handle)
    ctx.tracelane("report", "--html", decorated)
    for name, data in (("sweep page", None), ("decorated page", report)):
        path = page if data is None else os.path.join(os.path.dirname(page), "decorated.html")
        with open(path, "rb") as handle:
            raw = handle.read()
        checks.equal(raw.count(b"<script"), 2, f"{name}: <script elements in the file")
        checks.equal(raw.count(b"</script"), 2, f"{name}: </script in the file")
        dom_text, _ = ctx.browser.dom(path)
        dom = parse_dom(dom_text)
        check_page(ctx, data or load(os.path.join(os.path.dirname(page), "tracelane_report.json")), dom, name)
        checks.check(not dom.find(data_pwned=True), f"{name}: a name's script ran")
        checks.equal(len(dom.find("img")), 0, f"{name}: <img> elements (markup from a name)")
        checks.equal(len(dom.find("b")), 0, f"{name}: <b> elements (markup from a name)")
        checks.equal(len(dom.find("script")), 2, f"{name}: <script> elements")
        for a in dom.find("a", href=True):
            href = a.attrs["href"]
            checks.check(href.startswith("#") or (":" not in href and not href.startswith("/")), f"{name}: a link that is not relative: {href!r}")
        shown = dom.text()
        checks.check("script><img src=x onerror=" in shown and "\\xff\\x1b[31m" in shown,
                     f"{name}: the hostile names are not shown as text")
        listed = " ".join(n.text() for n in dom.find("ul", id="list-failed"))
        checks.check(listed.count("rank2_trace.json") >= 2, f"{name}: the corrupt files are not listed: {listed[:300]!r}")


def test_combine_writes_the_page(ctx, work):
    """`report --combine` writes tracelane_report.html beside the combined JSON and CSV."""
    checks = ctx.checks
    root = os.path.join(work, "tree")
    shutil.copytree(os.path.join(ctx.shared, "corpus", "sweep_tree"), root)
    for directory, dirs, _ in os.walk(root):
        os.chmod(directory, 0o755)
    reports = os.path.join(work, "reports")
    for k in (0, 1):
        ctx.tracelane("sweep", root, "--shard", f"{k}/2", "--report-dir", reports, "--quiet")
    for k in (0, 1):
        checks.check(os.path.isfile(os.path.join(reports, f"tracelane_report.shard-{k}-of-2.html")), f"no page for shard {k}")
    combined = os.path.join(work, "combined")
    result = ctx.tracelane("report", "--combine", reports, "--report-dir", combined, "--quiet")
    checks.equal(result.returncode, 0, f"report --combine: {e2e.describe(result)}")
    page = os.path.join(combined, "tracelane_report.html")
    if checks.check(os.path.isfile(page), "report --combine wrote no page"):
        dom = parse_dom(ctx.browser.dom(page)[0])
        check_page(ctx, load(os.path.join(combined, "tracelane_report.json")), dom, "combined")
        links = [a.attrs["href"] for a in dom.find("a", href=True) if not a.attrs["href"].startswith("#")]
        checks.check(links and all(os.path.exists(os.path.join(combined, h)) for h in links),
                     f"links from the report dir do not reach the tree: {links[:3]}")


def test_report_html_command(ctx, work):
    """`report --html`: beside the report by default; never over its input; a corrupt
    report is an error naming the file and the field."""
    checks = ctx.checks
    root = os.path.join(work, "tree")
    for rank in (0, 1):
        e2e.write_file(os.path.join(root, "run", "it", f"rank{rank}_trace.json"), e2e.synthetic_rank_trace(rank, 30))
    ctx.tracelane("sweep", root, "--quiet")
    source = os.path.join(root, "tracelane_report.json")
    copy = os.path.join(work, "copy.json")
    shutil.copy(source, copy)
    result = ctx.tracelane("report", "--html", copy)
    checks.equal(result.returncode, 0, f"report --html: {e2e.describe(result)}")
    checks.check(os.path.isfile(os.path.join(work, "copy.html")), "report --html wrote no copy.html beside copy.json")
    before = open(copy, "rb").read()
    result = ctx.tracelane("report", "--html", copy, "-o", copy)
    checks.equal(result.returncode, 2, f"report --html -o INPUT: {e2e.describe(result)}")
    checks.equal(open(copy, "rb").read(), before, "report --html -o INPUT changed its input")
    # -o names an output like any other: an .html name, never over a file without --overwrite
    # (before, `-o precious.txt` replaced it with the page, exit 0).
    precious = os.path.join(work, "precious.html")
    e2e.write_file(precious, b"mine\n")
    result = ctx.tracelane("report", "--html", source, "-o", precious)
    checks.equal(result.returncode, 2, f"report --html -o EXISTING: {e2e.describe(result)}")
    checks.equal(open(precious, "rb").read(), b"mine\n", "report --html -o EXISTING replaced it")
    result = ctx.tracelane("report", "--html", source, "-o", precious, "--overwrite")
    checks.equal(result.returncode, 0, f"report --html -o EXISTING --overwrite: {e2e.describe(result)}")
    checks.check(open(precious, "rb").read().startswith(b"<!DOCTYPE html>"), "--overwrite wrote the page")
    text_file = os.path.join(work, "notes.txt")
    result = ctx.tracelane("report", "--html", source, "-o", text_file)
    checks.equal(result.returncode, 2, f"report --html -o notes.txt: {e2e.describe(result)}")
    checks.check(not os.path.exists(text_file) and ".html" in result.stderr, f"-o notes.txt: {result.stderr!r}")
    report = load(copy)
    report["rows"][0]["input_bytes"] = "lots"
    with open(copy, "w", encoding="utf-8") as handle:
        json.dump(report, handle)
    result = ctx.tracelane("report", "--html", copy, "-o", os.path.join(work, "bad.html"))
    checks.equal(result.returncode, 1, f"report --html of a corrupt report: {e2e.describe(result)}")
    checks.check("copy.json: rows[0].input_bytes: expected a non-negative integer" in result.stderr,
                 f"the error does not name the file and field: {result.stderr!r}")
    checks.check(not os.path.exists(os.path.join(work, "bad.html")), "a page was written for a corrupt report")
    result = ctx.tracelane("report", "--html", copy, "--combine", copy)
    checks.equal(result.returncode, 2, f"report --html with --combine: {e2e.describe(result)}")


def test_report_links_stay_in_their_directory(ctx, work):
    """A report is input too (report --html of one copied from elsewhere): a row whose output
    is '../../../x' or 'a/b' gets no link, even when another row of its directory has one.
    Before, the page fell back to the raw name and linked ../../../../.ssh/id_rsa."""
    checks = ctx.checks
    root = os.path.join(work, "tree")
    for rank in (0, 1):
        e2e.write_file(os.path.join(root, "run", "it", f"rank{rank}_trace.json"), e2e.synthetic_rank_trace(rank, 30))
    ctx.tracelane("sweep", root, "--quiet")
    report = load(os.path.join(root, "tracelane_report.json"))
    files = [row for row in report["rows"] if row["kind"] == "file"]
    files[0]["output"] = "../../../../.ssh/id_rsa"
    files[1]["output"] = "sub/dir.json"
    dom = page_dom(ctx, report, os.path.join(work, "hostile"), "the edited report")
    if dom is None:
        return
    hrefs = [a.attrs["href"] for a in dom.find("a", href=True) if not a.attrs["href"].startswith("#")]
    checks.check(any(href.endswith("pp_traces_merged_compacted.json.gz") for href in hrefs),
                 f"the merge row of that directory keeps its link: {hrefs}")
    checks.check(not any(".ssh" in href or "sub/dir.json" in href for href in hrefs),
                 f"a row's output name made a link out of its directory: {hrefs}")


def main():
    args = e2e.parse_args(__doc__, lambda p: p.add_argument("--save-screenshot", help="copy the figures screenshot here"))
    shared = e2e.shared_dir(args)
    binary = find_chromium()
    if not binary:
        print("SKIPPED: chromium not found (apt-get install chromium, or set TRACELANE_CHROMIUM); "
              "the HTML report is not tested in a browser", flush=True)
        sys.exit(e2e.SKIP)
    checks = e2e.Checks("e2e_report_html")
    with tempfile.TemporaryDirectory(prefix="tracelane_html_browser_") as browser_work:
        ctx = Context(args, checks, shared, Browser(binary, browser_work))
        sys.exit(e2e.run_tests(checks, ctx, "tracelane_report_html_", [
            test_corpus_sweep, test_figures, test_hostile_names, test_combine_writes_the_page, test_report_html_command,
            test_report_links_stay_in_their_directory]))


if __name__ == "__main__":
    main()
