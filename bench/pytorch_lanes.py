#!/usr/bin/env python3
"""Re-export an un-laned Kineto trace as PyTorch's streaming chrome-trace exporter writes it.

PyTorch's `torch/profiler/_chrome_trace_export.py` (`export_chrome_trace(..., annotations=...,
graph_lanes="all", default_stream=7)`) writes the chrome trace itself, one event at a time,
and can move every graphed work event (cat kernel, gpu_memcpy or gpu_memset whose Kineto
args carry `"graph node id": N`, N != 0) onto a display lane: the stream its CUDA-graph
annotation names, or `default_stream` when it has none. Such traces are what tracelane calls
"PyTorch-laned" (docs/spec.md, section 9.8). This script makes them from any un-laned trace
(tracelane_gen's, or a corpus trace), so tests and benchmarks need no GPU and no PyTorch:

  pytorch_lanes.py IN.json.gz OUT.json.gz --graph-lanes all [--annotate REGEX=STREAM[:NAME]]...
                   [--default-stream 7] [--base-ns NS] [--trace-name TEXT] [--quiet]
  pytorch_lanes.py IN.json.gz TWIN.json.gz --graph-lanes none     # the un-laned twin

The input is read as the exporter's "activities": every ph X or i event with integer pid and
tid, in file order, each with the flow events (ph s / f, cats ac2g and fwdbwd) that belong to
it (the one right after it on its pid, tid and ts, as Kineto writes them, else any flow at
that pid, tid and ts). Its metadata events and the trailer events of a previous export
(pids "Spans", "Traces", "") are not copied: they are made again, the exporter's way.

Annotations. The exporter takes a map {graph node id: annotation dict}; here each rule
`--annotate REGEX=STREAM[:NAME]` gives the graph nodes whose kernel name matches REGEX
(re.search; the first rule that matches wins; a node is decided by its first event) the
annotation {"stream": STREAM, "Process Group Description": NAME} (NAME optional). The
lane a moved event lands on is the annotation's stream, and the lane's thread_name is NAME.

Default rules, when no --annotate is given: with `--graph-lanes all`, torchtitan-like: the
NCCL SendRecv kernels of the pipeline (regex `ncclDevKernel_SendRecv`) go to lane 1000
(above any stream id tracelane_gen or the corpus uses), named after the PP process group
(the pg_desc of distributedInfo.pg_config that contains "pp", else "mesh_pp"); every other
graphed event has no annotation and piles onto `--default-stream` (7, Kineto's default
stream, which already holds the ungraphed memcpys), so stream 7's slices overlap. With
`--graph-lanes none` there are no annotations by default, and the output is the un-laned
twin: the same events, written by the same exporter, with nothing moved.

What the output reproduces from the exporter:
  - the header, one key a line: schemaVersion, deviceProperties (the input's), every other
    top-level key of the input as a metadata key in input order, cuda_runtime_version and
    cuda_driver_version when the input has them, displayTimeUnit "ms",
    baseTimeNanoseconds, `"cudaGraphInlineAnnotated": true` when some graphed work event
    had a non-empty annotation, then traceEvents;
  - the metadata events of every device and resource seen (process_name "python",
    process_labels "CPU" / "GPU <id>", process_sort_index, thread_name "thread <tid>" on
    the host and "stream <tid> " on a GPU, thread_sort_index), ts the first event's;
  - each event in the exporter's text: `{"ph":"X","cat":..,"name":..,"pid":..,"tid":..,
    "ts":..,"dur":..,"args":{..}}`, times as exact `<us>.<3 digits>`; args as its parts
    joined by ",": `"External id": N` first, the Kineto fragment (the rest of the input's
    args, in order, json.dumps-style), then the annotation's fields;
  - a moved event's first `"stream": N` in its fragment rewritten to its lane (appended
    when absent), then the annotation's other fields, then `"original_stream": <stream it
    ran on>`; an annotated event that does not move gets `"annotated_stream": N`;
  - flows right after their event, on the event's lane (a moved kernel's flow end too);
  - with annotations, gpu_user_annotation events held back and written after all others,
    only on (pid, tid) tracks that still hold work (orphans whose work moved are dropped);
  - the new lanes' thread_name (NAME or "stream <tid> ") and thread_sort_index, sorted by
    (pid, tid), ts the lane's last moved event's; lanes that are existing streams get none;
  - the trailer: the "PyTorch Profiler (0)" span, the Spans sort index, "Iteration Start:
    PyTorch Profiler", "Record Window End" at the last end + 1 us, and traceName.

What it does not reproduce:
  - baseTimeNanoseconds is the input's (the exporter floors the wall clock of the export
    to 7889238-second intervals); `--base-ns` sets another, and times below it clamp to 0
    as the exporter's do. traceName is OUTPUT as given, or `--trace-name`.
  - Kineto's own fragment text is not available: the input's args (without "External id")
    are written json.dumps-style with the input's number text kept; the linked
    record_param_comms fragment of an NCCL kernel is part of that. "External id" comes
    from the input's args, not from correlation links. Duplicate keys in an input object
    keep their last value.
  - Annotations are per kernel-name rule, not what `mark_kernels` / `mark_stream` record;
    only `stream` and `Process Group Description` fields are made. An input's own
    `args.name` on graphed kernels (tracelane_gen's per-kernel PP annotation, which PyTorch
    would splice in as an annotation field after the fragment, and only when given
    annotations) stays where the input has it, in both twins.
  - The host is the pid labelled "CPU" in the input (else the pid of the first cpu_op or
    cuda_runtime event); a negative pid is "Overhead", as in the exporter. An event whose
    pid or tid is not an integer, a ph other than X, i, M, s, f, and a flow with no event
    at its pid, tid and ts are dropped and counted on stderr.
  - gzip: one member, level 6, no name and mtime 0 in the header (the exporter's
    gzip.open writes a level 9 member with both), so the output is deterministic.

Stdlib only, Python >= 3.9. Times are integer nanoseconds parsed from the number text
(decimal), never through a float.
"""

import argparse
import collections
import decimal
import gzip
import io
import json
import os
import re
import sys
import tempfile

WORK_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
FLOW_CATS = {"fwdbwd", "ac2g"}
TRAILER_PIDS = {"Spans", "Traces", ""}
LANE_NAME_KEY = "Process Group Description"
# The top-level keys the exporter writes itself; every other key of the input is metadata.
OWN_KEYS = {"schemaVersion", "deviceProperties", "cuda_runtime_version", "cuda_driver_version",
            "displayTimeUnit", "baseTimeNanoseconds", "cudaGraphInlineAnnotated", "traceEvents",
            "traceName"}
GRAPH_NODE = re.compile(r'"graph node id":\s*(\d+)')
STREAM_FIELD = re.compile(r'"stream":\s*\d+')
RULE = re.compile(r"^(.*)=(\d+)(?::(.*))?$", re.S)
DEFAULT_PP_LANE = 1000
SPANS_SORT_INDEX = 0x20000000  # the exporter puts its "Spans" process last


class Number(str):
    """A JSON number with a fraction or exponent, kept as its text (written back verbatim)."""


def load(path):
    with open(path, "rb") as handle:
        data = handle.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)  # every member
    return json.loads(data, parse_float=Number)


def to_ns(value):
    """Microseconds (an int or a Number's text) as integer nanoseconds, exactly; None when
    the value is not a number. A fraction beyond nanoseconds rounds half to even."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value * 1000
    if isinstance(value, Number):
        scaled = decimal.Decimal(value).scaleb(3)
        return int(scaled.to_integral_value(rounding=decimal.ROUND_HALF_EVEN))
    return None


def us_text(time_ns):
    """The exporter's time text: whole microseconds, a dot, three digits of nanoseconds."""
    return f"{time_ns // 1000}.{time_ns % 1000:03d}"


def dump(value):
    """json.dumps(value) with its default separators, but a Number keeps its own text."""
    if isinstance(value, Number):
        return str(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))}: {dump(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(dump(v) for v in value) + "]"
    return json.dumps(value)


class Activity:
    """One event as the exporter sees a Kineto activity: where it ran (device `did`,
    resource `rid`), when (absolute ns), what, and the text of its args fragment."""

    __slots__ = ("did", "rid", "ts_ns", "dur_ns", "cat", "name", "external_id", "fragment", "flows")

    def __init__(self, did, rid, ts_ns, dur_ns, cat, name, external_id, fragment):
        self.did, self.rid, self.ts_ns, self.dur_ns = did, rid, ts_ns, dur_ns
        self.cat, self.name, self.external_id, self.fragment = cat, name, external_id, fragment
        self.flows = []  # (ph "s" or "f", id text, flow cat)

    def graph_node(self):
        if self.cat not in WORK_CATS or not self.fragment:
            return 0
        match = GRAPH_NODE.search(self.fragment)
        return int(match.group(1)) if match else 0


def resource_id(tid):
    """Kineto's resource id as the exporter writes it: never negative, INT64_MIN as 0."""
    return 0 if tid == -(2 ** 63) else abs(tid)


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def read_activities(trace, base_ns, dropped):
    """The input's events as activities in file order, each with its flows; what cannot be
    an activity is counted in `dropped` by reason."""
    activities = []
    at = {}  # (pid, tid, ts_ns) -> the last activity there, for flows written elsewhere
    previous = None
    pending_flows = []
    for event in trace.get("traceEvents", []):
        if not isinstance(event, dict):
            dropped["not an object"] += 1
            continue
        ph, pid, tid = event.get("ph"), event.get("pid"), event.get("tid")
        if ph == "M":
            continue
        if isinstance(pid, str) and pid in TRAILER_PIDS:
            continue
        ts_ns = to_ns(event.get("ts"))
        if not (is_int(pid) and is_int(tid)) or ts_ns is None:
            dropped[f"ph {ph} without integer pid/tid and numeric ts"] += 1
            continue
        if ph in ("s", "f"):
            flow = (ph, dump(event.get("id")), event.get("cat") if event.get("cat") in FLOW_CATS else "ac2g")
            place = (pid, resource_id(tid), base_ns + ts_ns)
            if previous is not None and (previous.did, previous.rid, previous.ts_ns) == place:
                previous.flows.append(flow)
            else:
                pending_flows.append((place, flow))
            continue
        if ph not in ("X", "i"):
            dropped[f"ph {ph}"] += 1
            continue
        args = event.get("args") if isinstance(event.get("args"), dict) else {}
        external_id = dump(args["External id"]) if "External id" in args else None
        fragment = ", ".join(f"{json.dumps(str(k))}: {dump(v)}" for k, v in args.items() if k != "External id")
        dur_ns = to_ns(event.get("dur", 0)) or 0
        cat = event.get("cat") if isinstance(event.get("cat"), str) else ""
        name = event.get("name") if isinstance(event.get("name"), str) else ""
        previous = Activity(pid, resource_id(tid), base_ns + ts_ns, dur_ns, cat, name, external_id, fragment)
        activities.append(previous)
        at[(previous.did, previous.rid, previous.ts_ns)] = previous
    for key, flow in pending_flows:
        owner = at.get(key)
        if owner is None:
            dropped["flow with no event at its pid, tid and ts"] += 1
        else:
            owner.flows.append(flow)
    return activities


def host_pid_of(trace, activities):
    for event in trace.get("traceEvents", []):
        if (isinstance(event, dict) and event.get("ph") == "M" and event.get("name") == "process_labels"
                and (event.get("args") or {}).get("labels") == "CPU" and is_int(event.get("pid"))):
            return event["pid"]
    for activity in activities:
        if activity.cat in ("cpu_op", "cuda_runtime", "user_annotation", "python_function"):
            return activity.did
    return None


def parse_rule(text):
    match = RULE.match(text)
    if not match or not match.group(1):
        raise SystemExit(f"pytorch_lanes: --annotate {text!r}: expected REGEX=STREAM[:PROCESS_GROUP_NAME]")
    try:
        pattern = re.compile(match.group(1))
    except re.error as error:
        raise SystemExit(f"pytorch_lanes: --annotate {text!r}: bad regex: {error}")
    annotation = {"stream": int(match.group(2))}
    if match.group(3):
        annotation[LANE_NAME_KEY] = match.group(3)
    return pattern, annotation


def pp_group_description(trace):
    info = trace.get("distributedInfo")
    for group in (info.get("pg_config") or []) if isinstance(info, dict) else []:
        desc = group.get("pg_desc") if isinstance(group, dict) else None
        if isinstance(desc, str) and "pp" in desc:
            return desc
    return "mesh_pp"


def default_rules(trace, graph_lanes):
    if graph_lanes != "all":
        return []
    return [(re.compile(r"ncclDevKernel_SendRecv"),
             {"stream": DEFAULT_PP_LANE, LANE_NAME_KEY: pp_group_description(trace)})]


def annotations_from_rules(activities, rules, notes):
    """{graph node id: annotation}, as the exporter is given it: a node is decided by its
    first work event's name (a node id's kernel never changes between replays)."""
    annotations, named = {}, {}
    for activity in activities:
        node = activity.graph_node()
        if not node:
            continue
        if node in named:
            if named[node] != activity.name:
                notes["graph node events with another kernel name than the node's first"] += 1
            continue
        named[node] = activity.name
        for pattern, annotation in rules:
            if pattern.search(activity.name):
                annotations[node] = annotation
                break
    return annotations


def annotation_fields(annotation):
    """(the annotation's fields but its stream as an args fragment or None, its stream or
    None, its lane name or None); values are written as strings, as the exporter does."""
    if not annotation:
        return None, None, None
    stream = int(annotation["stream"]) if "stream" in annotation else None
    rest = {str(k): str(v) for k, v in annotation.items() if k != "stream"}
    lane_name = str(annotation[LANE_NAME_KEY]) if LANE_NAME_KEY in annotation else None
    return (json.dumps(rest)[1:-1] if rest else None), stream, lane_name


def metadata_event(name, ts, pid, tid, key, value_text):
    return (f'{{"ph":"M","name":"{name}","ts":{ts},"pid":{pid},"tid":{tid},'
            f'"args":{{"{key}":{value_text}}}}},\n')


def export(trace, activities, out, *, annotations, graph_lanes, default_stream, base_ns, trace_name,
           host_pid, stats):
    """Writes the export to `out` (a text stream) and fills `stats`."""
    annotate = bool(annotations)
    first_device, first_resource = {}, {}
    min_ts, max_end = None, 0
    inline_annotated = False
    for activity in activities:
        min_ts = activity.ts_ns if min_ts is None else min(min_ts, activity.ts_ns)
        max_end = max(max_end, activity.ts_ns + max(activity.dur_ns, 0))
        first_device.setdefault(activity.did, activity.ts_ns)
        first_resource.setdefault((activity.did, activity.rid), activity.ts_ns)
        if annotate and not inline_annotated and annotations.get(activity.graph_node()):
            inline_annotated = True

    def rel(time_ns):
        return us_text(max(time_ns - base_ns, 0))

    out.write("{\n")
    out.write('"schemaVersion": 1,\n')
    out.write(f'"deviceProperties": {dump(trace.get("deviceProperties", []))},\n')
    for key, value in trace.items():
        if key not in OWN_KEYS:
            out.write(f"{json.dumps(key)}: {dump(value)},\n")
    for key in ("cuda_runtime_version", "cuda_driver_version"):
        if key in trace:
            out.write(f'"{key}": {dump(trace[key])},\n')
    out.write('"displayTimeUnit": "ms",\n')
    out.write(f'"baseTimeNanoseconds": {base_ns},\n')
    if inline_annotated:
        out.write('"cudaGraphInlineAnnotated": true,\n')
    out.write('"traceEvents": [\n')

    for did, ts in sorted(first_device.items()):
        if did == host_pid or did < 0:
            label, sort_index = ("CPU" if did == host_pid else "Overhead"), (did if did >= 0 else 0x1000000)
        else:
            label, sort_index = f"GPU {did}", 5000000 + did
        out.write(metadata_event("process_name", rel(ts), did, 0, "name", '"python"'))
        out.write(metadata_event("process_labels", rel(ts), did, 0, "labels", f'"{label}"'))
        out.write(metadata_event("process_sort_index", rel(ts), did, 0, "sort_index", str(sort_index)))
    for (did, rid), ts in sorted(first_resource.items()):
        label = f"thread {rid}" if did == host_pid or did < 0 else f"stream {rid} "
        out.write(metadata_event("thread_name", rel(ts), did, rid, "name", f'"{label}"'))
        out.write(metadata_event("thread_sort_index", rel(ts), did, rid, "sort_index", str(rid)))

    lanes = {}  # (did, lane) moved to -> (last moved event's ts, lane name or None)
    work_tracks = set()
    held_back = []  # (did, tid, text) of gpu_user_annotation events, with annotations only
    for activity in activities:
        out_tid = activity.rid
        fragment = activity.fragment
        extra = []
        node = activity.graph_node() if annotate else 0
        if node:
            fields, stream, lane_name = annotation_fields(annotations.get(node))
            if fields:
                extra.append(fields)
            if graph_lanes == "all":
                out_tid = stream if stream is not None else default_stream
            if out_tid != activity.rid:
                known = lanes.get((activity.did, out_tid))
                if lane_name is None and known is not None:
                    lane_name = known[1]
                lanes[(activity.did, out_tid)] = (activity.ts_ns, lane_name)
                # The lane goes into the fragment's own "stream" rather than a second key.
                fragment, replaced = STREAM_FIELD.subn(f'"stream": {out_tid}', fragment, count=1)
                if not replaced:
                    extra.append(f'"stream": {out_tid}')
                extra.append(f'"original_stream": {activity.rid}')
                stats["moved"] += 1
            elif stream is not None:
                extra.append(f'"annotated_stream": {stream}')
        parts = ([f'"External id": {activity.external_id}'] if activity.external_id is not None else [])
        parts += ([fragment] if fragment else []) + extra
        if activity.cat in WORK_CATS:
            work_tracks.add((activity.did, out_tid))
        # Kineto's instant events are written as such; everything else as a complete event.
        where = (f'"cat":{json.dumps(activity.cat)},"name":{json.dumps(activity.name)},'
                 f'"pid":{activity.did},"tid":{out_tid},"ts":{rel(activity.ts_ns)}')
        head = ('{"ph":"i","s":"t",' + where if activity.cat == "cpu_instant_event" else
                '{"ph":"X",' + where + f',"dur":{us_text(max(activity.dur_ns, 0))}')
        text = head + (f',"args":{{{",".join(parts)}}}' if parts else "") + "},\n"
        if annotate and activity.cat == "gpu_user_annotation":
            held_back.append((activity.did, out_tid, text))
            continue
        out.write(text)
        for ph, flow_id, flow_cat in activity.flows[:1]:  # an activity has one flow
            out.write(f'{{"ph":"{ph}","id":{flow_id},"pid":{activity.did},"tid":{out_tid},'
                      f'"ts":{rel(activity.ts_ns)},"cat":"{flow_cat}","name":"{flow_cat}"'
                      + (',"bp":"e"' if ph == "f" else "") + "},\n")
        stats["flows_dropped"] += max(len(activity.flows) - 1, 0)

    for did, tid, text in held_back:
        if (did, tid) in work_tracks:
            out.write(text)
        else:
            stats["annotations_dropped"] += 1
    for (did, tid), (ts, lane_name) in sorted(lanes.items()):
        if (did, tid) in first_resource:
            continue  # an existing stream keeps its own metadata
        out.write(metadata_event("thread_name", rel(ts), did, tid, "name",
                                 json.dumps(lane_name if lane_name else f"stream {tid} ")))
        out.write(metadata_event("thread_sort_index", rel(ts), did, tid, "sort_index", str(tid)))
    stats["lanes"] = sorted(f"{did}:{tid}" for did, tid in lanes)

    if activities:
        start = rel(min_ts)
        out.write(f'{{"ph":"X","cat":"Trace","name":"PyTorch Profiler (0)","pid":"Spans",'
                  f'"tid":"PyTorch Profiler","ts":{start},"dur":{us_text(max(max_end - min_ts, 0))},'
                  f'"args":{{"Op count": 0}}}},\n')
        out.write(metadata_event("process_sort_index", start, '"Spans"', 0, "sort_index", str(SPANS_SORT_INDEX)))
        out.write(f'{{"ph":"i","s":"g","name":"Iteration Start: PyTorch Profiler","pid":"Traces",'
                  f'"tid":"Trace PyTorch Profiler","ts":{start}}},\n')
    out.write(f'{{"ph":"i","s":"g","name":"Record Window End","pid":"","tid":"","ts":{rel(max_end + 1000)}}}\n')
    out.write(f'],\n"traceName": {json.dumps(trace_name)}\n}}\n')


def write_atomically(path, text):
    """Writes `text` to `path` (gzip when it ends in .gz) through a temporary file in the
    same directory, so no half-written output is ever visible."""
    data = text.encode()
    if path.endswith(".gz"):
        buffer = io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, compresslevel=6, mtime=0) as handle:
            handle.write(data)
        data = buffer.getvalue()
    directory = os.path.dirname(os.path.abspath(path))
    fd, temporary = tempfile.mkstemp(dir=directory, prefix=".pytorch_lanes.")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # as open() would make it, not mkstemp's 0600
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Re-export an un-laned Kineto trace as PyTorch's export_chrome_trace writes it "
                    "(graph_lanes none or all); see the module docstring.")
    parser.add_argument("input", help="an un-laned Kineto trace, .json or .json.gz")
    parser.add_argument("output", help="the export, .json or .json.gz by its name")
    parser.add_argument("--graph-lanes", choices=("none", "all"), default="all",
                        help="all: move graphed work onto lanes (default); none: move nothing")
    parser.add_argument("--annotate", action="append", default=[], metavar="REGEX=STREAM[:NAME]",
                        help="graph nodes whose kernel name matches REGEX get the annotation "
                             "{stream: STREAM, Process Group Description: NAME}; repeatable, first match wins; "
                             "replaces the default rules")
    parser.add_argument("--default-stream", type=int, default=7,
                        help="the lane of graphed work without an annotated stream (7)")
    parser.add_argument("--base-ns", type=int, default=None,
                        help="baseTimeNanoseconds of the output (default: the input's, else 0)")
    parser.add_argument("--trace-name", default=None, help="traceName (default: OUTPUT as given)")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)

    trace = load(args.input)
    if isinstance(trace, list):
        trace = {"traceEvents": trace}
    base_in = trace.get("baseTimeNanoseconds", 0)
    if not is_int(base_in):
        raise SystemExit(f"pytorch_lanes: {args.input}: baseTimeNanoseconds is not an integer")
    base_out = base_in if args.base_ns is None else args.base_ns
    dropped, notes = collections.Counter(), collections.Counter()
    activities = read_activities(trace, base_in, dropped)
    rules = [parse_rule(text) for text in args.annotate] or default_rules(trace, args.graph_lanes)
    annotations = annotations_from_rules(activities, rules, notes)
    if args.graph_lanes == "all" and not annotations:
        # As the exporter: "all" without annotations would only collapse every graphed
        # event onto one lane.
        raise SystemExit(f"pytorch_lanes: {args.input}: --graph-lanes all needs annotations, "
                         f"and no rule matched a graphed kernel")
    stats = {"moved": 0, "annotations_dropped": 0, "flows_dropped": 0, "lanes": []}
    text = io.StringIO()
    export(trace, activities, text, annotations=annotations, graph_lanes=args.graph_lanes,
           default_stream=args.default_stream, base_ns=base_out,
           trace_name=args.output if args.trace_name is None else args.trace_name,
           host_pid=host_pid_of(trace, activities), stats=stats)
    write_atomically(args.output, text.getvalue())
    if not args.quiet:
        print(f"pytorch_lanes: {args.output}: {len(activities)} activities, {len(annotations)} graph nodes "
              f"annotated, {stats['moved']} events moved onto lanes {stats['lanes']}, "
              f"{stats['annotations_dropped']} gpu_user_annotation events dropped with their tracks",
              file=sys.stderr)
        for reason, count in sorted((dropped + notes).items()):
            print(f"pytorch_lanes: {args.input}: {count} x {reason}", file=sys.stderr)
        if stats["flows_dropped"]:
            print(f"pytorch_lanes: {args.input}: {stats['flows_dropped']} flows beyond an event's first dropped",
                  file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
