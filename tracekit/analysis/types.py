"""The engine's typed results: one frozen dataclass per section of a launch's analysis.

Field names are the JSON keys of schema "tracekit.analysis/2" (see docs/analysis-schema.md), so `to_json_dict`
is a plain walk over the fields and every renderer reads the same names a script reads from `--json`. Version 2
adds fields and never renames one of version 1.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal, TypeVar, cast, get_args, get_origin, get_type_hints

import orjson

from tracekit.analysis.blocks import BlockReplacement
from tracekit.analysis.classification import Classification
from tracekit.analysis.launch_ceilings import LaunchCeilings
from tracekit.analysis.regions import RegionAnalysis
from tracekit.analysis.tail import TailEffect

SCHEMA = "tracekit.analysis/2"

PairingStatus = Literal["own-counters", "paired", "override", "unpaired", "no-counters-needed"]


@dataclass(frozen=True)
class Device:
    name: str | None
    cc: str | None
    sm_count: int | None  # the one SM count of this launch: see engine.launch_sm_count
    sm_clock_hz: float | None
    max_warps_per_sm: int | None


@dataclass(frozen=True)
class Kernel:
    name: str | None  # as the source spelled it
    mangled_name: str | None
    grid: tuple[int | None, int | None, int | None]
    block: tuple[int | None, int | None, int | None]
    registers_per_thread: int | None
    shared_mem_per_block_bytes: int | None  # static + dynamic
    static_shared_mem_per_block_bytes: int | None
    dynamic_shared_mem_per_block_bytes: int | None
    nvtx_path: str | None
    device: Device
    key: str  # v2: the normalized function name with template arguments (tracekit.kernel_key)


@dataclass(frozen=True)
class Source:
    path: str | None
    format: str | None
    sha256: str | None
    import_id: int | None
    import_name: str | None
    incomplete: str | None = None  # v2: why the trace holds fewer warps than the launch ran (imported anyway)
    incomplete_launch: str | None = None  # v2: what the profile of a launch cut off mid-profile lacks (an .ncu-rep)


@dataclass(frozen=True)
class CountersFrom:
    """The profiled launch whose counters a trace or timing borrowed (v1 field `counters_from`)."""

    launch_id: int | None
    import_id: int | None
    import_name: str | None
    kernel_name: str | None


class PairingReason(StrEnum):
    """Why a launch's counters come from where they do (`tracekit.analysis.pairing`); `tracekit.present.rules.notes`
    words it with the pairing's numbers (the JSON's `pairing.evidence`)."""

    OWN_COUNTERS = "own-counters"  # the launch was profiled itself
    USER = "user"  # `--pair`
    ORDER = "order"  # the k-th launch of the key in both files, the durations agree
    DURATION = "duration"  # the durations agree (the closest of several repeats)
    NO_TWIN = "no-twin"  # no profiled launch of the same kernel key
    NO_DURATION = "no-duration"  # the launch has no duration to check a profiled one against
    DURATION_MISMATCH = "duration-mismatch"  # profiled launches of the key, none within DURATION_TOLERANCE
    AMBIGUOUS = "ambiguous"  # several agree with it but differ from one another


@dataclass(frozen=True)
class Pairing:
    """v2: where this launch's counters came from and by which evidence (codes and numbers: present words them)."""

    status: PairingStatus
    counters_launch_id: int | None  # the launch the counters came from (this one for "own-counters")
    reason: PairingReason  # v2: why, as a code (the JSON's `evidence` words it)
    candidate_launch_ids: tuple[int, ...] = ()  # profiled launches of the same kernel key that were considered
    candidate_durations_ns: tuple[float | None, ...] = ()  # v2: their durations, in the same order
    duration_ns: float | None = None  # v2: this launch's span (trace) or timed duration the candidates were checked by
    counters_duration_ns: float | None = None  # v2: the paired launch's profiled duration
    agreeing_count: int = 0  # v2: candidates whose duration agrees with this launch's
    order_position: int | None = None  # v2: by order: this launch is the k-th (1-based) of the key in both files ...
    order_count: int | None = None  # v2: ... of this many


@dataclass(frozen=True)
class OccupancyLimits:
    registers: int | None
    shared_memory: int | None
    warps: int | None
    blocks: int | None


@dataclass(frozen=True)
class ReportedOccupancy:
    theoretical_pct: float | None  # Nsight's sm__maximum_warps_per_active_cycle_pct
    limits_blocks_per_sm: OccupancyLimits  # Nsight's launch__occupancy_limit_*


@dataclass(frozen=True)
class Occupancy:
    theoretical_warps_per_sm: float | None
    theoretical_pct: float | None
    limiter: str | None
    limits_blocks_per_sm: OccupancyLimits
    active_blocks_per_sm: int | None
    max_warps_per_sm: int | None
    achieved_pct: float | None
    achieved_warps_per_sm: float | None
    waves_per_sm: float | None
    nsight_tail_estimate: dict[str, Any] | None  # tracekit.analysis.occupancy.tail_estimate
    reported_by_nsight: ReportedOccupancy


@dataclass(frozen=True)
class TraceVsCounter:
    max_warps_per_sm: int
    trace_warps_per_sm: float
    trace_pct: float
    counter_warps_per_sm: float
    counter_pct: float
    difference_warps_per_sm: float  # counter minus trace
    difference_pct_points: float


@dataclass(frozen=True)
class Warps:
    count: int
    sm_count: int
    span_ns: int
    mean_latency_ns: float
    p50_latency_ns: float
    p90_latency_ns: float
    p99_latency_ns: float
    max_latency_ns: float
    mean_occupancy_warps_per_sm: float
    mean_occupancy_per_active_sm_warps: float
    occupancy_variance_over_time: float | None
    occupancy_variance_across_sms: float | None
    throughput_warps_per_ns_per_sm: float | None
    throughput_warps_per_cycle_per_sm: float | None
    trace_vs_counter: TraceVsCounter | None


@dataclass(frozen=True)
class LittlesLawWindow:
    window_ns: tuple[int, int]
    mean_occupancy: float
    latency_x_throughput: float
    relative_error: float | None


@dataclass(frozen=True)
class LittlesLaw:
    window_ns: tuple[int, int]
    window_kind: str  # "steady_state", or "launch" when no steady state was found
    mean_occupancy: float
    latency_x_throughput: float
    relative_error: float | None
    clipped_latency_x_throughput: float
    clipped_relative_error: float | None
    whole_launch: LittlesLawWindow
    # every term of the steady-state check (tracekit.analysis.littles_law.LittlesLaw): the edges' warps and warp-ns
    # and the drift that explain the gap (`tracekit.present.rules.notes` words it: the JSON's `explanation`)
    detail: dict[str, Any]


@dataclass(frozen=True)
class Stalls:
    latency_cycles_per_issue: float | None
    bandwidth_cycles_per_issue: float | None
    other_cycles_per_issue: float | None
    total_cycles_per_issue: float | None
    by_reason: dict[str, float] | None
    source: str | None


@dataclass(frozen=True)
class SweepPoint:
    launch_id: int | None
    occupancy_warps_per_sm: float
    throughput: float  # warps per ns per SM
    predicted_throughput: float | None
    regime: str | None


class LeftOutKind(StrEnum):
    """Why a launch of a sweep family is not one of its points (`tracekit.present.rules.notes` words it: the JSON's
    `reason`)."""

    TRACED = "traced"  # the profiled run of a traced launch: the trace's point stands for it
    UNMEASURED = "unmeasured"  # neither a trace nor counters of its own give it an occupancy and a throughput
    REPEATED = "repeated"  # the same measurement as a fitted launch (one run in two exports)


@dataclass(frozen=True)
class LeftOut:
    """The launches of a family not fitted for one reason: one entry per reason, ids only (each result of a family
    of N launches carries its left-out list, so N sentences each cost N^2: 26 MB of a 1,008-launch report's cache)."""

    kind: LeftOutKind  # v2: why, as a code (the JSON's `reason` words it)
    launch_ids: tuple[int, ...]
    same_as_launch_ids: tuple[int, ...] = ()  # a repeated measurement: the fitted launch each one repeats, in order


class SweepOutcome(StrEnum):
    """Whether a launch's sweep family was fitted (`tracekit.analysis.sweep_rule`)."""

    FITTED = "fitted"
    TOO_FEW_OCCUPANCIES = "too-few-occupancies"  # fewer than MIN_OCCUPANCIES levels, or spanning less than MIN_SPAN
    FIT_FAILED = "fit-failed"  # the least-squares fit found no latency and bound


@dataclass(frozen=True)
class SweepFamily:
    """What the sweep rule found of a launch's family (one kernel at one problem size on one device): codes and
    counts, worded by `tracekit.present.rules.notes` (the JSON's `sweep_note`)."""

    outcome: SweepOutcome
    launch_count: int  # launches of the family
    measured_count: int  # those with a measured occupancy and throughput (the fitted ones when fitted)
    occupancy_levels_warps_per_sm: tuple[float, ...]  # their distinct occupancies, lowest first


@dataclass(frozen=True)
class Sweep:
    """The fit throughput ~ min(n / L, B) over the launches of one kernel at several occupancies."""

    latency_ns: float | None
    throughput_bound_warps_per_ns_per_sm: float | None
    needed_occupancy_warps_per_sm: float | None
    knee_gap_fraction: float | None
    residual_rms: float
    points: tuple[SweepPoint, ...]
    launch_ids: tuple[int, ...]  # v2: the launches whose points were fitted
    # v2: their distinct occupancies, lowest first (with `launch_ids`, what the JSON's `note` says)
    occupancy_levels_warps_per_sm: tuple[float, ...]
    left_out: tuple[LeftOut, ...] = ()  # v2: launches of the same kernel name not fitted, and why
    # v2, what the measured points say beside the model (its knee is an idealization; advice follows these):
    measured_max_throughput: float | None = None
    occupancy_at_90pct_warps_per_sm: float | None = None  # where measured throughput first reaches 90% of max
    occupancy_at_95pct_warps_per_sm: float | None = None
    plateau_reached: bool | None = None  # a lower measured occupancy already gives 95% of the highest throughput
    last_step_gain_fraction: float | None = None  # gain from the second-highest to the highest occupancy


@dataclass(frozen=True)
class LaunchAnalysis:
    """One launch's analysis: what `tracekit analyze --json` prints and every renderer shows (the Python API hands
    it out as `api.LaunchResult`, which displays itself in a notebook: tracekit/notebook.py)."""

    schema: str
    engine_version: str  # v2: the analysis code that computed it (results are cached by it)
    launch_id: int | None
    source: Source
    kernel: Kernel
    counters_from: CountersFrom | None
    pairing: Pairing  # v2
    duration_ns: float | None
    occupancy: Occupancy
    warps: Warps | None
    littles_law: LittlesLaw | None
    tail: TailEffect | None
    blocks: BlockReplacement | None
    stalls: Stalls
    classification: Classification
    sweep: Sweep | None
    sweep_family: SweepFamily | None = None  # v2: why no sweep applies, or over what it was fitted (`sweep_note`)
    regions: RegionAnalysis | None = None  # v2: named regions inside the kernel (tracekit.analysis.regions)
    ceilings: LaunchCeilings | None = None  # v2: units against achievable ceilings, roofline (issue 20)


# ---- JSON -------------------------------------------------------------------------------------------------------


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    """A result type's serialized fields (all but those marked `field(metadata={"json": False})`), once per type
    (`dataclasses.fields` per value cost seconds at 1,000 launches)."""
    return tuple(f.name for f in dataclasses.fields(cls) if f.metadata.get("json", True))


_LEAVES = (str, int, bool, type(None))  # exact types returned as they are, without a call per value


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, str | int):  # most leaves (bool is an int): before the costlier checks
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            name: v if (t := type(v)) in _LEAVES or (t is float and math.isfinite(v)) else _jsonable(v)
            for name in _field_names(type(value))
            for v in (getattr(value, name),)
        }
    if isinstance(value, dict):
        return {
            str(k): v if (t := type(v)) in _LEAVES or (t is float and math.isfinite(v)) else _jsonable(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [v if (t := type(v)) in _LEAVES or (t is float and math.isfinite(v)) else _jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def to_json_dict(result: object) -> dict[str, Any]:
    """A result dataclass (a launch's analysis, a prediction) as JSON-ready dicts and lists (its field names, NaN and
    infinities as null)."""
    return _jsonable(result)


@functools.cache
def _whole_dict(cls: type) -> bool:
    """Whether a type's instance dict is exactly its serialized fields (a dataclass without slots that leaves no
    field out), so the cache's encoder takes the dict as it is: building one per value cost a third of writing
    1,000 results."""
    return (
        dataclasses.is_dataclass(cls)
        and "__slots__" not in vars(cls)
        and len(_field_names(cls)) == len(dataclasses.fields(cls))
    )


def _fields(value: Any) -> dict[str, Any]:
    cls: type = type(value)
    if _whole_dict(cls):
        return cast(dict[str, Any], value.__dict__)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {name: getattr(value, name) for name in _field_names(cls)}
    raise TypeError(f"{cls.__name__} is not a result type")


def to_cache_text(result: LaunchAnalysis) -> str:
    """The result as compact JSON for the store's cache, written by orjson's own dataclass encoder (2-4x faster on
    1,000 results than handing each dataclass to a Python `default`). Only a direct field of the result may hold a
    type that leaves fields out of JSON (`Classification`: `_trimmed`, checked by the tests over every result type);
    such a value goes in as the dict of its serialized fields. NaN and infinities are written as null, which
    `from_json_dict` reads back as NaN where the field is a plain float (and as None where it may be None)."""
    fields = _fields(result)
    trimmed = [name for name, value in fields.items() if _trimmed(value.__class__)]
    if trimmed:  # a new dict: `_fields` hands out the result's own __dict__
        fields = {**fields, **{name: _fields(fields[name]) for name in trimmed}}
    return orjson.dumps(fields, option=orjson.OPT_NON_STR_KEYS).decode()


@functools.cache
def _trimmed(cls: type) -> bool:
    """Whether a type is a dataclass that leaves a field out of JSON (orjson's encoder would write every field)."""
    return dataclasses.is_dataclass(cls) and len(_field_names(cls)) != len(dataclasses.fields(cls))


T = TypeVar("T")


def _same(value: Any) -> Any:
    return value


@functools.cache
def _converter(hint: Any) -> Callable[[Any], Any]:
    """How a JSON value becomes the type `hint` names (dataclasses by their fields, tuples from lists; None stays
    None), decided once per hint: deciding it per value cost most of reading 100k cached results."""
    origin = get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = [arg for arg in get_args(hint) if arg is not type(None)]
        record = next((o for o in options if isinstance(o, type) and dataclasses.is_dataclass(o)), None)
        rest = _converter(options[0]) if len(options) == 1 and options[0] is not float else _same  # None stays
        if record is None:
            return rest
        build = _record(record)
        return lambda value: build(value) if isinstance(value, dict) else rest(value)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        build = _record(hint)
        return lambda value: build(value) if isinstance(value, dict) else value
    if origin is tuple:
        args = get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            item = _converter(args[0])
            return lambda value: tuple(map(item, value)) if isinstance(value, list) else value
        items = [_converter(arg) for arg in args]
        return lambda value: (
            tuple(convert(v) for v, convert in zip(value, items, strict=False)) if isinstance(value, list) else value
        )
    if origin is list:
        (arg,) = get_args(hint) or (Any,)
        item = _converter(arg)
        return lambda value: [item(v) for v in value] if isinstance(value, list) else value
    if hint is float:
        return _float
    return _same


def _float(value: Any) -> Any:
    return math.nan if value is None else value  # the cache writes NaN and infinities as null


@functools.cache
def _record(cls: type) -> Callable[[Any], Any]:
    fields = [(name, _converter(hint)) for name, hint in _field_hints(cls)]

    def build(data: dict[str, Any]) -> Any:
        return cls(**{name: convert(data[name]) for name, convert in fields if name in data})

    return build


@functools.cache
def _field_hints(cls: type) -> tuple[tuple[str, Any], ...]:
    hints = get_type_hints(cls)
    return tuple((f.name, hints[f.name]) for f in dataclasses.fields(cls))


def from_json_dict(cls: type[T], data: dict[str, Any]) -> T:
    """A dataclass back from `to_json_dict`'s output (the store's cache keeps results as JSON)."""
    return cast(T, _record(cast(type, cls))(data))
