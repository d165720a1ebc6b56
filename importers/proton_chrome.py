"""Triton Proton intra-kernel traces (`proton.start(..., backend="instrumentation", data="trace")`, `.chrome_trace`).

The writer is `StreamChromeTraceWriter` (triton-lang/triton, third_party/proton/common/lib/TraceDataIO/
TraceWriter.cpp). What it writes, and how it is read here:

- one `"ph": "X"` event per scope instance; `name` the scope name (`scope_<id>` when unnamed), `cat` the kernel;
- `pid` "<kernel> Core<sm> CTA<cta>" (older versions append " [measure in clock cycle (assume 1GHz)]"): the SM
  (`procId`) and the linear CTA id;
- `tid` "warp <uid> (line <k>)": uid is the warp within the CTA; the line is only a display lane the writer picks
  so that overlapping scopes of one warp do not share a row. It is not a warp and is ignored (nesting depth is
  computed from the intervals instead);
- `ts`/`dur` are SM clock cycles divided by `args["Frequency (MHz)"]` (1000, i.e. "cycles as if at 1 GHz"; older
  files have no such arg and use 1000 too), written as float32, so cycles = round(ts * MHz). Each CTA's cycles are
  shifted by its own first cycle and offset by its `%globaltimer` start relative to the earliest CTA, so CTAs are
  aligned only approximately (that offset is ns added to cycles);
- flow endpoints that link a scope started in one warp and ended in another (`bind_id`, `flow_in`/`flow_out`,
  `cat` "flow", zero duration) are not regions and are skipped.

Times stay cycles unless the SM clock is given (`clock_hz`, the CLI's `--clock-hz`); the launch then has ns.

Launches: Proton gives every launch of a profiling session its own kernel id and writes the launches one after
another into the same file, with the same pid for the same kernel, SM and CTA (`convertToTimelineTrace` in
TraceData.cpp sorts the cycle records by kernel id, CTA, warp and start; the writer then walks each launch SM by SM
in ascending order). So within one launch the (SM, CTA, warp) of successive events never goes down and a warp's
events are contiguous; a new launch of a kernel starts where that order restarts or a warp already left comes
back, on another SM or after other warps (`LaunchSplitter`). Every launch has a CTA 0, so only launches of a
single warp that follow each other on the same SM stay joined: the file says nothing more to tell them apart.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from tracekit.errors import InputError
from tracekit.importers.regions_common import (
    DEFAULT_MAX_INFLATED_BYTES,
    assemble,
    load_json,
    plain_head,
    trace_events,
)
from tracekit.parsed import ParsedImport

FORMAT = "proton-chrome"
PID_PATTERN = re.compile(r"^(?P<kernel>.*) Core(?P<sm>\d+) CTA(?P<cta>\d+)(?: \[[^\]]*\])?$")
TID_PATTERN = re.compile(r"^warp (?P<warp>\d+)(?: \(line \d+\))?$")
SNIFF_PATTERN = re.compile(rb'"pid"\s*:\s*"[^"]* Core\d+ CTA\d+')
FLOAT32_EXACT = 2**24  # cycles above this lose precision in the writer's float32


class LaunchSplitter:
    """The launch of each event in file order, per kernel name (see the module note)."""

    def __init__(self) -> None:
        self.launches: dict[int, str] = {}  # launch key -> kernel name, in first-seen order
        self.current: dict[str, int] = {}  # kernel -> its launch key now
        self.last: dict[str, tuple[int, int, int]] = {}  # kernel -> (sm, cta, warp) of its previous event
        self.left: dict[str, set[tuple[int, int]]] = {}  # kernel -> (cta, warp) already finished in this launch

    def launch_of(self, kernel: str, sm: int, cta: int, warp: int) -> int:
        key = (sm, cta, warp)
        previous = self.last.get(kernel)
        if previous is None or key < previous or self._returns(kernel, key, previous):
            launch = len(self.launches)
            self.launches[launch] = kernel
            self.current[kernel] = launch
            self.left[kernel] = set()
        elif key != previous:
            self.left[kernel].add(previous[1:])
        self.last[kernel] = key
        return self.current[kernel]

    def _returns(self, kernel: str, key: tuple[int, int, int], previous: tuple[int, int, int]) -> bool:
        """A warp seen before in this launch, after other warps or on another SM (a CTA stays on one SM)."""
        warp = key[1:]
        return key != previous and (warp == previous[1:] or warp in self.left[kernel])


def sniff(head: bytes) -> bool:
    text = plain_head(head)
    return b'"traceEvents"' in text and SNIFF_PATTERN.search(text) is not None


def read(
    path: Path,
    column_map: dict[str, str] | None = None,
    clock_hz: float | None = None,
    max_inflated_bytes: int = DEFAULT_MAX_INFLATED_BYTES,
    **options,
) -> ParsedImport:
    path = Path(path)
    if clock_hz is not None and not clock_hz > 0:
        raise InputError(str(path), f"--clock-hz must be a positive number of Hz, got {clock_hz!r}")
    if column_map:
        raise InputError(str(path), f"--map is not used by Proton traces (they name every field): {column_map}")
    events = trace_events(path, load_json(path, max_inflated_bytes))
    splitter = LaunchSplitter()
    columns: dict[str, list] = {k: [] for k in ("launch_key", "sm_id", "block_id", "warp_in_block", "region")}
    starts: list[int] = []
    ends: list[int] = []
    flows = 0
    largest = 0
    for index, event in enumerate(events):
        if not isinstance(event, dict):
            raise InputError(str(path), f"traceEvents[{index}] is not an object")
        if event.get("ph") != "X":
            continue
        if event.get("cat") == "flow" or "bind_id" in event or "flow_in" in event or "flow_out" in event:
            flows += 1
            continue
        pid, tid = event.get("pid"), event.get("tid")
        pid_match = PID_PATTERN.match(pid) if isinstance(pid, str) else None
        tid_match = TID_PATTERN.match(tid) if isinstance(tid, str) else None
        if pid_match is None or tid_match is None:
            raise InputError(
                str(path),
                f"traceEvents[{index}]: pid {pid!r} / tid {tid!r} are not Proton's "
                "'<kernel> Core<sm> CTA<cta>' / 'warp <n> (line <k>)'",
            )
        args: dict = event["args"] if isinstance(event.get("args"), dict) else {}
        mhz = args.get("Frequency (MHz)", 1000.0)
        ts, dur = event.get("ts"), event.get("dur")
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in (ts, dur, mhz)) or mhz <= 0:
            raise InputError(str(path), f"traceEvents[{index}]: ts/dur/Frequency must be numbers, got {ts!r}/{dur!r}")
        start = round(ts * mhz)
        duration = round(dur * mhz)
        if duration < 0:
            raise InputError(str(path), f"traceEvents[{index}]: negative duration {dur!r}")
        sm, cta, warp = int(pid_match["sm"]), int(pid_match["cta"]), int(tid_match["warp"])
        columns["launch_key"].append(splitter.launch_of(pid_match["kernel"], sm, cta, warp))
        columns["sm_id"].append(sm)
        columns["block_id"].append(cta)
        columns["warp_in_block"].append(warp)
        columns["region"].append(str(event.get("name")))
        starts.append(start)
        ends.append(start + duration)
        largest = max(largest, start + duration)
    rows = pl.DataFrame(
        {**columns, "start_cycles": starts, "end_cycles": ends},
        schema={
            "launch_key": pl.Int64,
            "sm_id": pl.Int32,
            "block_id": pl.Int64,
            "warp_in_block": pl.Int32,
            "region": pl.Utf8,
            "start_cycles": pl.Int64,
            "end_cycles": pl.Int64,
        },
    )
    warnings = []
    if flows:
        warnings.append(f"{flows} flow endpoints (scopes linking two warps, zero duration) skipped")
    if largest > FLOAT32_EXACT:
        warnings.append(
            f"times reach {largest:,} cycles: Proton writes them as float32, exact only below {FLOAT32_EXACT:,}, "
            "so late times may be off by a few cycles"
        )
    warnings.append(
        "Proton aligns CTAs by adding each CTA's %globaltimer start offset (ns) to its cycles: "
        "cross-CTA alignment is approximate"
    )
    return assemble(
        path,
        FORMAT,
        rows,
        dict(splitter.launches),
        warnings,
        tool="Triton Proton",
        clock_hz=clock_hz,
    )
