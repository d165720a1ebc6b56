"""What the PyTorch profiler costs the host, per event it records, for the setting a trace was recorded with.

A traced step runs slower than the program: every operator, Python frame, annotation and memory event the profiler
records, and every CUDA runtime call CUPTI intercepts, takes host time the program does not spend. The cost is
measured by loops whose events are known (an operator alone, an operator that launches a kernel, the same under
eight Python frames, an annotated operator: `sample_traces/steps/src/workloads.py cost`), each timed bare and under
one setting, in a process of its own (a profiler that has run once leaves the process slower). The events each
profiled loop recorded are counted from its own trace, and the per-event costs are the non-negative least-squares
fit of the extra host time to those counts (`fit`).

The bare runs give the other side: what each event stands for in the program itself (an operator's dispatch, a
launching operator's call, a record_function range), fitted the same way to the bare times. No replay takes the
host below that: a launch-dense eager step whose per-event profiler cost is lower than the calibration's (another
machine, a cheaper operator mix) keeps the host time its own events need, rather than none.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import polars as pl

from tracekit.host_events import (
    ANNOTATION_DOMAIN,
    MEMORY_DOMAIN,
    NSYS,
    OPERATOR_DOMAIN,
    PYTHON_DOMAIN,
    HostEvents,
)

# the event kinds a cost is measured for (a CUDA runtime call is `cuda_runtime`; the others are range domains)
RUNTIME = "cuda_runtime"
KINDS = (OPERATOR_DOMAIN, PYTHON_DOMAIN, ANNOTATION_DOMAIN, RUNTIME, MEMORY_DOMAIN)
# torch.profiler settings, from the leanest: CUDA activity only; CPU operators; with record_shapes; with
# profile_memory; with with_stack (which also records shapes where it was measured)
CUDA_ONLY, CPU_CUDA, SHAPES, MEMORY, STACK = "cuda_only", "cpu_cuda", "shapes", "memory", "stack"
SETTINGS = (CUDA_ONLY, CPU_CUDA, SHAPES, MEMORY, STACK)
# torch.profiler on ROCm: roctracer intercepts the HIP runtime calls, not CUPTI, and no calibration measured it, so a
# replay of its trace takes nothing out and says so (as Nsight Systems' below)
ROCM = "rocm"
# Nsight Systems: its cost is not calibrated (nsys hangs on a PyTorch process on the calibration machine), so a
# replay of its trace takes nothing out and says so
UNCALIBRATED = "uncalibrated: {setting} (no calibration measured for it: the figures are the traced ones)"


@dataclass(frozen=True)
class ProfilerCost:
    """The host time one recorded event of each kind costs under one setting, and where the figures come from."""

    setting: str
    cost_ns: Mapping[str, float]  # by kind (KINDS)
    source: str  # the calibration: machine, versions and date, or the file it was read from
    # by kind, the host time one event takes in the bare program (the replay's floor; a runtime call's is that of
    # a call that puts work on the GPU: a kernel, a copy or a set); none: no floor
    bare_ns: Mapping[str, float] = field(default_factory=dict)
    # the GPU time recording one GPU activity costs (CUPTI's activity record): a stream's queued activity starts this
    # much later traced than it would; 0: none taken out
    gpu_activity_ns: float = 0.0

    def of(self, kind: str) -> float:
        return float(self.cost_ns.get(kind, 0.0))

    def bare(self, kind: str) -> float:
        return float(self.bare_ns.get(kind, 0.0))


@dataclass(frozen=True)
class AfterTrace:
    """What a torch.profiler run leaves in the process once its trace has ended. Kineto keeps CUPTI subscribed
    unless the process runs with TEARDOWN_CUPTI=1 (PyTorch 2.11; `pytorch/kineto#1539` would make the teardown the
    default), so every later CUDA call still pays its callbacks: a run profiled for a few steps runs the rest of its
    steps slower, which no trace shows. Measured as each program's unprofiled step after its trace against before
    it, in the same process."""

    slowdown: float  # a host-bound program's steps after the trace over before it (median over the programs)
    torn_down: float  # the same with TEARDOWN_CUPTI=1
    source: str  # where the figures were measured


@dataclass(frozen=True)
class Calibration:
    """One per-event cost per setting (`tracekit calibrate --profiler`, or the shipped one)."""

    name: str  # "shipped: H200, torch 2.11, ..." or the file a user's calibration was read from
    costs: Mapping[str, ProfilerCost]
    after_trace: AfterTrace | None = None  # measured for the shipped calibration only

    def for_setting(self, setting: str) -> ProfilerCost:
        """The setting's costs; a setting this calibration has none for costs nothing, named as uncalibrated."""
        found = self.costs.get(setting)
        return found if found is not None else ProfilerCost(setting, {}, UNCALIBRATED.format(setting=setting))


def setting_of(events: HostEvents) -> str:
    """The setting a trace was recorded with, from what it holds: Python frames mean with_stack, memory events
    profile_memory, recorded shapes record_shapes (Kineto writes the flag into the trace), CPU operators the CPU
    activity; none of those, CUDA activity only. HIP runtime calls: ROCm's, whatever the options."""
    if events.recorded_by == NSYS:
        return NSYS
    if events.calls.height and events.calls.select(pl.col("name").str.starts_with("hip").any()).item():
        return ROCM
    domains = set(events.ranges["domain"].unique().to_list()) if events.ranges.height else set()
    if PYTHON_DOMAIN in domains:
        return STACK
    if MEMORY_DOMAIN in domains:
        return MEMORY
    if OPERATOR_DOMAIN not in domains:
        return CUDA_ONLY
    return SHAPES if "record_shapes" in events.profiler_options else CPU_CUDA


def fit(rows: Iterable[Mapping[str, object]], source: str) -> Calibration:
    """Per-event costs per setting from the cost loops' rows (`profiler_cost.csv`: loop, setting, host_ms, `of` the
    setting whose bare runs a `none` row is, and the events counted per kind): each loop's extra host time over its
    bare run is fitted to its event counts by non-negative least squares (scipy's NNLS: no kind costs less than
    nothing). The bare times are fitted to the same counts, over every setting that records operators (one table:
    what an event stands for in the program does not depend on how it is profiled). Rows of several processes (the
    same loop, setting and `of` more than once) count as their median time, with the most events any of them
    recorded: one process's timing is one draw (the same loops in two processes of one host put a runtime call
    under record_shapes at 0.2 and 5.8 us)."""
    import numpy as np  # here, as scipy: every command imports this module (through tracekit.api), only `fit` needs it
    from scipy.optimize import nnls

    frame = (
        pl.DataFrame(list(rows))
        .with_columns(pl.col("host_ms").cast(pl.Float64), pl.col(KINDS).cast(pl.Float64))
        .group_by("loop", "setting", "of", maintain_order=True)
        .agg(pl.col("host_ms").median(), pl.col(KINDS).max())
    )
    solved: dict[str, dict[str, float]] = {}
    bare_counts, bare_times_ns = [], []
    for setting in SETTINGS:
        bare = dict(
            frame.filter((pl.col("setting") == "none") & (pl.col("of") == setting))
            .select("loop", "host_ms")
            .iter_rows()
        )
        profiled = frame.filter(pl.col("setting") == setting)
        if not bare or profiled.height == 0:
            continue
        counts = [[float(row[k] or 0) for k in KINDS] for row in profiled.iter_rows(named=True)]
        extra_ns = [(row["host_ms"] - bare[row["loop"]]) * 1e6 for row in profiled.iter_rows(named=True)]
        per_event, _ = nnls(np.array(counts), np.maximum(np.array(extra_ns), 0.0))
        solved[setting] = dict(zip(KINDS, (float(c) for c in per_event), strict=True))
        for row, count in zip(profiled.iter_rows(named=True), counts, strict=True):
            if count[KINDS.index(OPERATOR_DOMAIN)] > 0:  # CUDA activity only records no operator: no count of them
                bare_counts.append(count)
                bare_times_ns.append(bare[row["loop"]] * 1e6)
    bare_ns: dict[str, float] = {}
    if bare_counts:
        stands_for, _ = nnls(np.array(bare_counts), np.array(bare_times_ns))
        bare_ns = dict(zip(KINDS, (float(c) for c in stands_for), strict=True))
    return Calibration(source, {s: ProfilerCost(s, c, source, bare_ns) for s, c in solved.items()})


def recorded_cost_ns(events: HostEvents, cost: ProfilerCost, threads: Iterable[int]) -> pl.DataFrame:
    """Every event the profiler recorded on `threads` with the host time recording it cost and the host time it
    stands for in the bare program: `start_ns`, `cost_ns`, `bare_ns`, sorted by start (a runtime call's are its
    own: they are taken from the call and the gap before it, not from the ranges)."""
    wanted = list(threads)
    ranges = events.ranges.filter(pl.col("thread").is_in(wanted)).select(
        "start_ns",
        cost_ns=pl.col("domain").replace_strict({k: cost.of(k) for k in KINDS}, default=0.0),
        bare_ns=pl.col("domain").replace_strict({k: cost.bare(k) for k in KINDS}, default=0.0),
    )
    return ranges.filter((pl.col("cost_ns") > 0) | (pl.col("bare_ns") > 0)).sort("start_ns")


CALIBRATION_SCHEMA = "tracekit.profiler-calibration/1"


def calibration_to_dict(calibration: Calibration) -> dict[str, object]:
    return {
        "schema": CALIBRATION_SCHEMA,
        "name": calibration.name,
        "costs_ns": {setting: dict(cost.cost_ns) for setting, cost in calibration.costs.items()},
        "bare_ns": {setting: dict(cost.bare_ns) for setting, cost in calibration.costs.items()},
        "gpu_activity_ns": {setting: cost.gpu_activity_ns for setting, cost in calibration.costs.items()},
    }


def calibration_from_dict(data: Mapping[str, object], source: str) -> Calibration:
    """A calibration as `calibration_to_dict` wrote it (`source`: the file, named in its name)."""
    if data.get("schema") != CALIBRATION_SCHEMA:
        raise ValueError(f"schema {data.get('schema')!r}, expected {CALIBRATION_SCHEMA}")
    costs = data["costs_ns"]
    if not isinstance(costs, Mapping):
        raise TypeError("costs_ns is not an object")
    bare = data.get("bare_ns") or {}  # absent from a calibration written before the floor: none
    gpu = data.get("gpu_activity_ns") or {}  # absent from one written before the GPU's cost was taken out: none
    if not isinstance(bare, Mapping) or not isinstance(gpu, Mapping):
        raise TypeError("bare_ns or gpu_activity_ns is not an object")
    name = f"{data.get('name')} ({source})"

    def per_kind(values: object) -> dict[str, float]:
        return {k: float(v) for k, v in dict(values).items() if k in KINDS}  # type: ignore[call-overload]

    return Calibration(
        name,
        {
            setting: ProfilerCost(
                setting,
                per_kind(costs[setting]),
                name,
                per_kind(bare.get(setting) or {}),
                float(gpu.get(setting) or 0.0),
            )
            for setting in costs
            if setting in SETTINGS
        },
    )
