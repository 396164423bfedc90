"""Helpers shared by the install tests (stdlib only): the options of the program as its
own --help prints them, the man page's sections, the completion's offers.

The man page and the completion are checked against `tracelane <command> --help` (Boost's
option tables), not against a list kept here, so an option added to the program and not to
docs/tracelane.1 and completion/tracelane.bash fails these tests.
"""

import gzip
import os
import re
import shlex
import subprocess
import sys

SKIP = 77
VERSION_LINE = re.compile(r"^tracelane (\d+\.\d+\.\d+) \(commit ([0-9A-Za-z._+-]+)\)\n$")


def run(cmd, **kwargs):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def describe(result):
    return (f"rc={result.returncode} stderr={result.stderr.strip()[-600:]!r} "
            f"stdout={result.stdout.strip()[-300:]!r}")


def read_trace(path):
    with open(path, "rb") as handle:
        data = handle.read()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def commands(tracelane):
    """The commands `tracelane --help` lists under "commands:"."""
    text = run([tracelane, "--help"]).stdout
    found, inside = [], False
    for line in text.splitlines():
        if line == "commands:":
            inside = True
        elif inside and not line.strip():
            break
        elif inside:
            match = re.match(r"^  ([a-z][a-z-]*)\b", line)
            if match:
                found.append(match.group(1))
    return found


def options(tracelane, command):
    """Every option spelling (-o, --output, ...) in the option table of `<command> --help`."""
    result = run([tracelane, command, "--help"])
    if result.returncode != 0:
        raise RuntimeError(f"tracelane {command} --help: {describe(result)}")
    found, inside = set(), False
    for line in result.stdout.splitlines():
        if re.match(r"^\S.* options:$", line):  # Boost's caption, e.g. "sweep options:"
            inside = True
            continue
        if not inside:
            continue
        # "  -o [ --output ] arg   ..." or "  --level arg (=1)   ..."
        match = re.match(r"^  (-[A-Za-z0-9]) \[ (--[A-Za-z0-9][A-Za-z0-9-]*) \]", line) or \
            re.match(r"^  (--[A-Za-z0-9][A-Za-z0-9-]*)", line)
        if match:
            found.update(match.groups())
    if not found:
        raise RuntimeError(f"tracelane {command} --help lists no options:\n{result.stdout}")
    return found


def render_man(page):
    """(rendered ASCII text, stderr, returncode) of `man -l` with every groff warning on."""
    env = dict(os.environ, LC_ALL="C", MANWIDTH="100", MAN_KEEP_FORMATTING="")
    env.pop("MANPAGER", None)
    env.pop("PAGER", None)
    result = subprocess.run(["man", "--warnings=all", "-l", page], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    text = result.stdout.decode("ascii", "replace")
    text = re.sub(r".\x08", "", text)  # overstrike bold/underline, if man kept it
    return text, result.stderr.decode("utf-8", "replace"), result.returncode


def man_sections(text):
    """{subsection title: its text} for the subsections (3-space indented headings)."""
    sections, title, body = {}, None, []
    for line in text.splitlines():
        heading = re.match(r"^   (\S.*)$", line)
        if heading or re.match(r"^\S", line):
            if title is not None:
                sections[title] = "\n".join(body)
            title, body = (heading.group(1).strip(), []) if heading else (None, [])
        elif title is not None:
            body.append(line)
    if title is not None:
        sections[title] = "\n".join(body)
    return sections


def man_options(section_text):
    """Option spellings on the tag lines (.TP, 7-space indent) of a subsection."""
    found = set()
    for line in section_text.splitlines():
        if re.match(r"^       -", line):
            found.update(re.findall(r"(?<![\w-])(--?[A-Za-z0-9][A-Za-z0-9-]*)", line))
    return found


def completion_offers(completion_file, words, env=None, loader=None):
    """What tracelane's completion puts in COMPREPLY for the command line `words` (the
    last word is the one being completed). With `loader`, bash-completion's own script is
    sourced and finds the completion itself (its dynamic loading); else the file is sourced."""
    quoted = " ".join(shlex.quote(w) for w in words)
    if loader:
        # bash_completion returns at once unless PS1 says the shell is interactive;
        # _completion_loader returns 124 ("retry") after loading a completion.
        setup = (f"PS1='$ '; source {shlex.quote(loader)} || exit 5\n"
                 f"_completion_loader tracelane; complete -p tracelane >/dev/null")
    else:
        setup = f"source {shlex.quote(completion_file)}"
    script = (f"{setup} || exit 3\n"
              f"COMP_WORDS=({quoted}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1))\n"
              f"COMP_LINE=\"${{COMP_WORDS[*]}}\"; COMP_POINT=${{#COMP_LINE}}\n"
              f"fn=$(complete -p tracelane | sed -n 's/.* -F \\([^ ]*\\) .*/\\1/p')\n"
              f"[[ -n $fn ]] || exit 4\n"
              f"$fn tracelane \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"\n"
              f"printf '%s\\n' \"${{COMPREPLY[@]}}\"\n")
    result = run(["bash", "--norc", "--noprofile", "-c", script], env=env)
    if result.returncode != 0:
        raise RuntimeError(f"completion of {words!r}: {describe(result)}")
    return set(line for line in result.stdout.splitlines() if line)


def skip(reason):
    print("*" * 78)
    print(f"SKIPPED: {reason}")
    print("*" * 78, flush=True)
    sys.exit(SKIP)
