"""The words of what the engine notes about a launch's inputs (`tracekit.analysis.engine`): a trace that holds fewer
warps than the launch ran (`Source.incomplete`, flag `incomplete-trace`) and a profile cut off mid-launch
(`Source.incomplete_launch`, flag `incomplete-launch`), said first in the evidence since every number after them
covers only what was recorded; why a launch of its sweep family is not one of the sweep's points (`LeftOut.kind`,
the JSON's `sweep.left_out[].reason`); where its counters came from (`Pairing.reason`, the JSON's
`pairing.evidence`); whether its sweep family was fitted (`SweepFamily`, `Sweep`: the JSON's `sweep_note` and
`sweep.note`); and where the gap of its Little's law check comes from (the JSON's `littles_law.explanation`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracekit.analysis.pairing import DURATION_TOLERANCE
from tracekit.analysis.sweep_rule import MIN_OCCUPANCIES, MIN_SPAN
from tracekit.analysis.types import (
    LaunchAnalysis,
    LeftOutKind,
    LittlesLaw,
    Pairing,
    PairingReason,
    Source,
    Sweep,
    SweepFamily,
    SweepOutcome,
)

LEFT_OUT: dict[str, str] = {
    LeftOutKind.TRACED: "profiled run of a traced launch: the trace's point stands for it",
    LeftOutKind.UNMEASURED: "no measured occupancy and throughput",
    LeftOutKind.REPEATED: "the same measurement as a fitted launch (one run in two exports)",
}


def incomplete_notes(source: Source) -> list[str]:
    """The evidence's first lines for an incomplete input: the launch's profile, then its trace."""
    notes = []
    if source.incomplete_launch is not None:
        notes.append(f"The launch's profile is incomplete: {source.incomplete_launch}.")
    if source.incomplete is not None:
        notes.append(f"The trace is incomplete ({source.incomplete}).")
    return notes


def _ratio(span_ns: float, profiled_ns: float | None) -> str:
    return f"{span_ns / (profiled_ns or span_ns):.2f}x"


def _candidates(pairing: Pairing) -> str:
    """The first six candidates with a duration: "launch 3 (71,104 ns), launch 9 (70,912 ns)"."""
    pairs = zip(pairing.candidate_launch_ids[:6], pairing.candidate_durations_ns[:6], strict=False)
    return ", ".join(f"launch {i} ({d:,.0f} ns)" for i, d in pairs if d)


def pairing_evidence(pairing: Pairing, launch_id: int | None, kernel_key: str | None) -> str:
    """The sentence that justifies a pairing (`analysis.pairing.pair_launch`, the engine's own counters and `--pair`):
    the key that matched, the duration agreement, the order in the run, or why nothing was paired. `launch_id` and
    `kernel_key`: the launch's own (`LaunchAnalysis.launch_id`, `Kernel.key`)."""
    span, matched = pairing.duration_ns or 0.0, pairing.counters_duration_ns
    count, tolerance = len(pairing.candidate_launch_ids), f"{DURATION_TOLERANCE:g}x"
    match pairing.reason:
        case PairingReason.OWN_COUNTERS:
            return "the launch's own counters"
        case PairingReason.USER:
            return f"paired by the user (--pair {launch_id}={pairing.counters_launch_id})"
        case PairingReason.NO_TWIN:
            return (
                f"no profiled launch of {kernel_key or 'this kernel'} with the same grid, block, registers, shared "
                "memory and device is in the store: the verdict uses the trace alone"
            )
        case PairingReason.NO_DURATION:
            return "the launch has no duration to check a profiled launch against: not paired"
        case PairingReason.DURATION_MISMATCH:
            return (
                f"{count} profiled launch{'es' if count > 1 else ''} of the same kernel key "
                f"({_candidates(pairing)}), but none lasted within {tolerance} of this launch's {span:,.0f} ns: "
                "another input or workload, so its counters are not borrowed"
            )
        case PairingReason.ORDER:
            return (
                f"same kernel key; launch {pairing.order_position} of {pairing.order_count} of it in both files, and "
                f"the durations agree ({span:,.0f} ns traced vs {matched:,.0f} ns profiled, {_ratio(span, matched)})"
            )
        case PairingReason.AMBIGUOUS:
            return (
                f"ambiguous: {pairing.agreeing_count} profiled launches of the same kernel key agree with this "
                f"launch's {span:,.0f} ns but differ from one another ({_candidates(pairing)}); pair it explicitly "
                "(--pair)"
            )
    repeats = f" (closest of {pairing.agreeing_count} repeats)" if pairing.agreeing_count > 1 else ""
    return (
        f"same kernel key, and the durations agree{repeats}: {span:,.0f} ns here vs {matched:,.0f} ns profiled "
        f"({_ratio(span, matched)}, within {tolerance})"
    )


def counters_evidence(result: LaunchAnalysis) -> str:
    """Where a launch's counters came from and why (`pairing_evidence` of its own pairing)."""
    return pairing_evidence(result.pairing, result.launch_id, result.kernel.key)


def fitted_note(sweep: Sweep) -> str:
    """Which launches a sweep was fitted over, at how many occupancies (the JSON's `sweep.note`)."""
    levels = sweep.occupancy_levels_warps_per_sm
    return (
        f"Sweep fitted over {len(sweep.launch_ids)} launches (ids {', '.join(str(i) for i in sweep.launch_ids)}) at "
        f"{len(levels)} occupancies from {levels[0]:.3g} to {levels[-1]:.3g} warps per SM."
    )


def family_note(family: SweepFamily, sweep: Sweep | None) -> str:
    """Why a launch's family gives no sweep, or over what it was fitted (the JSON's `sweep_note`)."""
    if family.outcome == SweepOutcome.FITTED and sweep is not None:
        return fitted_note(sweep)
    if family.outcome == SweepOutcome.FIT_FAILED:
        return "No occupancy sweep: the fit of min(n / L, B) found no latency and bound in these points."
    levels, size = family.occupancy_levels_warps_per_sm, family.launch_count
    span = f" spanning {levels[-1] / levels[0]:.2g}x" if len(levels) > 1 else ""
    return (
        f"No occupancy sweep: {size} launch{'es' if size != 1 else ''} of this kernel at this problem size on this "
        f"device, {family.measured_count} with a measured occupancy and throughput, at {len(levels)} distinct "
        f"occupanc{'y' if len(levels) == 1 else 'ies'}{span}; a fit of min(n / L, B) needs {MIN_OCCUPANCIES} or "
        f"more occupancies spanning {MIN_SPAN:g}x or more (run it with other block sizes or more dynamic shared "
        "memory per block)."
    )


def sweep_note(result: LaunchAnalysis) -> str | None:
    """The launch's sweep note (`family_note`); None where the engine judged no family."""
    return None if result.sweep_family is None else family_note(result.sweep_family, result.sweep)


def edge_explanation(detail: Mapping[str, Any]) -> str:
    """Where the whole-warp check's error comes from, from the check's terms (`analysis.littles_law.LittlesLaw`, as
    `to_dict` gives them): (spilled_out_warp_ns - carried_in_warp_ns) / (window x sm_count) warps per SM at the
    edges, and the occupancy's drift across the window."""
    starts, ends = detail["warps_straddling_start"], detail["warps_straddling_end"]
    if starts == 0 and ends == 0:
        return "closes exactly: no warp crosses the window's edges"
    carried, spilled = detail["carried_in_warp_ns"], detail["spilled_out_warp_ns"]
    low, high = detail["window_ns"]
    edge = (spilled - carried) / ((high - low) * detail["sm_count"])
    return (
        f"edge effects: {starts} warps straddle the start ({carried} warp-ns carried in), {ends} straddle the end "
        f"({spilled} warp-ns spilled out): {edge:+.4g} warps/SM; occupancy drifts {detail['occupancy_drift']:+.1%} "
        "across the window"
    )


def littles_law_explanation(law: LittlesLaw) -> str:
    """The steady-state check's explanation (the JSON's `littles_law.explanation`)."""
    return edge_explanation(law.detail)
