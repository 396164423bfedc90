#!/usr/bin/env python3
"""The scaling table of one command run with --timings at several --jobs values.

    bench/scaling.py J1=TIMINGS1 J2=TIMINGS2 ...

Each TIMINGS file is the stderr of `tracelane compact|merge --timings --jobs J ...`.
Prints a Markdown table: per top-level phase (and the CPU-only phases of the streamed
write), wall and CPU seconds at each --jobs, then the totals, the speed-up (wall at the
first --jobs over wall at each), the parallel efficiency (CPU-seconds at the first
--jobs over CPU-seconds at each: 1.00 means no work added by running in parallel) and
the serial share: the wall time of phases that use one core (CPU <= 1.2x wall) at the
last --jobs, over its total, which bounds the speed-up on more cores (Amdahl).
"""
import re
import sys

LINE = re.compile(r"^timing: (\s*)(.+?)\s+(-|[0-9.]+)(?: s)?\s+wall\s+([0-9.]+) s cpu")


def read(path):
    phases = []
    with open(path) as f:
        for line in f:
            m = LINE.match(line.rstrip("\n"))
            if not m:
                continue
            depth = len(m.group(1)) // 2
            wall = None if m.group(3) == "-" else float(m.group(3))
            phases.append((depth, m.group(2).strip(), wall, float(m.group(4))))
    return phases


def main(argv):
    runs = []
    for arg in argv:
        jobs, _, path = arg.partition("=")
        runs.append((jobs, read(path)))
    if not runs:
        sys.exit(__doc__)
    # Top-level phases, and the streamed write's own phases under them (the restore data
    # left after the blocks; the blocks' CPU time, wall "-").
    def shown(phases):
        top = ""
        for depth, name, wall, cpu in phases:
            if depth == 0:
                top = name
            if depth == 0 or wall is None or (depth == 1 and top.startswith("write")):
                yield depth, name, wall, cpu

    names = []
    for _, phases in runs:
        for _, name, _, _ in shown(phases):
            if name not in names:
                names.append(name)

    def find(phases, name):
        for depth, n, wall, cpu in shown(phases):
            if n == name:
                return wall, cpu, depth
        return None

    head = "| phase | " + " | ".join(f"wall s (--jobs {j}) | cpu s (--jobs {j})" for j, _ in runs) + " |"
    print(head)
    print("|---|" + "---:|---:|" * len(runs))
    for name in names:
        cells = []
        depth = 0
        for _, phases in runs:
            found = find(phases, name)
            if found is None:
                cells += ["", ""]
                continue
            wall, cpu, depth = found
            cells += ["-" if wall is None else f"{wall:.3f}", f"{cpu:.3f}"]
        label = ("&nbsp;&nbsp;" if depth else "") + name
        print(f"| {label} | " + " | ".join(cells) + " |")
    totals = []
    for _, phases in runs:
        top = [(w, c) for d, _, w, c in phases if d == 0 and w is not None]
        totals.append((sum(w for w, _ in top), sum(c for _, c in top)))
    print("| **total** | " + " | ".join(f"**{w:.3f}** | **{c:.3f}**" for w, c in totals) + " |")
    w0, c0 = totals[0]
    for (jobs, phases), (w, c) in zip(runs, totals):
        serial = sum(pw for d, _, pw, pc in phases if d == 0 and pw is not None and pc <= 1.2 * pw)
        print(f"\n--jobs {jobs}: speed-up {w0 / w:.2f}x over --jobs {runs[0][0]}, "
              f"parallel efficiency {c0 / c:.2f} (CPU-seconds at --jobs {runs[0][0]} over these), "
              f"serial phases {serial:.3f} s = {100 * serial / w:.0f}% of the wall time")


if __name__ == "__main__":
    main(sys.argv[1:])
