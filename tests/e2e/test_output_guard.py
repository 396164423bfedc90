#!/usr/bin/env python3
"""The output guard and the exit statuses around it, end to end (needs no corpus).

- merge never replaces a rank file it reads (by name, through a link), and refuses an
  output named like a rank trace (rank<N>_trace.json[.gz]) that every later merge of the
  directory would read; compact likewise;
- an output in a directory that does not exist, or that is a directory, is a usage error
  (exit 2) found before any input is read: the input here is a FIFO nobody writes to, so a
  command that opened it would hang;
- losing the race for the output name (it appears while the input is read) exits 2;
- a FIFO nobody writes to is not waited on, and a device is not read;
- a failed write on standard output is an error for every command (/dev/full);
- error lines on stderr never carry a name's terminal escapes raw.
"""

import hashlib
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_common as e2e  # noqa: E402
from test_cli import Cli, make_ranks, synthetic_trace, write_json  # noqa: E402

HANG = 20  # seconds: a command that waits on a FIFO's writer is stuck


def digest(path):
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def run_bounded(cli, *argv, stdout=None):
    try:
        return subprocess.run([cli.args.tracelane, *argv], stdout=stdout or subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, timeout=HANG)
    except subprocess.TimeoutExpired:
        return None


def test_merge_never_replaces_a_rank_file(cli, work):
    checks = cli.checks
    d = os.path.join(work, "ranks")
    ranks = make_ranks(d)
    before = {p: digest(p) for p in ranks}
    os.symlink(os.path.basename(ranks[0]), os.path.join(d, "link_to_rank0.json"))
    for out in (ranks[0], ranks[1], os.path.join(d, "link_to_rank0.json"), os.path.join(d, ".", os.path.basename(ranks[1]))):
        for extra in ((), ("--overwrite",)):
            result = cli.run("merge", d, "-o", out, *extra)
            what = f"merge -o {os.path.relpath(out, work)} {' '.join(extra)}"
            cli.one_line_error(result, (out,), what, rc=2)
    # a new file named like a rank: refused, so the directory stays mergeable
    for name in ("rank9_trace.json.gz", "rank2_trace.json"):
        out = os.path.join(d, name)
        result = cli.run("merge", d, "-o", out)
        cli.one_line_error(result, (out,), f"merge -o {name}", rc=2, contains="named like a rank trace")
        checks.check(not os.path.exists(out), f"merge -o {name}: written")
    checks.equal({p: digest(p) for p in ranks}, before, "rank files after the refused merges")
    cli.ok(cli.run("merge", d), "merge of the directory after the refusals")
    cli.no_hidden(d, "merge refusals")


def test_compact_refuses_rank_names_and_the_input(cli, work):
    checks = cli.checks
    src = os.path.join(work, "in.json")
    write_json(src, synthetic_trace(kernels=60))
    before = digest(src)
    os.link(src, os.path.join(work, "hard.json"))
    for out in (src, os.path.join(work, "hard.json"), os.path.join(work, "rank0_trace.json.gz")):
        result = cli.run("compact", src, "-o", out, "--overwrite")
        cli.one_line_error(result, (out,), f"compact -o {os.path.basename(out)}", rc=2)
    checks.equal(digest(src), before, "compact input after the refusals")
    checks.check(not os.path.exists(os.path.join(work, "rank0_trace.json.gz")), "compact -o rank0_trace.json.gz: written")


def test_bad_output_paths_are_refused_before_reading(cli, work):
    checks = cli.checks
    fifo = os.path.join(work, "trace.json")
    os.mkfifo(fifo)  # nobody writes to it: opening it to read would block
    os.mkdir(os.path.join(work, "a_dir"))
    with open(os.path.join(work, "a_file"), "w") as handle:
        handle.write("x")
    outputs = [(os.path.join(work, "no_such_dir", "out.json.gz"), "No such file or directory"),
               (os.path.join(work, "a_file", "out.json.gz"), "Not a directory"),
               (os.path.join(work, "a_dir"), "directory"),
               (os.path.join(work, "a_dir") + "/", "directory")]
    for out, contains in outputs:
        for command in ("compact", "merge"):
            started = time.monotonic()
            result = run_bounded(cli, command, fifo, "-o", out, "--overwrite")
            what = f"{command} -o {os.path.relpath(out, work)}"
            if not checks.check(result is not None, f"{what}: still running after {HANG} s (it read the input first)"):
                continue
            if command == "compact":
                cli.one_line_error(result, (out,), what, rc=2, contains=contains)
            else:  # merge lists the directory first: a FIFO is not two rank files
                checks.equal(result.returncode, 2, f"{what}: exit code")
            checks.check(time.monotonic() - started < 10, f"{what}: slow")
    # without -o, a missing directory is the input's: reported as a missing input (exit 1)
    missing = os.path.join(work, "no_such_dir", "x.json")
    cli.one_line_error(cli.run("compact", missing), (missing,), "compact of a file in a missing directory", rc=1,
                       contains="cannot open")


def test_losing_the_race_for_the_output_exits_2(cli, work):
    checks = cli.checks
    fifo = os.path.join(work, "trace.json")
    os.mkfifo(fifo)
    out = os.path.join(work, "out.json")
    data = json.dumps(synthetic_trace(kernels=3000)).encode()
    assert len(data) > 4 * 65536
    # Our end is open before tracelane's (O_RDWR never blocks on Linux), so tracelane's
    # read waits for data. Once a write larger than the pipe's buffer returns, tracelane has
    # read part of the trace: it is past the guard. Another writer then takes the output
    # name, and the rest of the trace arrives.
    end = os.open(fifo, os.O_RDWR)
    proc = subprocess.Popen([cli.args.tracelane, "compact", fifo, "-o", out], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        half = len(data) // 2
        view = memoryview(data)
        sent = 0
        while sent < half:
            sent += os.write(end, view[sent:half])
        with open(out, "w") as other:
            other.write("the other writer's\n")
        while sent < len(data):
            sent += os.write(end, view[sent:])
    finally:
        os.close(end)
    try:
        stdout, stderr = proc.communicate(timeout=HANG)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
    checks.equal(proc.returncode, 2, f"compact losing the output race: exit code (stderr {stderr!r})")
    checks.check(stderr.startswith(out + ": output exists"), f"compact losing the race: stderr {stderr!r}")
    with open(out) as handle:
        checks.equal(handle.read(), "the other writer's\n", "the other writer's output")
    cli.no_hidden(work, "output race")


def test_fifos_and_devices_are_not_read_as_traces(cli, work):
    checks = cli.checks
    # A FIFO nobody writes to, planted under a trace's name, must not hang the command.
    fifo = os.path.join(work, "rank0_trace.json")
    os.mkfifo(fifo)
    result = run_bounded(cli, "compact", fifo, "-o", os.path.join(work, "o.json"))
    if checks.check(result is not None, f"compact of a FIFO nobody writes to: still running after {HANG} s"):
        cli.one_line_error(result, (fifo,), "compact of a FIFO nobody writes to", rc=1)
    result = run_bounded(cli, "compact", "/dev/null", "-o", os.path.join(work, "o2.json"))
    if checks.check(result is not None, "compact /dev/null: hung"):
        cli.one_line_error(result, ("/dev/null",), "compact /dev/null", rc=1, contains="not a regular file")
    checks.check(not os.path.exists(os.path.join(work, "o.json")) and not os.path.exists(os.path.join(work, "o2.json")),
                 "an output was written")


def test_a_pipe_or_device_needs_an_output_named(cli, work):
    """`cat t.json | tracelane compact /dev/stdin` names no output: the default (beside the
    input) would be a file created in /dev. A usage error before anything is read; with -o
    the pipe is read as any trace."""
    checks = cli.checks
    data = json.dumps(synthetic_trace(kernels=50)).encode()
    beside = "/dev/stdin_compacted.json.gz"
    for command in ("compact", "restore"):
        existed = os.path.exists(beside)
        try:
            result = subprocess.run([cli.args.tracelane, command, "/dev/stdin"], input=data, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, timeout=HANG)
            checks.equal(result.returncode, 2, f"{command} /dev/stdin without -o: exit code")
            checks.check(result.stderr.decode().startswith("/dev/stdin: not a regular file (a pipe): give the output "
                                                           "with -o"), f"{command} /dev/stdin: {result.stderr[:300]!r}")
            checks.check(existed or not os.path.exists(beside), f"{command} /dev/stdin without -o wrote {beside}")
        finally:
            if not existed and os.path.exists(beside):
                os.unlink(beside)
    out = os.path.join(work, "from_a_pipe.json")
    result = subprocess.run([cli.args.tracelane, "compact", "/dev/stdin", "-o", out], input=data,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=HANG)
    checks.equal(result.returncode, 0, f"compact /dev/stdin -o: {result.stderr[:300]!r}")
    checks.check(os.path.isfile(out), "compact /dev/stdin -o: no output")


def test_standard_output_errors_are_errors(cli, work):
    checks = cli.checks
    if not os.path.exists("/dev/full"):
        print("SKIPPED: no /dev/full")
        return
    d = os.path.join(work, "ranks")
    make_ranks(d)
    src = os.path.join(work, "in.json")
    write_json(src, synthetic_trace(kernels=60))
    commands = [("rules", "--print-defaults"), ("--version",), ("--help",), ("compact", src),
                ("merge", d), ("check", src, os.path.join(work, "in_compacted.json")), ("compact", "--help")]
    for argv in commands:
        with open("/dev/full", "w") as full:
            result = run_bounded(cli, *argv, stdout=full)
        what = f"tracelane {' '.join(os.path.basename(a) for a in argv)} > /dev/full"
        if not checks.check(result is not None, f"{what}: hung"):
            continue
        checks.equal(result.returncode, 1, f"{what}: exit code")
        checks.check("tracelane: standard output: No space left on device" in result.stderr,
                     f"{what}: stderr {result.stderr!r}")
    # a command that failed keeps its own status
    with open("/dev/full", "w") as full:
        result = run_bounded(cli, "compact", src, stdout=full)  # the output exists now
    checks.equal(result.returncode if result else None, 2, "compact onto an existing output > /dev/full: exit code")


def test_error_lines_carry_no_raw_escapes(cli, work):
    checks = cli.checks
    name = os.path.join(work, "evil\x1b]0;owned\x07\x1b[2J.json")
    with open(name, "w") as handle:
        handle.write("{not json")
    rank_dir = os.path.join(work, "ranks\x1b[2J")
    os.mkdir(rank_dir)
    for argv in (("compact", name, "-o", os.path.join(work, "o.json")),
                 ("compact", os.path.join(work, "missing\x1b[31m.json"), "-o", os.path.join(work, "o2.json")),
                 ("check", name, name), ("rules", "--check", name), ("merge", rank_dir),
                 ("compact", "--no-such-option\x1b[2J")):
        result = cli.run(*argv)
        what = f"tracelane {argv[0]} with an escape in a name"
        checks.check(result.returncode != 0, f"{what}: succeeded")
        checks.check("\x1b" not in result.stderr and "\x07" not in result.stderr, f"{what}: raw escape in {result.stderr!r}")
        checks.check("\\x1b" in result.stderr, f"{what}: the name is not shown escaped: {result.stderr!r}")


def main():
    args = e2e.parse_args(__doc__)
    checks = e2e.Checks("output_guard")
    cli = Cli(args, checks)
    return e2e.run_tests(checks, cli, "output_guard",
                         (test_merge_never_replaces_a_rank_file, test_compact_refuses_rank_names_and_the_input,
                          test_bad_output_paths_are_refused_before_reading, test_losing_the_race_for_the_output_exits_2,
                          test_fifos_and_devices_are_not_read_as_traces, test_a_pipe_or_device_needs_an_output_named,
                          test_standard_output_errors_are_errors, test_error_lines_carry_no_raw_escapes))


if __name__ == "__main__":
    sys.exit(main())
