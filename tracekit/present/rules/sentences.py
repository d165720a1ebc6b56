"""Each template id and advice id to its sentence, from the finding's values: the words of every rule
(`tracekit/present/rules/<rule>.py`, one file per rule of `tracekit/analysis/rules/`) and of the predictor's steps
(`predict.py`), gathered here. A pure function of the values: the exact values behind each sentence stay in the
JSON beside it."""

from __future__ import annotations

from types import ModuleType

from tracekit.analysis.achievable import AchievableUtilization
from tracekit.analysis.rules.base import Finding, Scalar, achievable_items
from tracekit.present.rules import (
    atomics_contention,
    bank_conflicts,
    barrier_stalls,
    block_imbalance,
    block_launch_rate,
    coalescing,
    divergence,
    gradual_saturation,
    idle_sms,
    launch_overhead,
    lost_occupancy,
    low_occupancy,
    memory_attribution,
    needed_occupancy,
    nsight_rules,
    occupancy_gap,
    partial_wave,
    predict,
    saturated_unit,
    spills,
    stall_summary,
    sweep_plateau,
    tensor_roof,
    ties,
    too_few_blocks,
    trace_tail,
    verdict,
)
from tracekit.present.rules.values import V, Words

WORDED: tuple[ModuleType, ...] = (
    stall_summary,
    ties,
    memory_attribution,
    saturated_unit,
    atomics_contention,
    block_launch_rate,
    gradual_saturation,
    sweep_plateau,
    tensor_roof,
    needed_occupancy,
    low_occupancy,
    occupancy_gap,
    too_few_blocks,
    partial_wave,
    idle_sms,
    trace_tail,
    block_imbalance,
    lost_occupancy,
    coalescing,
    bank_conflicts,
    spills,
    divergence,
    barrier_stalls,
    nsight_rules,
    launch_overhead,
    verdict,
    predict,
)
TEMPLATES: dict[str, Words] = {key: words for module in WORDED for key, words in module.TEMPLATES.items()}
ADVICE: dict[str, Words] = {key: words for module in WORDED for key, words in getattr(module, "ADVICE", {}).items()}
REASONS = verdict.REASONS
# Templates that word the missing profile themselves.
_OWN_NOMINAL_NOTE = frozenset({"block-launch-rate.rate", "block-launch-rate.bound"})


def sentence(finding: Finding) -> str | None:
    """The finding's evidence sentence; None for a finding that carries data for the verdict only. A reason for an
    undetermined verdict reads "Undetermined: <reason>"."""
    if finding.template is None:
        return None
    if finding.template in REASONS:
        return f"Undetermined: {reason(finding)}"
    return _written(finding.template, V(finding), finding.get("nominal_device"))


def _written(template: str, v: V, device: Scalar) -> str:
    text = TEMPLATES[template](v)
    if device is not None and template not in _OWN_NOMINAL_NOTE:
        # a sentence judged against datasheet peaks says so (issue 20)
        text = f"{text.removesuffix('.')} (against nominal peaks: no measured profile for {device})."
    return text


def achievable_sentence(u: AchievableUtilization, nominal_device: str | None = None) -> str:
    """A unit against its nominal peak and its achievable ceiling, without the final period: "DRAM 2.02 TB/s: 60.3%
    of nominal, 96.8% of what scattered 32-byte sectors reach on this GPU (measured: <file>)"."""
    # the sentence of a "verdict.judged-by" finding of these values, without building the finding (one per unit of
    # every launch's ceilings)
    v = V.of("verdict.judged-by", achievable_items("judged", u))
    if nominal_device is not None:
        v.map["nominal_device"] = nominal_device
    return _written("verdict.judged-by", v, nominal_device).removesuffix(".")


def reason(finding: Finding) -> str:
    """Why a verdict is undetermined, from its reason finding."""
    return REASONS[finding.id](V(finding))


def advice(advice_id: str, finding: Finding) -> str:
    """One piece of advice, with the values of the finding that gave it."""
    return ADVICE[advice_id](V(finding))
