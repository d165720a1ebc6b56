"""The labelled verdict set (sample_traces/verdict_cases/): every case's expected mode, limiter and flags, written
in labels.toml before tracekit was run on the H100 outputs, checked through the real CLI path
(`tracekit analyze <files> --json --db <temp SQLite>`).

A case's verdict is the one of its warp trace where the trace borrowed its profiled twin's counters, else the one of
its Nsight Compute launch (found by the NVTX range the program puts around each case)."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import skip_or_fail

pytestmark = pytest.mark.gpu_samples

REPO = Path(__file__).resolve().parents[2]
CASES_DIR = REPO / "sample_traces" / "verdict_cases"
OUTPUTS = CASES_DIR / "h100"
LABELS = tomllib.loads((CASES_DIR / "labels.toml").read_text())["cases"]
MODES = {"latency-bound", "throughput-bound", "undetermined"}


def _params() -> list[Any]:
    params = []
    for name, label in LABELS.items():
        marks = [pytest.mark.xfail(strict=True, reason=label["xfail"])] if label.get("xfail") else []
        params.append(pytest.param(name, id=name, marks=marks))
    return params


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Case name -> its analysis object, from one `tracekit analyze` over the raw CSV and every trace."""
    folders = sorted({label.get("outputs", "h100") for label in LABELS.values()})
    raws = [CASES_DIR / folder / "cases.raw.csv" for folder in folders]
    traces = [CASES_DIR / label.get("outputs", "h100") / label["trace"] for label in LABELS.values()]
    missing = [str(p) for p in (*raws, *traces) if not p.exists()]
    if missing:
        skip_or_fail(f"verdict case outputs missing ({', '.join(missing[:3])}): run make_verdict_cases.sh on a GPU")
    db = tmp_path_factory.mktemp("verdicts") / "store.sqlite"
    done = subprocess.run(
        [sys.executable, "-m", "tracekit.cli.main", "analyze", *map(str, raws), *map(str, traces), "--json"]
        + ["--db", str(db)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout)
    by_trace = {Path(r["source"]["path"] or "").name: r for r in results if r["source"]["format"] != "ncu-csv"}
    by_range = {r["kernel"]["nvtx_path"]: r for r in results if r["source"]["format"] == "ncu-csv"}
    chosen = {}
    for name, label in LABELS.items():
        trace = by_trace.get(label["trace"])
        chosen[name] = trace if trace is not None and trace.get("counters_from") else by_range[name]
    return chosen


def test_labels_are_complete() -> None:
    for name, label in LABELS.items():
        assert label["mode"] in MODES, name
        assert label["reason"].strip(), name
        assert isinstance(label["must"], list) and isinstance(label["must_not"], list), name
        assert not set(label["must"]) & set(label["must_not"]), name


@pytest.mark.parametrize("name", _params())
def test_case_verdict_matches_its_label(verdicts: dict[str, dict[str, Any]], name: str) -> None:
    label, result = LABELS[name], verdicts[name]
    verdict = result["classification"]
    where = f"{name} ({result['source']['path']}): {verdict['mode']} / {verdict['limiter']} {verdict['flags']}"
    assert verdict["mode"] == label["mode"], where
    allowed = label["limiter"] if isinstance(label["limiter"], list) else [label["limiter"]]
    assert verdict["limiter"] in [None if value == "none" else value for value in allowed], where
    assert set(label["must"]) <= set(verdict["flags"]), where
    assert not set(label["must_not"]) & set(verdict["flags"]), where
    if label.get("ceiling"):  # issue 20: the achievable ceiling the verdict was judged against, in the evidence
        judged = (result.get("ceilings") or {}).get("judged_by") or {}
        assert judged.get("ceiling_name") == label["ceiling"] and judged.get("at_ceiling") is True, (where, judged)
        assert judged["text"] + "." in verdict["evidence"], where
    if label.get("top_finding"):
        assert verdict["findings"][0]["kind"] == label["top_finding"], verdict["findings"]
        assert verdict["headline"] == verdict["findings"][0]["text"]


def test_copy_at_full_occupancy_gets_advice_that_agrees_with_the_measured_sweep(verdicts) -> None:
    """The held-out shape of issue 11: a plain copy still gains from 32 to 64 warps per SM. The verdict reports where
    the measured points reach 90% and 95% of the highest throughput and that no plateau is reached, never that more
    occupancy will not help."""
    result = verdicts["stream_occ64"]
    sweep, verdict = result["sweep"], result["classification"]
    assert sweep is not None
    text = "\n".join(verdict["evidence"])
    assert "plateau is not reached" in text and "90% of the highest measured throughput at" in text
    assert not any(a.startswith("More occupancy will not help") for a in verdict["advice"])
    low = verdicts["stream_occ08"]["classification"]
    assert any(a.startswith("More occupancy helps") for a in low["advice"])


def test_what_costs_the_most_sm_time_leads(verdicts) -> None:
    imbalanced = verdicts["imbalanced_blocks"]["classification"]["findings"]
    saturated = verdicts["one_wave_saturated"]["classification"]["findings"]
    assert imbalanced[0]["kind"] == "tail" and imbalanced[0]["sm_time_fraction"] > 0.5
    assert [f["sm_time_fraction"] for f in imbalanced] == sorted(
        (f["sm_time_fraction"] for f in imbalanced), reverse=True
    )
    assert saturated[0]["kind"] == "limiter" and saturated[0]["sm_time_fraction"] > 0.9


def test_the_throughput_bound_rule_reads_the_achievable_ceiling_of_the_access_pattern(verdicts) -> None:
    """Issue 20: the scattered gather (60.3% of nominal DRAM) is saturated at its scattered ceiling, and the
    stream_ilp4 copy at 76% of nominal is at ~91% of the stream ceiling: both DRAM-bound by the saturated-unit rule
    against the measured profile, not by the 60% gradual-saturation fallback or the 80%-of-nominal rule."""
    for name, ceiling in (
        ("scattered_gather", "dram_random_sector_bytes_per_s"),
        ("stream_ilp4", "dram_stream_bytes_per_s"),
    ):
        result = verdicts[name]
        verdict, judged = result["classification"], result["ceilings"]["judged_by"]
        decided = [f["id"] for f in verdict["rule_findings"] if f["rule"] == "saturated-unit"]
        assert "saturated-unit.at-ceiling" in decided, (name, decided)
        assert judged["ceiling_name"] == ceiling and judged["at_ceiling"] is True and judged["of_nominal"] < 0.8
        assert (
            judged["ceiling_source"].startswith("measured: ")
            and result["ceilings"]["source"] == judged["ceiling_source"]
        )
        assert verdict["evidence"][-1] == judged["text"] + "."
    # a verdict whose limiter has no measured ceiling names none (the XU pipe is judged by its counter)
    assert verdicts["sfu_bound"]["ceilings"]["judged_by"] is None


def test_every_rule_finds_something_on_a_labelled_case(verdicts) -> None:
    """Issue 19: each rule module is exercised by at least one labelled case — measured from the findings the rules
    return on the recorded cases (`classification.rule_findings`), not from the labels' flags alone."""
    from tracekit.analysis.rules import RULES

    fired: dict[str, set[str]] = {}
    for name, result in verdicts.items():
        for finding in result["classification"]["rule_findings"]:
            fired.setdefault(finding["rule"], set()).add(name)
    silent = sorted(module.RULE_ID for module in RULES if module.RULE_ID not in fired)
    assert silent == sorted(NOT_YET_EXERCISED), f"rules that find nothing on any labelled case: {silent}"


# Rules no recorded case makes fire yet (each needs a case recorded for it on the GPU); the list must shrink, and a
# rule that starts firing must come off it.
NOT_YET_EXERCISED = {
    "launch-overhead": "needs a case whose timed event is much longer than its warps' span (a tiny launch)",
    "nsight-cross-check": "needs Nsight's rule results: the cases are analysed from the raw page, which has none",
    "sweep-plateau": "needs one kernel at several occupancies in one sweep family (stream_occ* differ in padding)",
}
