"""The one formatter of findings: each template id and advice id to its sentence, from the finding's values.

The CLI, the reports, the dashboard and `--json` all show these sentences (the engine stores them in the verdict's
`evidence`, `advice`, `findings` and `rule_findings`), and their numbers are written by `tracekit.format`, as every
other number (256.8 µs, 79.7%, 16,384): the one formatting module, used here by the one formatter of findings (a
pure function of the values, no I/O). The exact values behind each sentence stay in the JSON beside it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from tracekit import format as fmt
from tracekit.analysis.achievable import UNIT_LABELS, AchievableUtilization
from tracekit.analysis.launch_ceilings import judges
from tracekit.analysis.rules.base import (
    SATURATION_PCT,
    Finding,
    Scalar,
    UnitUtilization,
    Value,
    achievable_items,
    specific,
    unit,
)
from tracekit.ceilings.types import NOMINAL

if TYPE_CHECKING:
    from tracekit.analysis.rules.verdict import Outcome


def _P(value: float) -> str:
    """A value already in percent: 79.7%."""
    return fmt.percent(value)


def _F(value: float) -> str:
    """A fraction as percent: 0.375 -> 37.5%."""
    return fmt.fraction(value)


def _N(value: float | int) -> str:
    """A plain number (warps, cycles, counts): 16,384, 57.3, 0.18."""
    return fmt.number(value)


def _D(ns: float) -> str:
    """A time in ns: 850 ns, 12.45 µs."""
    return fmt.duration(ns)


class _V:
    """A finding's values by name: `v.n("pct")` a number, `v.s("metric")` a text, `v.o("x")` either or None."""

    def __init__(self, finding: Finding):
        self.id = finding.id
        self.values: tuple[Value, ...] | None = finding.values
        self.map: dict[str, Scalar] = {v.name: v.value for v in finding.values}

    @classmethod
    def of(cls, finding_id: str, items: Iterable[tuple[str, Scalar, str]]) -> _V:
        """The values of a finding not built: (name, value, unit) items, as `rules.base.values` takes them."""
        v = cls.__new__(cls)
        v.id, v.values = finding_id, None
        v.map = {name: value for name, value, _ in items}
        return v

    def o(self, name: str) -> Any:
        return self.map.get(name)

    def n(self, name: str) -> float:
        value = self.map.get(name)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise KeyError(f"{self.id}: no number {name!r}")
        return float(value)

    def s(self, name: str) -> str:
        return str(self.map.get(name))

    def prefixed(self, prefix: str) -> list[tuple[str, Scalar]]:
        pairs = self.map.items() if self.values is None else ((v.name, v.value) for v in self.values)
        return [(name.removeprefix(prefix), value) for name, value in pairs if name.startswith(prefix)]


def _unit(v: _V, prefix: str = "unit") -> str:
    """ "DRAM at 91.2% (dram__...)"-style pieces: label, pct and metric of a unit value group."""
    return f"{v.s(prefix + '_label')} {_P(v.n(prefix + '_pct'))} ({v.s(prefix + '_metric')})"


def _amount(v: _V, prefix: str, name: str) -> str:
    """A rate value of a unit: 2.02 TB/s, 63.6 TFLOP/s, 12.2 Mblocks/s per SM."""
    unit, value = v.s(prefix + "_rate_unit"), v.n(f"{prefix}_{name}")
    rate = fmt.bandwidth(value) if unit == "B/s" else fmt.si(value, unit)
    return rate + (" per SM" if v.o(prefix + "_unit") == "block_launch" else "")


def _rate(v: _V, prefix: str) -> str:
    return _amount(v, prefix, "achieved")


def _label(v: _V, prefix: str) -> str:
    name = v.s(prefix + "_unit")
    return UNIT_LABELS.get(name) or "Tensor " + name.removeprefix("tensor_")


def _what(v: _V, prefix: str) -> str:
    """What the ceiling is: "what a stream reaches", "what scattered 32-byte sectors reach", ..."""
    pattern = v.s(prefix + "_pattern") if v.o(prefix + "_pattern") else ""
    unit = v.s(prefix + "_unit") if v.o(prefix + "_unit") else ""
    if unit.startswith("tensor_"):
        return f"the {unit.removeprefix('tensor_')} tensor roof"
    return {"stream": "what a stream reaches", "scattered": "what scattered 32-byte sectors reach"}.get(
        pattern, f"what a {pattern} access reaches" if pattern else "the measured ceiling"
    )


def _against(v: _V, prefix: str) -> str:
    """ "60.3% of nominal, 96.8% of what scattered 32-byte sectors reach on this GPU (measured: <file>)"; against
    nominal ceilings only its share of nominal."""
    share = _F(v.n(prefix + "_of_achievable"))
    if v.o(prefix + "_ceiling_source") == "nominal":
        return f"{share} of nominal"
    what = _what(v, prefix)
    nominal = f"{_F(v.n(prefix + '_of_nominal'))} of nominal, " if v.o(prefix + "_of_nominal") is not None else ""
    return f"{nominal}{share} of {what} on this GPU ({v.s(prefix + '_ceiling_source')})"


def _tensor_roof(v: _V, near: bool) -> str:
    """The launch under the tensor roof of its input type (rules/tensor_roof.py)."""
    kind = v.s("tensor_type")
    where = (
        f"right of the ridge ({_N(v.n('intensity'))} FLOP per DRAM byte)"
        if v.o("intensity") is not None
        else "right of the ridge"
    )
    text = (
        f"On the roofline the launch is {where}: its {kind} tensor work, {_rate(v, 'tensor')}, is "
        f"{_F(v.n('tensor_of_achievable'))} of the {kind} tensor roof ({_amount(v, 'tensor', 'ceiling_value')}, "
        f"{v.s('tensor_ceiling_source')})"
    )
    if near:
        return (
            f"{text}, at or above the {_F(v.n('near_fraction'))} at which the tensor pipe bounds it: occupancy and "
            "memory latency are not what limits it."
        )
    return text + "."


def _judged_by(v: _V) -> str:
    return f"{_label(v, 'judged')} {_rate(v, 'judged')}: {_against(v, 'judged')}."


def _at_ceiling(v: _V) -> str:
    return (
        f"{_label(v, 'ceiling')} {_rate(v, 'ceiling')} is {_F(v.n('ceiling_of_achievable'))} of "
        f"{_amount(v, 'ceiling', 'ceiling_value')}, {_what(v, 'ceiling')} on this GPU "
        f"({v.s('ceiling_ceiling_name')}, {v.s('ceiling_ceiling_source')}): at or above the "
        f"{_F(v.n('at_ceiling_fraction'))} at which a unit is at its ceiling, so {v.s('unit_label')} is saturated "
        f"though its counter reads {_P(v.n('unit_pct'))} of the nominal peak ({v.s('unit_metric')}), below "
        f"{_P(v.n('threshold_pct'))}."
    )


# ---- sentences --------------------------------------------------------------------------------------------------


def _stall_breakdown(v: _V) -> str:
    top = ", ".join(f"{reason} {_N(float(cycles or 0))}" for reason, cycles in v.prefixed("reason:"))
    shares = ", ".join(f"{group} {_F(v.n('share_' + group))}" for group in ("latency", "bandwidth", "other"))
    return (
        f"Warps wait {_N(v.n('total_cycles_per_issue'))} cycles per issued instruction "
        f"({v.s('source')} stall metrics, e.g. {v.s('example_metric')}); of the stalled "
        f"cycles {shares}; largest reasons (cycles per instruction): {top}."
    )


def _tied(v: _V) -> str:
    names = ", ".join(_unit(v, f"tied{i}") for i in range(int(v.n("count"))))
    return (
        f"Within {_N(v.n('points'))} points of the limiter, {v.s('unit_label')} at {_P(v.n('unit_pct'))}, "
        f"also: {names}."
    )


def _dram_serves(v: _V) -> str:
    moved = (
        f"; DRAM moved {fmt.si(v.n('dram_bytes'), 'B')} ({v.s('dram_bytes_metric')})"
        if v.o("dram_bytes") is not None
        else ""
    )
    rate = (
        f" at {fmt.bandwidth(v.n('dram_bytes_per_s'))} ({v.s('dram_rate_metric')})"
        if v.o("dram_bytes_per_s") is not None
        else ""
    )
    return (
        f"L2 reads {_P(v.n('l2_pct'))} of peak ({v.s('l2_metric')}) but its read hit rate is only "
        f"{_P(v.n('hit_pct'))} ({v.s('hit_metric')}): the L2 traffic is mostly misses and their fills, which DRAM "
        f"must serve; DRAM is at {_P(v.n('dram_pct'))} ({v.s('dram_metric')}){moved}{rate}. DRAM, not L2, bounds "
        f"the launch."
    )


def _hot_slice(v: _V) -> str:
    unit_text = (
        f"; its atomic unit is busy {_P(v.n('atomic_unit_pct'))} ({v.s('atomic_unit_metric')})"
        if v.o("atomic_unit_pct") is not None
        else ""
    )
    return (
        f"The busiest L2 slice runs at {_P(v.n('hot_pct'))} of peak ({v.s('hot_metric')}) while the L2 average is "
        f"{_P(v.n('mean_pct'))} ({v.s('mean_metric')}){unit_text}, with {_N(v.n('atomics'))} global atomic "
        f"instructions ({v.s('atomics_metric')}): atomics on one address serialize in one slice, which bounds the "
        f"launch while the rest of the GPU waits."
    )


def _launch_rate(v: _V) -> str:
    source = (
        f"{v.s('blocks_metric')} over {v.s('duration_metric')}"
        if v.o("source") == "counters"
        else "grid blocks over the warp trace's span"
    )
    if v.o("ceiling_achieved") is not None:
        rate = (
            f"an SM launches at most one block per {_D(v.n('launch_ns_per_sm'))} "
            f"({fmt.si(v.n('ceiling_ceiling_value'), 'blocks/s')} per SM, the measured rate on this GPU, "
            f"{v.s('ceiling_ceiling_source')})"
        )
    elif v.o("nominal_device") is not None:
        rate = (
            f"an SM launches about one block per {_D(v.n('launch_ns_per_sm'))} (assumed: no measured profile for "
            f"{v.s('nominal_device')})"
        )
    else:
        rate = f"an SM launches about one block per {_D(v.n('launch_ns_per_sm'))}"
    verdict = (
        "the launch rate, not a unit, bounds this launch"
        if v.n("share") >= v.n("threshold")
        else f"below the {_F(v.n('threshold'))} at which the launch rate is the bound"
    )
    return (
        f"{_N(v.n('blocks'))} blocks on {int(v.n('sms'))} SMs in {_D(v.n('span_ns'))} ({source}): one block "
        f"per SM every {_D(v.n('per_block_ns'))}; {rate}, so blocks arrive at {_F(v.n('share'))} of the SMs' "
        f"block launch rate: {verdict}."
    )


def _gradual(v: _V) -> str:
    if v.o("ceiling_achieved") is not None:
        load = (
            f"{v.s('unit_label')} runs at {_P(v.n('unit_pct'))} of its nominal peak ({v.s('unit_metric')}); "
            f"{_label(v, 'ceiling')} {_rate(v, 'ceiling')} is {_against(v, 'ceiling')}: below the "
            f"{_F(v.n('at_ceiling_fraction'))} of a unit at its ceiling but above {_F(v.n('gradual_fraction'))}"
        )
        if v.o("loaded_latency_ns") is not None:
            load += (
                f", where the calibrated loaded-latency curve puts DRAM latency at {_D(v.n('loaded_latency_ns'))}, "
                f"{_N(v.n('loaded_latency_ns') / v.n('unloaded_latency_ns'))}x its unloaded "
                f"{_D(v.n('unloaded_latency_ns'))}"
            )
    else:
        load = (
            f"{v.s('unit_label')} runs at {_P(v.n('unit_pct'))} of peak ({v.s('unit_metric')}), below the "
            f"{_P(v.n('threshold_pct'))} of a saturated unit but above {_P(v.n('gradual_pct'))}"
        )
    return (
        f"{load}, and {_F(v.n('memory_stall_share'))} of the stalled cycles wait on memory ({v.s('reasons')}), at "
        f"the launch's theoretical occupancy: the memory system is in gradual saturation, where latency grows with "
        f"load (Volkov 2016, ch. 3), so the launch is memory-bound rather than short of warps."
    )


def _on_plateau(v: _V) -> str:
    return (
        f"The launch runs {_N(v.n('achieved_warps'))} warps per SM ({v.s('achieved_source')}), at or past the "
        f"{_N(v.n('at_95_warps'))} where the measured sweep reaches 95% of its highest throughput: a throughput limit "
        f"is reached although no counter shows {_P(v.n('threshold_pct'))} of peak"
        + (
            f" nor any unit {_F(v.n('at_ceiling_fraction'))} of its measured achievable ceiling"
            if v.o("at_ceiling_fraction") is not None
            else ""
        )
        + f"; the busiest unit is "
        f"{v.s('unit_label')} at {_P(v.n('unit_pct'))} ({v.s('unit_metric')})."
    )


def _still_rising(v: _V) -> str:
    return (
        f"The launch runs {_N(v.n('achieved_warps'))} warps per SM ({v.s('achieved_source')}); the measured "
        f"sweep reaches 95% of its highest throughput only at {_N(v.n('at_95_warps'))}"
        + ("" if v.o("plateau") else " and still rises at its highest occupancy")
        + ": throughput still grows with warps."
    )


def _plateau_no_unit(v: _V) -> str:
    return (
        f"The launch runs {_N(v.n('achieved_warps'))} warps per SM ({v.s('achieved_source')}), at or past the "
        f"{_N(v.n('at_95_warps'))} where the measured sweep reaches 95% of its highest throughput: throughput is on "
        f"its plateau; the report names no unit, so the limiter is unknown."
    )


def _sweep_fit(v: _V) -> str:
    gap = v.o("knee_gap")
    return (
        f"The occupancy sweep fits min(n / L, B) with L = {_N(v.o('latency') or 0)} (per warp, in the "
        f"throughput's time unit) and B = {_N(v.o('throughput_bound') or 0)}: n* = L x B = "
        f"{_N(v.n('needed_warps'))} warps per SM are needed to reach the bound"
        + (f" (measured points near the knee fall up to {_F(gap)} below the model)." if gap else ".")
    )


def _sweep_levels(v: _V) -> str:
    parts = []
    if v.o("at_90_warps") is not None:
        parts.append(f"90% of the highest measured throughput at {_N(v.n('at_90_warps'))}")
    if v.o("at_95_warps") is not None:
        parts.append(f"95% at {_N(v.n('at_95_warps'))} warps per SM")
    if v.o("plateau"):
        plateau = "the measured points reach a plateau"
    elif v.o("last_step_gain") is not None and v.o("last_step_high_warps") is not None:
        plateau = (
            f"the plateau is not reached: throughput still grows {_F(v.n('last_step_gain'))} from "
            f"{_N(v.n('last_step_low_warps'))} to {_N(v.n('last_step_high_warps'))} warps per SM"
        )
    else:
        plateau = "whether a plateau is reached is not measured"
    knee = (
        f"; the model min(n / L, B) puts its knee at {_N(v.n('knee_warps'))} (an idealization)"
        if v.o("knee_warps")
        else ""
    )
    return f"Occupancy sweep: {', '.join(parts) or 'no level measured'}; {plateau}{knee}."


def _littles_law(v: _V) -> str:
    reach = (
        f", {_F(v.n('unit_of_achievable'))} of what it can reach on this GPU; at the same warp latency about "
        f"{_N(v.n('needed_warps'))} warps per SM would reach that ceiling"
        if v.o("unit_of_achievable") is not None
        else f"; at the same warp latency about {_N(v.n('needed_warps'))} warps per SM would reach its peak"
    )
    sentence = (
        f"By Little's law the {_N(v.n('warps'))} warps per SM now in flight keep the busiest unit, "
        f"{v.s('unit_label')}, at {_P(v.n('unit_pct'))} of peak ({v.s('unit_metric')}){reach} (a lower bound: "
        f"latency grows near saturation)."
    )
    if v.o("device_max_warps") is not None:
        sentence += (
            f" No occupancy can reach that: the device holds at most {_N(v.n('device_max_warps'))} warps per SM"
            + (
                "; here the block launch rate, not the units, keeps fewer warps resident."
                if v.o("limiter") == "block-launch"
                else "; near saturation the latency grows instead, which is why the unit is the bound."
                if v.o("throughput_bound")
                else "; only more independent work per warp (ILP) can put that much in flight."
            )
        )
    return sentence


def _too_few_blocks(v: _V) -> str:
    grid_text = f"{_N(v.n('grid_blocks'))} blocks" if v.o("grid_blocks") is not None else "the grid"
    fill = (
        f"fill only {_N(v.n('waves'))} of one wave of the GPU's block slots ({v.s('waves_metric')})"
        if v.o("waves") is not None
        else f"are fewer than the {int(v.n('sms'))} SMs"
    )
    return f"{grid_text} {fill}: too few blocks for the SMs, so most SMs run few warps or none."


def _idle_source(v: _V) -> str:
    return v.s("ratio_metric") if v.o("source") == "counters" else "warp trace: SM time with no resident warp"


_EXPLAINED = {"block-launch": "the block launch rate", "atomics": "the atomics draining through one L2 slice"}


def _coalescing(v: _V) -> str:
    if v.o("basis") == "excessive-sectors":
        return (
            f"{_F(v.n('excess_share'))} of global sectors are beyond the ideal for their accesses "
            f"({v.s('excess_metric')} = {_N(v.n('excess_sectors'))} of {_N(v.n('ideal_sectors'))}): "
            f"uncoalesced access"
        )
    basis = (
        "for coalesced accesses of the kernel's width mix (smsp__sass_inst_executed_op_memory_*b)"
        if v.o("ideal_basis") == "width-mix"
        else "for coalesced 32-bit loads (32 threads x 4 B / 32 B sectors)"
    )
    return (
        f"Global loads take {_N(v.n('sectors_per_request'))} sectors per request ({v.s('sectors_metric')} / "
        f"{v.s('requests_metric')}) against {_N(v.n('ideal'))} {basis}"
    )


_CHECKS = {
    "agrees": " Agrees with the flag {flag}.",
    "unmapped": "",
    "more-warps-advice": " This verdict does not flag low-occupancy, but its advice agrees that more warps help.",
    "block-launch": (
        " This verdict does not flag low-occupancy: the SMs' block launch rate bounds the launch, so a higher "
        "occupancy limit adds no warps."
    ),
    "unit-bound": " This verdict does not flag low-occupancy: a unit is at its bound, so more warps would only queue.",
    "no-counters": (
        " The report has no counters this verdict checks {flag} with: Nsight Compute's rule is the evidence for it."
    ),
    "below-threshold": (
        " This verdict does not flag {flag}: the cost it measures for it is below the flag's threshold (see the "
        "evidence above)."
    ),
}


def _nsight(v: _V) -> str:
    speedup = f", estimated speedup {_P(v.n('speedup_pct'))}" if v.o("speedup_pct") is not None else ""
    check = _CHECKS[v.s("check")].format(flag=v.s("flag"))
    return f"Nsight Compute rule {v.s('name')} ({v.s('rule_type')}{speedup}): {v.s('first_sentence')}.{check}"


def _limiter(v: _V) -> str:
    mode, limiter = v.s("mode"), v.o("limiter")
    what = f"{mode} by {limiter}" if limiter else mode if mode != "undetermined" else "undetermined (see the evidence)"
    explained = v.o("explained_by")
    if explained:
        return f"The launch is {what}: SMs wait on {_EXPLAINED[explained]}."
    return f"The busy {_F(v.n('busy'))} of the SM time is {what}."


def _idle_cost(v: _V) -> str:
    cause = {"too-few-blocks": "too few blocks", "block-imbalance": "a few long blocks"}.get(
        v.s("cause"), "the tail of the launch"
    )
    return f"SMs sit idle {_F(v.n('idle'))} of the launch's SM time ({cause}; {_idle_source(v)})."


def _no_metrics(v: _V) -> str:
    traced = "; the warp trace gives latency and throughput but not the bound to compare them with"
    return "no metrics for this launch" + (traced if v.o("traced") else "") + "."


REASONS: dict[str, Callable[[_V], str]] = {
    "verdict.reason-bursts": lambda v: (
        f"no unit is saturated, yet only {_F(v.n('latency_share'))} of stalled cycles are latency "
        f"stalls: the limit may be reached in bursts, or lie in a unit the report does not measure."
    ),
    "verdict.reason-partial-units": lambda v: (
        f"only {v.s('measured')} measured: without both memory and SM utilization a saturated unit cannot be ruled out."
    ),
    "verdict.reason-no-metrics": _no_metrics,
    "verdict.reason-no-utilization": lambda v: (
        "the metrics include no utilization (% of peak) counters, so no throughput limit can be checked."
    ),
}

TEMPLATES: dict[str, Callable[[_V], str]] = {
    "stall-summary.breakdown": _stall_breakdown,
    "stall-summary.largest": lambda v: (
        f"The largest stall is {v.s('reason')} at {_N(v.n('cycles_per_issue'))} cycles per issued instruction "
        f"({v.s('metric')})."
    ),
    "tied-limiters.tied": _tied,
    "dram-vs-l2.l2-serves": lambda v: (
        f"L2 read hit rate is {_P(v.n('hit_pct'))} ({v.s('hit_metric')}): the L2 serves most loads itself, so L2, "
        f"not DRAM, is the memory level at work."
    ),
    "dram-vs-l2.dram-serves": _dram_serves,
    "saturated-unit.unit": lambda v: (
        f"{v.s('unit_label')} throughput is {_P(v.n('unit_pct'))} of peak ({v.s('unit_metric')}), above the "
        f"{_P(v.n('threshold_pct'))} at which a unit counts as saturated."
    ),
    "saturated-unit.no-breakdown": lambda v: (
        f"The report has no per-unit breakdown behind {v.s('unit_metric')}, so the saturated "
        f"unit inside {v.s('unit_label')} is not named."
    ),
    "saturated-unit.issue-pipe": lambda v: (
        f"The issue slots ({_P(v.n('issue_pct'))}) are full of the {v.s('pipe_label')}'s instructions "
        f"({_P(v.n('pipe_pct'))}): the {v.s('pipe_label')} is the limiter, the issue slots are saturated with it."
    ),
    "atomics-contention.hot-slice": _hot_slice,
    "block-launch-rate.rate": _launch_rate,
    "block-launch-rate.bound": _launch_rate,
    "gradual-saturation.memory": _gradual,
    "sweep-plateau.on-plateau": _on_plateau,
    "sweep-plateau.still-rising": _still_rising,
    "sweep-plateau.plateau-no-unit": _plateau_no_unit,
    "verdict.no-unit-saturated": lambda v: (
        f"No unit reaches {_P(v.n('threshold_pct'))} of peak"
        + (
            f" or {_F(v.n('at_ceiling_fraction'))} of its measured achievable ceiling"
            if v.o("at_ceiling_fraction") is not None
            else ""
        )
        + f": the busiest is {v.s('unit_label')} at {_P(v.n('unit_pct'))} ({v.s('unit_metric')})."
    ),
    "verdict.judged-by": _judged_by,
    "tensor-roof.near-roof": lambda v: _tensor_roof(v, near=True),
    "tensor-roof.point": lambda v: _tensor_roof(v, near=False),
    "saturated-unit.at-ceiling": _at_ceiling,
    "verdict.no-stall-breakdown": lambda v: (
        "The report has no stall breakdown; by Volkov's rule a launch that reaches no "
        "throughput limit is latency-bound."
    ),
    "needed-occupancy.sweep-fit": _sweep_fit,
    "needed-occupancy.sweep-levels": _sweep_levels,
    "needed-occupancy.trace-in-flight": lambda v: (
        f"Warp trace: mean warp latency {_D(v.n('latency_ns'))} x throughput "
        f"{fmt.per_ns_rate(v.n('throughput'), 'warps')} per SM = {_N(v.n('in_flight'))} warps in flight per "
        f"SM (Little's law)."
    ),
    "needed-occupancy.littles-law": _littles_law,
    "low-occupancy.theoretical-below-needed": lambda v: (
        f"The theoretical occupancy, {_N(v.n('theoretical_warps'))} warps per SM"
        + (f" (limited by {v.s('limited_by')})" if v.o("limited_by") else "")
        + f", is below the ~{_N(v.n('needed_warps'))} needed: the launch as configured cannot run enough warps to "
        f"hide the latency."
    ),
    "occupancy-gap.gap": lambda v: (
        f"Achieved occupancy is {_N(v.n('achieved_warps'))} warps per SM ({_P(v.n('achieved_pct'))}, "
        f"{v.s('achieved_source')}), below the theoretical {_N(v.n('theoretical_warps'))} "
        f"({_P(v.n('theoretical_pct'))}, {v.s('theoretical_source')})."
    ),
    "occupancy-gap.unexplained": lambda v: (
        "No cause for the occupancy gap is visible in the data (a warp trace would show "
        "imbalance between or within blocks)."
    ),
    "too-few-blocks.few": _too_few_blocks,
    "partial-wave.partial": lambda v: (
        f"The launch runs {_N(v.n('waves'))} waves ({v.s('waves_metric')}): the last wave is partial and leaves "
        f"{_F(v.n('idle'))} of the SM time of {int(v.n('full_waves'))} waves without blocks."
    ),
    "idle-sms.idle-explained": lambda v: (
        f"SMs were idle {_F(v.n('idle'))} of the elapsed SM time ({_idle_source(v)}), waiting on "
        f"{_EXPLAINED[v.s('explained_by')]}: that idle time is the limiter's, not a tail."
    ),
    "idle-sms.idle": lambda v: (
        f"SMs were idle {_F(v.n('idle'))} of the elapsed SM time ({_idle_source(v)}): utilizations per active "
        f"cycle describe only the busy part."
    ),
    "idle-sms.cost": _idle_cost,
    "trace-tail.tail": lambda v: (
        f"In the warp trace the first SM runs out of work for good {_F(1 - v.n('tail'))} of "
        f"the way into the launch; the last {_F(v.n('tail'))} runs on fewer SMs."
    ),
    "block-imbalance.costly": lambda v: (
        f"Block durations spread by {_N(v.n('spread'))} (relative) in the trace, and SMs sit "
        f"idle before the launch ends: uneven blocks cost that idle time."
    ),
    "block-imbalance.free": lambda v: (
        f"Block durations spread by {_N(v.n('spread'))} (relative) in the trace, but the SMs "
        f"stay busy until the end (no measured idle SM time above {_F(v.n('threshold'))}): the "
        f"spread costs no time (on a saturated GPU it comes from the warp schedulers)."
    ),
    "lost-occupancy.end-spread": lambda v: (
        f"The warp trace loses {_N(v.n('lost_warps'))} warps per SM of occupancy to finished warps holding their slot "
        f"until their block's last warp ends (imbalance within blocks)."
    ),
    "lost-occupancy.block-gaps": lambda v: (
        f"The warp trace loses {_N(v.n('lost_warps'))} warps per SM of occupancy to empty slots between one block's "
        f"end and the next block's start on an SM."
    ),
    "coalescing.uncoalesced": lambda v: _coalescing(v) + ".",
    "coalescing.uncoalesced-quiet": lambda v: (
        f"{_coalescing(v)}; but no memory unit is above {_P(v.n('memory_busy_pct'))} of peak, so the extra sectors "
        f"cost little time (not flagged below {_P(v.n('busy_threshold_pct'))})."
    ),
    "bank-conflicts.conflicts": lambda v: (
        f"Shared-memory bank conflicts add {_N(v.n('conflicts'))} of {_N(v.n('wavefronts'))} wavefronts "
        f"({_F(v.n('share'))}; {v.s('metric')})."
    ),
    "spills.local-memory": lambda v: (
        "The kernel uses local memory ("
        + ", ".join(f"{name} = {_N(float(value or 0))}" for name, value in v.prefixed(""))
        + "): register spills or local arrays."
    ),
    "divergence.threads": lambda v: (
        f"Only {_N(v.n('threads'))} of {int(v.n('warp_size'))} threads are active per executed instruction "
        f"({v.s('metric')}): divergence or partial warps."
    ),
    "divergence.no-branches": lambda v: (
        f"Branch efficiency reads {_P(v.n('efficiency_pct'))} ({v.s('metric')}) but the kernel executed no "
        f"branches ({v.s('branches_metric')} = 0): no divergence."
    ),
    "divergence.no-branch-count": lambda v: (
        f"Branch efficiency reads 0% ({v.s('metric')}), what a kernel without branches shows; the report has "
        f"no branch count to tell, so no divergence is flagged."
    ),
    "divergence.cheap": lambda v: (
        f"Branch efficiency is {_P(v.n('efficiency_pct'))} ({v.s('metric')}), yet {_N(v.n('threads'))} of "
        f"{int(v.n('warp_size'))} threads are active per instruction ({v.s('threads_metric')}): the divergent "
        f"branches cost little."
    ),
    "divergence.branch-efficiency": lambda v: f"Branch efficiency is {_P(v.n('efficiency_pct'))} ({v.s('metric')}).",
    "barrier-stalls.barrier": lambda v: (
        f"Warps wait at barriers {_N(v.n('barrier_cycles'))} of {_N(v.n('stalled_cycles'))} stalled cycles per "
        f"issued instruction ({_F(v.n('share'))}; {v.s('metric')}): the block waits for its slowest warp at "
        f"each __syncthreads."
    ),
    "nsight-cross-check.rule": _nsight,
    "launch-overhead.overhead": lambda v: (
        f"Launch overhead: {_D(v.n('overhead_ns'))} of the {_D(v.n('timed_ns'))} timed launch "
        f"({_F(v.n('overhead'))}) run no warp."
    ),
    "verdict.limiter": _limiter,
}

_DRAM = (
    "Move fewer bytes to and from DRAM: coalesce accesses, reuse data through shared memory or L2, use narrower "
    "types, fuse kernels."
)
ADVICE: dict[str, Callable[[_V], str]] = {
    "reduce.dram": lambda v: _DRAM,
    "reduce.l2": lambda v: (
        "Send fewer requests to L2: improve L1 reuse and locality, coalesce, avoid atomics on hot lines."
    ),
    "reduce.l1/shared": lambda v: (
        "Reduce L1/shared-memory wavefronts: remove bank conflicts, use wider (vector) accesses, fewer redundant loads."
    ),
    "reduce.issue": lambda v: (
        "Issue fewer instructions: vectorize loads, hoist index arithmetic, unroll, use wider math."
    ),
    "reduce.memory": lambda v: "Move fewer bytes through the memory system: coalesce, reuse, use narrower types.",
    "reduce.pipe": lambda v: (
        f"Issue less work to the {v.s('unit_label')}: use cheaper or fewer instructions, or move work to an idle pipe."
    ),
    "reduce.unit": lambda v: f"Issue less work to the {v.s('unit_label')}.",
    "reduce.tensor": lambda v: (
        f"The tensor pipe is {_F(v.n('tensor_of_achievable'))} of the {v.s('tensor_type')} roof: the rest is the gap "
        "to the best matmul of that type (larger tiles, fewer non-tensor instructions between the MMAs, wgmma "
        "rather than mma.sync on Hopper), or a faster input type."
    ),
    "reduce.memory-bytes": lambda v: "Move fewer bytes through the memory system.",
    "saturated-no-more-occupancy": lambda v: (
        f"More occupancy will not help: {v.s('unit_label')} is saturated (latency is already hidden)."
    ),
    "spread-atomics": lambda v: (
        "Spread the atomics: aggregate per warp or block first (shared memory, warp reductions), then one "
        "atomic per block; or use several counters and combine them."
    ),
    "fewer-larger-blocks": lambda v: (
        "Give each block more work (fewer, larger blocks, or a grid-stride loop) so blocks launch less often."
    ),
    "gradual-more-warps-queue": lambda v: (
        f"More warps will mostly queue in the memory system ({v.s('unit_label')} is the bound): move fewer bytes; "
        f"more independent loads per warp gain only what the remaining headroom allows."
    ),
    "plateau-busiest": lambda v: (
        f"More occupancy will not help: the measured sweep is on its plateau; {v.s('unit_label')} is the busiest unit."
    ),
    "plateau": lambda v: "More occupancy will not help: the measured sweep is on its plateau.",
    "sweep-rising-ilp": lambda v: (
        "The sweep still rises at its highest occupancy: where the device allows no more warps, "
        "more independent work per warp (ILP) is what adds bytes or instructions in flight."
    ),
    "sweep-more-occupancy": lambda v: (
        f"More occupancy helps: the measured throughput still grows up to {_N(v.n('last_step_high_warps'))} warps "
        f"per SM."
    ),
    "faster-unit-no-help": lambda v: "A faster unit will not help: no unit is near its peak; latency is not hidden.",
    "ilp-full": lambda v: (
        "Give each warp more independent work (ILP): unroll, issue several loads before using them, "
        "process several elements per thread."
    ),
    "ilp-short": lambda v: "Give each warp more independent work (ILP): unroll, issue several loads before using them.",
    "raise-theoretical": lambda v: (
        f"Raise the theoretical occupancy ({_P(v.n('theoretical_pct'))} of the device's warps"
        + (f", limited by {v.s('limited_by')}" if v.o("limited_by") else "")
        + ") where the kernel allows."
    ),
    "run-more-warps-theoretical": lambda v: (
        f"Run more warps per SM, up to the theoretical {_N(v.n('theoretical_warps'))}."
    ),
    "run-more-warps-needed": lambda v: (
        f"Run more warps per SM (about {_N(v.n('needed_warps'))} to reach the bound): more blocks, or fewer "
        f"registers / less shared memory per block."
    ),
    "launch-more-blocks": lambda v: (
        "Launch more blocks (a larger grid, smaller tiles, or split-K style work splitting) so every "
        "SM gets its full share of warps."
    ),
    "whole-waves": lambda v: (
        "Size the grid to a whole number of waves, or give each block more work so the partial last wave matters less."
    ),
    "balance-blocks-finish": lambda v: (
        "Balance the work across blocks (or hand it out dynamically) so all SMs finish together."
    ),
    "balance-blocks-refill": lambda v: (
        "Balance work across blocks (or hand out work dynamically) so SMs refill evenly."
    ),
    "balance-warps": lambda v: "Balance work across the warps of a block.",
    "fewer-longer-blocks": lambda v: "Give each block more work (fewer, longer blocks) so block launches are rarer.",
    "coalesce": lambda v: "Coalesce global accesses: consecutive threads should touch consecutive addresses.",
    "remove-bank-conflicts": lambda v: "Remove shared-memory bank conflicts: pad arrays or swizzle indices.",
    "avoid-local-memory": lambda v: (
        "Avoid local memory: fewer live registers (or a higher register limit), no dynamically indexed local arrays."
    ),
    "reduce-divergence": lambda v: "Reduce divergence: make the threads of a warp take the same branches.",
    "sync-less": lambda v: (
        "Synchronize less often: do more work between barriers, or use warp-level sync where it suffices."
    ),
}


# ---- predictions (tracekit.analysis.predict): one sentence per step, from the step's values ----------------------


def _x(value: float) -> str:
    """A speed-up or ratio: 1.37x (fmt.times)."""
    return fmt.times(value)


def _use_rate(v: _V, name: str) -> str:
    value = v.n(name)
    return fmt.bandwidth(value) if v.s("rate_unit") == "B/s" else f"{_P(value)} of peak"


def _predict_achieved(v: _V) -> str:
    if v.o("arrival_scale") is not None:
        why = (
            f"block starts bind the launch now, so its warps are set by how many start per second, not by its "
            f"blocks; {_x(v.n('arrival_scale'))} the warps started per second hold "
        )
    elif v.o("cv") is not None:
        longer = f", {_x(v.n('trips'))} the loop iterations per warp (cv / sqrt of it)" if v.n("trips") > 1 else ""
        why = (
            f"a block frees its slot when its last warp ends: warp lifetimes spread by cv {_N(v.n('cv'))} (from that "
            f"lost share at {_N(v.n('warps_per_block_now'))} warps per block){longer} keep "
            f"{_F(v.n('keep_new'))} at {_N(v.n('warps_per_block_new'))} warps per block: "
        )
    else:
        why = "the same share: "
    span = (
        f" ({_N(v.n('span_low'))}-{_N(v.n('span_high'))} from a tail spread over a block time to lockstep equal blocks)"
        if v.o("span_low") is not None
        else ""
    )
    return (
        f"the launch keeps {_N(v.n('achieved_now'))} of {_N(v.n('theoretical_now'))} warps resident on average: "
        f"{_F(v.n('tail_now'))} of its block slots held over {_N(v.n('waves_now'))} waves (the tail) and "
        f"{_F(v.n('keep_now'))} of each block's warps; {why}{_F(v.n('keep_new'))} of {_N(v.n('theoretical_new'))} "
        f"warps x {_F(v.n('tail_new'))} of the slots held over {_N(v.n('waves_new'))} waves is "
        f"{_N(v.n('achieved_new'))} warps per SM on average{span}"
    )


def _predict_waves(v: _V) -> str:
    shape = v.s("shape")
    tail = (
        f"; the last wave holds {_F(v.n('last_wave'))} of the slots, and blocks of unequal length spread the tail: "
        f"{_F(v.n('tail'))} of the slots held on average"
        if shape == "partial"
        else "; under one wave, so fewer warps in flight than the SM holds"
        if shape == "under-one"
        else f"; blocks of unequal length spread the tail: {_F(v.n('tail'))} of the slots held on average"
    )
    return f"{_N(v.n('grid'))} blocks in {_N(v.n('waves'))} waves of {_N(v.n('blocks'))} x {_N(v.n('sms'))} SMs{tail}"


def _predict_launch_rate(v: _V) -> str:
    overhead = (
        f"; {_D(v.n('overhead_ns'))} per launch ({v.s('ceilings_source')})" if v.o("overhead_ns") is not None else ""
    )
    return (
        f"block starts at {fmt.si(v.n('rate'), 'blocks/s')} per SM for {_N(v.n('block'))}-thread blocks "
        f"({v.s('source')}): {_D(v.n('launch_ns'))} for {_N(v.n('grid'))} blocks, now {_D(v.n('launch_now_ns'))} "
        f"for {_N(v.n('grid_now'))}{overhead}"
    )


def _predict_spare(v: _V) -> str:
    return (
        f"Little's law: {v.s('unit')} at its ceiling needs {fmt.size(v.n('needed_bytes'))} in flight per SM at the "
        f"unloaded latency ({_D(v.n('unloaded_ns'))}); the launch's warps wait {_D(v.n('wait_ns'))} per memory round "
        f"(their lifetime x their memory share), so it holds {fmt.size(v.n('in_flight_bytes'))} per SM, "
        f"{_x(v.n('spare'))} what the ceiling needs: it waits in a queue, and with less concurrency its throughput "
        f"holds until the bytes in flight fall below that need"
    )


def _predict_narrow(v: _V) -> str:
    if v.o("unseen"):
        text = f"measure the changed configuration itself: {v.s('unseen')}"
    elif v.o("fitted"):
        text = "profile it at an occupancy beyond the measured range, near the one asked about"
    else:
        text = (
            f"profile it at two more occupancies (for example {_N(v.n('low_warps'))} and {_N(v.n('most_warps'))} "
            "warps per SM, by dynamic shared memory per block) so the saturation is fitted, not bounded"
        )
    return text + ("; measure the device's ceilings (tracekit calibrate)" if v.o("calibrate") else "")


PREDICTION_TEMPLATES: dict[str, Callable[[_V], str]] = {
    "predict.occupancy": lambda v: (
        f"calculator: {_N(v.n('block'))} threads, {_N(v.n('regs'))} registers, {fmt.size(v.n('smem'))} shared "
        f"memory per block -> {_N(v.n('blocks'))} blocks, {_N(v.n('warps'))} warps per SM (limited by "
        f"{v.s('limiter')}); now {_N(v.n('blocks_now'))} blocks, {_N(v.n('warps_now'))} warps"
    ),
    "predict.regs-capped": lambda v: (
        f"registers capped at {_N(v.n('regs'))} per thread (__launch_bounds__ or -maxrregcount) from "
        f"{_N(v.n('regs_now'))}: assumes the compiler fits the kernel without spilling; spills add local-memory "
        "traffic this prediction does not count"
    ),
    "predict.achieved": _predict_achieved,
    "predict.grid-loop": lambda v: (
        f"the same work over {_N(v.n('grid'))} blocks: each thread's loop runs {_x(v.n('trips'))} the iterations it "
        "runs now (a grid-stride loop); the loop's own ILP and per-iteration cost are taken as now, which a launch "
        "of one iteration per thread cannot show"
    ),
    "predict.concurrency": lambda v: (
        f"concurrency = warps x ILP: {_N(v.n('achieved_now'))} x {_N(v.n('ilp_now'))} = {_N(v.n('conc_now'))} now, "
        f"{_N(v.n('achieved_new'))} x {_N(v.n('ilp_new'))} = {_N(v.n('conc_new'))} after"
    ),
    "predict.sweep-fit": lambda v: (
        f"soft min fitted to {_N(v.n('samples'))} measured launches at {_N(v.n('levels'))} concurrencies "
        f"({_N(v.n('low'))}-{_N(v.n('high'))} warps x ILP per SM): sharpness p = {_N(v.n('sharpness'))}, log error "
        f"{_N(v.n('log_error'))}" + ("" if v.o("saturated") else "; no saturation measured (n / L throughout)")
    ),
    "predict.sweep-held": lambda v: (
        f"beyond {_N(v.n('high'))} warps x ILP per SM the fit has seen no saturation it did not measure: its growth "
        f"is held to what this launch's counters allow ({v.s('unit')} at {_F(v.n('utilization'))} of what it can "
        "reach)"
    ),
    "predict.unit-use": lambda v: (
        f"{v.s('unit')} {_use_rate(v, 'achieved')} of the {_use_rate(v, 'ceiling')} achievable ({v.s('source')}): "
        f"{_F(v.n('utilization'))} of what it can reach"
    ),
    "predict.dram-latency": lambda v: (
        f"DRAM by Little's law with its loaded latency ({v.s('source')}): a warp waits for memory "
        f"{_F(v.n('memory_share'))} of its time (long-scoreboard stalls), memory latency {_D(v.n('latency_ns'))} "
        "now, growing along the measured curve as throughput nears the ceiling"
    ),
    "predict.busiest": lambda v: (
        f"busiest unit: {v.s('unit')}, {_F(v.n('utilization'))} of its achievable bound: "
        + {"throughput": "throughput-bound", "latency": "latency-bound, below the knee"}.get(
            v.s("regime"), "near the knee"
        )
    ),
    "predict.spare": _predict_spare,
    "predict.unseen": lambda v: (
        f"{v.s('why')}: the model cannot see it, so the interval spans {_x(v.n('slower_x'))} slower to "
        f"{_x(v.n('faster_x'))} faster than the point"
    ),
    "predict.spills": lambda v: (
        f"the launch spills registers to local memory: its global accesses need {_F(v.n('spill_free_share'))} of "
        "its DRAM bytes; with fewer live values per thread the spills go and its loads in flight, set by its "
        f"registers, stay (the point); if they stay, {_x(v.n('spills_stay_x'))}"
    ),
    "predict.footprint": lambda v: (
        f"cache footprint: each SM would hold {fmt.size(v.n('per_sm_new'))} of its blocks' own data at once (now "
        f"{fmt.size(v.n('per_sm_now'))}), more than the {fmt.size(v.n('l1_new'))} its L1 keeps; L2 keeps "
        f"{_F(v.n('l2_kept'))} of the re-reads, and DRAM bytes grow up to {_x(v.n('growth'))} if every byte L1 "
        "serves is a block's own re-read (none if all are shared data): the point takes the geometric middle"
    ),
    "predict.narrow": _predict_narrow,
    "predict.waves": _predict_waves,
    "predict.launch-rate": _predict_launch_rate,
    "predict.no-launch-rate": lambda v: (
        "no measured block launch rate for this device (tracekit calibrate): block starts not modelled"
    ),
    "predict.littles-law": lambda v: (
        f"Little's law: the bound needs about {_N(v.n('needed'))} warps x ILP per SM in flight (latency x "
        f"throughput); {_N(v.n('conc_new'))} after the change"
    ),
    "predict.littles-law-at-most": lambda v: (
        f"Little's law: every measured concurrency, the lowest {_N(v.n('needed'))} warps x ILP per SM, already "
        f"reaches the bound, so it needs at most that in flight; {_N(v.n('conc_new'))} after the change"
    ),
    "predict.result": lambda v: (
        f"predicted {_D(v.n('predicted_ns'))} (now {_D(v.n('now_ns'))}): speed-up {_x(v.n('speedup'))}, interval "
        f"{_x(v.n('low'))}-{_x(v.n('high'))}"
    ),
    "predict.capped": lambda v: (
        f"held to {v.s('unit')}'s achievable ceiling: it runs at {_F(v.n('utilization'))} of it now, so no change "
        f"buys more than {_x(v.n('headroom'))}"
    ),
}
TEMPLATES.update(PREDICTION_TEMPLATES)


def sentence(finding: Finding) -> str | None:
    """The finding's evidence sentence; None for a finding that carries data for the verdict only. A reason for an
    undetermined verdict reads "Undetermined: <reason>"."""
    if finding.template is None:
        return None
    if finding.template in REASONS:
        return f"Undetermined: {reason(finding)}"
    return _written(finding.template, _V(finding), finding.get("nominal_device"))


def _written(template: str, v: _V, device: Scalar) -> str:
    text = TEMPLATES[template](v)
    if device is not None and template not in _OWN_NOMINAL_NOTE:
        # a sentence judged against datasheet peaks says so (issue 20)
        text = f"{text.removesuffix('.')} (against nominal peaks: no measured profile for {device})."
    return text


# Templates that word the missing profile themselves.
_OWN_NOMINAL_NOTE = frozenset({"block-launch-rate.rate", "block-launch-rate.bound"})


def achievable_sentence(u: AchievableUtilization, nominal_device: str | None = None) -> str:
    """A unit against its nominal peak and its achievable ceiling, without the final period: "DRAM 2.02 TB/s: 60.3%
    of nominal, 96.8% of what scattered 32-byte sectors reach on this GPU (measured: <file>)"."""
    # the sentence of a "verdict.judged-by" finding of these values, without building the finding (one per unit of
    # every launch's ceilings)
    v = _V.of("verdict.judged-by", achievable_items("judged", u))
    if nominal_device is not None:
        v.map["nominal_device"] = nominal_device
    return _written("verdict.judged-by", v, nominal_device).removesuffix(".")


def reason(finding: Finding) -> str:
    """Why a verdict is undetermined, from its reason finding."""
    return REASONS[finding.id](_V(finding))


def advice(advice_id: str, finding: Finding) -> str:
    """One piece of advice, with the values of the finding that gave it."""
    return ADVICE[advice_id](_V(finding))


# ---- the headline ---------------------------------------------------------------------------------------------------

# Pipe families written as NVIDIA writes them (FMA, ALU, FP64), not as the metric ids spell them.
_ACRONYMS = frozenset({"fma", "alu", "fp64", "fp16", "fp32", "xu", "lsu", "adu", "cbu", "tma", "sm"})

_HEADLINE_REASONS: dict[str, Callable[[_V], str]] = {
    "verdict.reason-no-metrics": lambda v: (
        "a warp trace alone shows occupancy and latency, not which unit binds"
        if v.o("traced")
        else "the launch has no counters, so nothing shows which unit binds"
    ),
    "verdict.reason-no-utilization": lambda v: (
        "the counters give no unit's share of its peak, so no unit can be checked against its limit"
    ),
    "verdict.reason-partial-units": lambda v: (
        f"only {v.s('measured')} measured, so a saturated unit elsewhere cannot be ruled out"
    ),
    "verdict.reason-bursts": lambda v: (
        f"no unit is at its limit, yet only {_F(v.n('latency_share'))} of the stalled cycles wait on latency"
    ),
}


def unit_name(label: str, start: bool = False) -> str:
    """A unit's label in a sentence: "FMA pipe", "L1/shared", "issue slots" ("Issue slots" at its start)."""
    first, _, rest = label.partition(" ")
    name = f"{first.upper()} {rest}".strip() if first.lower() in _ACRONYMS else label
    return name[:1].upper() + name[1:] if start else name


def _limit(u: UnitUtilization, judged: AchievableUtilization | None) -> tuple[str, str]:
    """(", 94.9% of what this GPU reaches", " - at the hardware limit"). A unit is at its limit at the nominal peak's
    saturation threshold (rules.base.SATURATION_PCT) or at its measured ceiling; the measured share is named when it
    is the nearer of the two (as rules.base.closeness takes the larger)."""
    measured = judged if judged is not None and judged.ceiling_source != NOMINAL else None
    at_limit = u.pct >= SATURATION_PCT or (measured is not None and measured.at_ceiling)
    if measured is not None and measured.unit.startswith("tensor_"):
        # the tensor pipe's roof is its type's FLOP/s (rules/tensor_roof.py): always named, busy cycles are not FLOPs
        kind = measured.unit.removeprefix("tensor_")
        reach = f", {_F(measured.of_achievable)} of the {kind} tensor roof"
        return reach, " - at the hardware limit" if at_limit else " - near its roof"
    nearer = measured is not None and measured.of_achievable > u.pct / 100.0
    reach = f", {_F(measured.of_achievable)} of what this GPU reaches" if measured is not None and nearer else ""
    return reach, " - at the hardware limit" if at_limit else " - below its ceiling, where latency grows with load"


def _throughput_headline(outcome: Outcome, units: Sequence[UnitUtilization]) -> str:
    if any(f.rule == "atomics-contention" for f in outcome.findings):
        return "Throughput-bound: atomics on the same addresses drain through one L2 slice"
    if outcome.limiter is None:
        return "Throughput-bound: the measured occupancy sweep is on its plateau - more warps add no throughput"
    judged = outcome.judged_by
    if judged is not None and not judges(outcome.limiter, judged.unit):
        judged = None
    bound = unit(units, outcome.limiter)
    if bound is None:
        name = "the SMs' block launch rate" if outcome.limiter == "block-launch" else outcome.limiter
        reach = f" at {_F(judged.of_achievable)} of what this GPU reaches" if judged is not None else ""
        return f"Throughput-bound: {name}{reach}"
    tied = [u for u in (unit(units, t) for t in outcome.tied) if u is not None and u is not bound]
    also = f" ({', '.join(f'{unit_name(u.label)} {_P(u.pct)}' for u in tied)})" if tied else ""
    reach, limit = _limit(bound, judged)
    return f"Throughput-bound: {unit_name(bound.label, start=True)} at {_P(bound.pct)} of its peak{reach}{also}{limit}"


def _latency_headline(outcome: Outcome, units: Sequence[UnitUtilization]) -> str:
    named = next((f for f in outcome.findings if f.id == "verdict.no-unit-saturated"), None)
    metric = named.get("unit_metric") if named is not None else None
    top = next((u for u in units if u.metric == metric), None) or next(iter(specific(units)), None)
    if top is None:
        return "Latency-bound: throughput still rises with occupancy - warps wait on latency, not on a unit"
    judged = outcome.judged_by
    reach = (
        f", {_F(judged.of_achievable)} of what this GPU reaches"
        if judged is not None
        and judged.ceiling_source != NOMINAL
        and judges(top.limiter, judged.unit)
        and judged.of_achievable > top.pct / 100.0
        else ""
    )
    return (
        f"Latency-bound: no unit near its limit (busiest: {unit_name(top.label)} at {_P(top.pct)} of its peak{reach}) "
        "- warps wait on latency"
    )


def verdict_headline(outcome: Outcome, units: Sequence[UnitUtilization]) -> str:
    """The verdict in plain words: the mode, then the unit that binds and how near its limit, or why it cannot be
    told ("Throughput-bound: L1/shared at 98.1% of its peak (tensor pipe 97%) - at the hardware limit"). It is the
    limiter finding's sentence."""
    limiter = next((f for f in outcome.ranked if f.id == "verdict.limiter"), None)
    explained = limiter.get("explained_by") if limiter is not None else None
    if outcome.mode == "undetermined":
        why = outcome.reason
        text = _HEADLINE_REASONS[why.id](_V(why)) if why is not None else "the data cannot tell which unit binds"
        return f"Undetermined: {text}"
    if outcome.mode == "throughput-bound":
        if explained:
            return f"Throughput-bound: SMs wait on {_EXPLAINED[str(explained)]}"
        return _throughput_headline(outcome, units)
    return _latency_headline(outcome, units)


def headline(outcome: Outcome, units: Sequence[UnitUtilization]) -> str:
    """The first line every view of a launch shows (CLI, report, dashboard, notebook): what costs the most time.
    That is the verdict in plain words (`verdict_headline`) unless idle SMs or launch overhead cost more of the
    time than the busy part; then that finding's sentence leads."""
    lead = outcome.ranked[0] if outcome.ranked else None
    if lead is not None and lead.id != "verdict.limiter":
        return sentence(lead) or ""
    return verdict_headline(outcome, units)
