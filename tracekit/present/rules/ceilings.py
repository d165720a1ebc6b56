"""Each unit of a launch's ceilings section in words, one wording for every view: the speed-of-light chart's hover
(report, launch page, compare page, notebook) and the `text` of `ceilings.units[]` and `ceilings.judged_by` in the
analysis JSON (`analyze --json`, the JSON report, the HTTP API: `worded.analysis_json`). The engine's
`AchievableUtilization` holds numbers only; the sentence is `sentences.achievable_sentence`, the words of the
verdict's judged-by finding."""

from __future__ import annotations

from tracekit.analysis.launch_ceilings import LaunchCeilings
from tracekit.analysis.rules.base import section_nominal_note
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
