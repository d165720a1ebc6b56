"""Chrome-trace JSON written by hand-rolled intra-kernel profilers: named regions per warp, timed by `%globaltimer`.

Chrome's trace format defines `ts`/`dur` as microseconds, but these writers do not all follow it, and none of
them writes every field tracekit needs. The layout is recognized from the events (or forced with
`--map layout=NAME`); the fields a file does not say come from `--map` (`warps_per_block=N`,
`time_unit=ns|us|cycles`, `unit=block|warp` for CuTe DSL units):

- `sm-row` (gau-nernst/learn-cuda `02e_matmul_sm100/profiler.h` + `main.py`): `"ph": "X"`, `pid` = `%smid`,
  `tid` = sm + blockIdx * NUM_WARPS + warp, no args. NUM_WARPS is not in the file: `--map warps_per_block=N`,
  else inferred as the largest N (up to 32) for which every group of N consecutive rows ran on one SM (a warning
  says so). `ts`/`dur` are `%globaltimer` ns (shifted so the first event is 0) written into the µs fields, so
  this layout's default time unit is ns.
- `cuprof` (Leikoe/open-cuprof `profiler.cuh`): a JSON array of `"ph": "X"` events, `ts` µs of `%globaltimer`,
  `dur` from `clock64()` converted with the device's nominal clock (cudaDevAttrClockRate) and set to 0 when it
  wrapped or exceeded 1 s; `args.block`, `args.smid` and `args.warp`, which is the hardware `%warpid` slot (the
  warp's place on the SM, not its index in the block; a warning says so). Its other header (`cuprof.cuh`) writes
  `"B"`/`"E"` pairs with `args.block`, `args.thread`, `args.warp`, `args.lane`, `pid` = SM: the warp is
  thread / 32, and when several lanes of one warp recorded, only the warp's lowest recording thread is kept.
- `cute` (drisspg/transformer_nuggets CuTe DSL profiler, Chrome JSON output): exact ns in `args.start_ns` /
  `args.dur_ns` and the profiling unit in `args.unit_id` (a block by default, `--map unit=warp` for warps); it
  records no SM.

Events other than complete (`X`) and begin/end (`B`/`E`) ones (metadata, instants, counters, flows) are ignored.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl

from tracekit.errors import InputError
from tracekit.importers.regions_common import (
    DEFAULT_MAX_INFLATED_BYTES,
    assemble,
    load_json,
    plain_head,
    positive_int,
    trace_events,
)
from tracekit.parsed import ParsedImport

FORMAT = "chrome-regions"
LAYOUTS = ("sm-row", "cuprof", "cute")
TIME_UNITS = {"ns": 1.0, "us": 1000.0}
MAP_KEYS = ("layout", "warps_per_block", "time_unit", "unit")
PROTON_PID = re.compile(rb'"pid"\s*:\s*"[^"]* Core\d+ CTA\d+')
ROW_SCHEMA = {
    "launch_key": pl.Int64,
    "sm_id": pl.Int32,
    "block_id": pl.Int64,
    "warp_in_block": pl.Int32,
    "region": pl.Utf8,
    "start": pl.Int64,
    "end": pl.Int64,
}


def sniff(head: bytes) -> bool:
    """A Chrome trace (object with traceEvents, or an array of events with a phase) that is not Proton's and
    whose first events carry one layout's signature: any other Chrome trace (a PyTorch CPU trace, a host-side
    API trace, a browser's) is not a region trace, and `--map layout=NAME` still forces one."""
    text = plain_head(head).removeprefix(b"\xef\xbb\xbf").lstrip()
    if PROTON_PID.search(text):
        return False
    if text.startswith(b"{"):
        chrome = b'"traceEvents"' in text
    else:
        chrome = text.startswith(b"[") and b'"ph"' in text and b'"ts"' in text
    return chrome and _signature(text) is not None


_ARGS = re.compile(rb'"args"\s*:\s*(\{[^{}]*\})')
_FLAT_EVENT = re.compile(rb'\{[^{}\[\]]*"ph"[^{}\[\]]*\}')
SM_ROW_KEYS = frozenset({"name", "ph", "ts", "dur", "pid", "tid"})


def _signature(text: bytes) -> str | None:
    """The layout the head's events show: CuTe DSL's `start_ns`/`dur_ns` args, open-cuprof's `block` with `warp`
    or `thread` args, or gau-nernst's bare events (name, ph X, ts, dur, integer pid = SM <= tid, nothing else;
    every event of the head so, the last one possibly cut)."""
    for match in _ARGS.finditer(text):
        try:
            args = json.loads(match.group(1))
        except ValueError:
            continue
        if isinstance(args, dict) and "start_ns" in args and "dur_ns" in args:
            return "cute"
        if isinstance(args, dict) and "block" in args and ("warp" in args or "thread" in args):
            return "cuprof"
    events = []
    for match in _FLAT_EVENT.finditer(text):
        try:
            events.append(json.loads(match.group(0)))
        except ValueError:
            return None
    bare = [
        e
        for e in events
        if isinstance(e, dict)
        and set(e) <= SM_ROW_KEYS
        and e.get("ph") == "X"
        and type(e.get("pid")) is int
        and type(e.get("tid")) is int
        and e["tid"] >= e["pid"] >= 0
    ]
    if bare and len(bare) == len(events) and text.count(b'"ph"') - len(events) <= 1:
        return "sm-row"
    return None


def _number(path: Path, index: int, event: dict, key: str) -> float:
    value = event.get(key)
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise InputError(str(path), f"traceEvents[{index}]: {key!r} must be a number, got {value!r}")
    return value


def _detect_layout(events: list[dict]) -> str | None:
    for event in events:
        args: dict = event["args"] if isinstance(event.get("args"), dict) else {}
        if "start_ns" in args and "dur_ns" in args:
            return "cute"
        if "block" in args and ("warp" in args or "thread" in args):
            return "cuprof"
    numeric = all(
        isinstance(e.get("pid"), int) and isinstance(e.get("tid"), int) and e["tid"] >= e["pid"] for e in events
    )
    return "sm-row" if numeric and events else None


def _infer_warps_per_block(sm: list[int], row: list[int]) -> int:
    """The largest N <= 32 for which every group of N consecutive rows (one block in the writer) has one SM."""
    pairs = set(zip(row, sm, strict=True))
    for n in range(32, 0, -1):
        seen: dict[int, int] = {}
        if all(seen.setdefault(r // n, s) == s for r, s in pairs):
            return n
    return 1


def read(
    path: Path,
    column_map: dict[str, str] | None = None,
    clock_hz: float | None = None,
    max_inflated_bytes: int = DEFAULT_MAX_INFLATED_BYTES,
    **options,
) -> ParsedImport:
    path = Path(path)
    mapping = dict(column_map or {})
    unknown = sorted(set(mapping) - set(MAP_KEYS))
    if unknown:
        raise InputError(
            str(path), f"--map {unknown[0]}: unknown for Chrome region traces (known: {', '.join(MAP_KEYS)})"
        )
    if clock_hz is not None and not clock_hz > 0:
        raise InputError(str(path), f"--clock-hz must be a positive number of Hz, got {clock_hz!r}")
    raw = trace_events(path, load_json(path, max_inflated_bytes))
    events: list[tuple[int, dict]] = []
    for index, event in enumerate(raw):
        if not isinstance(event, dict):
            raise InputError(str(path), f"traceEvents[{index}] is not an object")
        if event.get("ph") in ("X", "B", "E"):
            events.append((index, event))
    if not events:
        raise InputError(str(path), "no complete (X) or begin/end (B/E) events: no regions to read")
    layout = mapping.get("layout") or _detect_layout([e for _, e in events])
    if layout not in LAYOUTS:
        raise InputError(
            str(path),
            "cannot tell how this Chrome trace names SMs, blocks and warps "
            + (f"(unknown layout {layout!r})" if layout else "(its events match no known layout)")
            + f"; force one with --map layout=NAME ({', '.join(LAYOUTS)})",
        )
    unit = mapping.get("time_unit") or ("ns" if layout in ("sm-row", "cute") else "us")
    if unit not in (*TIME_UNITS, "cycles"):
        raise InputError(str(path), f"--map time_unit={unit!r}: expected ns, us or cycles")
    warnings: list[str] = []
    if layout == "sm-row":
        rows = _sm_row(path, events, mapping, warnings)
        tool = "globaltimer profiler (sm-row layout)"
        if "time_unit" not in mapping:
            warnings.append(
                "ts/dur read as ns: this layout's writer (gau-nernst profiler.h) puts %globaltimer ns into Chrome's "
                "µs fields; --map time_unit=us if this file's writer did not"
            )
    elif layout == "cuprof":
        rows = _cuprof(path, events, warnings)
        tool = "open-cuprof"
    else:
        rows = _cute(path, events, mapping)
        tool = "CuTe DSL profiler"
        unit = "ns" if "time_unit" not in mapping else unit
    if unit == "cycles":
        rows = rows.rename({"start": "start_cycles", "end": "end_cycles"})
    elif layout == "cute" and "time_unit" not in mapping:
        rows = rows.rename({"start": "start_ns", "end": "end_ns"})
    else:
        scale = TIME_UNITS[unit]
        rows = rows.with_columns(
            (pl.col("start") * scale).round().cast(pl.Int64).alias("start_ns"),
            (pl.col("end") * scale).round().cast(pl.Int64).alias("end_ns"),
        ).drop("start", "end")
    return assemble(path, FORMAT, rows, {0: None}, warnings, tool=tool, clock_hz=clock_hz)


def _frame(rows: dict[str, list]) -> pl.DataFrame:
    schema = {**ROW_SCHEMA, "start": pl.Float64, "end": pl.Float64}
    return pl.DataFrame(rows, schema=schema)


def _empty_rows() -> dict[str, list]:
    return {key: [] for key in ROW_SCHEMA}


def _sm_row(path: Path, events: list[tuple[int, dict]], mapping: dict[str, str], warnings: list[str]) -> pl.DataFrame:
    sms, rows_of = [], []
    for index, event in events:
        if event.get("ph") != "X":
            raise InputError(str(path), f"traceEvents[{index}]: the sm-row layout has only complete ('X') events")
        pid, tid = event.get("pid"), event.get("tid")
        if not isinstance(pid, int) or not isinstance(tid, int) or tid < pid or pid < 0:
            raise InputError(str(path), f"traceEvents[{index}]: sm-row layout needs integer tid >= pid >= 0")
        sms.append(pid)
        rows_of.append(tid - pid)
    if "warps_per_block" in mapping:
        per_block = positive_int(path, "warps_per_block", mapping["warps_per_block"])
    else:
        per_block = _infer_warps_per_block(sms, rows_of)
        warnings.append(
            f"warps per block not in the file: inferred {per_block} (the largest group of consecutive rows that "
            "always ran on one SM); pass --map warps_per_block=N to set it"
        )
    out = _empty_rows()
    starts, ends = [], []
    for (index, event), sm, row in zip(events, sms, rows_of, strict=True):
        ts, dur = _number(path, index, event, "ts"), _number(path, index, event, "dur")
        if dur < 0:
            raise InputError(str(path), f"traceEvents[{index}]: negative duration {dur!r}")
        out["launch_key"].append(0)
        out["sm_id"].append(sm)
        out["block_id"].append(row // per_block)
        out["warp_in_block"].append(row % per_block)
        out["region"].append(str(event.get("name")))
        starts.append(ts)
        ends.append(ts + dur)
    return _frame({**out, "start": starts, "end": ends})


def _cuprof(path: Path, events: list[tuple[int, dict]], warnings: list[str]) -> pl.DataFrame:
    out = _empty_rows()
    starts: list[float] = []
    ends: list[float] = []
    open_events: dict[tuple, list[tuple[int, str, float]]] = {}
    slot_warps = False
    zero_durations = 0
    lanes: dict[tuple[int, int], int] = {}  # (block, warp) -> lowest recording thread (B/E form)
    pending: list[tuple[int, int, int, str, float, float, int]] = []
    for index, event in events:
        args: dict = event["args"] if isinstance(event.get("args"), dict) else {}
        block = args.get("block")
        sm = args.get("smid", event.get("pid"))
        if not isinstance(block, int) or not isinstance(sm, int):
            raise InputError(str(path), f"traceEvents[{index}]: open-cuprof events need integer args.block and SM")
        ts = _number(path, index, event, "ts")
        name = str(event.get("name"))
        if event["ph"] == "X":
            warp = args.get("warp")
            if not isinstance(warp, int):
                raise InputError(str(path), f"traceEvents[{index}]: args.warp must be an integer")
            slot_warps = True
            dur = _number(path, index, event, "dur")
            zero_durations += dur == 0
            pending.append((sm, block, warp, name, ts, ts + dur, -1))
            continue
        thread = args.get("thread")
        if not isinstance(thread, int):
            raise InputError(str(path), f"traceEvents[{index}]: B/E events need an integer args.thread")
        key = (sm, block, thread)
        if event["ph"] == "B":
            open_events.setdefault(key, []).append((index, name, ts))
        else:
            stack = open_events.get(key)
            if not stack:
                raise InputError(str(path), f"traceEvents[{index}]: an end ('E') with no open begin for {name!r}")
            _, begun_name, begun = stack.pop()
            warp = thread // 32
            lanes[(block, warp)] = min(lanes.get((block, warp), thread), thread)
            pending.append((sm, block, warp, begun_name, begun, ts, thread))
    unclosed = sum(len(v) for v in open_events.values())
    if unclosed:
        warnings.append(f"{unclosed} begin ('B') events never ended; skipped")
    dropped = 0
    for sm, block, warp, name, start, end, thread in pending:
        if thread >= 0 and lanes[(block, warp)] != thread:
            dropped += 1
            continue
        out["launch_key"].append(0)
        out["sm_id"].append(sm)
        out["block_id"].append(block)
        out["warp_in_block"].append(warp)
        out["region"].append(name)
        starts.append(start)
        ends.append(end)
    if dropped:
        warnings.append(f"{dropped} regions recorded by other lanes of an already recorded warp were dropped")
    if slot_warps:
        warnings.append(
            "warp ids are open-cuprof's args.warp, the hardware %warpid slot on the SM, not the warp's index in its "
            "block"
        )
    if zero_durations:
        warnings.append(
            f"{zero_durations} regions have duration 0 (open-cuprof writes 0 when clock64 wrapped or exceeded 1 s)"
        )
    return _frame({**out, "start": starts, "end": ends})


def _cute(path: Path, events: list[tuple[int, dict]], mapping: dict[str, str]) -> pl.DataFrame:
    as_warp = mapping.get("unit", "block") == "warp"
    if mapping.get("unit", "block") not in ("block", "warp"):
        raise InputError(str(path), f"--map unit={mapping['unit']!r}: expected block or warp")
    out = _empty_rows()
    starts, ends = [], []
    exact = "time_unit" not in mapping
    for index, event in events:
        if event.get("ph") != "X":
            raise InputError(str(path), f"traceEvents[{index}]: the CuTe DSL layout has only complete ('X') events")
        args: dict = event["args"] if isinstance(event.get("args"), dict) else {}
        unit_id = args.get("unit_id", event.get("tid"))
        if not isinstance(unit_id, int):
            raise InputError(str(path), f"traceEvents[{index}]: args.unit_id must be an integer")
        if exact:
            start, dur = _number(path, index, args, "start_ns"), _number(path, index, args, "dur_ns")
        else:
            start, dur = _number(path, index, event, "ts"), _number(path, index, event, "dur")
        out["launch_key"].append(0)
        out["sm_id"].append(None)
        out["block_id"].append(0 if as_warp else unit_id)
        out["warp_in_block"].append(unit_id if as_warp else 0)
        out["region"].append(str(event.get("name")))
        starts.append(start)
        ends.append(start + dur)
    return _frame({**out, "start": starts, "end": ends})
