"""tracelane: compact PyTorch profiler (Kineto) traces of CUDA-graph training runs into a
few semantic GPU lanes, merge pipeline-parallel ranks, restore the originals, sweep trees.

The functions run the C++ core of the `tracelane` command, with its defaults, option
names (`--no-pp-flows` is `no_pp_flows=True`; `-o` is `out`) and errors (errors.py), the
GIL released while it works. compact, merge and restore return the summary the command
prints, as a dict; sweep returns the rows of its report. docs/python.md has an example;
tracelane.profiler.on_trace_ready compacts each trace torch.profiler writes.

    >>> summary = tracelane.compact("rank0_trace.json.gz")     # rank0_trace_compacted.json.gz
    >>> summary["original_streams"], summary["compacted_lanes"]
    >>> tracelane.restore(summary["output"])                   # rank0_trace_restored.json.gz
"""

import json
import os
import warnings

from . import _core
from .errors import (AlreadyLanedWarning, Error, FileError, InputChanged, OutOfMemory, OutputExists, OutputRefused,
                     RestoreError, TraceError, TreeBusy, UsageError, _from_failure)

__version__ = _core.__version__

__all__ = ["compact", "merge", "restore", "sweep", "Error", "UsageError", "OutputRefused", "OutputExists",
           "FileError", "InputChanged", "TraceError", "RestoreError", "TreeBusy", "OutOfMemory",
           "AlreadyLanedWarning", "__version__"]


def _bytes(path):
    """A path (str, bytes or os.PathLike) as the bytes the core takes, or None."""
    return None if path is None else os.fsencode(path)


def _call(function, paths, *args):
    """function(*args), its failure raised as the tracelane exception of its kind."""
    try:
        return function(*args)
    except _core.Failure as failure:
        kind, message, exit_status = failure.args
        names = [os.fsdecode(p) for p in paths if p is not None]
        raise _from_failure(kind, message, exit_status, names) from None


def _summary(text, already_laned, stacklevel):
    """The summary; the already-laned line as a warning on the caller's line."""
    if already_laned:
        warnings.warn(already_laned, AlreadyLanedWarning, stacklevel=stacklevel + 1)
    return json.loads(text)


def _compact(path, out, overwrite, level, no_pp_flows, force, rules, preview, no_restore_data, jobs,
             single_gzip_member, remove_original):
    """compact(), and with `remove_original` what became of the original ("removed",
    "kept: <reason>", or None when nothing was written)."""
    paths = [_bytes(p) for p in (path, out, rules, preview)]
    text, already_laned, removal = _call(_core.compact, paths, *paths[:2], overwrite, level, no_pp_flows, force,
                                         paths[2], paths[3], no_restore_data, jobs, single_gzip_member,
                                         remove_original)
    return _summary(text, already_laned, 3), removal


def compact(path, out=None, *, overwrite=False, level=1, no_pp_flows=False, force=False, rules=None, preview=None,
            no_restore_data=False, jobs=None, single_gzip_member=False):
    """Compacts one trace (`tracelane compact PATH`): its GPU slices repacked into lanes,
    written to `out` (default: beside it, `<name>_compacted.json[.gz]`), with what restores
    the original. Returns the summary `compact` prints (docs/commands.md, "The summary").

    level: gzip level 0-12 of a .gz output; jobs: threads (default SLURM_CPUS_PER_TASK,
    else every core available); rules: a rules file (docs/rules.md); preview: also write
    the timeline picture as this .svg. A trace that is tracelane's own output is not
    compacted again (force=True does): the summary says `"status": "already laned"` and an
    AlreadyLanedWarning is issued."""
    return _compact(path, out, overwrite, level, no_pp_flows, force, rules, preview, no_restore_data, jobs,
                    single_gzip_member, False)[0]


def merge(dir, out=None, *, overwrite=False, level=1, force=False, rules=None, preview=None, no_restore_data=False,
          jobs=None, single_gzip_member=False):
    """Merges the rank<N>_trace.json[.gz] files of one iteration directory (or of the
    directory of one such file) into one timeline (`tracelane merge DIR`), written to `out`
    (default: DIR/pp_traces_merged_compacted.json.gz). Returns the summary `merge` prints.
    Every failure has exit_status 2, as the command's."""
    paths = [_bytes(p) for p in (dir, out, rules, preview)]
    text, already_laned = _call(_core.merge, paths, *paths[:2], overwrite, level, force, paths[2], paths[3],
                                no_restore_data, jobs, single_gzip_member)
    return _summary(text, already_laned, 2)


def restore(path, out=None, rank=None, *, overwrite=False, level=1):
    """Writes back the original a compacted or merged output was made from, byte for byte
    after decompression (`tracelane restore PATH`): to `out` (default: beside it,
    `<name>_restored.json[.gz]`); `rank` names the global rank of a merged output. Returns
    the summary `restore` prints."""
    paths = [_bytes(p) for p in (path, out)]
    return json.loads(_call(_core.restore, paths, *paths, rank, overwrite, level))


def sweep(root, *, jobs=None, memory=None, overwrite=False, dry_run=False, shard=None, plan=None, report_dir=None,
          level=1, force=False, rules=None, quiet=False, no_restore_data=False, remove_originals=False,
          single_gzip_member=False):
    """Compacts every rank file and merges every iteration directory under `root`
    (`tracelane sweep ROOT`, docs/sweep.md), resumably, and writes tracelane_report.json,
    .csv and .html. Returns the report's rows (its "rows", a dict each: docs/report.md);
    a rank or merge that failed is a row whose "status" is "failed" (the command exits 1
    then). memory: a byte count or text such as "4G"; shard: "K/N" or (K, N); with dry_run
    the lines of what would be done, and nothing is. Progress goes to stderr unless quiet.
    `--write-plan` has no counterpart here: it belongs to job arrays (slurm/)."""
    if isinstance(memory, int):
        memory = str(memory)
    if isinstance(shard, (tuple, list)):
        shard = "%d/%d" % tuple(shard)
    paths = [_bytes(p) for p in (root, plan, report_dir, rules)]
    text = _call(_core.sweep, paths, paths[0], jobs, memory, overwrite, dry_run, shard, paths[1], paths[2], level,
                 force, paths[3], quiet, no_restore_data, remove_originals, single_gzip_member)
    if dry_run:
        return text.splitlines()
    return json.loads(text)["rows"]
