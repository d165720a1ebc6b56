"""Issue 42, one wording layer: `tracekit/analysis/` returns data and `tracekit/present/` writes every sentence. A
unit against its ceiling, the engine's notes on an incomplete input and a regression gate's finding are data in the
results (codes and numbers in frozen dataclasses); each view takes their words from present, one wording for all."""

from __future__ import annotations

import ast
import dataclasses
import gzip
import html
from pathlib import Path

import pytest

from tests.helpers import skip_or_fail
from tracekit.analysis.achievable import AchievableUtilization
from tracekit.analysis.comparison import GateResult
from tracekit.analysis.engine import analyze
from tracekit.analysis.types import LeftOut, Source
from tracekit.api import analyze_stored
from tracekit.ingest import ingest
from tracekit.present.launch import answer_figures
from tracekit.present.rules.ceilings import unit_sentences
from tracekit.present.rules.notes import incomplete_notes
from tracekit.store import Store
from tracekit.stored.analyses import device_ceilings
from tracekit.stored.inputs import load_inputs

REPO = Path(__file__).resolve().parents[2]
ANALYSIS = REPO / "tracekit" / "analysis"


def _strings(path: Path) -> list[str]:
    """Every string literal of a module but its docstrings, the literal parts of its f-strings included."""
    tree = ast.parse(path.read_text())
    docstrings = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


@pytest.mark.parametrize(
    ("module", "words"),
    [
        # the sentence of a unit against its ceiling (present/rules/ceilings.py, values.against)
        ("achievable.py", ("of nominal", "reach on this GPU", "tensor roof", "Shared memory", "Block launch rate")),
        # the evidence lines of an incomplete trace or profile, why a launch is left out of its sweep (present/rules/
        # notes.py)
        ("engine.py", ("is incomplete", "the trace's point", "measured occupancy", "same measurement")),
        # a gate's message (present/comparison.gate_message)
        ("comparison.py", ("FAILED", "passed:", "not evaluated", "changed by", "run-to-run spread)")),
    ],
)
def test_the_analysis_writes_none_of_these_sentences(module: str, words: tuple[str, ...]) -> None:
    found = [(text, word) for text in _strings(ANALYSIS / module) for word in words if word in text]
    assert found == []


def test_the_results_carry_no_free_text_for_them() -> None:
    """The unit and the gate result hold numbers and codes; the engine's notes are the source's own fields."""
    assert "text" not in {f.name for f in dataclasses.fields(AchievableUtilization)}
    assert not hasattr(AchievableUtilization, "sentence")
    assert "message" not in {f.name for f in dataclasses.fields(GateResult)}
    assert {"incomplete", "incomplete_launch"} <= {f.name for f in dataclasses.fields(Source)}
    assert [f.name for f in dataclasses.fields(LeftOut)] == ["kind", "launch_ids", "same_as_launch_ids"]


@pytest.fixture(scope="module")
def incomplete_store(tmp_path_factory) -> Store:
    """The ceilings verdict cases' Nsight Compute export (judged by the shipped H100 profile), and a warp trace cut
    to its first 100 warps (imported with --allow-incomplete)."""
    trace, details = (
        REPO / "sample_traces/h100/vector_add_64warps.csv.gz",
        REPO / "sample_traces/verdict_cases/h100_ceilings/cases.raw.csv",
    )
    for path in (trace, details):
        if not path.exists():
            skip_or_fail(f"{path} is missing: run sample_traces/make_samples.sh on a GPU machine")
    folder = tmp_path_factory.mktemp("words")
    with gzip.open(trace, "rt") as handle:
        lines = handle.read().splitlines()
    data_start = next(i for i, line in enumerate(lines) if not line.startswith("#")) + 1
    truncated = folder / "truncated.csv"
    truncated.write_text("\n".join(lines[: data_start + 100]) + "\n")
    store = Store.open(f"sqlite:///{folder / 's.sqlite'}")
    ingest(store, truncated, allow_incomplete=True)
    ingest(store, details)
    return store


def test_the_engine_notes_an_incomplete_trace_as_data_and_present_says_it_first(incomplete_store: Store) -> None:
    launches = incomplete_store.launches()
    traced = launches.filter(launches["import_id"] == 1)
    raw = analyze(load_inputs(incomplete_store, traced), ceilings_for=device_ceilings)[0]
    # the engine: a flag and the importer's reason, no sentence in the evidence
    assert raw.classification.flags[0] == "incomplete-trace" and raw.classification.evidence == []
    assert raw.source.incomplete and raw.source.incomplete_launch is None
    shown = analyze_stored(incomplete_store, traced)[0]  # what every view gets: worded once, by present
    first = f"The trace is incomplete ({raw.source.incomplete})."
    assert shown.classification.evidence[0] == first == incomplete_notes(shown.source)[0]
    assert shown.classification.evidence.count(first) == 1


def test_each_unit_is_worded_once_for_the_json_the_verdict_and_the_chart(incomplete_store: Store) -> None:
    """The ceilings verdict cases, judged by the measured H100 profile: each unit's `text` in the JSON is its present
    sentence (where the schema always printed it, after `at_ceiling`), `judged_by`'s is the verdict's last evidence
    line, and the speed-of-light chart's hover says the same."""
    launches = incomplete_store.launches()
    results = analyze_stored(incomplete_store, launches.filter(launches["import_id"] == 2))
    judged = hovered = 0
    for result, data in zip(results, results.to_dicts(), strict=True):
        section = result.ceilings
        if section is None:
            continue
        words = unit_sentences(section)
        for unit, shown in zip(section.units, data["ceilings"]["units"], strict=True):
            assert shown["text"] == words[unit.unit]
            keys = list(shown)
            assert keys[keys.index("at_ceiling") + 1] == "text"
            assert "(measured: " in shown["text"]  # the shipped H100 profile judges these launches
        if section.judged_by is not None:
            judged += 1
            text = data["ceilings"]["judged_by"]["text"]
            assert text == words[section.judged_by.unit] and result.classification.evidence[-1] == text + "."
        sol = next((f.spec for f in answer_figures(result) if f.key == "speed_of_light"), None)
        if sol is None:
            continue
        bars, *ticks = sol["data"]
        # a bar's hover: its % of peak, then the sentence of the ceiling drawn on its row; a tick's: the sentence
        on_bars = [line.split("<br>", 1)[1] for line in bars["hovertext"] if "<br>" in line]
        escaped = {html.escape(text) for text in words.values()}
        assert set(on_bars) <= escaped and {line for t in ticks for line in t["hovertext"]} <= escaped
        hovered += len(on_bars)
    assert judged > 0 and hovered > 0
