"""The result's `ceilings` section (schema v2, additive; issue 20): each unit's rate against its nominal peak and the
achievable ceiling of its access pattern, the ceiling the verdict is judged by, and the launch's roofline.

Pure: the engine passes the launch's counter getter and the device's DeviceCeilings (tracekit.ceilings, read by the
caller)."""

from __future__ import annotations

from dataclasses import dataclass

from tracekit.analysis.achievable import (
    AccessPattern,
    AchievableUtilization,
    block_launch_utilization,
    dram_utilization,
    unit_utilization,
)
from tracekit.analysis.roofline import MetricGetter, Roofline, launch_work, roofline, work_pattern
from tracekit.ceilings.types import NOMINAL, DeviceCeilings

# The verdict's limiter -> the unit whose ceiling judges it.
LIMITER_UNITS = {
    "dram": "dram",
    "l2": "l2",
    "l1/shared": "shared",
    "fma": "fp32",
    "fp64": "fp64",
    "block-launch": "block_launch",
    "tensor": "tensor",  # the tensor unit of the input type the launch computed in (tensor_bf16, ...)
}


def judges(limiter: str | None, unit: str) -> bool:
    """Whether a unit of the section (`dram`, `tensor_bf16`, ...) is the one behind a verdict limiter."""
    wanted = LIMITER_UNITS.get(limiter or "")
    return wanted is not None and (unit == wanted or (wanted == "tensor" and unit.startswith("tensor_")))


@dataclass(frozen=True)
class LaunchCeilings:
    source: str  # "measured: <file>" or "nominal"
    basis: str  # where the nominal peaks come from
    device_name: str  # the device the ceilings are of (named where no measured profile exists for it)
    # the launch's access pattern and the counter it was read from (the JSON's `access_pattern` and `access_basis`
    # word it); None in a section without rates (`without_rates`)
    access: AccessPattern | None
    units: tuple[AchievableUtilization, ...]  # every unit with a rate and a ceiling, nearest its ceiling first
    judged_by: AchievableUtilization | None  # the ceiling the verdict was judged by (classification sets it)
    roofline: Roofline | None
    # DRAM's mean load latency on the calibrated loaded-latency curve at the launch's DRAM throughput, and unloaded
    # (Little's law: bytes in flight = throughput x latency); None without a measured curve or DRAM bytes.
    dram_loaded_latency_ns: float | None = None
    dram_unloaded_latency_ns: float | None = None

    @property
    def measured(self) -> bool:
        return self.source != NOMINAL

    def unit(self, name: str) -> AchievableUtilization | None:
        """The unit by name; "tensor" is the tensor unit nearest its ceiling (a launch computes in one type, at
        most a few)."""
        # a plain loop over the few units: asked ~30 times a launch, a generator per call cost twice as much
        if name == "tensor":
            for u in self.units:
                if u.unit.startswith("tensor_"):
                    return u
            return None
        for u in self.units:
            if u.unit == name:
                return u
        return None


def launch_ceilings(
    metric: MetricGetter,
    ceilings: DeviceCeilings,
    grid_blocks: int | None,
    threads_per_block: int | None,
    sm_count: int | None,
) -> LaunchCeilings | None:
    """The section for one launch with counters (None without a duration)."""
    work = launch_work(metric)
    if work is None:
        return None
    seconds = work.duration_ns * 1e-9
    pattern = work_pattern(work)
    found: list[AchievableUtilization | None] = []
    if work.dram_bytes is not None:
        found.append(dram_utilization(work.dram_bytes / seconds, ceilings, pattern))
    for unit, amount in (
        ("l2", work.l2_bytes),
        ("shared", work.shared_bytes),
        ("fp32", work.fp32_flop),
        ("fp64", work.fp64_flop),
    ):
        if amount:
            found.append(unit_utilization(unit, amount / seconds, ceilings))
    for kind, amount in work.tensor_flop:  # each input type against its own tensor ceiling
        found.append(unit_utilization(f"tensor_{kind}", amount / seconds, ceilings))
    if grid_blocks and threads_per_block and sm_count:
        found.append(block_launch_utilization(grid_blocks, work.duration_ns, sm_count, threads_per_block, ceilings))
    units = tuple(sorted((u for u in found if u is not None), key=lambda u: -u.of_achievable))
    loaded = unloaded = None
    if work.dram_bytes is not None and ceilings.dram_latency_curve:
        loaded = ceilings.latency_at(work.dram_bytes / seconds)
        measured = ceilings.dram_unloaded_latency_ns
        unloaded = measured.value if measured is not None else ceilings.latency_at(0.0)
    # before the verdict: the unit nearest its ceiling (the verdict's limiter may name another: verdict.judged_by)
    judged = units[0] if units else None
    return LaunchCeilings(
        source=ceilings.source,
        basis=ceilings.basis,
        device_name=ceilings.device_name,
        access=pattern,
        units=units,
        judged_by=judged,
        roofline=roofline(work, ceilings, pattern),
        dram_loaded_latency_ns=loaded,
        dram_unloaded_latency_ns=unloaded,
    )


def without_rates(ceilings: DeviceCeilings) -> LaunchCeilings:
    """The section of a launch whose counters give no duration, so no rate: only which ceilings judge its device
    (for the rules, to say when its peaks are nominal); the result keeps no section for it."""
    return LaunchCeilings(
        source=ceilings.source,
        basis=ceilings.basis,
        device_name=ceilings.device_name,
        access=None,
        units=(),
        judged_by=None,
        roofline=None,
    )


def unit_at_ceiling(section: LaunchCeilings | None) -> AchievableUtilization | None:
    """The unit nearest its achievable ceiling when it is at it (>= AT_CEILING_FRACTION), else None: what the
    throughput-bound rule should test instead of 80% of the nominal peak (a scattered gather at 60% of nominal DRAM
    is at 97% of its scattered ceiling)."""
    if section is None or not section.units:
        return None
    top = section.units[0]
    return top if top.at_ceiling else None
