"""Each unit of a launch's ceilings section in words, one wording for every view: the speed-of-light chart's hover
(report, launch page, compare page, notebook) and the `text` of `ceilings.units[]` and `ceilings.judged_by` in the
analysis JSON (`analyze --json`, the JSON report, the HTTP API: `worded.analysis_json`). The engine's
`AchievableUtilization` holds numbers only; the sentence is `sentences.achievable_sentence`, the words of the
verdict's judged-by finding. A launch's access pattern and the counter it was read from (`AccessPattern`) in words:
`access_words` (the JSON's `access_pattern` and `access_basis`)."""

from __future__ import annotations

from tracekit.analysis.achievable import AccessBasis, AccessPattern
from tracekit.analysis.launch_ceilings import LaunchCeilings
from tracekit.analysis.rules.base import section_nominal_note
from tracekit.present.rules.sentences import achievable_sentence
from tracekit.present.rules.values import pattern_name, share


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


def access_basis(pattern: AccessPattern) -> str:
    """The counter an access pattern was read from, with its value: "7.11 of 32 bytes used per sector"."""
    tma = (
        f"; {share(pattern.tma_fraction)} of load sectors are TMA bulk copies (whole tiles)"
        if pattern.tma_fraction > 0
        else ""
    )
    match pattern.basis:
        case AccessBasis.BYTES_PER_SECTOR:
            used = f"{pattern.data_bytes_per_sector:.3g} of 32 bytes used per sector"
            return f"{used} of the LSU's loads{tma}" if tma else used
        case AccessBasis.SECTORS_PER_REQUEST:
            return f"{pattern.sectors_per_request:.3g} sectors per load request{tma}"
        case AccessBasis.NO_LSU_LOADS:
            return f"no LSU loads{tma}: a stream"
    return "no sector counters: assumed a stream"


def access_words(pattern: AccessPattern) -> tuple[str, str]:
    """A launch's access pattern ("stream", "mixed (88.9% scattered)") and the counter it was read from."""
    return pattern_name(pattern.kind, pattern.scattered_fraction), access_basis(pattern)
