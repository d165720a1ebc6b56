"""`tracekit export`: stored launches as a trace for Perfetto: Chrome trace JSON (`--format perfetto`, which
chrome://tracing opens too) or Perfetto's protobuf TrackEvent trace (`--format perfetto-proto`), which the Perfetto
UI loads at sizes where it runs out of memory on JSON. `--format auto` (the default) writes JSON up to
`AUTO_PROTO_SLICES` slices, protobuf above that or when the output is named `.pftrace`/`.perfetto-trace`/`.pb`.

One process per SM (named "SM <id>", or "launch <id> SM <id>" when several launches are exported), one thread per
warp (named "block <b> warp <w>", tids unique in the file) with metadata events, and one complete ("X") slice per
region instance, or per warp when the launch has no regions. `ts`/`dur` are µs with ns precision (three
decimals), relative to the launch's first event. Slices of one thread must nest: a region that overlaps another of
its warp without being inside it goes to an extra thread of that warp ("... overlap 1"), as Proton's writer does
with its lines.

The protobuf trace has the same layout: a process track per SM and a thread track per warp lane (named in their
TrackDescriptors, pids and tids as in the JSON), each slice a TYPE_SLICE_BEGIN / TYPE_SLICE_END pair of TrackEvents
on its thread track, timestamps in ns relative to the launch's first event (the JSON's µs x 1000, exactly). It is
written with the `perfetto` package's generated protobuf classes, in chunks, so memory stays bounded.

Times: ns where recorded. Cycles only (Proton without a clock) are converted with `--clock-hz` or the SM clock the
import stored; without either they are written as if the clock were 1 GHz, and the file and a warning say so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import orjson
import polars as pl
import typer

from tracekit import format as fmt_text
from tracekit.api import export_parquet, launch_slices
from tracekit.cli.common import DbOption, console, open_store, warn
from tracekit.errors import TracekitError
from tracekit.selection import resolve_launches

FORMATS = ("auto", "perfetto", "perfetto-proto")
AUTO_PROTO_SLICES = 1_000_000  # auto: above this many slices (~150 MB of JSON) the protobuf trace is written
PROTO_SUFFIXES = (".pftrace", ".perfetto-trace", ".pb", ".binpb")
PROTO_CHUNK_PACKETS = 20_000  # packets serialized per write
WHAT = ("auto", "regions", "warps")


def _lanes(starts: list[int], ends: list[int]) -> list[int]:
    """A lane per slice of one warp (sorted by start, longer first) such that each lane's slices nest."""
    stacks: list[list[int]] = []
    lanes = []
    for start, end in zip(starts, ends, strict=True):
        for lane, stack in enumerate(stacks):
            while stack and stack[-1] <= start:
                stack.pop()
            if not stack or end <= stack[-1]:
                stack.append(end)
                lanes.append(lane)
                break
        else:
            stacks.append([end])
            lanes.append(len(stacks) - 1)
    return lanes


def _us(ns: int) -> float:
    return round(ns / 1000, 3)


def trace_events(
    frame: pl.DataFrame, launch_label: str | None, pid_base: int, tid_base: int = 0
) -> tuple[list[dict], int, int]:
    """Metadata and slice events for one launch's slices; returns them, the next free pid and the last tid used.

    tids are unique in the whole file (Perfetto's JSON importer keys threads by tid)."""
    events: list[dict] = []
    pids: dict[int, int] = {}
    tids: dict[tuple[int, int, int, int], int] = {}
    groups = frame.partition_by(["sm_id", "block_id", "warp_in_block"], maintain_order=True, as_dict=True)
    for (sm, block, warp), slices in groups.items():
        assert isinstance(sm, int) and isinstance(block, int) and isinstance(warp, int)
        if sm not in pids:
            pid = pids[sm] = pid_base + len(pids)
            sm_name = f"SM {sm}" if sm >= 0 else "SM unknown"
            name = f"{launch_label} {sm_name}" if launch_label else sm_name
            events.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": name}})
            events.append({"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0, "args": {"sort_index": pid}})
        pid = pids[sm]
        starts, ends = slices["start_ns"].to_list(), slices["end_ns"].to_list()
        for lane, name, start, end in zip(_lanes(starts, ends), slices["name"].to_list(), starts, ends, strict=True):
            key = (sm, block, warp, lane)
            if key not in tids:
                tid = tids[key] = tid_base + len(tids) + 1
                label = f"block {block} warp {warp}" + (f" overlap {lane}" if lane else "")
                events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": label}})
                events.append(
                    {"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid, "args": {"sort_index": tid}}
                )
            events.append(
                {
                    "name": name,
                    "cat": "region" if name != "warp" else "warp",
                    "ph": "X",
                    "pid": pid,
                    "tid": tids[key],
                    "ts": _us(start),
                    "dur": _us(end - start),
                    "args": {"block": block, "warp": warp, "sm": sm, "start_ns": start, "dur_ns": end - start},
                }
            )
    return events, pid_base + len(pids), tid_base + len(tids)


def _nested_order(starts: list[int], ends: list[int]) -> list[tuple[int, bool, int]]:
    """(ns, is_begin, slice index) of one lane's slices (sorted by start, longer first, nesting) in an order where
    every end closes the innermost open slice: a stack walk."""
    events: list[tuple[int, bool, int]] = []
    open_slices: list[int] = []
    for index, start in enumerate(starts):
        while open_slices and ends[open_slices[-1]] <= start:
            closed = open_slices.pop()
            events.append((ends[closed], False, closed))
        events.append((start, True, index))
        open_slices.append(index)
    while open_slices:
        closed = open_slices.pop()
        events.append((ends[closed], False, closed))
    return events


class ProtoTrace:
    """Perfetto's protobuf trace, written in chunks of packets (a file of concatenated `Trace` messages is one
    `Trace`, as the perfetto package's streaming builder writes it)."""

    SEQUENCE_ID = 1

    def __init__(self, handle: Any):
        from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb  # loaded only when writing protobuf

        self.pb = pb
        self.handle = handle
        self.chunk = pb.Trace()
        self.next_uuid = 1
        first = self.chunk.packet.add()
        first.trusted_packet_sequence_id = self.SEQUENCE_ID
        first.sequence_flags = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED

    def _packet(self) -> Any:
        if len(self.chunk.packet) >= PROTO_CHUNK_PACKETS:
            self.flush()
        packet = self.chunk.packet.add()
        packet.trusted_packet_sequence_id = self.SEQUENCE_ID
        return packet

    def flush(self) -> None:
        if len(self.chunk.packet):
            self.handle.write(self.chunk.SerializeToString())
            self.chunk = self.pb.Trace()

    def process(self, pid: int, name: str) -> int:
        uuid, self.next_uuid = self.next_uuid, self.next_uuid + 1
        track = self._packet().track_descriptor
        track.uuid = uuid
        track.process.pid = pid
        track.process.process_name = name
        return uuid

    def thread(self, parent: int, pid: int, tid: int, name: str) -> int:
        uuid, self.next_uuid = self.next_uuid, self.next_uuid + 1
        track = self._packet().track_descriptor
        track.uuid = uuid
        track.parent_uuid = parent
        track.thread.pid = pid
        track.thread.tid = tid
        track.thread.thread_name = name
        return uuid

    def slice_event(self, track: int, ns: int, begin: bool, name: str, category: str) -> None:
        packet = self._packet()
        packet.timestamp = ns
        event = packet.track_event
        event.track_uuid = track
        if begin:
            event.type = self.pb.TrackEvent.TYPE_SLICE_BEGIN
            event.name = name
            event.categories.append(category)
        else:
            event.type = self.pb.TrackEvent.TYPE_SLICE_END


def proto_events(
    trace: ProtoTrace, frame: pl.DataFrame, launch_label: str | None, pid_base: int, tid_base: int = 0
) -> tuple[int, int]:
    """One launch's tracks and slices into `trace`, with the JSON's pids, tids and names; returns the next free pid
    and the last tid used. Slice events go out per lane in nesting order (the trace processor sorts by time)."""
    pids: dict[int, tuple[int, int]] = {}
    tids = 0
    groups = frame.partition_by(["sm_id", "block_id", "warp_in_block"], maintain_order=True, as_dict=True)
    for (sm, block, warp), slices in groups.items():
        assert isinstance(sm, int) and isinstance(block, int) and isinstance(warp, int)
        if sm not in pids:
            pid = pid_base + len(pids)
            sm_name = f"SM {sm}" if sm >= 0 else "SM unknown"
            pids[sm] = (pid, trace.process(pid, f"{launch_label} {sm_name}" if launch_label else sm_name))
        pid, process_track = pids[sm]
        starts, ends = slices["start_ns"].to_list(), slices["end_ns"].to_list()
        names = slices["name"].to_list()
        lanes = _lanes(starts, ends)
        for lane in sorted(set(lanes)):
            tids += 1
            label = f"block {block} warp {warp}" + (f" overlap {lane}" if lane else "")
            track = trace.thread(process_track, pid, tid_base + tids, label)
            mine = [i for i, value in enumerate(lanes) if value == lane]
            lane_starts, lane_ends = [starts[i] for i in mine], [ends[i] for i in mine]
            for ns, begin, index in _nested_order(lane_starts, lane_ends):
                name = names[mine[index]]
                trace.slice_event(track, ns, begin, name, "region" if name != "warp" else "warp")
    return pid_base + len(pids), tid_base + tids


def _proto_wanted(fmt: str, output: Path, slices: int) -> bool:
    if fmt != "auto":
        return fmt == "perfetto-proto"
    return output.suffix.lower() in PROTO_SUFFIXES or slices > AUTO_PROTO_SLICES


def _export_parquet(folder: Path, reference: str | None, kernel: str | None, db: str | None) -> None:
    """`--parquet DIR`: the normalized tables as a Parquet dataset (tracekit/store/parquet_export.py)."""
    from tracekit.cli.common import progress

    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise TracekitError(f"--parquet {folder}: exists and is not an empty folder (a dataset goes to a new one)")
    store = open_store(db)
    import_ids = None
    if reference is not None:
        launches = resolve_launches(store, reference, kernel)
        if launches.height == 0:
            raise TracekitError(f"{reference}: no launches to export")
        import_ids = launches["import_id"].unique().to_list()
    try:
        written = export_parquet(store, folder, import_ids, progress=progress)
    except OSError as exc:
        raise TracekitError(f"--parquet {folder}: cannot write ({exc.strerror or exc})") from None
    counts = ", ".join(f"{rows:,} {table}" for table, rows in written.items() if rows)
    console.print(f"wrote a Parquet dataset to {folder}: {counts}", markup=False)


def export_command(
    reference: Annotated[
        str | None,
        typer.Argument(help="A file (imported on the way), an import id, or launch:ID (--parquet: optional)."),
    ] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Where to write the trace.")] = None,
    parquet: Annotated[
        Path | None,
        typer.Option(
            "--parquet",
            help="Instead of a trace: the store's normalized tables (of the referenced imports, else all) as a "
            "Parquet dataset in this new folder, for DuckDB, Spark or polars.",
        ),
    ] = None,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            help="auto (JSON, protobuf for large traces or a .pftrace output), perfetto (Chrome trace JSON) or "
            "perfetto-proto (Perfetto's protobuf TrackEvent trace).",
        ),
    ] = "auto",
    what: Annotated[str, typer.Option("--what", help="auto (regions, else warps), regions or warps.")] = "auto",
    kernel: Annotated[str | None, typer.Option("--kernel", help="Only launches whose kernel contains this.")] = None,
    clock_hz: Annotated[float | None, typer.Option("--clock-hz", help="SM clock for cycle-only times.")] = None,
    db: DbOption = None,
) -> None:
    """Export stored launches' warps or regions as a trace for Perfetto (a process per SM, a thread per warp)."""
    if parquet is not None:
        _export_parquet(parquet, reference, kernel, db)
        return
    if reference is None or output is None:
        raise TracekitError("export needs a reference and --output FILE (or --parquet DIR for the store's tables)")
    if fmt not in FORMATS:
        raise TracekitError(f"--format {fmt!r}: expected one of {', '.join(FORMATS)}")
    if what not in WHAT:
        raise TracekitError(f"--what {what!r}: expected one of {', '.join(WHAT)}")
    if clock_hz is not None and not clock_hz > 0:
        raise TracekitError(f"--clock-hz must be a positive number of Hz, got {clock_hz!r}")
    store = open_store(db)
    launches = resolve_launches(store, reference, kernel)
    if launches.height == 0:
        raise TracekitError(f"{reference}: no launches to export")
    notes: dict[str, dict[str, Any]] = {}
    frames = []
    for launch in launches.iter_rows(named=True):
        frame, note = launch_slices(store, launch, what, clock_hz)
        label = f"launch {launch['id']}" if launches.height > 1 else None
        frames.append((frame, label))
        notes[str(launch["id"])] = {"kernel": launch.get("kernel_name"), "time": note, "slices": frame.height}
        if note.startswith("cycles written"):
            warn(f"launch {launch['id']}: times are SM cycles written as if at 1 GHz; pass --clock-hz to convert")
    slices = sum(n["slices"] for n in notes.values())
    proto = _proto_wanted(fmt, output, slices)
    try:
        if proto:
            with open(output, "wb") as binary:
                trace = ProtoTrace(binary)
                pid, tid = 1, 0
                for frame, label in frames:
                    pid, tid = proto_events(trace, frame, label, pid, tid)
                trace.flush()
        else:
            events: list[dict] = []
            pid, tid = 1, 0
            for frame, label in frames:
                launch_events, pid, tid = trace_events(frame, label, pid, tid)
                events.extend(launch_events)
            document = {"displayTimeUnit": "ns", "traceEvents": events, "otherData": {"tracekit_launches": notes}}
            # orjson: json.dump encodes in pure Python (its C encoder serves only dumps), most of a large export
            output.write_bytes(orjson.dumps(document))
    except OSError as exc:
        raise TracekitError(f"{output}: cannot write ({exc.strerror or exc})") from None
    kind = "Perfetto protobuf trace" if proto else "Chrome trace JSON"
    why = ""
    if proto and fmt == "auto" and slices > AUTO_PROTO_SLICES:
        why = f" (over {AUTO_PROTO_SLICES:,} slices: the Perfetto UI runs out of memory on JSON that large)"
    counts = f"{fmt_text.plural(launches.height, 'launch')}, {fmt_text.plural(slices, 'slice')}"
    console.print(f"wrote {output}: {kind}, {counts}{why}", markup=False)
