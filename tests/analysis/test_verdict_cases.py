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


def _analyze(tmp_path_factory: pytest.TempPathFactory, files: list[Path]) -> list[dict[str, Any]]:
    """`tracekit analyze FILES --json` into a fresh store: one analysis object per launch."""
    db = tmp_path_factory.mktemp("verdicts") / "store.sqlite"
    done = subprocess.run(
        [sys.executable, "-m", "tracekit.cli.main", "analyze", *map(str, files), "--json", "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return list(json.loads(done.stdout))


def _fired(result: dict[str, Any]) -> set[str]:
    """The rules that returned a finding on one launch: its rule findings, and the costs ranked by SM time (where
    launch-overhead reports, `findings[].id` = `<rule>.<kind>`)."""
    verdict = result["classification"]
    return {f["rule"] for f in verdict["rule_findings"]} | {f["id"].split(".")[0] for f in verdict["findings"]}


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Case name -> its analysis object, from one `tracekit analyze` over the raw CSV and every trace."""
    folders = sorted({label.get("outputs", "h100") for label in LABELS.values()})
    raws = [CASES_DIR / folder / "cases.raw.csv" for folder in folders]
    traces = [CASES_DIR / label.get("outputs", "h100") / label["trace"] for label in LABELS.values()]
    missing = [str(p) for p in (*raws, *traces) if not p.exists()]
    if missing:
        skip_or_fail(f"verdict case outputs missing ({', '.join(missing[:3])}): run make_verdict_cases.sh on a GPU")
    results = _analyze(tmp_path_factory, [*raws, *traces])
    by_trace = {Path(r["source"]["path"] or "").name: r for r in results if r["source"]["format"] != "ncu-csv"}
    by_range = {r["kernel"]["nvtx_path"]: r for r in results if r["source"]["format"] == "ncu-csv"}
    chosen = {}
    for name, label in LABELS.items():
        trace = by_trace.get(label["trace"])
        chosen[name] = trace if trace is not None and trace.get("counters_from") else by_range[name]
    return chosen


@pytest.fixture(scope="module")
def alone(tmp_path_factory: pytest.TempPathFactory, verdicts) -> dict[str, dict[str, dict[str, Any]]]:
    """The cases as a user with one kind of file sees them: the details page alone (ncu's default CSV page, which
    carries Nsight's rule results but not every raw counter) -> {case: analysis}, and the warp traces alone (times,
    no counters) -> {case: analysis}."""
    folders = sorted({label.get("outputs", "h100") for label in LABELS.values()})
    details = _analyze(tmp_path_factory, [CASES_DIR / folder / "cases.details.csv" for folder in folders])
    traces = _analyze(
        tmp_path_factory, [CASES_DIR / label.get("outputs", "h100") / label["trace"] for label in LABELS.values()]
    )
    by_range = {r["kernel"]["nvtx_path"]: r for r in details}
    by_trace = {Path(r["source"]["path"] or "").name: r for r in traces}
    return {
        "details": {name: by_range[name] for name in LABELS},
        "traces": {name: by_trace[label["trace"]] for name, label in LABELS.items()},
    }


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
    assert set(label.get("rules", [])) <= _fired(result), (where, sorted(_fired(result)))
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
        # issue 26: the stream of its read:write mix, 42% of its DRAM bytes written (a copy whose last writes are
        # still in L2 when it ends): between the 2:1 and 1:1 streams
        ("stream_ilp4", "dram_stream_by_mix.2:1~1:1"),
    ):
        result = verdicts[name]
        verdict, judged = result["classification"], result["ceilings"]["judged_by"]
        decided = [f["id"] for f in verdict["rule_findings"] if f["rule"] in ("saturated-unit", "gradual-saturation")]
        assert {"saturated-unit.at-ceiling", "gradual-saturation.memory"} & set(decided), (name, decided)
        assert judged["ceiling_name"] == ceiling and judged["of_achievable"] > 0.8 and judged["of_nominal"] < 0.8
        assert (
            judged["ceiling_source"].startswith("measured: ")
            and result["ceilings"]["source"] == judged["ceiling_source"]
        )
        assert verdict["evidence"][-1] == judged["text"] + "."
    # a verdict whose limiter has no measured ceiling names none (the XU pipe is judged by its counter)
    assert verdicts["sfu_bound"]["ceilings"]["judged_by"] is None


def test_every_rule_finds_something_on_a_labelled_case(verdicts, alone) -> None:
    """Issue 19: each rule module is exercised by at least one labelled case — measured from the findings the rules
    return on the recorded cases (`classification.rule_findings` and the costs ranked by SM time), not from the
    labels' flags alone. A case counts as analysed with its counters (the verdict the labels check), from its
    details page alone (Nsight's rule results: nsight-cross-check) or from its trace alone (no counters: the
    measured sweep decides, sweep-plateau)."""
    from tracekit.analysis.rules.verdict import RULES

    fired: dict[str, set[str]] = {}
    for results in (verdicts, alone["details"], alone["traces"]):
        for name, result in results.items():
            for rule in _fired(result):
                fired.setdefault(rule, set()).add(name)
    silent = sorted(module.RULE_ID for module in RULES if module.RULE_ID not in fired)
    assert not silent, f"rules that find nothing on any labelled case: {silent}"
    assert "ilp4_occ64" in fired["sweep-plateau"] and "nsight-cross-check" in fired


def test_from_traces_alone_the_measured_sweep_decides(alone) -> None:
    """Without counters, the occupancy sweep of one kernel decides the mode (Volkov 2016 ch. 3): the ILP-4 copy
    reaches its plateau by 32 warps/SM (throughput-bound, no unit named) and is still rising at 8; the plain copy
    (stream_occ*) still gains from 32 to 64 warps/SM, so its launches are below the plateau."""
    expected = {
        "ilp4_occ08": ("latency-bound", "sweep-plateau.still-rising"),
        "ilp4_occ32": ("throughput-bound", "sweep-plateau.plateau-no-unit"),
        "ilp4_occ64": ("throughput-bound", "sweep-plateau.plateau-no-unit"),
        "stream_occ64": ("latency-bound", "sweep-plateau.still-rising"),
    }
    for name, (mode, finding) in expected.items():
        verdict = alone["traces"][name]["classification"]
        found = [f["id"] for f in verdict["rule_findings"] if f["rule"] == "sweep-plateau"]
        assert (verdict["mode"], verdict["limiter"], found) == (mode, None, [finding]), name
    sweep = alone["traces"]["ilp4_occ64"]["sweep"]
    assert sweep["plateau_reached"] is True and 16 < sweep["occupancy_at_95pct_warps_per_sm"] < 32


def test_nsight_rules_are_cross_checked_from_the_details_page(alone) -> None:
    """The details page carries Nsight's OPT/WRN rule results; each is cross-checked with the verdict's flags.
    Nsight's UncoalescedGlobalAccess on the random gather agrees with the uncoalesced-access flag."""
    rules = alone["details"]["random_gather"]["classification"]["nsight_rules"]
    uncoalesced = [r for r in rules if r["name"] == "UncoalescedGlobalAccess"]
    assert uncoalesced and uncoalesced[0]["flag"] == "uncoalesced-access", rules
