"""Block launch rate and launch overhead: the block scheduler starts blocks at a measured rate per SM while the SMs
work, so the slower of the two binds (Volkov's sharp min for a deterministic server); the measured GPU time per
launch is added once. A launch whose block starts take most of its time keeps fewer warps resident than its slots
allow: warps resident = warps started per second x block lifetime (Little's law), a property of the launch rate,
not of the kernel."""

from __future__ import annotations

import math
from dataclasses import dataclass

from tracekit.analysis import model
from tracekit.analysis.predict.findings import finding
from tracekit.analysis.predict.occupancy_step import Config
from tracekit.analysis.predict.types import Change, Finding, PredictInputs, PredictionRefused
from tracekit.ceilings.devices import WARP_SIZE

# Block starts that take this share of a launch's time or more bind it ("launch" regime): below it the SMs' work
# hides them (the sharp min), above it the scheduler, not the slots, sets how many warps are resident.
LAUNCH_BOUND_SHARE = 0.7
# The fixed GPU time of a launch where no profile measures it. Nsight Compute times the shortest launch of the real
# exports at 1.25 us on a T4, 1.54 on an RTX 3090 and 1.89 on a GTX 1650 (one thread in one block); calibrate measures
# 0.78 us on the H100 and 0.51 on the H200 per dependent launch in a CUDA graph. 1 us is below each.
NOMINAL_LAUNCH_OVERHEAD_NS = 1_000.0


def launch_overhead_ns(inputs: PredictInputs) -> tuple[float, str]:
    """The fixed GPU time of one launch and where it comes from: the device's measured profile, else the nominal."""
    if inputs.launch_overhead_ns is not None:
        return inputs.launch_overhead_ns, inputs.ceilings_source
    return NOMINAL_LAUNCH_OVERHEAD_NS, "assumed: no measured profile"


def refuse_launch_sized(inputs: PredictInputs, change: Change) -> None:
    """A launch that lasts less than twice the fixed time of any launch is mostly that fixed time: its work cannot be
    told apart from launching it, so what a change does to the work cannot be predicted. Refused in one line."""
    overhead, source = launch_overhead_ns(inputs)
    if change == Change() or inputs.duration_ns >= 2.0 * overhead:
        return
    raise PredictionRefused(
        f"launch {inputs.launch_id}: it lasts {inputs.duration_ns / 1e3:.3g} µs, less than twice the fixed GPU "
        f"time of any launch ({overhead / 1e3:.2g} µs, {source}), so its work cannot be told apart from launching it; "
        "give each launch more work (or fuse it with its neighbours) and profile that"
    )


def block_launch_rate(inputs: PredictInputs, block: int) -> tuple[float, str] | None:
    """Blocks started per second per SM for this block size: the measured rate of the nearest measured size at or
    above it (the largest beyond the sweep); None when the device's rate was not measured."""
    if inputs.block_launch_rates:
        sizes = [size for size, _ in inputs.block_launch_rates]
        chosen = next((size for size in sizes if size >= block), sizes[-1])
        return dict(inputs.block_launch_rates)[chosen], inputs.launch_rate_source
    if inputs.block_launch_per_s_per_sm:
        return inputs.block_launch_per_s_per_sm, inputs.launch_rate_source
    return None


@dataclass(frozen=True)
class LaunchTerms:
    """Block starts and launch overhead, now and after."""

    rate_now: tuple[float, str] | None
    rate_new: tuple[float, str] | None
    launch_now_ns: float
    launch_new_ns: float
    overhead_ns: float

    def work_of(self, duration_ns: float) -> float:
        """The work time inside a measured duration of the launch's grid (overhead and block starts taken out)."""
        busy = duration_ns - self.overhead_ns
        return model.remove_launch_time(busy, self.launch_now_ns) if self.launch_now_ns else busy

    def duration_of(self, work_ns: float) -> float:
        """The new configuration's duration from its work time: block starts overlap the work, overhead adds."""
        return self.overhead_ns + (model.combine_times(work_ns, self.launch_new_ns) if self.launch_new_ns else work_ns)


def launch_terms(inputs: PredictInputs, now: Config, new: Config) -> LaunchTerms:
    rated_now = block_launch_rate(inputs, now.threads_per_block)
    rated_new = block_launch_rate(inputs, new.threads_per_block)
    overhead = launch_overhead_ns(inputs)[0]
    overhead = overhead if overhead < 0.5 * inputs.duration_ns else 0.0  # an unchanged launch's (not refused)
    sms = inputs.sm_count
    return LaunchTerms(
        rated_now,
        rated_new,
        model.launch_time_ns(now.grid_blocks, rated_now[0], sms) if rated_now else 0.0,
        model.launch_time_ns(new.grid_blocks, rated_new[0], sms) if rated_new else 0.0,
        overhead,
    )


def arrival_scale(inputs: PredictInputs, now: Config, new: Config, terms: LaunchTerms) -> float | None:
    """Where block starts bind the launch now (they take LAUNCH_BOUND_SHARE of its time or more), the warps started
    per second after the change over now's: its resident warps scale with them (Little's law), capped later by what
    the new configuration holds. None where the launch's own blocks, not the scheduler, set its residency."""
    if terms.rate_now is None or terms.rate_new is None:
        return None
    busy = inputs.duration_ns - terms.overhead_ns
    if busy <= 0 or terms.launch_now_ns < LAUNCH_BOUND_SHARE * busy:
        return None
    warps_now = math.ceil(now.threads_per_block / WARP_SIZE) * terms.rate_now[0]
    warps_new = math.ceil(new.threads_per_block / WARP_SIZE) * terms.rate_new[0]
    return warps_new / warps_now


def launch_rate_finding(inputs: PredictInputs, now: Config, new: Config, terms: LaunchTerms) -> Finding:
    if terms.rate_new is None:
        return finding("launch_rate", "predict.no-launch-rate")
    return finding(
        "launch_rate",
        "predict.launch-rate",
        ("rate", terms.rate_new[0], "blocks/s"),
        ("source", terms.rate_new[1]),
        ("block", new.threads_per_block, "count"),
        ("launch_ns", terms.launch_new_ns, "ns"),
        ("grid", new.grid_blocks, "count"),
        ("launch_now_ns", terms.launch_now_ns, "ns"),
        ("grid_now", now.grid_blocks, "count"),
        ("overhead_ns", terms.overhead_ns or None, "ns"),
        ("ceilings_source", inputs.ceilings_source),
        value=terms.launch_new_ns,
        unit="ns",
    )


def waves_finding(new: Config, tail_new: float, sms: int) -> Finding:
    """The grid in waves of blocks per SM x SMs, and the share of slots its tail holds."""
    last = math.fmod(new.waves, 1)
    shape = "partial" if new.waves > 1 and 0 < last < 0.999 else "under-one" if new.waves < 1 else "whole"
    return finding(
        "waves",
        "predict.waves",
        ("grid", new.grid_blocks, "count"),
        ("waves", new.waves),
        ("blocks", new.blocks_per_sm, "count"),
        ("sms", sms, "count"),
        ("shape", shape),
        ("last_wave", last, "fraction"),
        ("tail", tail_new, "fraction"),
        value=new.waves,
    )
