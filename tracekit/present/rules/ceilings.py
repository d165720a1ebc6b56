"""Each unit of a launch's ceilings section in words, one wording for every view: the speed-of-light chart's hover
(report, launch page, compare page, notebook) and the `text` of `ceilings.units[]` and `ceilings.judged_by` in the
analysis JSON (`analyze --json`, the JSON report, the HTTP API). The engine's `AchievableUtilization` holds numbers
only; the sentence is `present.rules.sentences.achievable_sentence`, the words of the verdict's judged-by finding."""

from __future__ import annotations

from typing import Any

from tracekit.analysis.launch_ceilings import LaunchCeilings
from tracekit.analysis.predict import Prediction
from tracekit.analysis.predict.json import analysis_with_tries
from tracekit.analysis.rules.base import section_nominal_note
from tracekit.analysis.types import LaunchAnalysis, to_json_dict
from tracekit.present.rules.notes import LEFT_OUT
from tracekit.present.rules.sentences import achievable_sentence


def unit_sentences(section: LaunchCeilings | None) -> dict[str, str]:
    """Each unit's sentence by its name (`AchievableUtilization.unit`): "DRAM 2.02 TB/s: 60.3% of nominal, 96.8% of
    what scattered 32-byte sectors reach on this GPU (measured: <file>)"; against nominal peaks, the device that has
    no measured profile."""
    if section is None:
        return {}
    note = next((v.value for v in section_nominal_note(section)), None)
    device = str(note) if note else None
    words = {u.unit: achievable_sentence(u, device) for u in section.units}
    judged = section.judged_by  # one of the units (classification picks it among them)
    if judged is not None and judged.unit not in words:
        words[judged.unit] = achievable_sentence(judged, device)
    return words


def _with_text(unit: dict[str, Any], text: str) -> dict[str, Any]:
    """A unit's JSON object with its `text` after `at_ceiling`, where the schema has always printed it."""
    fields = list(unit.items())
    at = next((i + 1 for i, (name, _) in enumerate(fields) if name == "at_ceiling"), len(fields))
    return dict([*fields[:at], ("text", text), *fields[at:]])


def analysis_json(result: LaunchAnalysis, found: list[Prediction] | str | None = None) -> dict[str, Any]:
    """The launch's "tracekit.analysis/2" object as every JSON view prints it: the engine's fields, `what_to_try`
    when `found` is given (`analysis_with_tries`), each ceiling unit's sentence as its `text` and why each launch
    its sweep left out was left out (`sweep.left_out[].reason`)."""
    data = to_json_dict(result) if found is None else analysis_with_tries(result, found)
    sweep = data.get("sweep")
    if isinstance(sweep, dict) and sweep.get("left_out"):
        # each entry's `reason` first, where the schema has always printed it; `kind` is its code
        sweep["left_out"] = [{"reason": LEFT_OUT[entry["kind"]], **entry} for entry in sweep["left_out"]]
    section, ceilings = result.ceilings, data.get("ceilings")
    if section is None or not isinstance(ceilings, dict):
        return data
    words = unit_sentences(section)
    ceilings["units"] = [_with_text(u, words[u["unit"]]) for u in ceilings["units"]]
    if ceilings.get("judged_by") is not None:
        ceilings["judged_by"] = _with_text(ceilings["judged_by"], words[ceilings["judged_by"]["unit"]])
    return data
