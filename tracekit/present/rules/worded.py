"""A launch's analysis and a prediction in words. The analysis returns data (each finding's template, advice ids and
values); the door (`tracekit.stored`) words each result once, when it is computed, and hands out only worded ones,
so every view (CLI text, `--json`, the reports, the dashboard, the notebook) shows the same sentences."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, TypeVar

from tracekit.analysis.achievable import AccessPattern, AchievableUtilization
from tracekit.analysis.classification import Classification, RankedFinding
from tracekit.analysis.launch_ceilings import LaunchCeilings
from tracekit.analysis.predict.json import analysis_with_tries
from tracekit.analysis.predict.types import Finding as StepFinding
from tracekit.analysis.predict.types import Prediction
from tracekit.analysis.rules.base import Finding
from tracekit.analysis.rules.verdict import Outcome
from tracekit.analysis.types import LaunchAnalysis, to_json_dict
from tracekit.present.rules.ceilings import access_words, unit_sentences
from tracekit.present.rules.headline import headline, verdict_headline
from tracekit.present.rules.notes import (
    LEFT_OUT,
    counters_evidence,
    fitted_note,
    incomplete_notes,
    littles_law_explanation,
    sweep_note,
)
from tracekit.present.rules.sentences import REASONS, advice, reason, sentence
from tracekit.present.rules.values import pattern_name

_Result = TypeVar("_Result", bound=LaunchAnalysis)


def _with_text(item: Finding, text: str | None) -> Finding:
    """`dataclasses.replace(item, text=text)` for a finding (a frozen dataclass whose `__init__` only stores the
    fields): a copy of the fields, in their order, with the new text. `replace` walks every field and calls
    `__init__`; at ~13k texts for 1,008 launches that cost 5x as long."""
    new = object.__new__(type(item))
    vars(new).update(vars(item), text=text)
    return new


def _ranked(found: RankedFinding) -> Finding:
    """A ranked finding as the rule gave it (its id is its template)."""
    return Finding(found.id, "verdict", found.id, found.values, found.metrics, sm_time_fraction=found.sm_time_fraction)


def outcome_of(verdict: Classification, judged_by: AchievableUtilization | None) -> Outcome:
    """The verdict's outcome again from the data the result keeps (what the headline is worded from)."""
    return Outcome(
        mode=verdict.mode,
        limiter=verdict.limiter,
        reason=next((f for f in verdict.rule_findings if f.id in REASONS), None),
        tied=tuple(verdict.tied_limiters),
        needed_occupancy_warps_per_sm=verdict.needed_occupancy_warps_per_sm,
        findings=tuple(verdict.rule_findings),
        ranked=tuple(_ranked(f) for f in verdict.findings),
        nsight=tuple(verdict.nsight_rules),
        judged_by=judged_by,
    )


def worded_verdict(
    verdict: Classification, ceilings: LaunchCeilings | None = None, notes: Sequence[str] = ()
) -> Classification:
    """The verdict with every sentence: the evidence (`notes` first: what the engine noted about its inputs, such as
    an incomplete trace, `present.rules.notes`), the advice, the ranked findings, the headline and why it is
    undetermined. `ceilings`: the result's own section, where the verdict's (which the cache does not keep) is the
    same or absent. A verdict already worded is returned as it is."""
    if verdict.headline is not None:
        return verdict
    own = ceilings if ceilings is not None else verdict.ceilings
    texts = [_with_text(f, sentence(f)) for f in verdict.rule_findings]
    outcome = outcome_of(verdict, own.judged_by if own is not None else None)
    verdict_words = verdict_headline(outcome, verdict.utilization)
    ranked = [
        replace(f, text=verdict_words if f.id == "verdict.limiter" else sentence(lead) or "")
        for f, lead in zip(verdict.findings, outcome.ranked, strict=True)
    ]
    return replace(
        verdict,
        evidence=[*notes, *verdict.evidence, *(f.text for f in texts if f.text is not None)],
        advice=[advice(advice_id, f) for advice_id, f in outcome.advice],
        reason=reason(outcome.reason) if outcome.reason is not None else None,
        findings=ranked,
        headline=headline(outcome, verdict.utilization) if ranked else None,
        rule_findings=texts,
        ceilings=own if verdict.ceilings is not None else None,
    )


def worded(result: _Result) -> _Result:
    """`result` with every sentence of its verdict (`worded_verdict`), what the engine noted about its inputs first;
    one already worded is returned as it is. (Each unit of its ceilings is worded where a view shows it:
    `present.rules.ceilings`.)"""
    if result.classification.headline is not None:
        return result
    verdict = worded_verdict(result.classification, result.ceilings, incomplete_notes(result.source))
    return replace(result, classification=verdict)


def step_sentence(found: StepFinding) -> str:
    """One prediction step's sentence, from its template and values."""
    return sentence(Finding(found.template, "predict", found.template, found.values)) or ""


def worded_prediction(p: Prediction) -> Prediction:
    """The prediction with each step's sentence and what would narrow its interval; one already worded is returned
    as it is."""
    if all(f.text for f in p.findings) and (p.narrowing is None or p.narrow is not None):
        return p
    findings = tuple(f if f.text else replace(f, text=step_sentence(f)) for f in p.findings)
    narrow = step_sentence(p.narrowing) if p.narrowing is not None else None
    return replace(p, findings=findings, narrow=narrow)


def _inserted(data: dict[str, Any], after: str, key: str, value: Any) -> dict[str, Any]:
    """`data` with `key` after the key `after` (at the end without it), where the schema has always printed it."""
    fields = list(data.items())
    at = next((i + 1 for i, (name, _) in enumerate(fields) if name == after), len(fields))
    return dict([*fields[:at], (key, value), *fields[at:]])


def _unit_json(unit: dict[str, Any], text: str) -> dict[str, Any]:
    """A unit's JSON object with its `text` after `at_ceiling`, and its `pattern` in words ("mixed (88.9%
    scattered)")."""
    if unit.get("pattern"):
        unit = {**unit, "pattern": pattern_name(unit["pattern"], unit.get("scattered_fraction"))}
    return _inserted(unit, "at_ceiling", "text", text)


def _access_json(section: dict[str, Any], pattern: AccessPattern, after: str) -> dict[str, Any]:
    """The ceilings section's (or its roofline's) JSON with its access pattern and the counter it was read from in
    words (`access_pattern`, `access_basis`) after `after`."""
    name, basis = access_words(pattern)
    return _inserted(_inserted(section, after, "access_pattern", name), "access_pattern", "access_basis", basis)


def analysis_json(result: LaunchAnalysis, found: list[Prediction] | str | None = None) -> dict[str, Any]:
    """The launch's "tracekit.analysis/2" object as every JSON view prints it: the engine's fields, `what_to_try`
    when `found` is given (`analysis_with_tries`), and the words of its data (`present.rules.notes`): where its
    counters came from (`pairing.evidence`), where its Little's law gap comes from (`littles_law.explanation`),
    what its sweep was fitted over or why none was (`sweep.note`, `sweep_note`), why each launch its sweep left out
    was left out (`sweep.left_out[].reason`), and each ceiling unit's sentence as its `text`."""
    data = to_json_dict(result) if found is None else analysis_with_tries(result, found)
    data["pairing"] = _inserted(data["pairing"], "counters_launch_id", "evidence", counters_evidence(result))
    if result.littles_law is not None:
        explanation = littles_law_explanation(result.littles_law)
        data["littles_law"] = _inserted(data["littles_law"], "clipped_relative_error", "explanation", explanation)
    sweep = data.get("sweep")
    if isinstance(sweep, dict) and result.sweep is not None:
        sweep = data["sweep"] = _inserted(sweep, "launch_ids", "note", fitted_note(result.sweep))
    if isinstance(sweep, dict) and sweep.get("left_out"):
        # each entry's `reason` first, where the schema has always printed it; `kind` is its code
        sweep["left_out"] = [{"reason": LEFT_OUT[entry["kind"]], **entry} for entry in sweep["left_out"]]
    data = _inserted(data, "sweep", "sweep_note", sweep_note(result))
    section, ceilings = result.ceilings, data.get("ceilings")
    if section is None or not isinstance(ceilings, dict):
        return data
    words = unit_sentences(section)
    ceilings["units"] = [_unit_json(u, words[u["unit"]]) for u in ceilings["units"]]
    if ceilings.get("judged_by") is not None:
        ceilings["judged_by"] = _unit_json(ceilings["judged_by"], words[ceilings["judged_by"]["unit"]])
    if section.access is not None:
        data["ceilings"] = ceilings = _access_json(ceilings, section.access, "device_name")
    if section.access is not None and isinstance(ceilings.get("roofline"), dict):
        # the pattern its DRAM roof matches: the section's
        ceilings["roofline"] = _access_json(ceilings["roofline"], section.access, "dram_roof")
    return data
