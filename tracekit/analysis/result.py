"""One launch's analysis as one object ("tracekit.analysis/1"): what `tracekit analyze --json` prints and what the
reports and the dashboard render.

Pure: it takes the launch row (as `Store.launches()` gives it), the launch's metrics frame and its warps frame,
and calls the one-concern modules. Fields a source cannot give are null, never made up.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import polars as pl

from tracekit.analysis import counters
from tracekit.analysis.blocks import block_replacement
from tracekit.analysis.classification import Classification, ClassificationInputs, classify
from tracekit.analysis.latency import latency_stats
from tracekit.analysis.littles_law import check_littles_law
from tracekit.analysis.occupancy import OccupancyResult, tail_estimate, theoretical_occupancy, waves_per_sm
from tracekit.analysis.sweep import SweepFit, fit_occupancy_sweep
from tracekit.analysis.tail import measure_tail
from tracekit.analysis.throughput import warp_throughput
from tracekit.analysis.warp_occupancy import launch_steps, mean_occupancy, relative_times, trace_vs_counter
from tracekit.errors import TracekitError

SCHEMA = "tracekit.analysis/1"
WARP_SIZE = 32
ACHIEVED_OCCUPANCY_METRIC = "sm__warps_active.avg.pct_of_peak_sustained_active"
MIN_SWEEP_POINTS = 3


@dataclass(frozen=True)
class LaunchInput:
    """What the store holds for one launch."""

    launch: dict[str, Any]  # one row of Store.launches()
    metrics: pl.DataFrame  # Store.metrics([launch_id]); may be empty
    warps: pl.DataFrame  # Store.warps(launch_id); may be empty
    counters_from: dict[str, Any] | None = None  # the launch whose metrics were borrowed (see pair_counters)


def _int(value: Any) -> int | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else int(value)


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def _kernel(launch: dict[str, Any]) -> dict[str, Any]:
    static, dynamic = launch.get("static_smem_bytes"), launch.get("dynamic_smem_bytes")
    smem = None if static is None and dynamic is None else (static or 0) + (dynamic or 0)
    return {
        "name": launch.get("kernel_name"),
        "mangled_name": launch.get("mangled_name"),
        "grid": [launch.get("grid_x"), launch.get("grid_y"), launch.get("grid_z")],
        "block": [launch.get("block_x"), launch.get("block_y"), launch.get("block_z")],
        "registers_per_thread": launch.get("registers_per_thread"),
        "shared_mem_per_block_bytes": smem,
        "static_shared_mem_per_block_bytes": static,
        "dynamic_shared_mem_per_block_bytes": dynamic,
        "nvtx_path": launch.get("nvtx_path"),
        "device": {
            "name": launch.get("device_name"),
            "cc": launch.get("compute_capability"),
            "sm_count": launch.get("sm_count"),
            "sm_clock_hz": launch.get("sm_clock_hz"),
            "max_warps_per_sm": launch.get("max_warps_per_sm"),
        },
    }


def _product(values: list[Any]) -> int | None:
    if any(v is None for v in values):
        return None
    return math.prod(int(v) for v in values)


def _theoretical(kernel: dict[str, Any], metrics: pl.DataFrame) -> OccupancyResult | None:
    cc = kernel["device"]["cc"]
    threads = _product(kernel["block"])
    regs = kernel["registers_per_thread"]
    if cc is None or threads is None or regs is None:
        return None
    config = counters.metric(metrics, "launch__shared_mem_config_size") if not metrics.is_empty() else None
    try:
        return theoretical_occupancy(
            str(cc),
            threads,
            int(regs),
            int(kernel["shared_mem_per_block_bytes"] or 0),
            shared_mem_config_bytes=_int(config),
        )
    except TracekitError:
        return None  # a device or launch the calculator cannot model: leave the fields null


def _occupancy(kernel: dict[str, Any], metrics: pl.DataFrame, theory: OccupancyResult | None) -> dict[str, Any]:
    m = metrics if not metrics.is_empty() else None
    achieved_pct = counters.metric(m, ACHIEVED_OCCUPANCY_METRIC) if m is not None else None
    reported_pct = counters.metric(m, "sm__maximum_warps_per_active_cycle_pct") if m is not None else None
    reported_limits = {
        key: _int(counters.metric(m, f"launch__occupancy_limit_{name}")) if m is not None else None
        for key, name in (
            ("registers", "registers"),
            ("shared_memory", "shared_mem"),
            ("warps", "warps"),
            ("blocks", "blocks"),
        )
    }
    grid_blocks = _product(kernel["grid"])
    sm_count = kernel["device"]["sm_count"]
    max_warps = kernel["device"]["max_warps_per_sm"] or (theory.max_warps_per_sm if theory else None)
    waves = tail = None
    if theory and grid_blocks and sm_count and theory.active_blocks_per_sm:
        waves = waves_per_sm(grid_blocks, theory.active_blocks_per_sm, int(sm_count))
        tail = tail_estimate(grid_blocks, theory.active_blocks_per_sm, int(sm_count))
    elif m is not None:
        waves = counters.metric(m, "launch__waves_per_multiprocessor")
    return {
        "theoretical_warps_per_sm": theory.theoretical_warps_per_sm if theory else None,
        "theoretical_pct": theory.theoretical_pct if theory else reported_pct,
        "limiter": theory.limiter if theory else None,
        "limits_blocks_per_sm": theory.limits_blocks_per_sm if theory else reported_limits,
        "active_blocks_per_sm": theory.active_blocks_per_sm if theory else None,
        "max_warps_per_sm": max_warps,
        "achieved_pct": achieved_pct,
        "achieved_warps_per_sm": achieved_pct * max_warps / 100 if achieved_pct is not None and max_warps else None,
        "waves_per_sm": waves,
        "nsight_tail_estimate": tail,
        "reported_by_nsight": {"theoretical_pct": reported_pct, "limits_blocks_per_sm": reported_limits},
    }


def _warp_sections(
    warps: pl.DataFrame, kernel: dict[str, Any], max_warps: int | None, achieved_pct: float | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The result's trace sections, and the trace's numbers the classification takes."""
    warps = relative_times(warps)  # once, rather than in each of the functions below
    sm_count = kernel["device"]["sm_count"]
    sm_count = int(sm_count) if sm_count else None
    if sm_count is not None:
        sm_count = max(sm_count, int(warps["sm_id"].max()) + 1)
    # The event sweep (a sort of 2 events per warp) is the expensive part: sort once, pass the steps on.
    steps = launch_steps(warps)
    occupancy = mean_occupancy(warps, sm_count=sm_count, steps=steps)
    gpu_steps = steps.gpu
    del steps  # the per-SM steps (a row per SM and event time) are done with: free them before the rest
    whole = check_littles_law(warps, "launch", sm_count=sm_count, gpu_steps=gpu_steps)
    steady = check_littles_law(warps, "steady_state", sm_count=sm_count, gpu_steps=gpu_steps)
    latency = latency_stats(warps)
    throughput = warp_throughput(warps, sm_count=sm_count, sm_clock_hz=kernel["device"]["sm_clock_hz"])
    tail = measure_tail(warps, sm_count=sm_count)
    blocks = block_replacement(warps, sm_count=sm_count)
    versus_counter = (
        trace_vs_counter(occupancy.mean_warps_per_active_sm, max_warps, achieved_pct)
        if max_warps and achieved_pct is not None
        else None
    )
    sections = {
        "warps": {
            "count": latency.count,
            "sm_count": occupancy.sm_count,
            "span_ns": tail.span_ns,
            "mean_latency_ns": latency.mean_latency_ns,
            "p50_latency_ns": latency.p50_latency_ns,
            "p90_latency_ns": latency.p90_latency_ns,
            "p99_latency_ns": latency.p99_latency_ns,
            "max_latency_ns": latency.max_latency_ns,
            "mean_occupancy_warps_per_sm": occupancy.mean_occupancy_warps_per_sm,
            "mean_occupancy_per_active_sm_warps": occupancy.mean_warps_per_active_sm,
            "occupancy_variance_over_time": occupancy.variance_over_time,
            "occupancy_variance_across_sms": occupancy.variance_across_sms,
            "throughput_warps_per_ns_per_sm": throughput.throughput_warps_per_ns_per_sm,
            "throughput_warps_per_cycle_per_sm": throughput.throughput_warps_per_cycle_per_sm,
            "trace_vs_counter": versus_counter,
        },
        "littles_law": {
            "window_ns": list(steady.window_ns),
            "window_kind": steady.window_kind,
            "mean_occupancy": steady.mean_occupancy,
            "latency_x_throughput": steady.latency_x_throughput,
            "relative_error": _finite(steady.relative_error),
            "clipped_latency_x_throughput": steady.clipped_latency_x_throughput,
            "clipped_relative_error": _finite(steady.clipped_relative_error),
            "explanation": steady.explanation(),
            "whole_launch": {
                "window_ns": list(whole.window_ns),
                "mean_occupancy": whole.mean_occupancy,
                "latency_x_throughput": whole.latency_x_throughput,
                "relative_error": _finite(whole.relative_error),
            },
            "detail": steady.to_dict(),
        },
        "tail": {
            # The headline tail is the time after the first SM ran out of blocks for good: from then on the GPU
            # is not fully used. Counted from the last block start instead, a clean 1.9-wave launch would show
            # its whole second wave as "tail"; that figure is kept under its own name.
            "tail_ns": tail.tail_after_first_idle_ns,
            "tail_fraction": tail.tail_after_first_idle_fraction,
            "after_last_block_start_ns": tail.tail_ns,
            "after_last_block_start_fraction": tail.tail_fraction,
            **{
                k: v
                for k, v in vars(tail).items()
                if k not in ("tail_ns", "tail_fraction", "tail_after_first_idle_ns", "tail_after_first_idle_fraction")
            },
        },
        "blocks": {k: v for k, v in vars(blocks).items() if not isinstance(v, pl.DataFrame)},
    }
    classification_inputs = {
        "mean_warp_latency_ns": latency.mean_latency_ns,
        "throughput_warps_per_ns_per_sm": throughput.throughput_warps_per_ns_per_sm,
        "trace_mean_occupancy_warps_per_sm": occupancy.mean_occupancy_warps_per_sm,
        "tail_fraction": tail.tail_after_first_idle_fraction,
        "block_imbalance_spread": blocks.duration_relative_spread,
        "lost_to_block_gaps_warps_per_sm": blocks.lost_to_gaps_warps_per_sm,
        "lost_to_end_spread_warps_per_sm": blocks.lost_to_end_spread_warps_per_sm,
    }
    return sections, classification_inputs


def _classification_dict(verdict: Classification) -> dict[str, Any]:
    return {
        "mode": verdict.mode,
        "limiter": verdict.limiter,
        "flags": list(verdict.flags),
        "evidence": list(verdict.evidence),
        "advice": list(verdict.advice),
        "needed_occupancy_warps_per_sm": verdict.needed_occupancy_warps_per_sm,
        "reason": verdict.reason,
        "utilization": [vars(unit) for unit in verdict.utilization],
    }


def _stalls_dict(verdict: Classification) -> dict[str, Any]:
    stalls = verdict.stalls
    if stalls is None:
        return {
            "latency_cycles_per_issue": None,
            "bandwidth_cycles_per_issue": None,
            "other_cycles_per_issue": None,
            "by_reason": None,
        }
    return {
        "latency_cycles_per_issue": stalls.latency_cycles_per_issue,
        "bandwidth_cycles_per_issue": stalls.bandwidth_cycles_per_issue,
        "other_cycles_per_issue": stalls.other_cycles_per_issue,
        "total_cycles_per_issue": stalls.total_cycles_per_issue,
        "by_reason": stalls.by_reason,
        "source": stalls.source,
    }


def analyze_launch(data: LaunchInput, sweep: SweepFit | None = None) -> dict[str, Any]:
    """The analysis object of one launch."""
    launch, metrics, warps = data.launch, data.metrics, data.warps
    kernel = _kernel(launch)
    theory = _theoretical(kernel, metrics)
    occupancy = _occupancy(kernel, metrics, theory)
    duration = launch.get("duration_ns")
    if duration is None and not metrics.is_empty():
        duration = counters.metric(metrics, "gpu__time_duration.sum")
    result: dict[str, Any] = {
        "schema": SCHEMA,
        "launch_id": launch.get("id"),
        "source": {
            "path": launch.get("source_path"),
            "format": launch.get("format"),
            "sha256": launch.get("sha256"),
            "import_id": launch.get("import_id"),
            "import_name": launch.get("import_name"),
        },
        "kernel": kernel,
        "counters_from": data.counters_from,
        "duration_ns": duration,
        "occupancy": occupancy,
        "warps": None,
        "littles_law": None,
        "tail": None,
        "blocks": None,
    }
    trace_inputs: dict[str, Any] = {}
    if warps.height:
        sections, trace_inputs = _warp_sections(warps, kernel, occupancy["max_warps_per_sm"], occupancy["achieved_pct"])
        result.update(sections)
    elif duration and kernel["device"]["sm_count"] and _product(kernel["grid"]) and _product(kernel["block"]):
        # Without a trace the warp throughput still follows from the launch: all its warps over its duration.
        total_warps = _product(kernel["grid"]) * math.ceil(_product(kernel["block"]) / WARP_SIZE)
        trace_inputs["throughput_warps_per_ns_per_sm"] = total_warps / duration / kernel["device"]["sm_count"]
    verdict = classify(
        ClassificationInputs(
            metrics=metrics,
            theoretical_occupancy_warps_per_sm=occupancy["theoretical_warps_per_sm"],
            theoretical_occupancy_pct=occupancy["theoretical_pct"],
            max_warps_per_sm=occupancy["max_warps_per_sm"],
            sweep=sweep,
            **trace_inputs,
        )
    )
    result["stalls"] = _stalls_dict(verdict)
    result["classification"] = _classification_dict(verdict)
    result["sweep"] = _sweep_dict(sweep)
    return result


# ---- occupancy sweeps over several launches of one kernel ------------------------------------------------------


def sweep_point(result: dict[str, Any]) -> tuple[float, float] | None:
    """(occupancy in warps per SM, throughput in warps per ns per SM) of one analyzed launch, trace first."""
    warps = result.get("warps") or {}
    if warps.get("mean_occupancy_warps_per_sm") and warps.get("throughput_warps_per_ns_per_sm"):
        return warps["mean_occupancy_warps_per_sm"], warps["throughput_warps_per_ns_per_sm"]
    occupancy, kernel = result["occupancy"], result["kernel"]
    grid, block = _product(kernel["grid"]), _product(kernel["block"])
    sm_count, duration = kernel["device"]["sm_count"], result.get("duration_ns")
    if occupancy.get("achieved_warps_per_sm") and grid and block and sm_count and duration:
        total_warps = grid * math.ceil(block / WARP_SIZE)
        return occupancy["achieved_warps_per_sm"], total_warps / duration / sm_count
    return None


def _sweep_dict(sweep: SweepFit | None) -> dict[str, Any] | None:
    if sweep is None:
        return None
    return {
        "latency_ns": sweep.latency,
        "throughput_bound_warps_per_ns_per_sm": sweep.throughput_bound,
        "needed_occupancy_warps_per_sm": sweep.needed_occupancy_warps_per_sm,
        "knee_gap_fraction": sweep.knee_gap_fraction,
        "residual_rms": sweep.residual_rms,
        "points": sweep.points.to_dicts(),
    }


def launch_signature(launch: dict[str, Any]) -> tuple:
    """Kernel base name (no `void`, no parameter list) and launch configuration: what identifies one kernel
    launch across a warp trace (which names the kernel) and a profiler report (which prints its signature)."""
    base = (launch.get("kernel_name") or "").split("(", 1)[0].removeprefix("void ").strip()
    return (
        base,
        *(launch.get(f"{kind}_{axis}") for kind in ("grid", "block") for axis in "xyz"),
        launch.get("dynamic_smem_bytes") or 0,
    )


def pair_counters(inputs: list[LaunchInput]) -> list[LaunchInput]:
    """Give each launch without counters (a warp trace, an Nsight Systems timing) the counters of a profiled launch
    of the same kernel and configuration among `inputs`, so its trace or timing sits next to the counters' verdict.
    The result names the launch the counters came from (`counters_from`)."""
    profiled: dict[tuple, LaunchInput] = {}
    for data in inputs:
        if data.metrics.height:
            profiled.setdefault(launch_signature(data.launch), data)
    paired = []
    for data in inputs:
        match = None if data.metrics.height else profiled.get(launch_signature(data.launch))
        if match is not None:
            data = replace(
                data,
                metrics=match.metrics,
                counters_from={
                    "launch_id": match.launch.get("id"),
                    "import_id": match.launch.get("import_id"),
                    "import_name": match.launch.get("import_name"),
                    "kernel_name": match.launch.get("kernel_name"),
                },
            )
        paired.append(data)
    return paired


def analyze_launches(inputs: list[LaunchInput]) -> list[dict[str, Any]]:
    """Analyze each launch; a traced launch borrows the counters of its profiled twin (`pair_counters`), and
    launches of one kernel at several occupancies also get the sweep fit throughput ~ min(n / L, B), which gives
    the needed occupancy L x B."""
    inputs = pair_counters(inputs)
    results = [analyze_launch(data) for data in inputs]
    by_kernel: dict[str, list[int]] = {}
    for index, result in enumerate(results):
        by_kernel.setdefault(result["kernel"]["name"] or "", []).append(index)
    for indices in by_kernel.values():
        sweep = fit_kernel_sweep([results[i] for i in indices])
        if sweep.fit is None:
            continue
        for i in indices:
            if sweep_point(results[i]) is not None:
                results[i] = analyze_launch(inputs[i], sweep=sweep.fit)
    return results


@dataclass(frozen=True)
class KernelSweep:
    """The occupancy sweep over analyzed launches of one kernel, or why there is none."""

    fit: SweepFit | None
    launch_ids: list[int]  # the launches that gave a point
    note: str  # which launches were fitted, or why no fit was made


def fit_kernel_sweep(results: list[dict[str, Any]]) -> KernelSweep:
    """Fit min(n / L, B) to the (occupancy, throughput) points of `results`, launches of one kernel on one device
    analyzed without a sweep, the rule `analyze_launches` applies too: points at 3 or more occupancies (to 0.1 warps
    per SM)."""
    points = [(result.get("launch_id"), sweep_point(result)) for result in results]
    points = [(launch_id, point) for launch_id, point in points if point is not None]
    ids = [launch_id for launch_id, _ in points]
    distinct = len({round(point[0], 1) for _, point in points})
    plural = "" if len(results) == 1 else "es"
    if distinct < MIN_SWEEP_POINTS:
        return KernelSweep(
            None,
            ids,
            (
                f"No occupancy sweep: {len(results)} launch{plural} of this kernel on this device, "
                f"{len(points)} with a "
                f"measured occupancy and throughput, at {distinct} distinct occupanc{'y' if distinct == 1 else 'ies'}; "
                f"fitting min(n / L, B) needs launches at {MIN_SWEEP_POINTS} or more occupancies (run the kernel "
                "with other block sizes or more dynamic shared memory per block and import those traces)."
            ),
        )
    frame = pl.DataFrame(
        {"occupancy_warps_per_sm": [point[0] for _, point in points], "throughput": [point[1] for _, point in points]}
    )
    try:
        fit = fit_occupancy_sweep(frame)
    except TracekitError as exc:
        return KernelSweep(None, ids, f"No occupancy sweep: {exc}")
    listed = ", ".join(str(launch_id) for launch_id in ids)
    return KernelSweep(
        fit,
        ids,
        f"Sweep fitted over {len(points)} launches of this kernel on this device "
        f"(launch ids {listed}) at {distinct} occupancies.",
    )
