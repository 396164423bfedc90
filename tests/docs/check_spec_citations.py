#!/usr/bin/env python3
"""Every "SPEC n" or "SPEC n.m" citation in the repository names a section of docs/spec.md.

The code, the tests and the docs cite the behaviour contract, docs/spec.md, by section
number. Each section heading there carries an anchor `<a id="spec-n"></a>` or
`<a id="spec-n.m"></a>`. This check reads every text file under src/, include/, tests/,
docs/, bench/ and slurm/, and README.md, and fails (exit 1), listing file:line and the
citation, for each cited section that has no anchor. It also fails when an anchor id is
given twice, or when a numbered heading's anchor names another number.

A citation is the word SPEC, optionally followed by "section" or "sections", then a
section number, optionally followed by 's; then, on the same line, further numbers joined
by ", ", " and ", " or ", or a range "-" (whose ends are whole sections or subsections of
one section, each number in between being cited). A number after ", " counts only when
what follows it ends the list: ")", ",", ";", ":", "]", a full stop, "'s", " and", " or"
or the end of the line; so in "(SPEC 7, 0 when unusable)" only 7 is cited. A line that
ends in "SPEC" continues on the next line (after a comment marker). "SPEC says", with no
number, cites nothing.

Usage: check_spec_citations.py --repo-root DIR [--spec FILE]
(--spec checks the citations against another copy of the contract.)
Python 3 standard library only; runs from any directory; writes nothing.
"""

import argparse
import os
import re
import sys

SCAN_DIRS = ("src", "include", "tests", "docs", "bench", "slurm")
SCAN_FILES = ("README.md",)
SKIP_DIRS = {"__pycache__", ".git"}
SELF = os.path.join("tests", "docs", "check_spec_citations.py")

NUMBER = r"\d+(?:\.\d+)?"
START = re.compile(r"\bSPEC(?:\s+sections?)?[ \t]+(" + NUMBER + r")")
# A line that ends where a citation's number should begin.
DANGLING = re.compile(r"\bSPEC(?:\s+sections?)?\s*$")
POSSESSIVE = re.compile(r"(?:'s|\u2019s)")
CONTINUATION = re.compile(r"(\s*,\s*|\s+and\s+|\s+or\s+|\s*[-\u2013]\s*)(" + NUMBER + r")")
# What may follow a number after ", " for it to be a section and not, say, "0 when".
LIST_END = re.compile(r"(?:'s|\u2019s|[)\],;:]|\.(?!\d)|\s+(?:and|or)\b|\s*$)")
COMMENT_MARKERS = re.compile(r"^\s*(?://+|#+|\*+|--|;+|/\*+)?\s*")

ANCHOR = re.compile(r"""<a\s+id\s*=\s*["'](spec-[^"']*)["']\s*>\s*</a>""")
HEADING = re.compile(r"^(#{1,6})\s+(" + NUMBER + r")\.?\s")


def expand_range(first, last):
    """The sections a range "first-last" cites: its ends and every number between them."""
    a, b = first.split("."), last.split(".")
    if len(a) == 1 and len(b) == 1 and int(a[0]) <= int(b[0]) and int(b[0]) - int(a[0]) <= 100:
        return [str(n) for n in range(int(a[0]), int(b[0]) + 1)]
    if len(a) == 2 and len(b) == 2 and a[0] == b[0] and int(a[1]) <= int(b[1]) and int(b[1]) - int(a[1]) <= 100:
        return [a[0] + "." + str(n) for n in range(int(a[1]), int(b[1]) + 1)]
    return [first, last]


def citations_in_line(line):
    """The section numbers a line cites, in order (a number may repeat)."""
    found = []
    for start in START.finditer(line):
        numbers = [start.group(1)]
        pos = start.end()
        possessive = POSSESSIVE.match(line, pos)
        if possessive:
            pos = possessive.end()
        while True:
            more = CONTINUATION.match(line, pos)
            if not more:
                break
            separator, number = more.group(1).strip(), more.group(2)
            after = more.end()
            if separator == "," and not LIST_END.match(line, after):
                break
            if separator in ("-", "\u2013"):
                numbers[-1:] = expand_range(numbers[-1], number)
            else:
                numbers.append(number)
            pos = after
            possessive = POSSESSIVE.match(line, pos)
            if possessive:
                pos = possessive.end()
        found.extend(numbers)
    return found


def text_files(repo_root, skip):
    for name in SCAN_FILES:
        path = os.path.join(repo_root, name)
        if os.path.isfile(path):
            yield path
    for top in SCAN_DIRS:
        base = os.path.join(repo_root, top)
        if not os.path.isdir(base):
            continue
        for directory, subdirs, files in os.walk(base):
            subdirs[:] = sorted(d for d in subdirs if d not in SKIP_DIRS)
            for name in sorted(files):
                path = os.path.join(directory, name)
                if os.path.realpath(path) in skip or not os.path.isfile(path):
                    continue
                yield path


def read_text(path):
    """The file as text, or None for a binary file or one that does not mention SPEC."""
    with open(path, "rb") as handle:
        data = handle.read()
    if b"\0" in data or b"SPEC" not in data:
        return None
    return data.decode("utf-8", errors="replace")


def collect_citations(repo_root, skip):
    """[(relative path, line number, section number)] for every citation."""
    cited = []
    for path in text_files(repo_root, skip):
        text = read_text(path)
        if text is None:
            continue
        relative = os.path.relpath(path, repo_root)
        lines = text.splitlines()
        for index, line in enumerate(lines):
            for number in citations_in_line(line):
                cited.append((relative, index + 1, number))
            if DANGLING.search(line) and index + 1 < len(lines):
                rest = COMMENT_MARKERS.sub("", lines[index + 1], count=1)
                joined = DANGLING.search(line).group(0).strip() + " " + rest
                for number in citations_in_line(joined):
                    cited.append((relative, index + 1, number))
    return cited


def read_anchors(spec_path):
    """(anchor ids in order, problems) of the contract."""
    with open(spec_path, encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    ids, problems = [], []
    where = {}
    for number, line in enumerate(lines, 1):
        for match in ANCHOR.finditer(line):
            anchor = match.group(1)
            if anchor in where:
                problems.append(f"{spec_path}:{number}: anchor id {anchor} given twice (first on line {where[anchor]})")
            else:
                where[anchor] = number
            ids.append(anchor)
        heading = HEADING.match(line)
        anchors = ANCHOR.findall(line)
        if heading and anchors and anchors[0] != "spec-" + heading.group(2):
            problems.append(f"{spec_path}:{number}: heading {heading.group(2)} carries anchor {anchors[0]}")
        if anchors and not re.fullmatch(r"spec-" + NUMBER, anchors[0]):
            problems.append(f"{spec_path}:{number}: anchor {anchors[0]} is not spec-<n> or spec-<n>.<m>")
    return ids, problems


def main(argv):
    parser = argparse.ArgumentParser(description="Check that every SPEC n.m citation has an anchor in docs/spec.md.")
    parser.add_argument("--repo-root", required=True, help="the repository's top directory")
    parser.add_argument("--spec", help="the contract to check against (default: REPO_ROOT/docs/spec.md)")
    args = parser.parse_args(argv)
    repo_root = os.path.abspath(args.repo_root)
    spec_path = os.path.abspath(args.spec) if args.spec else os.path.join(repo_root, "docs", "spec.md")
    if not os.path.isdir(repo_root):
        print(f"check_spec_citations: {repo_root}: no such directory", file=sys.stderr)
        return 2
    if not os.path.isfile(spec_path):
        print(f"check_spec_citations: {spec_path}: no such file", file=sys.stderr)
        return 1

    ids, problems = read_anchors(spec_path)
    sections = set(ids)
    # This check's docstring shows the grammar, with examples: they are not citations.
    skip = {os.path.realpath(os.path.abspath(__file__)), os.path.realpath(os.path.join(repo_root, SELF))}
    cited = collect_citations(repo_root, skip)
    unresolved = [(path, line, number) for path, line, number in cited if "spec-" + number not in sections]
    anchor_problems = len(problems)
    inside = os.path.commonpath([repo_root, spec_path]) == repo_root
    spec_name = os.path.relpath(spec_path, repo_root) if inside else spec_path
    for path, line, number in unresolved:
        problems.append(f"{path}:{line}: SPEC {number}: no anchor spec-{number} in {spec_name}")
    if problems:
        for problem in problems:
            print(problem)
        print(f"{len(unresolved)} of {len(cited)} citations do not resolve, {anchor_problems} anchor problems "
              f"({len(sections)} sections in {spec_name})")
        return 1
    print(f"{len(cited)} citations, {len(sections)} sections, all resolve")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
