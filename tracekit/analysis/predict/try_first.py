"""What to try first: the best predicted change of each knob the latency-hiding model can reason about."""

from __future__ import annotations

from collections.abc import Callable

from tracekit.analysis.occupancy import device_limits, theoretical_occupancy
from tracekit.analysis.predict.core import predict
from tracekit.analysis.predict.inputs import inputs_from_result
from tracekit.analysis.predict.launch_rate import refuse_launch_sized
from tracekit.analysis.predict.occupancy_step import occupancy
from tracekit.analysis.predict.types import Change, PredictInputs, Prediction, PredictionRefused, knob_of
from tracekit.analysis.predict.uncertainty import refuse_tile_shape
from tracekit.analysis.types import LaunchAnalysis

# Why a launch is not predicted at all (`predictable`), as the predictor's refusals give their reason.
NOTHING_TO_PREDICT = "no Nsight Compute counters and no occupancy sweep to predict from"


def predictable(result: LaunchAnalysis) -> bool:
    """Whether the predictor has anything to start from: the launch's counters (its utilization) or a sweep of
    the same work at other occupancies; else nothing is read or predicted for it (`NOTHING_TO_PREDICT`)."""
    return bool(result.classification.utilization) or result.sweep is not None


def _largest(low: int, high: int, step: int, blocks_at: Callable[[int], int]) -> Callable[[int], int | None] | None:
    """For a resource whose use lowers blocks per SM (registers, shared memory): the largest amount, in `step`s from
    `low` up to `high`, that still fits `wanted` blocks (binary search: blocks per SM never rise with use)."""
    if high < low:
        return None

    def largest(wanted: int) -> int | None:
        lo, hi = 0, (high - low) // step
        if blocks_at(low) < wanted:
            return None
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if blocks_at(low + mid * step) >= wanted:
                lo = mid
            else:
                hi = mid - 1
        return low + lo * step

    return largest


def _candidates(inputs: PredictInputs) -> list[Change]:
    """The changes worth predicting, per knob: block sizes 64-1024; registers capped (__launch_bounds__) at the most
    that fits each extra block per SM; dynamic shared memory cut to the most that fits each extra block; ILP 2x and
    4x; the grid as one and two full waves."""
    cc, block, regs = inputs.compute_capability, inputs.threads_per_block, inputs.registers_per_thread
    limits = device_limits(cc)
    smem_static, smem_dyn = inputs.static_shared_mem_bytes, inputs.dynamic_shared_mem_bytes
    now = occupancy(cc, block, regs, smem_static + smem_dyn)
    changes = [Change(threads_per_block=b) for b in (64, 128, 256, 512, 1024) if b != block]
    most_blocks = min(limits.max_blocks_per_sm, limits.max_warps_per_sm // now.warps_per_block)
    for wanted in range(now.active_blocks_per_sm + 1, most_blocks + 1):
        capped = _largest(
            16, regs - 1, 8, lambda r: theoretical_occupancy(cc, block, r, smem_static + smem_dyn).active_blocks_per_sm
        )
        if capped is not None and capped(wanted) is not None:
            changes.append(Change(registers_per_thread=capped(wanted)))
        if smem_dyn:
            cut = _largest(
                0,
                smem_dyn - 1,
                256,
                lambda d: theoretical_occupancy(cc, block, regs, smem_static + d).active_blocks_per_sm,
            )
            if cut is not None and cut(wanted) is not None:
                changes.append(Change(dynamic_shared_mem_bytes=cut(wanted)))
    changes += [Change(ilp=inputs.ilp * k) for k in (2, 4)]
    blocks_per_sm = now.active_blocks_per_sm
    for waves in (1, 2):
        grid = waves * blocks_per_sm * inputs.sm_count
        if grid != inputs.grid_blocks:
            changes.append(Change(grid_blocks=grid))
    unique: list[Change] = []
    for change in changes:
        if change not in unique:
            unique.append(change)
    return unique


def what_to_try(inputs: PredictInputs | LaunchAnalysis, top: int = 5, min_speedup: float = 1.02) -> list[Prediction]:
    """The best predicted change of each knob the issue names (block size, registers via __launch_bounds__, dynamic
    shared memory, ILP, grid), best first; refused configurations and changes under `min_speedup` left out. Each is a
    full Prediction: speed-up, interval, basis, and Nsight Compute's estimate where the report has one. A tensor-core
    kernel (its tile shape sets its speed) and a launch that is mostly its fixed time raise PredictionRefused with
    the reason."""
    if isinstance(inputs, LaunchAnalysis):
        inputs = inputs_from_result(inputs)
    # A tensor-core kernel's knobs are its tile shape: say so once rather than offer nothing without a word.
    refuse_tile_shape(inputs, Change(ilp=2 * inputs.ilp))
    refuse_launch_sized(inputs, Change(ilp=2 * inputs.ilp))  # and a launch that is mostly its fixed time
    best: dict[str, Prediction] = {}
    for change in _candidates(inputs):
        try:
            found = predict(inputs, change)
        except PredictionRefused:
            continue
        knob = knob_of(change)
        if found.predicted.speedup >= min_speedup and (
            knob not in best or found.predicted.speedup > best[knob].predicted.speedup
        ):
            best[knob] = found
    chosen = sorted(best.values(), key=lambda r: -r.predicted.speedup)[:top]
    return chosen
