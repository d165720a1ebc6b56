"""Reading a launch into `PredictInputs`: each unit's use against what is achievable for its access pattern, DRAM's
loaded-latency curve, Nsight's own estimates, and the counters that say what the model cannot see."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import polars as pl

from tracekit import counters as c
from tracekit.analysis.achievable import AccessKind, AccessPattern, access_pattern, dram_ceiling
from tracekit.analysis.predict.types import (
    DramCurve,
    NsightEstimate,
    PredictInputs,
    PredictionRefused,
    SweepSample,
    UnitUse,
)
from tracekit.analysis.roofline import launch_work, work_pattern
from tracekit.analysis.types import LaunchAnalysis
from tracekit.ceilings.devices import WARP_SIZE
from tracekit.ceilings.types import NOMINAL, Ceiling, DeviceCeilings

_FMA_PIPE = (
    "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
)
_FP64_PIPE = (
    "sm__inst_executed_pipe_fp64.avg.pct_of_peak_sustained_active",
    "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active",
)
# The tensor pipe: the busiest of its counters (all tensor ops, then HMMA/HGMMA, IMMA, DMMA; Hopper's wgmma counts in
# the all-ops and HMMA cycles), so an integer or double GEMM is seen as well as a half-precision one.
_TENSOR_PIPE = (
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_op_imma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_op_dmma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_tensor.avg.pct_of_peak_sustained_active",
)
_ACTIVE, _ELAPSED = ".pct_of_peak_sustained_active", ".pct_of_peak_sustained_elapsed"


def pipe_pct(get: Callable[..., float | None], names: tuple[str, ...], busiest: bool = False) -> float | None:
    """A pipe's use, % of peak per active SM cycle (as the other units are judged): the first of `names` present (the
    busiest with `busiest`). An export with only their elapsed forms (which count the cycles an SM sat idle: too
    few blocks) gives them per active cycle: elapsed % x elapsed cycles / active cycles."""

    def pick(values: list[float | None]) -> float | None:
        present = [v for v in values if v is not None]
        return (max(present) if busiest else present[0]) if present else None

    active = pick([get(n) for n in names])
    if active is not None:
        return active
    elapsed = pick([get(n.replace(_ACTIVE, _ELAPSED)) for n in names])
    cycles_active, cycles_elapsed = get(*c.SM_ACTIVE_CYCLES), get(*c.ELAPSED_CYCLES)
    if elapsed is None or not cycles_active or not cycles_elapsed:
        return None
    return min(100.0, elapsed * cycles_elapsed / cycles_active)


_STALL = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"
# Stall reasons that are a warp waiting for a unit to have room (queueing), not for a latency to pass.
_QUEUE_STALLS = (
    "not_selected",
    "dispatch_stall",
    "math_pipe_throttle",
    "lg_throttle",
    "mio_throttle",
    "tex_throttle",
)
_ALL_STALLS = (
    "selected",
    "wait",
    "long_scoreboard",
    "short_scoreboard",
    "branch_resolving",
    "no_instruction",
    "drain",
    "imc_miss",
    "barrier",
    "membar",
    "misc",
    "sleeping",
    *_QUEUE_STALLS,
)


def _pct_use(unit: str, pct: float | None, ceiling: Ceiling | None, source: str) -> UnitUse | None:
    """A pipe's Nsight % of peak against the achievable share of that peak (the measured ceiling / nominal)."""
    if pct is None:
        return None
    fraction = ceiling.fraction_of_nominal if ceiling is not None else None
    if ceiling is None or not ceiling.measured or not fraction:
        return UnitUse(unit, pct, 100.0, NOMINAL)
    return UnitUse(unit, pct, 100.0 * min(fraction, 1.0), ceiling.source)


def dram_use_label(pattern: AccessPattern) -> str:
    """DRAM's id among a prediction's unit uses (`UnitUse.unit`, which its findings and JSON name): "dram (stream)",
    "dram (scattered)", "dram (mixed (88.9% scattered))" (a mix's share of scattered sectors, three digits)."""
    if pattern.kind != AccessKind.MIXED:
        return f"dram ({pattern.kind})"
    percent = 100.0 * pattern.scattered_fraction
    return f"dram (mixed ({percent:.3g}% scattered))"


def unit_uses(
    metrics: pl.DataFrame, ceilings: DeviceCeilings | None = None
) -> tuple[tuple[UnitUse, ...], DramCurve | None]:
    """Each unit's use from the launch's counters, against what is achievable for its access pattern on this device
    (`tracekit.analysis.achievable`: streaming vs scattered 32-byte sectors from the sector counters), and DRAM's
    loaded-latency curve with the launch's place on it. Without a DeviceCeilings, Nsight's % of nominal peak."""

    def get(*names: str) -> float | None:
        return c.metric(metrics, *names)

    uses: list[UnitUse] = []
    work = launch_work(get)
    # The verdict's pattern and DRAM ceiling (its read:write mix's stream, scattered sectors, or the blend of both):
    # the prediction is judged against the ceiling the verdict named.
    pattern = work_pattern(work) if work is not None else access_pattern(None, None)
    dram_curve = None
    dram_pct = get("dram__cycles_active.avg.pct_of_peak_sustained_elapsed", *c.DRAM_THROUGHPUT_PCT)
    chosen = dram_ceiling(ceilings, pattern) if ceilings is not None else None
    if work is not None and work.dram_bytes is not None and chosen is not None and chosen[1].nominal:
        ceiling = chosen[1]
        rate = work.dram_bytes / (work.duration_ns * 1e-9)
        label = dram_use_label(pattern)
        uses.append(UnitUse(label, rate, ceiling.value, ceiling.source, "B/s"))
        curve = ceilings.dram_latency_curve if ceilings is not None else ()
        if curve and ceiling.measured:
            top = max(p.throughput_bytes_per_s for p in curve)
            points = tuple(sorted((p.throughput_bytes_per_s / top, p.latency_ns) for p in curve))
            dram_curve = DramCurve(rate, ceiling.value, points, _memory_share(get), ceiling.source)
    elif dram_pct is not None:
        uses.append(UnitUse(dram_use_label(pattern), dram_pct, 100.0, NOMINAL))
    l2_ceiling = ceilings.l2_bytes_per_s if ceilings is not None else None
    if work is not None and work.l2_bytes is not None and l2_ceiling is not None:
        uses.append(
            UnitUse("l2", work.l2_bytes / (work.duration_ns * 1e-9), l2_ceiling.value, l2_ceiling.source, "B/s")
        )
    elif (l2 := get(*c.L2_THROUGHPUT_PCT)) is not None:
        uses.append(UnitUse("l2", l2, 100.0, NOMINAL))
    shared_ceiling = ceilings.shared_bytes_per_s if ceilings is not None else None
    if work is not None and work.shared_bytes and shared_ceiling is not None:
        rate = work.shared_bytes / (work.duration_ns * 1e-9)
        uses.append(UnitUse("shared", rate, shared_ceiling.value, shared_ceiling.source, "B/s"))
    # The tensor pipe against the roof of the launch's own input type (the type with the most tensor FLOPs, as the
    # roofline judges it); without per-type counters, the best-reaching type (no roof below what some type reaches).
    tensor: Ceiling | None = None
    if ceilings is not None and ceilings.tensor_flop_per_s:
        kinds = dict(work.tensor_flop) if work is not None else {}
        own = max(kinds, key=lambda k: kinds[k]) if kinds else None
        tensor = ceilings.tensor_flop_per_s.get(own) if own is not None else None
        if tensor is None:
            tensor = max(ceilings.tensor_flop_per_s.values(), key=lambda t: t.fraction_of_nominal or 0.0)
    pipes: tuple[tuple[str, float | None, Ceiling | None], ...] = (
        ("fma pipe", pipe_pct(get, _FMA_PIPE), ceilings.fp32_flop_per_s if ceilings is not None else None),
        ("fp64 pipe", pipe_pct(get, _FP64_PIPE), ceilings.fp64_flop_per_s if ceilings is not None else None),
        ("tensor pipe", pipe_pct(get, _TENSOR_PIPE, busiest=True), tensor),
    )
    for unit, pct, pipe_ceiling in pipes:
        found = _pct_use(unit, pct, pipe_ceiling, NOMINAL)
        if found is not None and found.achieved > 0:
            uses.append(found)
    issue = get(*c.ISSUE_ACTIVE_PCT)
    if issue is not None:
        uses.append(_issue_use(issue, get))
    return tuple(uses), dram_curve


def _issue_use(issue_pct: float, get: Callable[..., float | None]) -> UnitUse:
    """The issue slots: one instruction per scheduler per cycle nominal (calibrate measures no issue ceiling). Where
    warps already queue for issue (not-selected and dispatch stalls), the queueing delay shows the rate this code
    really issues at: an M/M/1 server of capacity mu at arrival rate lambda waits Wq = lambda / (mu (mu - lambda))
    cycles, so mu = (Wq lambda + sqrt((Wq lambda)^2 + 4 Wq lambda)) / (2 Wq); the smaller of mu and 1 is the
    ceiling (a dependent FMA chain with dispatch stalls issues at about 0.6 per cycle, not 1)."""
    rate = issue_pct / 100.0
    waits = [get(_STALL.format(name)) for name in ("not_selected", "dispatch_stall")]
    wq = sum(w for w in waits if w)
    cycle = sum(v for v in (get(_STALL.format(name)) for name in _ALL_STALLS) if v)
    # Warps wake together (a load returns to many at once), so some waiting shows at any load; only a queue that
    # takes a third or more of a warp's cycles says the server itself is near its capacity.
    if wq <= 0 or rate <= 0 or wq < cycle / 3:
        return UnitUse("issue", issue_pct, 100.0, NOMINAL)
    mu = (wq * rate + math.sqrt((wq * rate) ** 2 + 4 * wq * rate)) / (2 * wq)
    if mu >= 1.0:
        return UnitUse("issue", issue_pct, 100.0, NOMINAL)
    return UnitUse("issue", issue_pct, 100.0 * mu, f"queueing in this launch's issue stalls, {wq:.2g} cycles")


# A warp waits for global memory for its loads' data (long scoreboard), for room in the queue of load and store
# instructions to L1 when the memory system is saturated (lg_throttle), and after its last instruction for its
# stores to drain (drain): all of it is time in memory's queue, not work of its own.
MEMORY_STALLS = ("long_scoreboard", "lg_throttle", "drain")


def _memory_share(get: Callable[..., float | None]) -> float:
    """The share of a warp's time spent waiting for global memory (MEMORY_STALLS over all warp cycles per issued
    instruction); 1 without the stall counters (Little's law on bytes alone)."""
    stalls = {name: get(_STALL.format(name)) for name in _ALL_STALLS}
    total = sum(v for v in stalls.values() if v)
    if not total or stalls.get("long_scoreboard") is None:
        return 1.0
    memory = sum(stalls.get(name) or 0.0 for name in MEMORY_STALLS)
    return min(1.0, max(0.05, memory / total))


def nsight_estimates(metrics: pl.DataFrame) -> tuple[NsightEstimate, ...]:
    """Nsight's occupancy rule estimates (rows `rule:<Name>` with their Estimated Speedup)."""
    applies = {
        "TheoreticalOccupancy": "theoretical occupancy raised to the device maximum",
        "AchievedOccupancy": "achieved occupancy raised to the theoretical",
    }
    found: dict[str, NsightEstimate] = {}
    for name, _text, value in c.rows_with_prefix(metrics, "rule:"):
        rule = name.removeprefix("rule:")
        if rule not in applies or value is None or not 0 <= value < 100:
            continue
        if rule in found and found[rule].estimated_speedup_pct >= value:
            continue
        found[rule] = NsightEstimate(rule, float(value), 1.0 / (1.0 - value / 100.0), applies[rule])
    return tuple(found.values())


def inputs_from_result(
    result: LaunchAnalysis,
    metrics: pl.DataFrame | None = None,
    sweep: Sequence[SweepSample] | None = None,
    ceilings: DeviceCeilings | None = None,
) -> PredictInputs:
    """The inputs of one analysed launch; `metrics` is its counters (Store.metrics), `sweep` other launches of
    the same work (default: the result's fitted sweep, as throughputs), `ceilings` the device's (the caller reads
    them: `tracekit.ceilings.ceilings_for`); without them, nominal peaks and no launch-rate term."""
    kernel, device = result.kernel, result.kernel.device
    missing = []
    if result.duration_ns is None:
        missing.append("its duration (import an Nsight Compute or Nsight Systems record of it, or a warp trace)")
    if device.cc is None:
        missing.append("the device's compute capability (an Nsight Compute report or a warp trace header has it)")
    if not device.sm_count:
        missing.append("the device's SM count")
    if kernel.block[0] is None or kernel.grid[0] is None:
        missing.append("its grid and block size")
    if kernel.registers_per_thread is None:
        missing.append("its registers per thread (Nsight Compute's launch statistics)")
    if missing:
        raise PredictionRefused(f"launch {result.launch_id}: cannot predict without " + "; ".join(missing))
    frame = metrics if metrics is not None else pl.DataFrame()
    if sweep is None and result.sweep is not None and result.duration_ns:
        points = result.sweep.points
        own = next((p for p in points if p.launch_id == result.launch_id), None)
        if own is not None and own.throughput > 0:
            sweep = [
                SweepSample(
                    p.occupancy_warps_per_sm, result.duration_ns * own.throughput / p.throughput, 1.0, p.launch_id
                )
                for p in points
                if p.throughput > 0
            ]
    threads = math.prod(int(v or 1) for v in kernel.block)
    units, dram_curve = unit_uses(frame, ceilings)
    rates: tuple[tuple[int, float], ...] = ()
    overhead = None
    if ceilings is not None:
        rates = tuple(sorted((int(k), float(v.value)) for k, v in ceilings.block_launch_per_s_per_sm.items()))
        if ceilings.launch_overhead_s is not None:
            overhead = ceilings.launch_overhead_s.value * 1e9
    blind = _blind_spots(frame)
    return PredictInputs(
        compute_capability=str(device.cc),
        sm_count=int(device.sm_count or 0),
        duration_ns=float(result.duration_ns or 0.0),
        threads_per_block=threads,
        grid_blocks=math.prod(int(v or 1) for v in kernel.grid),
        registers_per_thread=int(kernel.registers_per_thread or 0),
        static_shared_mem_bytes=int(kernel.static_shared_mem_per_block_bytes or 0),
        dynamic_shared_mem_bytes=int(
            kernel.dynamic_shared_mem_per_block_bytes
            if kernel.dynamic_shared_mem_per_block_bytes is not None
            else (kernel.shared_mem_per_block_bytes or 0) - (kernel.static_shared_mem_per_block_bytes or 0)
        ),
        achieved_warps_per_sm=result.occupancy.achieved_warps_per_sm
        or (result.warps.mean_occupancy_warps_per_sm if result.warps else None),
        units=units,
        sweep=tuple(sweep or ()),
        nsight=nsight_estimates(frame),
        launch_rate_source=ceilings.source if ceilings is not None and rates else NOMINAL,
        block_launch_rates=rates,
        launch_overhead_ns=overhead,
        dram_curve=dram_curve,
        ceilings_source=ceilings.source if ceilings is not None else NOMINAL,
        has_warp_trace=result.warps is not None,
        launch_id=result.launch_id,
        kernel_name=kernel.name,
        device_name=device.name,
        judged=tuple(
            (u.unit, float(u.of_achievable))
            for u in (result.ceilings.units if result.ceilings is not None else ())
            if u.unit != "block_launch" and u.of_achievable > 0
        ),
        uses_barriers=blind[0],
        l1_hit_rate=blind[1],
        l1_served_per_dram_byte=blind[2],
        spill_free_share=blind[3],
        instructions_per_warp=_instructions_per_warp(frame, math.prod(int(v or 1) for v in kernel.grid), threads),
        dram_read_bytes=c.metric(frame, "dram__bytes_read.sum"),
        l2_bytes=c.metric(frame, "device__attribute_l2_cache_size"),
        shared_carveout_bytes=c.metric(frame, "launch__shared_mem_config_size"),
    )


def _instructions_per_warp(metrics: pl.DataFrame, grid_blocks: int, threads_per_block: int) -> float | None:
    """The warp instructions each warp ran on average (smsp__inst_executed.sum over the launch's warps)."""
    executed = c.metric(metrics, "smsp__inst_executed.sum", "inst_executed")
    warps = grid_blocks * math.ceil(threads_per_block / WARP_SIZE)
    return executed / warps if executed and warps > 0 else None


def _blind_spots(metrics: pl.DataFrame) -> tuple[bool, float | None, float | None, float | None]:
    """What the model cannot see, from the counters: whether the kernel has block barriers (its launch statistics,
    or warps stalled at one), the share of global-load sectors L1 serves and those bytes per DRAM byte read and
    written, and for a launch with local-memory (spill) traffic the share of its DRAM bytes its global accesses
    need (global loads that miss L1 plus global stores, over DRAM bytes read and written)."""

    def get(*names: str) -> float | None:
        return c.metric(metrics, *names)

    barriers = bool(get("launch__barrier_count") or get(_STALL.format("barrier")))
    hit = get("l1tex__t_sector_pipe_lsu_mem_global_op_ld_hit_rate.pct")
    local = (get("l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum") or 0.0) + (
        get("l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum") or 0.0
    )
    dram = (get("dram__bytes_read.sum") or 0.0) + (get("dram__bytes_write.sum") or 0.0)
    loads, stores = (
        get("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"),
        get("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"),
    )
    spill_free = None
    if local > 0 and dram > 0 and loads is not None:
        needed = 32.0 * (loads * (1.0 - (hit or 0.0) / 100.0) + (stores or 0.0))
        spill_free = min(1.0, needed / dram)
    served = 32.0 * loads * hit / 100.0 / dram if hit is not None and loads is not None and dram > 0 else None
    return barriers, (hit / 100.0 if hit is not None else None), served, spill_free
