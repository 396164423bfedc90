#!/usr/bin/env python3
"""The layering the repository promises (docs/building.md), checked from the `#include "..."`
lines of src/ and include/:

- no include cycle, among files or among modules (a module is a header with the .cpp of the
  same name: include/tracelane/rules.hpp and src/rules.cpp are "rules");
- the core (include/tracelane/, src/ outside src/cli and src/check) includes nothing of the
  command line (src/cli) nor of the verifier (src/check);
- the verifier (src/check) includes nothing of tracelane's but its own files: it shares no
  code with the compactor it checks;
- in src/cli, only check_command.cpp (the verifier's command) includes src/check;
- the report (src/cli/report) includes nothing of the sweep (src/cli/sweep);
- the Python module (src/python) stands on the command line's functions and includes
  nothing of the verifier, and nothing includes the Python module.

Usage: check_layering.py [REPO_ROOT]   (default: the checkout this file is in)
Prints each violation and exits 1, or prints the counts and exits 0.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def sources(root):
    found = []
    for base in ("src", "include"):
        for folder, _, names in os.walk(os.path.join(root, base)):
            found += [os.path.relpath(os.path.join(folder, n), root) for n in names if n.endswith((".cpp", ".hpp", ".h"))]
    return sorted(found)


def include_graph(root, files):
    """{file: set of files it includes}, quoted includes resolved as the build resolves them:
    beside the including file, then src/, src/cli/, include/."""
    known = set(files)
    graph = {}
    for path in files:
        edges = set()
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as handle:
            for line in handle:
                m = INCLUDE.match(line)
                if not m:
                    continue
                for base in (os.path.dirname(path), "src", "src/cli", "include"):
                    target = os.path.normpath(os.path.join(base, m.group(1)))
                    if target in known:
                        edges.add(target)
                        break
        graph[path] = edges
    return graph


def cycles(graph):
    """Strongly connected components of more than one node, or a node that includes itself."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1 or v in graph[v]:
                out.append(sorted(part))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def module_of(path):
    return re.sub(r"^include/tracelane/|^src/", "", os.path.splitext(path)[0])


def module_graph(graph):
    merged = {}
    for path, edges in graph.items():
        merged.setdefault(module_of(path), set()).update(module_of(e) for e in edges if module_of(e) != module_of(path))
    return merged


def part_of(path):
    if path.startswith("src/python/"):
        return "python"
    if path.startswith("src/cli/report/"):
        return "report"
    if path.startswith("src/cli/sweep/"):
        return "sweep"
    if path.startswith("src/cli/"):
        return "cli"
    if path.startswith("src/check/"):
        return "check"
    return "core"


def layer_violations(graph):
    found = []
    for path, edges in sorted(graph.items()):
        for target in sorted(edges):
            source_part, target_part = part_of(path), part_of(target)
            if target_part == "python" and source_part != "python":
                found.append(f"{path} includes {target}: nothing includes the Python module")
            elif source_part == "python" and target_part == "check":
                found.append(f"{path} includes {target}: the Python module includes nothing of the verifier")
            elif source_part == "core" and target_part != "core":
                where = "src/check" if target_part == "check" else "src/cli"
                found.append(f"{path} includes {target}: the core includes nothing of {where}")
            elif source_part == "check" and target_part != "check":
                found.append(f"{path} includes {target}: the verifier shares no code with the compactor")
            elif source_part in ("cli", "report", "sweep") and target_part == "check" and \
                    path != "src/cli/check_command.cpp":
                found.append(f"{path} includes {target}: only check_command.cpp uses the verifier")
            elif source_part == "report" and target_part == "sweep":
                found.append(f"{path} includes {target}: the report includes nothing of the sweep")
    return found


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
    files = sources(root)
    if not files:
        print(f"check_layering: no sources under {root}")
        return 1
    graph = include_graph(root, files)
    problems = [f"include cycle among files: {' '.join(part)}" for part in cycles(graph)]
    problems += [f"include cycle among modules: {' '.join(part)}" for part in cycles(module_graph(graph))]
    problems += layer_violations(graph)
    for problem in problems:
        print(problem)
    edges = sum(len(e) for e in graph.values())
    print(f"check_layering: {len(files)} files, {edges} includes, {len(problems)} violations")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
