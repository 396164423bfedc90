#!/usr/bin/env python3
"""The shape of the code: the largest source files, the longest functions, include cycles
among the project's own headers (check_layering.py's definition; the ctest code_layering
fails on one), and README lines. Run it on a checkout before and after a restructuring:

    tests/code/code_shape.py [CHECKOUT] [--functions N] [--limits]   (default: this checkout, 10)

With --limits it exits 1 when a file under src/ or include/ is over MAX_FILE_LINES lines or
a function over MAX_FUNCTION_LINES (issue 24's house rules; the ctest code_shape).

Functions are found by a brace-matching reading of the C++ (comments and literals blanked,
lambdas and control blocks left inside their function): a length is the lines from the
signature's first line to the closing brace. Cycles are strongly connected sets of files
joined by `#include "..."` lines resolved against src/, src/cli/, include/ and the
including file's folder.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_layering as layering  # noqa: E402  the one definition of an include and a cycle

MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 100

args = [a for a in sys.argv[1:]]
limits = "--limits" in args
if limits:
    args.remove("--limits")
top_functions = 10
if "--functions" in args:
    i = args.index("--functions")
    top_functions = int(args[i + 1])
    del args[i : i + 2]
root = os.path.abspath(args[0] if args else os.path.join(os.path.dirname(__file__), "..", ".."))

sources = []
for base in ("src", "include"):
    for folder, _, names in os.walk(os.path.join(root, base)):
        for name in names:
            if name.endswith((".cpp", ".hpp", ".h")):
                sources.append(os.path.relpath(os.path.join(folder, name), root))
sources.sort()


def blank(text):
    """Comments, string and character literals replaced by spaces (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i)); i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c); i += 1; continue
            end = ")" + m.group(1) + '"'
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                out.append(c); i += 1; continue  # digit separator 1'000
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * (j - i - 2) + c if j - i >= 2 else c); i = j
        else:
            out.append(c); i += 1
    return "".join(out)


CONTROL = re.compile(r"^(if|for|while|switch|catch|do|else|try|namespace|class|struct|union|enum|return|extern)\b")
LAMBDA = re.compile(r"\]\s*(\([^()]*(\([^()]*\)[^()]*)*\))?\s*(mutable)?\s*(noexcept)?\s*(->[^{]*)?$")


def functions(path):
    text = blank(open(os.path.join(root, path), encoding="utf-8", errors="replace").read())
    found = []
    header_start = 0  # where the text before the next '{' began (after ; { })

    def line_of(pos):
        return text.count("\n", 0, pos) + 1

    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in ";}":
            header_start = i + 1
        elif c == "{":
            header = text[header_start:i].strip()
            flat = " ".join(header.split())
            first = header_start + (len(text[header_start:i]) - len(text[header_start:i].lstrip()))
            is_function = (
                "(" in flat and ")" in flat and not CONTROL.match(flat) and not LAMBDA.search(flat)
                and not flat.endswith("=") and not flat.startswith("#") and "=" not in flat.split("(")[0]
            )
            if is_function:
                depth, j = 1, i + 1
                while j < n and depth:
                    depth += {"{": 1, "}": -1}.get(text[j], 0)
                    j += 1
                name = re.findall(r"([~\w:]+(?:operator\S+?)?)\s*\(", flat)
                found.append((line_of(j - 1) - line_of(first) + 1, path, line_of(first), name[0] if name else flat[:40]))
                i = j
                header_start = j
                continue
            header_start = i + 1
        i += 1
    return found


lines = sorted(((sum(1 for _ in open(os.path.join(root, p), encoding="utf-8", errors="replace")), p) for p in sources), reverse=True)
print(f"# code shape of {root}")
print("\n## largest source files (lines)")
for count, path in lines[:8]:
    print(f"{count:6d}  {path}")
print(f"  total {sum(c for c, _ in lines)} lines in {len(lines)} files under src/ and include/")
print(f"\n## {top_functions} longest functions (lines)")
every = sorted((f for p in sources if p.endswith((".cpp", ".cc", ".hpp", ".h")) for f in functions(p)), reverse=True)
for length, path, line, name in every[:top_functions]:
    print(f"{length:6d}  {path}:{line}  {name}")
print(f"  functions over 60 lines: {sum(1 for f in every if f[0] > 60)}")
print("\n## include cycles (files, then modules: a .cpp counted with its header)")
graph = layering.include_graph(root, sources)
file_cycles = layering.cycles(graph)
module_cycles = layering.cycles(layering.module_graph(graph))
print(f"  file-level: {len(file_cycles)}")
for part in file_cycles:
    print("   ", " <-> ".join(part))
print(f"  module-level: {len(module_cycles)}")
for part in module_cycles:
    print("   ", " <-> ".join(part))
readme = os.path.join(root, "README.md")
if os.path.exists(readme):
    print(f"\n## README.md: {sum(1 for _ in open(readme, encoding='utf-8'))} lines")
if limits:
    too_long = [f"{path}: {count} lines (at most {MAX_FILE_LINES})" for count, path in lines if count > MAX_FILE_LINES]
    too_long += [f"{path}:{line}: {name} is {length} lines (at most {MAX_FUNCTION_LINES})"
                 for length, path, line, name in every if length > MAX_FUNCTION_LINES]
    for problem in too_long:
        print(f"code_shape: {problem}")
    if too_long:
        sys.exit(1)
    print(f"code_shape: no file over {MAX_FILE_LINES} lines, no function over {MAX_FUNCTION_LINES}")
