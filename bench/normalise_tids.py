#!/usr/bin/env python3
"""Reads a trace (JSON text) on stdin and writes it with every integer tid and args.stream
renumbered per pid in order of first appearance (0, 1, 2, ...), all else byte for byte.
Two outputs that differ only in which tid numbers they give their tracks (a consistent
renaming of (pid, tid), SPEC 9.11; in a merged file one tid names a track in each rank's
pid) normalise to the same bytes:
  bench/output_md5.sh --normalise-tids BINARY
"""

import re
import sys

TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[{}\[\]]')
TID = re.compile(rb'("(?:tid|stream)"\s*:\s*)(-?\d+)(?=\s*[,}])')
PID = re.compile(rb'"pid"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')


def event_spans(data):
    """(start, end) of every object two levels inside the top-level object (the events)."""
    depth, start = 0, 0
    for token in TOKEN.finditer(data):
        char = token.group()[:1]
        if char in (b"{", b"["):
            depth += 1
            if depth == 3 and char == b"{":
                start = token.start()
        elif char in (b"}", b"]"):
            if depth == 3 and char == b"}":
                yield start, token.end()
            depth -= 1


def main():
    data = sys.stdin.buffer.read()
    numbering = {}
    out, last = [], 0
    for start, end in event_spans(data):
        event = data[start:end]
        pid = PID.search(event)
        pid = pid.group(1) if pid else None

        def renumber(match):
            key = (pid, match.group(2))
            return match.group(1) + str(numbering.setdefault(key, len(numbering))).encode()

        out += [data[last:start], TID.sub(renumber, event)]
        last = end
    out.append(data[last:])
    sys.stdout.buffer.write(b"".join(out))


if __name__ == "__main__":
    main()
