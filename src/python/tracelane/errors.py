"""The exceptions tracelane raises: one class per kind of failure the command line tells
apart. Every one is a `tracelane.Error`; `str(error)` is the line the command prints on
stderr, `error.path` the file it names (None when it names none), `error.reason` the rest,
and `error.exit_status` the status the command exits with (docs/commands.md).
"""

import re


class Error(Exception):
    """A failure of a tracelane command (the base class of the ones below)."""

    path = None
    reason = None
    exit_status = 1


class UsageError(Error, ValueError):
    """Arguments the command line refuses: a level out of 0-12, jobs below 1, a bad rules
    file, a merged output restored without `rank`, a directory with fewer than two rank
    files (exit status 2)."""


class OutputRefused(Error):
    """The output guard refused the output path before any input was read: an input's own
    name, a rank<N>_trace name, a directory, a missing directory (exit status 2)."""


class OutputExists(OutputRefused, FileExistsError):
    """The output exists and overwrite=False (exit status 2)."""


class FileError(Error, OSError):
    """A file could not be opened, read, written or moved into place: the system's reason."""


class InputChanged(Error):
    """An input changed while it was read, or was removed or rewritten before its output
    was put in place; nothing is written."""


class TraceError(Error):
    """The input is not a trace tracelane compacts or merges: gzip or JSON it cannot read,
    a bad event, ranks that do not merge. The message names the file and the position."""


class RestoreError(Error):
    """The restore data cannot give the original back: none, not for that rank, damaged,
    or not matching the copy's events. Nothing is written."""


class TreeBusy(Error):
    """Another sweep holds the tree's lock, or the lock cannot be taken (exit status 2)."""


class OutOfMemory(Error, MemoryError):
    """The trace did not fit in memory."""


class AlreadyLanedWarning(UserWarning):
    """compact or merge met a trace that is tracelane's own output: nothing was written and
    the summary says so (`"status": "already laned"`); force=True compacts it anyway."""


_CLASSES = {
    "usage": UsageError,
    "output_refused": OutputRefused,
    "output_exists": OutputExists,
    "file": FileError,
    "input_changed": InputChanged,
    "trace": TraceError,
    "restore": RestoreError,
    "tree_busy": TreeBusy,
    "memory": OutOfMemory,
}

# "tracelane compact: ": the head of a usage error's line.
_COMMAND = re.compile(r"tracelane [a-z]+: ")


def _from_failure(kind, message, exit_status, paths):
    """The exception for the module's Failure(kind, message, exit_status); `paths` are the
    call's own paths (str), which a message may start with."""
    error = _CLASSES.get(kind, Error)(message)
    text = message
    head = _COMMAND.match(text)
    if head:
        text = text[head.end():]
    error.path, error.reason = None, text
    for path in sorted((p for p in paths if p), key=len, reverse=True):
        if text.startswith(path + ": "):
            error.path, error.reason = path, text[len(path) + 2:]
            break
    else:
        # Every message but a usage error's starts with the file it is about.
        name, colon, rest = text.partition(": ")
        if colon and not head:
            error.path, error.reason = name, rest
    error.exit_status = exit_status
    return error
