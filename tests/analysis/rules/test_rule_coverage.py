"""Every rule has a test of its own and a labelled verdict case that exercises it, or is named below.

A labelled case (sample_traces/verdict_cases/labels.toml) exercises a rule when its `must` holds a flag the rule
raises (the rule module's `FLAGS`) or its `rules` names the rule (it must return a finding on the case). Rules
without such a case are listed in `WITHOUT_CASE`, each with why, so the list is visible and shrinks as cases are
recorded; a listed rule that gains a case fails the test until it is taken off the list.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from tracekit.analysis.rules.verdict import RULES

REPO = Path(__file__).resolve().parents[3]
LABELS = tomllib.loads((REPO / "sample_traces" / "verdict_cases" / "labels.toml").read_text())["cases"]

WITHOUT_CASE = {
    # Rules that raise no flag: they name the limiter or explain the verdict, which the verdict cases check by
    # mode and limiter (and tests/analysis/test_refactor_snapshot.py checks on every sample).
    "saturated-unit": "names the limiter (fma_bound, sfu_bound, ... check it by limiter)",
    "dram-vs-l2": "names DRAM behind a busy L2 (stream_ilp4 checks it by limiter)",
    "tied-limiters": "names ties beside the limiter",
    "gradual-saturation": "names the memory limiter (stream_occ64 checks it by limiter)",
    "sweep-plateau": "decides where no counter does: fires on ilp4_occ* analysed from their traces alone "
    "(tests/analysis/test_verdict_cases.py)",
    "stall-summary": "describes the stalls",
    "needed-occupancy": "gives n* (needed_occupancy_warps_per_sm)",
    "occupancy-gap": "describes achieved vs theoretical occupancy",
    "trace-tail": "describes the trace's tail",
    "nsight-cross-check": "cross-checks Nsight's rules: fires on the cases' details pages (test_verdict_cases.py)",
}


def _exercised() -> dict[str, list[str]]:
    return {
        module.RULE_ID: sorted(
            name
            for name, label in LABELS.items()
            if set(module.FLAGS) & set(label["must"]) or module.RULE_ID in label.get("rules", [])
        )
        for module in RULES
    }


def test_each_rule_has_its_own_test_file() -> None:
    here = Path(__file__).parent
    missing = [m.__name__ for m in RULES if not (here / f"test_{m.__name__.rsplit('.', 1)[-1]}.py").exists()]
    assert not missing, missing


def test_each_rule_is_exercised_by_a_labelled_case_or_listed() -> None:
    exercised = _exercised()
    unlisted = sorted(rule for rule, cases in exercised.items() if not cases and rule not in WITHOUT_CASE)
    assert not unlisted, f"rules no labelled case exercises: {unlisted} (record a case, or list it with why)"
    stale = sorted(rule for rule in WITHOUT_CASE if exercised.get(rule))
    assert not stale, f"listed as without a case but exercised now: {stale}: take them off WITHOUT_CASE"
    assert set(WITHOUT_CASE) <= set(exercised), sorted(set(WITHOUT_CASE) - set(exercised))


def test_rule_modules_declare_id_inputs_flags_and_reason() -> None:
    ids = [m.RULE_ID for m in RULES]
    assert len(ids) == len(set(ids))
    for module in RULES:
        assert module.__doc__ and len(module.__doc__) > 100, module.__name__
        assert callable(module.apply) and isinstance(module.INPUTS, tuple) and isinstance(module.FLAGS, tuple)
