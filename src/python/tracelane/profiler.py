"""Compact each trace torch.profiler writes, as it writes it.

    import torch, tracelane.profiler
    handler = tracelane.profiler.on_trace_ready("traces")
    with torch.profiler.profile(schedule=torch.profiler.schedule(wait=1, warmup=1, active=2),
                                on_trace_ready=handler) as prof:
        for batch in data:
            train(batch)
            prof.step()
    handler.results   # per trace: where it went, the compact summary, what became of the original

This module imports no torch: the handler is handed the profiler, and asks torch for the
process's rank only when layout="torchtitan" is given no rank.
"""

import os
import socket
import time
import warnings

from . import _compact
from .errors import Error, RestoreError, UsageError

LAYOUTS = ("tensorboard", "torchtitan")


class TraceHandler:
    """The handler on_trace_ready() returns: call it with the profiler. `results` holds one
    dict per trace: "trace" (the file exported), "summary" (compact's summary, None when
    compaction failed), "original" ("kept", "removed", or "kept: <why>") and "error" (the
    failure's message, or None)."""

    def __init__(self, dir_name, worker_name, use_gzip, layout, rank, keep_original, on_error, options):
        self.dir_name = os.fspath(dir_name)
        self.worker_name = worker_name
        self.use_gzip = use_gzip
        self.layout = layout
        self.rank = rank
        self.keep_original = keep_original
        self.on_error = on_error
        self.options = options
        self.results = []

    def trace_path(self, prof):
        """Where the trace of this profiler cycle is exported, named as
        torch.profiler.tensorboard_trace_handler names it (layout "tensorboard":
        DIR/<worker>.<ms>.pt.trace.json) or as torchtitan does (layout "torchtitan":
        DIR/iteration_<step>/rank<N>_trace.json)."""
        suffix = ".gz" if self.use_gzip else ""
        if self.layout == "torchtitan":
            return os.path.join(self.dir_name, "iteration_%d" % prof.step_num,
                                "rank%d_trace.json%s" % (self._rank(), suffix))
        if not self.worker_name:
            self.worker_name = "%s_%d" % (socket.gethostname(), os.getpid())
        return os.path.join(self.dir_name, "%s.%d.pt.trace.json%s" % (self.worker_name, int(time.time() * 1000), suffix))

    def _rank(self):
        if self.rank is None:
            import torch.distributed  # only here: the one thing the handler asks torch itself
            initialized = torch.distributed.is_available() and torch.distributed.is_initialized()
            self.rank = torch.distributed.get_rank() if initialized else 0
        return self.rank

    def __call__(self, prof):
        path = self.trace_path(prof)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        prof.export_chrome_trace(path)
        result = {"trace": path, "summary": None, "original": "kept", "error": None}
        self.results.append(result)
        try:
            result["summary"], removal = _compact(path, None, remove_original=not self.keep_original, **self.options)
            if removal:
                result["original"] = removal
                if removal != "removed":
                    raise RestoreError("%s: %s" % (path, removal))
        except Error as error:
            result["error"] = str(error)
            if self.on_error == "raise":
                raise
            # A profiler handler must not end the training it profiles: the exported trace is
            # left as torch wrote it.
            warnings.warn("tracelane: %s (the trace is left as exported)" % error, RuntimeWarning, stacklevel=2)


def on_trace_ready(dir_name, *, worker_name=None, use_gzip=False, layout="tensorboard", rank=None,
                   keep_original=True, on_error="warn", level=1, jobs=None, rules=None, no_pp_flows=False,
                   force=False, no_restore_data=False, single_gzip_member=False):
    """A handler for torch.profiler.profile(on_trace_ready=...): it exports each trace as
    torch.profiler.tensorboard_trace_handler(dir_name, worker_name, use_gzip) does (or, with
    layout="torchtitan", as torchtitan does: DIR/iteration_<step>/rank<rank>_trace.json,
    `rank` defaulting to torch.distributed's, else 0), then writes its compacted copy beside
    it as tracelane.compact() names it (<name>_compacted.json[.gz]), which `tracelane sweep`
    of DIR then finds up to date.

    keep_original=False keeps only the copy: the exported trace is removed once the copy,
    read back from disk, restores it byte for byte (verified as `sweep --remove-originals`
    verifies); any doubt keeps it. tracelane.restore() gives it back.

    A failure (a trace tracelane cannot compact, a copy that does not restore) leaves the
    exported trace as it is and issues a RuntimeWarning, so that training goes on;
    on_error="raise" raises it instead. The other options are compact()'s."""
    if layout not in LAYOUTS:
        raise UsageError("layout must be one of %s, not %r" % (", ".join(LAYOUTS), layout))
    if on_error not in ("warn", "raise"):
        raise UsageError("on_error must be 'warn' or 'raise', not %r" % (on_error,))
    if not keep_original and no_restore_data:
        raise UsageError("keep_original=False needs the restore data that no_restore_data=True leaves out")
    options = dict(overwrite=False, level=level, no_pp_flows=no_pp_flows, force=force, rules=rules, preview=None,
                   no_restore_data=no_restore_data, jobs=jobs, single_gzip_member=single_gzip_member)
    return TraceHandler(dir_name, worker_name, use_gzip, layout, rank, keep_original, on_error, options)
