"""The one analysis engine: launches in, one typed `LaunchAnalysis` per launch out.

Pure: it takes what the store holds for each launch (`LaunchInput`) and calls the one-concern modules. Every path
that shows a verdict (CLI, reports, compare, dashboard, the Python API) goes through `analyze`, with the same
context for a launch: the profiled launches of its kernel key (for pairing) and the launches of its sweep family
(for the sweep). `tracekit.engine` chooses that context from the store, so a launch gets one verdict whatever
else is selected. Fields a source cannot give are None, never made up.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import polars as pl

from tracekit import counters
from tracekit.analysis.blocks import BlockReplacement, block_replacement
from tracekit.analysis.classification import ClassificationInputs, classify
from tracekit.analysis.latency import latency_stats
from tracekit.analysis.launch_ceilings import launch_ceilings, without_rates
from tracekit.analysis.littles_law import check_littles_law
from tracekit.analysis.occupancy import OccupancyResult, tail_estimate, theoretical_occupancy, waves_per_sm
from tracekit.analysis.pairing import PairingCandidate, pair_launch
from tracekit.analysis.regions import RegionAnalysis, analyze_regions
from tracekit.analysis.sweep import SweepFit
from tracekit.analysis.sweep_rule import MeasuredPoint, fit_family, same_measurement
from tracekit.analysis.tail import TailEffect, measure_tail
from tracekit.analysis.throughput import warp_throughput
from tracekit.analysis.types import (
    SCHEMA,
    CountersFrom,
    Device,
    Kernel,
    LaunchAnalysis,
    LeftOut,
    LeftOutKind,
    LittlesLaw,
    LittlesLawWindow,
    Occupancy,
    OccupancyLimits,
    Pairing,
    PairingReason,
    ReportedOccupancy,
    Source,
    Stalls,
    Sweep,
    SweepFamily,
    TraceVsCounter,
    Warps,
)
from tracekit.analysis.warp_occupancy import launch_steps, mean_occupancy, relative_times, trace_vs_counter
from tracekit.ceilings.devices import WARP_SIZE
from tracekit.ceilings.types import DeviceCeilings
from tracekit.errors import TracekitError
from tracekit.kernel_key import KernelKey, kernel_key, product
from tracekit.parsed import INCOMPLETE_LAUNCH_METRIC

# The ceilings that judge a device (tracekit.ceilings.ceilings_for, called by the caller: it reads package data).
CeilingsFor = Callable[[Device], DeviceCeilings | None]

ACHIEVED_OCCUPANCY_METRIC = "sm__warps_active.avg.pct_of_peak_sustained_active"


def _engine_version() -> str:
    """The schema plus a digest of the analysis code, subpackages (the rules) included: a cached result computed by
    other code is recomputed."""
    digest = hashlib.sha256()
    root = Path(__file__).parent
    # the kernel-name grammar and key (pairing, families) and the counters' names (what a launch measured):
    # outside this folder, since format, the readers and the store use them too, they judge as its own code does
    names = [root.parent / "cxx_name.py", root.parent / "kernel_key.py", root.parent / "counters.py"]
    for path in [*sorted(root.rglob("*.py")), *names]:
        digest.update(path.relative_to(root.parent).as_posix().encode())
        digest.update(path.read_bytes())
    for path in sorted((root.parent / "ceilings" / "profiles").glob("*.json")):  # the shipped ceilings judge too
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return f"2+{digest.hexdigest()[:12]}"


ENGINE_VERSION = _engine_version()


@dataclass(frozen=True)
class LaunchInput:
    """What the store holds for one launch."""

    launch: Mapping[str, Any]  # one row of Store.launches()
    metrics: pl.DataFrame  # Store.metrics([launch_id]); may be empty
    warps: pl.DataFrame  # Store.warps(launch_id); may be empty
    regions: pl.DataFrame = field(default_factory=pl.DataFrame)  # store.regions.launch_regions; may be empty


@dataclass(frozen=True)
class _Measured:
    """A launch's sections before its verdict, and the numbers the verdict takes."""

    data: LaunchInput
    key: KernelKey
    kernel: Kernel
    metrics: pl.DataFrame  # its own counters, or those it borrowed
    pairing: Pairing
    counters_from: CountersFrom | None
    duration_ns: float | None
    occupancy: Occupancy
    warps: Warps | None = None
    littles_law: LittlesLaw | None = None
    tail: TailEffect | None = None
    blocks: BlockReplacement | None = None
    regions: RegionAnalysis | None = None
    classification_inputs: dict[str, Any] = field(default_factory=dict)


# ---- small helpers ----------------------------------------------------------------------------------------------


def _int(value: Any) -> int | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else int(value)


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def launch_sm_count(device_sm_count: int | None, warps: pl.DataFrame | None = None) -> int | None:
    """The one SM count of a launch: the device's, raised to cover every SM id a trace recorded (a trace made on a
    device whose header was not given still counts all the SMs its warps ran on)."""
    count = int(device_sm_count) if device_sm_count else None
    if warps is not None and warps.height:
        seen = int(warps["sm_id"].max()) + 1  # type: ignore[arg-type]
        count = max(count or 0, seen)
    return count


def warp_total(kernel: Kernel) -> int | None:
    """Warps in the whole grid."""
    grid, block = product(kernel.grid), product(kernel.block)
    return None if grid is None or block is None else grid * math.ceil(block / WARP_SIZE)


# ---- sections ---------------------------------------------------------------------------------------------------


def _kernel(launch: Mapping[str, Any], key: KernelKey, sm_count: int | None) -> Kernel:
    static, dynamic = _int(launch.get("static_smem_bytes")), _int(launch.get("dynamic_smem_bytes"))
    smem = None if static is None and dynamic is None else (static or 0) + (dynamic or 0)
    return Kernel(
        name=launch.get("kernel_name"),
        mangled_name=launch.get("mangled_name"),
        grid=key.grid,
        block=key.block,
        registers_per_thread=key.registers_per_thread,
        shared_mem_per_block_bytes=smem,
        static_shared_mem_per_block_bytes=static,
        dynamic_shared_mem_per_block_bytes=dynamic,
        nvtx_path=launch.get("nvtx_path"),
        device=Device(
            name=launch.get("device_name"),
            cc=launch.get("compute_capability"),
            sm_count=sm_count,
            sm_clock_hz=launch.get("sm_clock_hz"),
            max_warps_per_sm=_int(launch.get("max_warps_per_sm")),
        ),
        key=key.name,
    )


def _theoretical(kernel: Kernel, metrics: pl.DataFrame) -> OccupancyResult | None:
    threads = product(kernel.block)
    if kernel.device.cc is None or threads is None or kernel.registers_per_thread is None:
        return None
    config = counters.metric(metrics, "launch__shared_mem_config_size") if metrics.height else None
    try:
        return theoretical_occupancy(
            str(kernel.device.cc),
            threads,
            int(kernel.registers_per_thread),
            int(kernel.shared_mem_per_block_bytes or 0),
            shared_mem_config_bytes=_int(config),
        )
    except TracekitError:
        return None  # a device or launch the calculator cannot model: leave the fields null


def _limits(values: Mapping[str, Any] | None) -> OccupancyLimits:
    values = values or {}
    return OccupancyLimits(
        registers=_int(values.get("registers")),
        shared_memory=_int(values.get("shared_memory")),
        warps=_int(values.get("warps")),
        blocks=_int(values.get("blocks")),
    )


def _occupancy(kernel: Kernel, metrics: pl.DataFrame, theory: OccupancyResult | None) -> Occupancy:
    m = metrics if metrics.height else None
    achieved_pct = counters.metric(m, ACHIEVED_OCCUPANCY_METRIC) if m is not None else None
    reported_pct = counters.metric(m, "sm__maximum_warps_per_active_cycle_pct") if m is not None else None
    reported = _limits(
        {
            key: counters.metric(m, f"launch__occupancy_limit_{name}") if m is not None else None
            for key, name in (
                ("registers", "registers"),
                ("shared_memory", "shared_mem"),
                ("warps", "warps"),
                ("blocks", "blocks"),
            )
        }
    )
    grid_blocks = product(kernel.grid)
    sm_count = kernel.device.sm_count
    max_warps = kernel.device.max_warps_per_sm or (theory.max_warps_per_sm if theory else None)
    waves = tail = None
    if theory and grid_blocks and sm_count and theory.active_blocks_per_sm:
        waves = waves_per_sm(grid_blocks, theory.active_blocks_per_sm, int(sm_count))
        tail = tail_estimate(grid_blocks, theory.active_blocks_per_sm, int(sm_count))
    elif m is not None:
        waves = counters.metric(m, "launch__waves_per_multiprocessor")
    return Occupancy(
        theoretical_warps_per_sm=theory.theoretical_warps_per_sm if theory else None,
        theoretical_pct=theory.theoretical_pct if theory else reported_pct,
        limiter=theory.limiter if theory else None,
        limits_blocks_per_sm=_limits(theory.limits_blocks_per_sm) if theory else reported,
        active_blocks_per_sm=theory.active_blocks_per_sm if theory else None,
        max_warps_per_sm=max_warps,
        achieved_pct=achieved_pct,
        achieved_warps_per_sm=achieved_pct * max_warps / 100 if achieved_pct is not None and max_warps else None,
        waves_per_sm=waves,
        nsight_tail_estimate=tail,
        reported_by_nsight=ReportedOccupancy(theoretical_pct=reported_pct, limits_blocks_per_sm=reported),
    )


def _trace_sections(measured: _Measured) -> _Measured:
    """The trace's sections (warps, Little's law, tail, blocks) and the trace numbers the verdict takes."""
    warps = relative_times(measured.data.warps)  # once, rather than in each of the functions below
    kernel, occupancy_section = measured.kernel, measured.occupancy
    sm_count = kernel.device.sm_count
    # The event sweep (a sort of 2 events per warp) is the expensive part: sort once, pass the steps on.
    steps = launch_steps(warps)
    occupancy = mean_occupancy(warps, sm_count=sm_count, steps=steps)
    gpu_steps = steps.gpu
    del steps  # the per-SM steps are done with: free them before the rest
    whole = check_littles_law(warps, "launch", sm_count=sm_count, gpu_steps=gpu_steps)
    steady = check_littles_law(warps, "steady_state", sm_count=sm_count, gpu_steps=gpu_steps)
    latency = latency_stats(warps)
    throughput = warp_throughput(warps, sm_count=sm_count, sm_clock_hz=kernel.device.sm_clock_hz)
    tail = measure_tail(warps, sm_count=sm_count)
    blocks = block_replacement(warps, sm_count=sm_count)
    max_warps, achieved = occupancy_section.max_warps_per_sm, occupancy_section.achieved_pct
    versus = (
        TraceVsCounter(**trace_vs_counter(occupancy.mean_warps_per_active_sm, max_warps, achieved))
        if max_warps and achieved is not None
        else None
    )
    warps_section = Warps(
        count=latency.count,
        sm_count=occupancy.sm_count,
        span_ns=tail.span_ns,
        mean_latency_ns=latency.mean_latency_ns,
        p50_latency_ns=latency.p50_latency_ns,
        p90_latency_ns=latency.p90_latency_ns,
        p99_latency_ns=latency.p99_latency_ns,
        max_latency_ns=latency.max_latency_ns,
        mean_occupancy_warps_per_sm=occupancy.mean_occupancy_warps_per_sm,
        mean_occupancy_per_active_sm_warps=occupancy.mean_warps_per_active_sm,
        occupancy_variance_over_time=occupancy.variance_over_time,
        occupancy_variance_across_sms=occupancy.variance_across_sms,
        throughput_warps_per_ns_per_sm=throughput.throughput_warps_per_ns_per_sm,
        throughput_warps_per_cycle_per_sm=throughput.throughput_warps_per_cycle_per_sm,
        trace_vs_counter=versus,
    )
    law = LittlesLaw(
        window_ns=(int(steady.window_ns[0]), int(steady.window_ns[1])),
        window_kind=steady.window_kind,
        mean_occupancy=steady.mean_occupancy,
        latency_x_throughput=steady.latency_x_throughput,
        relative_error=_finite(steady.relative_error),
        clipped_latency_x_throughput=steady.clipped_latency_x_throughput,
        clipped_relative_error=_finite(steady.clipped_relative_error),
        whole_launch=LittlesLawWindow(
            window_ns=(int(whole.window_ns[0]), int(whole.window_ns[1])),
            mean_occupancy=whole.mean_occupancy,
            latency_x_throughput=whole.latency_x_throughput,
            relative_error=_finite(whole.relative_error),
        ),
        detail=steady.to_dict(),
    )
    active = occupancy.mean_warps_per_active_sm
    inputs = {
        **measured.classification_inputs,
        "trace_sm_idle_fraction": 1 - occupancy.mean_occupancy_warps_per_sm / active if active else None,
        "trace_span_ns": float(tail.span_ns),
        "event_duration_ns": measured.duration_ns,
        "mean_warp_latency_ns": latency.mean_latency_ns,
        "throughput_warps_per_ns_per_sm": throughput.throughput_warps_per_ns_per_sm,
        "trace_mean_occupancy_warps_per_sm": occupancy.mean_occupancy_warps_per_sm,
        "tail_fraction": tail.tail_fraction,
        "block_imbalance_spread": blocks.duration_relative_spread,
        "lost_to_block_gaps_warps_per_sm": blocks.lost_to_gaps_warps_per_sm,
        "lost_to_end_spread_warps_per_sm": blocks.lost_to_end_spread_warps_per_sm,
    }
    return replace(
        measured,
        warps=warps_section,
        littles_law=law,
        tail=tail,
        blocks=blocks,
        classification_inputs=inputs,
    )


def _measure(data: LaunchInput, key: KernelKey, pairing: Pairing, borrowed: LaunchInput | None) -> _Measured:
    launch = data.launch
    metrics = borrowed.metrics if borrowed is not None else data.metrics
    kernel = _kernel(launch, key, launch_sm_count(_int(launch.get("sm_count")), data.warps))
    occupancy = _occupancy(kernel, metrics, _theoretical(kernel, metrics))
    duration = launch.get("duration_ns")
    if duration is None and data.metrics.height:
        duration = counters.metric(data.metrics, "gpu__time_duration.sum")
    counters_from = None
    if borrowed is not None:
        counters_from = CountersFrom(
            launch_id=borrowed.launch.get("id"),
            import_id=borrowed.launch.get("import_id"),
            import_name=borrowed.launch.get("import_name"),
            kernel_name=borrowed.launch.get("kernel_name"),
        )
    measured = _Measured(
        data=data,
        key=key,
        kernel=kernel,
        metrics=metrics,
        pairing=pairing,
        counters_from=counters_from,
        duration_ns=duration,
        occupancy=occupancy,
        classification_inputs={"grid_blocks": product(kernel.grid), "sm_count": kernel.device.sm_count},
        regions=analyze_regions(data.regions, sm_count=kernel.device.sm_count) if data.regions.height else None,
    )
    if data.warps.height:
        return _trace_sections(measured)
    total_warps = warp_total(kernel)
    if duration and kernel.device.sm_count and total_warps:
        # Without a trace the warp throughput still follows from the launch: all its warps over its duration.
        throughput = total_warps / duration / kernel.device.sm_count
        inputs = {**measured.classification_inputs, "throughput_warps_per_ns_per_sm": throughput}
        return replace(measured, classification_inputs=inputs)
    return measured


def sweep_point(measured: _Measured) -> MeasuredPoint | None:
    """(occupancy in warps per SM, throughput in warps per ns per SM) of one launch: the trace's when traced,
    else Nsight's achieved occupancy with all the launch's warps over its duration."""
    launch_id = measured.data.launch.get("id")
    if launch_id is None:
        return None
    warps = measured.warps
    if warps is not None and warps.mean_occupancy_warps_per_sm and warps.throughput_warps_per_ns_per_sm:
        return MeasuredPoint(
            int(launch_id), warps.mean_occupancy_warps_per_sm, warps.throughput_warps_per_ns_per_sm, "trace"
        )
    achieved = measured.occupancy.achieved_warps_per_sm
    throughput = measured.classification_inputs.get("throughput_warps_per_ns_per_sm")
    if achieved and throughput and measured.counters_from is None:
        return MeasuredPoint(int(launch_id), achieved, throughput, "counters")
    return None


def _stalls(verdict: Any) -> Stalls:
    stalls = verdict.stalls
    if stalls is None:
        return Stalls(None, None, None, None, None, None)
    return Stalls(
        latency_cycles_per_issue=stalls.latency_cycles_per_issue,
        bandwidth_cycles_per_issue=stalls.bandwidth_cycles_per_issue,
        other_cycles_per_issue=stalls.other_cycles_per_issue,
        total_cycles_per_issue=stalls.total_cycles_per_issue,
        by_reason=stalls.by_reason,
        source=stalls.source,
    )


def _finish(
    measured: _Measured,
    fit: SweepFit | None,
    sweep: Sweep | None,
    sweep_family: SweepFamily | None,
    ceilings_for: CeilingsFor | None = None,
) -> LaunchAnalysis:
    occupancy = measured.occupancy
    kernel = measured.kernel
    section = judged = None
    device_ceilings = ceilings_for(kernel.device) if ceilings_for is not None else None
    if device_ceilings is not None and measured.metrics.height:
        # each unit against its nominal peak and the achievable ceiling of its access pattern (issue 20): the rules
        # judge saturation against them, and the verdict names the ceiling it used (`judged_by`)
        section = launch_ceilings(
            lambda *names: counters.metric(measured.metrics, *names),
            device_ceilings,
            product(kernel.grid),
            product(kernel.block),
            kernel.device.sm_count,
        )
        # without a duration no rate, but the rules still know whether the device's peaks are nominal
        judged = section if section is not None else without_rates(device_ceilings)
    verdict = classify(
        ClassificationInputs(
            metrics=measured.metrics,
            theoretical_occupancy_warps_per_sm=occupancy.theoretical_warps_per_sm,
            theoretical_occupancy_pct=occupancy.theoretical_pct,
            max_warps_per_sm=occupancy.max_warps_per_sm,
            sweep=fit,
            ceilings=judged,
            **measured.classification_inputs,
        )
    )
    section = verdict.ceilings if section is not None else None
    launch = measured.data.launch
    incomplete = next(
        (w.removeprefix("INCOMPLETE: ") for w in launch.get("import_warnings") or [] if w.startswith("INCOMPLETE")),
        None,
    )
    if incomplete is not None:
        # flagged first: every trace number covers only the warps that were recorded (`Source.incomplete` says why;
        # tracekit.present.rules.notes words it first in the evidence)
        verdict = replace(verdict, flags=["incomplete-trace", *verdict.flags])
    lacks = counters.metric_text(measured.data.metrics, INCOMPLETE_LAUNCH_METRIC)
    if lacks is not None:
        # a profile cut off mid-launch (an .ncu-rep whose application ended): flagged first, `Source.incomplete_launch`
        # holds what it lacks
        verdict = replace(verdict, flags=["incomplete-launch", *verdict.flags])
    return LaunchAnalysis(
        schema=SCHEMA,
        engine_version=ENGINE_VERSION,
        launch_id=launch.get("id"),
        source=Source(
            path=launch.get("source_path"),
            format=launch.get("format"),
            sha256=launch.get("sha256"),
            import_id=launch.get("import_id"),
            import_name=launch.get("import_name"),
            incomplete=incomplete,
            incomplete_launch=lacks,
        ),
        kernel=measured.kernel,
        counters_from=measured.counters_from,
        pairing=measured.pairing,
        duration_ns=measured.duration_ns,
        occupancy=occupancy,
        warps=measured.warps,
        littles_law=measured.littles_law,
        tail=measured.tail,
        blocks=measured.blocks,
        stalls=_stalls(verdict),
        classification=verdict,
        sweep=sweep,
        sweep_family=sweep_family,
        regions=measured.regions,
        ceilings=section,
    )


# ---- the engine -------------------------------------------------------------------------------------------------


def _span(data: LaunchInput) -> float | None:
    """The time a launch without counters took: its trace's first start to last end, else its timed duration."""
    if data.warps.height:
        return float(data.warps.select(pl.col("end_ns").max() - pl.col("start_ns").min()).item())
    duration = data.launch.get("duration_ns")
    return float(duration) if duration else None


def _candidate(data: LaunchInput, key: KernelKey) -> PairingCandidate:
    has_counters = data.metrics.height > 0
    duration = data.launch.get("duration_ns") if has_counters else _span(data)
    if duration is None and has_counters:
        duration = counters.metric(data.metrics, "gpu__time_duration.sum")
    return PairingCandidate(
        launch_id=int(data.launch["id"]),
        key=key,
        has_counters=has_counters,
        duration_ns=float(duration) if duration else None,
        import_id=data.launch.get("import_id"),
        counter_count=data.metrics.height,
        order=int(data.launch.get("launch_index") or 0),
    )


def _pairings(
    inputs: Sequence[LaunchInput], keys: list[KernelKey], overrides: Mapping[int, int]
) -> list[tuple[Pairing, LaunchInput | None]]:
    candidates = [_candidate(data, key) for data, key in zip(inputs, keys, strict=True)]
    by_id = {c.launch_id: data for c, data in zip(candidates, inputs, strict=True)}
    profiled = [c for c in candidates if c.has_counters]
    timed = [c for c in candidates if not c.has_counters]
    result: list[tuple[Pairing, LaunchInput | None]] = []
    for candidate in candidates:
        if candidate.has_counters:
            result.append((Pairing("own-counters", candidate.launch_id, PairingReason.OWN_COUNTERS), None))
            continue
        override = overrides.get(candidate.launch_id)
        if override is not None:
            if override not in by_id or not by_id[override].metrics.height:
                raise TracekitError(f"--pair {candidate.launch_id}={override}: launch {override} has no counters")
            pairing = Pairing("override", override, PairingReason.USER)
            result.append((pairing, by_id[override]))
            continue
        pairing = pair_launch(candidate, profiled, timed)
        result.append((pairing, by_id[pairing.counters_launch_id] if pairing.counters_launch_id else None))
    return result


def analyze(
    inputs: Sequence[LaunchInput],
    targets: set[int] | None = None,
    overrides: Mapping[int, int] | None = None,
    ceilings_for: CeilingsFor | None = None,
) -> list[LaunchAnalysis]:
    """Analyze the `targets` among `inputs` (all of them by default), in input order.

    `inputs` must hold each target's context: the profiled launches of its kernel key and the launches of its
    sweep family (`tracekit.engine` loads them from the store). `overrides` maps a
    traced launch id to the profiled launch id it takes its counters from, whatever the rule would pick.
    `ceilings_for` gives a device's ceilings (the result's `ceilings` section; none without it).
    """
    keys = [kernel_key(data.launch) for data in inputs]
    pairings = _pairings(inputs, keys, overrides or {})
    wanted = [i for i, data in enumerate(inputs) if targets is None or data.launch.get("id") in targets]
    families: dict[tuple, list[int]] = {}
    for i, key in enumerate(keys):
        families.setdefault(key.sweep_family(), []).append(i)
    # every launch is in a family: the wanted launches' families hold all that needs measuring
    wanted_families = {family for family, members in families.items() if not set(members).isdisjoint(wanted)}
    # A member not asked for with neither warps nor counters of its own gives its sweep no point (`sweep_point`
    # needs a trace or the launch's own counters) whatever else it holds: only its pairing counts (the profiled
    # launch it borrows from is left out), so it is not measured (a family of thousands of Nsight Systems
    # launches measured each one for nothing).
    asked = set(wanted)
    pointless = {
        i
        for family in wanted_families
        for i in families[family]
        if i not in asked and not inputs[i].warps.height and not inputs[i].metrics.height
    }
    measured: dict[int, _Measured] = {
        i: _measure(inputs[i], keys[i], *pairings[i])
        for i in sorted(i for family in wanted_families for i in families[family] if i not in pointless)
    }

    sweeps: dict[tuple, tuple[SweepFit | None, Sweep | None, SweepFamily]] = {}
    for family in wanted_families:
        members = families[family]
        borrowed_by_trace = {pairings[i][0].counters_launch_id for i in members if pairings[i][1] is not None}
        points: list[MeasuredPoint] = []
        left_out: dict[LeftOutKind, list[int]] = {}
        repeated: list[int] = []  # the fitted launch each repeated measurement repeats
        for i in members:
            launch_id = int(inputs[i].launch["id"])
            if launch_id in borrowed_by_trace:
                left_out.setdefault(LeftOutKind.TRACED, []).append(launch_id)
                continue
            point = None if i in pointless else sweep_point(measured[i])
            twin = None if point is None else next((p for p in points if same_measurement(p, point)), None)
            if point is None:
                left_out.setdefault(LeftOutKind.UNMEASURED, []).append(launch_id)
            elif twin is not None:
                left_out.setdefault(LeftOutKind.REPEATED, []).append(launch_id)
                repeated.append(twin.launch_id)
            else:
                points.append(point)
        grouped = [
            LeftOut(kind, tuple(ids), tuple(repeated) if kind is LeftOutKind.REPEATED else ())
            for kind, ids in left_out.items()
        ]
        sweeps[family] = fit_family(points, grouped, len(members))
    results = []
    for i in wanted:
        fit, section, family_found = sweeps.get(keys[i].sweep_family(), (None, None, None))
        results.append(_finish(measured[i], fit, section, family_found, ceilings_for))
    return results
