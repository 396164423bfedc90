#!/usr/bin/env python3
"""Include cycles among tracelane's modules, from the #include lines of src/ and include/.

A module is a header and the .cpp of the same name (include/tracelane/rules.hpp and
src/rules.cpp are the module "rules"; src/cli/report.{hpp,cpp} is "cli/report"). Module A
depends on module B when a file of A includes a header of B. A class declared in one
module's header and defined (Class::member) in another module's .cpp is a dependency too,
of the declaring module on the defining one: it is listed apart, and counted in the graph.
#pragma once hides a cycle from the compiler, not from a reader: every cycle printed here
is a pair (or ring) of modules that cannot be understood one without the other.

Usage: bench/include_cycles.py [REPO_ROOT]   (default: the current directory)
Prints the edges that take part in a cycle, each group of modules that depend on one
another (a strongly connected component), the shortest elementary cycles (at most 40),
then "include cycles: N in G groups" (N elementary cycles); exits 0 either way.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
CLASS_DECL = re.compile(r'^\s*(?:class|struct)\s+(\w+)\b[^;(]*\{', re.M)
# A member defined at file scope: "bool Scanner::plan(" or "Timings::Scope::Scope(" at the
# start of a line, not a call ("return Rules::defaults();", "x = Foo::bar(").
MEMBER_DEF = re.compile(r'^(?!return\b)(?:[\w:<>,&*]+[ \t]+)*?[&*]?(?:\w+::)*?(\w+)::~?\w+\s*\([^;=]*$', re.M)


def module_of(root, path):
    rel = os.path.relpath(path, root)
    stem = os.path.splitext(rel)[0]
    for prefix in ("include/tracelane/", "src/"):
        if stem.startswith(prefix):
            return stem[len(prefix):]
    return None


def source_files(root):
    for top in ("src", "include"):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if name.endswith((".hpp", ".cpp", ".h")):
                    yield os.path.join(dirpath, name)


def resolve(root, including, target):
    for base in (os.path.dirname(including), os.path.join(root, "include"), os.path.join(root, "src")):
        candidate = os.path.normpath(os.path.join(base, target))
        if os.path.isfile(candidate):
            return candidate
    return None  # generated or external


def graph(root):
    edges = {}  # (a, b) -> reason
    declared = {}  # class -> module of the header that declares it
    definitions = []  # (class, module of the .cpp that defines a member)
    for path in source_files(root):
        mod = module_of(root, path)
        text = open(path, encoding="utf-8", errors="replace").read()
        for target in INCLUDE.findall(text):
            found = resolve(root, path, target)
            other = module_of(root, found) if found else None
            if other and other != mod:
                edges.setdefault((mod, other), "%s includes %s" % (os.path.relpath(path, root), target))
        if path.endswith(".hpp"):
            for name in CLASS_DECL.findall(text):
                declared.setdefault(name, mod)
        else:
            for name in set(MEMBER_DEF.findall(text)):
                definitions.append((name, mod))
    split = []
    for name, mod in definitions:
        home = declared.get(name)
        if home and home != mod:
            split.append((name, home, mod))
            edges.setdefault((home, mod), "%s is declared in %s and defined in %s" % (name, home, mod))
    return edges, split


def cycles(edges):
    """Elementary cycles, each once, starting at its smallest module."""
    nodes = sorted({n for e in edges for n in e})
    succ = {n: sorted(b for (a, b) in edges if a == n) for n in nodes}
    found = []
    for start in nodes:
        stack = [(start, [start])]
        while stack:
            node, path = stack.pop()
            for nxt in succ[node]:
                if nxt == start:
                    found.append(path)
                elif nxt > start and nxt not in path:
                    stack.append((nxt, path + [nxt]))
    return sorted(found, key=lambda c: (len(c), c))


def components(edges):
    """Groups of two or more modules that all reach one another."""
    nodes = sorted({n for e in edges for n in e})
    succ = {n: [b for (a, b) in edges if a == n] for n in nodes}

    def reach(start):
        seen, todo = {start}, [start]
        while todo:
            for nxt in succ[todo.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    reachable = {n: reach(n) for n in nodes}
    groups, placed = [], set()
    for n in nodes:
        if n in placed:
            continue
        group = sorted(m for m in reachable[n] if n in reachable[m])
        placed.update(group)
        if len(group) > 1:
            groups.append(group)
    return groups


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    edges, split = graph(root)
    for name, home, mod in sorted(split):
        print("declared apart: %s in %s, defined in %s" % (name, home, mod))
    found = cycles(edges)
    in_cycle = set()
    for c in found:
        for i, a in enumerate(c):
            in_cycle.add((a, c[(i + 1) % len(c)]))
    for a, b in sorted(in_cycle):
        print("edge %s -> %s: %s" % (a, b, edges[(a, b)]))
    groups = components(edges)
    for g in groups:
        print("group: " + " ".join(g))
    for c in found[:40]:
        print("cycle: " + " -> ".join(c + [c[0]]))
    if len(found) > 40:
        print("... and %d longer cycles" % (len(found) - 40))
    print("include cycles: %d in %d groups" % (len(found), len(groups)))


if __name__ == "__main__":
    main()
