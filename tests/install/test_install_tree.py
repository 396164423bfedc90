#!/usr/bin/env python3
"""`cmake --install BUILD --prefix PREFIX` into a temporary prefix, then the installed tree:

- the files are there with their modes, and no directory is group- or world-writable;
- PREFIX/bin/tracelane --version names the project version and the commit of the checkout;
  it compacts the bundled example to the same bytes as the build tree's binary;
- `man -l` renders the man page without a single groff warning; it has a subsection per
  command of `tracelane --help`, whose options are exactly those of `<command> --help`;
- bash completion offers exactly the commands and each command's options (the function is
  called the way bash calls it; also through bash-completion's own loader, from
  XDG_DATA_HOME and from XDG_DATA_DIRS, when bash-completion is installed);
- the installed Slurm scripts run the installed binary, with no tracelane on PATH and with a
  decoy tracelane on PATH, on a small tree: sweep, array task + combine, and submit.sh
  against a fake sbatch (it writes the plan with the installed binary and gives it to the
  array).

The prefix contains a space and a single quote, as an unlucky user's might.

    test_install_tree.py --build-dir BUILD --source-dir SRC --version X.Y.Z [--cmake CMAKE]

Exit 0 all passed, 1 a check failed, 77 (skipped, loudly) when `man` is missing, after
running every other check.
"""

import argparse
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from e2e_common import Checks  # noqa: E402
from install_common import (SKIP, VERSION_LINE, commands, completion_offers, describe, man_options,  # noqa: E402
                            man_sections, options, read_trace, render_man, run)

BASH = shutil.which("bash") or "/bin/bash"
SLURM_SCRIPTS = ["submit.sh", "tracelane-sweep.sbatch", "tracelane-plan.sbatch", "tracelane-array.sbatch",
                 "tracelane-combine.sbatch"]


def git_head(source):
    """The short commit of the source checkout, or None when it is not a checkout of its own."""
    top = run(["git", "-C", source, "rev-parse", "--show-toplevel"]) if shutil.which("git") else None
    if not top or top.returncode != 0 or os.path.realpath(top.stdout.strip()) != os.path.realpath(source):
        return None
    head = run(["git", "-C", source, "rev-parse", "HEAD"])
    return head.stdout.strip() if head.returncode == 0 else None


def restricted_path(directory, decoy):
    """A PATH directory holding only the tools the Slurm scripts use (and, with `decoy`, a
    `tracelane` that fails loudly), so the scripts cannot find the real one on PATH."""
    os.makedirs(directory)
    for tool in ["hostname", "date", "mkdir", "sed", "dirname", "basename", "cat", "env"]:
        found = shutil.which(tool)
        if found:
            os.symlink(found, os.path.join(directory, tool))
    if decoy:
        with open(os.path.join(directory, "tracelane"), "w") as handle:
            handle.write("#!/bin/sh\necho 'decoy tracelane from PATH ran' >&2\nexit 99\n")
        os.chmod(os.path.join(directory, "tracelane"), 0o755)
    return directory


def slurm_env(path_dir):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("SLURM_") and not k.startswith("TRACELANE")}
    env["PATH"] = path_dir
    env["TRACELANE_HUGE_PAGES"] = "0"
    return env


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--version", required=True, help="the project version (CMake's PROJECT_VERSION)")
    parser.add_argument("--cmake", default="cmake")
    args = parser.parse_args()
    build, source = os.path.abspath(args.build_dir), os.path.abspath(args.source_dir)
    checks = Checks("install_tree")
    skipped = []
    work = tempfile.mkdtemp(prefix="tracelane-install-")
    try:
        prefix = os.path.join(work, "pre fix'q")
        installed = run([args.cmake, "--install", build, "--prefix", prefix])
        if not checks.check(installed.returncode == 0, f"cmake --install: {describe(installed)}"):
            return checks.finish()
        binary = os.path.join(prefix, "bin", "tracelane")
        man_page = os.path.join(prefix, "share", "man", "man1", "tracelane.1")
        completion = os.path.join(prefix, "share", "bash-completion", "completions", "tracelane")
        slurm_dir = os.path.join(prefix, "share", "tracelane", "slurm")

        print("--- files and modes", flush=True)
        expected = {binary: 0o755, man_page: 0o644, completion: 0o644,
                    os.path.join(slurm_dir, "README.md"): 0o644}
        expected.update({os.path.join(slurm_dir, s): 0o755 for s in SLURM_SCRIPTS})
        for path, mode in expected.items():
            if checks.check(os.path.isfile(path), f"not installed: {os.path.relpath(path, prefix)}"):
                actual = stat.S_IMODE(os.lstat(path).st_mode)
                checks.check(actual == mode, f"{os.path.relpath(path, prefix)}: mode {actual:o}, expected {mode:o}")
        for directory, _, _ in os.walk(prefix):
            mode = stat.S_IMODE(os.lstat(directory).st_mode)
            checks.check(not mode & 0o022, f"{directory}: mode {mode:o} is writable by others")

        print("--- --version", flush=True)
        version = run([binary, "--version"])
        match = VERSION_LINE.match(version.stdout)
        if checks.check(version.returncode == 0 and match, f"--version: {describe(version)}"):
            checks.equal(match.group(1), args.version, "version named by --version")
            head = git_head(source)
            commit = match.group(2)
            if head:
                checks.check(head.startswith(commit.removesuffix("-dirty")),
                             f"--version names commit {commit}, the checkout is at {head} (rebuild?)")
            else:
                checks.equal(commit, "unknown", "commit named by --version outside a git checkout")

        print("--- compaction of the bundled example", flush=True)
        example = os.path.join(source, "tests", "data", "example_trace.json")
        outputs = {}
        for name, program in (("installed", binary), ("build", os.path.join(build, "tracelane"))):
            out = os.path.join(work, f"{name}.json.gz")
            result = run([program, "compact", example, "-o", out])
            if checks.check(result.returncode == 0, f"{name} tracelane compact: {describe(result)}"):
                outputs[name] = read_trace(out)
                summary = json.loads(result.stdout)
                checks.check(summary.get("compacted_lanes", 0) > 0, f"{name}: summary without lanes: {summary}")
        if len(outputs) == 2:
            checks.check(outputs["installed"] == outputs["build"],
                         "the installed binary's output differs from the build tree's")

        print("--- options of every command", flush=True)
        command_list = commands(binary)
        checks.check({"compact", "merge", "sweep", "report", "check", "rules"} <= set(command_list),
                     f"tracelane --help lists commands {command_list}")
        command_options = {command: options(binary, command) for command in command_list}
        for command, found in command_options.items():
            print(f"    {command}: {' '.join(sorted(found))}")

        print("--- man page", flush=True)
        if shutil.which("man"):
            text, warnings, rc = render_man(man_page)
            checks.check(rc == 0 and text.startswith("TRACELANE(1)"), f"man -l: rc={rc}, {text[:200]!r}")
            checks.check(not warnings.strip(), f"man -l warns:\n{warnings}")
            sections = man_sections(text)
            for heading in ("NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "EXIT STATUS", "ENVIRONMENT", "FILES"):
                checks.check(f"\n{heading}\n" in text, f"man page lacks the section {heading}")
            checks.check(f'"tracelane {args.version}"' in open(man_page).read(),
                         f"man page's .TH does not name version {args.version}")
            for command in command_list:
                titles = [t for t in sections if t == f"tracelane {command}" or t.startswith(f"tracelane {command} ")]
                if not checks.check(len(titles) == 1, f"man page: no one subsection 'tracelane {command} ...' "
                                                      f"(subsections: {list(sections)})"):
                    continue
                in_man = man_options(sections[titles[0]])
                checks.check(in_man == command_options[command],
                             f"man page, tracelane {command}: options missing "
                             f"{sorted(command_options[command] - in_man)}, not in --help {sorted(in_man - command_options[command])}")
                exit_status = text.split("\nEXIT STATUS\n", 1)[-1].split("\nENVIRONMENT\n", 1)[0]
                checks.check(re.search(rf"^       {command}\b", exit_status, re.M),
                             f"man page: EXIT STATUS does not cover {command}")
            extra = [t for t in sections if t.startswith("tracelane ")
                     and t.split()[1] not in command_list and t != "tracelane --version"]
            checks.check(not extra, f"man page documents commands tracelane --help does not list: {extra}")
        else:
            skipped.append("man is not installed (apt-get install man-db): the man page was not rendered")

        print("--- bash completion", flush=True)
        expected_top = set(command_list) | {"--help", "-h", "--version"}
        checks.equal(completion_offers(completion, ["tracelane", ""]), expected_top, "completion of the command")
        checks.equal(completion_offers(completion, ["tracelane", "sw"]), {"sweep"}, "completion of 'sw'")
        for command, found in command_options.items():
            offered = completion_offers(completion, ["tracelane", command, "-"])
            checks.check(offered == found, f"completion/tracelane.bash, tracelane {command}: options missing "
                                           f"{sorted(found - offered)}, not in --help {sorted(offered - found)}")
        checks.equal(completion_offers(completion, ["tracelane", "compact", "--level", "1"]), {"1", "10", "11", "12"},
                     "completion of --level 1")
        bash_completion = "/usr/share/bash-completion/bash_completion"
        if os.path.isfile(bash_completion):
            # bash-completion (2.11, Debian 12) looks in $XDG_DATA_HOME/bash-completion/completions
            # (default ~/.local/share/...) and in <dir>/bash-completion/completions for each dir of
            # XDG_DATA_DIRS (a module for PREFIX adds PREFIX/share). The first case gets its own
            # install into $HOME/.local, the README's: bash-completion splits an XDG_DATA_HOME
            # with a space in it (its bug), as this test's PREFIX has.
            home = os.path.join(work, "home")
            local = run([args.cmake, "--install", build, "--prefix", os.path.join(home, ".local")])
            checks.check(local.returncode == 0, f"cmake --install --prefix $HOME/.local: {describe(local)}")
            base = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "BASH_COMPLETION"))}
            for name, env in (("an install into $HOME/.local", dict(base, HOME=home)),
                              ("XDG_DATA_DIRS=PREFIX/share:/usr/share, as a module sets it",
                               dict(base, HOME=os.path.join(work, "none"),
                                    XDG_DATA_DIRS=os.path.join(prefix, "share") + ":/usr/share"))):
                checks.equal(completion_offers(None, ["tracelane", "merge", "--f"], env=env, loader=bash_completion),
                             {"--force"}, f"completion loaded by bash-completion for {name}")
        else:
            print("NOTE: bash-completion is not installed: the completion was sourced directly; its loading by "
                  "bash-completion from PREFIX/share/bash-completion/completions was not checked", flush=True)

        print("--- installed Slurm scripts", flush=True)
        quoted = "'" + binary.replace("'", "'\\''") + "'"
        for script in SLURM_SCRIPTS:
            path = os.path.join(slurm_dir, script)
            if os.path.isfile(path):
                checks.check(f"\ninstalled_tracelane={quoted}\n" in open(path).read(),
                             f"{script}: installed_tracelane is not set to {quoted}")
        # A relative --prefix is taken relative to the working directory, for the scripts too.
        relative = run([args.cmake, "--install", build, "--prefix", "relative-prefix"], cwd=work)
        script = os.path.join(work, "relative-prefix", "share", "tracelane", "slurm", "tracelane-sweep.sbatch")
        if checks.check(relative.returncode == 0 and os.path.isfile(script), f"cmake --install --prefix relative-prefix: {describe(relative)}"):
            expected_line = f"\ninstalled_tracelane='{os.path.join(work, 'relative-prefix', 'bin', 'tracelane')}'\n"
            checks.check(expected_line in open(script).read(), f"relative prefix: {script} lacks {expected_line.strip()}")
        tree = os.path.join(work, "tree")
        iteration = os.path.join(tree, "run", "profile_trace", "iteration_2")
        os.makedirs(iteration)
        shutil.copy(example, os.path.join(iteration, "rank0_trace.json"))
        compacted = os.path.join(iteration, "rank0_trace_compacted.json")

        bare = restricted_path(os.path.join(work, "bare-path"), decoy=False)
        decoy = restricted_path(os.path.join(work, "decoy-path"), decoy=True)
        sweep = run([BASH, os.path.join(slurm_dir, "tracelane-sweep.sbatch"), tree, "--quiet"],
                    env=slurm_env(bare), cwd=work)
        if checks.check(sweep.returncode == 0, f"tracelane-sweep.sbatch with no tracelane on PATH: {describe(sweep)}"):
            checks.check(f"tracelane-sweep: {binary} sweep {tree}" in sweep.stdout,
                         f"tracelane-sweep.sbatch did not run the installed binary: {sweep.stdout!r}")
            checks.check(os.path.isfile(os.path.join(tree, "tracelane_report.json")), "sweep wrote no report")
            if checks.check(os.path.isfile(compacted), "sweep wrote no compacted rank"):
                checks.check(read_trace(compacted) == outputs.get("build"),
                             "the installed sweep's output differs from tracelane compact's")

        reports = os.path.join(work, "reports")
        array_env = dict(slurm_env(decoy), SLURM_ARRAY_TASK_ID="0", SLURM_ARRAY_TASK_COUNT="1",
                         SLURM_ARRAY_TASK_MIN="0", SLURM_ARRAY_TASK_MAX="0")
        array = run([BASH, os.path.join(slurm_dir, "tracelane-array.sbatch"), "--report-dir", reports, tree,
                     "--quiet", "--overwrite"], env=array_env, cwd=work)
        checks.check(array.returncode == 0 and os.path.isfile(os.path.join(reports, "tracelane_report.shard-0-of-1.json")),
                     f"tracelane-array.sbatch with a decoy tracelane on PATH: {describe(array)}")
        combine = run([BASH, os.path.join(slurm_dir, "tracelane-combine.sbatch"), "--shards", "1", reports],
                      env=slurm_env(decoy), cwd=work)
        checks.check(combine.returncode == 0 and os.path.isfile(os.path.join(reports, "tracelane_report.json")),
                     f"tracelane-combine.sbatch with a decoy tracelane on PATH: {describe(combine)}")

        # submit.sh against a fake sbatch that records its arguments and prints job ids.
        record = os.path.join(work, "sbatch-calls")
        with open(os.path.join(decoy, "sbatch"), "w") as handle:
            handle.write(f"#!/bin/bash\nprintf '%s\\n' \"$@\" '----' >> '{record}'\n"
                         f"n=$(grep -c -- '^----$' '{record}')\necho $((1000 + n))\n")
        os.chmod(os.path.join(decoy, "sbatch"), 0o755)
        submit = run([BASH, os.path.join(slurm_dir, "submit.sh"), "--shards", "2", tree],
                     env=slurm_env(decoy), cwd=work)
        if checks.check(submit.returncode == 0, f"submit.sh with a fake sbatch: {describe(submit)}"):
            calls = open(record).read().split("----\n")[:-1]
            checks.equal(len(calls), 2, "sbatch calls by submit.sh")
            for call in calls:
                argv = call.splitlines()
                checks.check(any(argv[i] == "--tracelane" and argv[i + 1] == binary for i in range(len(argv) - 1)),
                             f"submit.sh did not pass --tracelane {binary} to sbatch: {argv}")
                checks.check(any(a.startswith(slurm_dir + "/") for a in argv),
                             f"submit.sh did not submit the installed scripts: {argv}")
            # The plan every shard splits, written by submit.sh with the installed binary.
            plan = os.path.join(tree, "tracelane_plan.json")
            checks.check(os.path.isfile(plan), f"submit.sh wrote no plan {plan}")
            checks.check(any(a == "--plan" and b == plan for a, b in zip(calls[0].splitlines(), calls[0].splitlines()[1:])),
                         f"submit.sh did not give the array --plan {plan}: {calls[0].splitlines()}")
    finally:
        shutil.rmtree(work, ignore_errors=True)

    code = checks.finish()
    if code == 0 and skipped:
        for reason in skipped:
            print("*" * 78 + f"\nSKIPPED (part of install_tree): {reason}\n" + "*" * 78, flush=True)
        return SKIP
    return code


if __name__ == "__main__":
    sys.exit(main())
