"""Issue 42, one wording layer: `tracekit/analysis/` returns data and `tracekit/present/` writes every sentence. A
unit against its ceiling, the engine's notes on an incomplete input and a regression gate's finding are data in the
results (codes and numbers in frozen dataclasses); each view takes their words from present, one wording for all.
So are where a launch's counters came from (`Pairing.reason`), where its Little's law gap comes from, what its sweep
was fitted over or why none was (`SweepFamily`), and its access pattern and the counter it was read from
(`AccessPattern`): the JSON keeps their keys and words (`pairing.evidence`, `littles_law.explanation`, `sweep.note`,
`sweep_note`, `ceilings.access_pattern`, `ceilings.access_basis`). So are a source line's evidence (`LineEvidence`),
the limiter's lines and the source lines' notes (`tracekit lines`' `evidence`, `limiter.sentence`, `notes`)."""

from __future__ import annotations

import ast
import dataclasses
import gzip
import html
import json
from pathlib import Path

import polars as pl
import pytest

from tests.helpers import skip_or_fail
from tracekit.analysis.achievable import AccessBasis, AccessPattern, AchievableUtilization
from tracekit.analysis.comparison import GateResult
from tracekit.analysis.engine import analyze
from tracekit.analysis.launch_ceilings import LaunchCeilings
from tracekit.analysis.roofline import Roofline
from tracekit.analysis.source_lines import (
    KIND_BANK,
    KIND_CHAIN,
    KIND_MEMORY,
    LIMITER_COUNTERS,
    EvidenceCode,
    FixEstimate,
    LimiterLines,
    LineEvidence,
    SourceLine,
    SourceLinesNote,
    analyze_source_lines,
)
from tracekit.analysis.types import LaunchAnalysis, LeftOut, LittlesLaw, Pairing, Source, Sweep
from tracekit.api import analyze_stored
from tracekit.cli.analyze_command import summary_lines
from tracekit.ingest import ingest
from tracekit.parsed import SOURCE_SAMPLE_SCHEMA, conform
from tracekit.present.launch import answer_figures, launch_tables
from tracekit.present.rules.ceilings import access_words, unit_sentences
from tracekit.present.rules.notes import counters_evidence, fitted_note, incomplete_notes, littles_law_explanation
from tracekit.present.rules.notes import sweep_note as family_sweep_note
from tracekit.present.source_lines import BOUND_WORDS, evidence_words, limiter_sentence, panel_sentences, to_json
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
        # an access pattern and its basis, a derived ceiling's detail (present/rules/ceilings.py: access_words)
        (
            "achievable.py",
            ("scattered)", "bytes used per sector", "per load request", "TMA bulk", "assumed a stream", "read:write"),
        ),
        ("launch_ceilings.py", ("no duration counter",)),
        # the evidence lines of an incomplete trace or profile, why a launch is left out of its sweep, the own
        # counters and --pair (present/rules/notes.py)
        (
            "engine.py",
            (
                "is incomplete",
                "the trace's point",
                "measured occupancy",
                "same measurement",
                "own counters",
                "by the user",
            ),
        ),
        # where the counters came from (present/rules/notes.py: pairing_evidence)
        ("pairing.py", ("durations agree", "repeats)", "ambiguous:", "no profiled launch", "not borrowed", "(--pair)")),
        # the Little's law gap (notes.edge_explanation), the sweep's notes (notes.family_note, fitted_note)
        ("littles_law.py", ("closes exactly", "edge effects", "straddle the")),
        ("sweep_rule.py", ("No occupancy sweep", "Sweep fitted over", "needs ")),
        # a gate's message (present/comparison.gate_message)
        ("comparison.py", ("FAILED", "passed:", "not evaluated", "changed by", "run-to-run spread)")),
        # a source line's evidence, the limiter's lines, the notes and the fix's basis (present/source_lines.py)
        (
            "source_lines.py",
            ("bank conflict:", "of its", "of the samples", "lanes active", "one chain", "warp samples", "-bound"),
        ),
        ("source_lines.py", ("excess L2", "no limiter named", "top stall", "-lineinfo", "widened by a tenth")),
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
    assert "evidence" not in {f.name for f in dataclasses.fields(Pairing)}
    assert "explanation" not in {f.name for f in dataclasses.fields(LittlesLaw)}
    assert "note" not in {f.name for f in dataclasses.fields(Sweep)}
    assert "sweep_note" not in {f.name for f in dataclasses.fields(LaunchAnalysis)}
    assert not hasattr(AccessPattern, "name") and dataclasses.fields(AccessPattern)[1].type in (
        "AccessBasis",
        AccessBasis,
    )
    for section in (LaunchCeilings, Roofline):
        assert not {"access_pattern", "access_basis"} & {f.name for f in dataclasses.fields(section)}


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


@pytest.fixture(scope="module")
def paired_store(tmp_path_factory) -> Store:
    """The H100 samples' Nsight Compute export and the vector_add trace it pairs with (a sweep of 4 launches), and
    the gather sweep's export, whose loads are a mix of stream and scattered sectors."""
    files = [
        REPO / "sample_traces/h100/samples.raw.csv",
        REPO / "sample_traces/h100/vector_add_64warps.csv.gz",
        REPO / "sample_traces/sweeps/h100/sweep_gather.raw.csv.gz",
    ]
    for path in files:
        if not path.exists():
            skip_or_fail(f"{path} is missing: run sample_traces/make_samples.sh on a GPU machine")
    store = Store.open(f"sqlite:///{tmp_path_factory.mktemp('paired') / 's.sqlite'}")
    for path in files:
        ingest(store, path)
    return store


def test_the_json_the_text_and_the_tables_say_the_data_in_presents_words(paired_store: Store) -> None:
    """The pairing, the Little's law gap, the sweep's notes and the access pattern: the JSON's keys, where the schema
    has always printed them, hold present's words of the result's data, and the CLI and the launch tables say the
    same."""
    results = analyze_stored(paired_store, paired_store.launches())
    traced = next(r for r in results if r.warps is not None)
    data = next(d for r, d in zip(results, results.to_dicts(), strict=True) if r is traced)
    # paired by the rule: the code and the durations it compared, in words
    assert traced.pairing.reason == "duration" and traced.pairing.counters_duration_ns is not None
    evidence = counters_evidence(traced)
    assert evidence.startswith("same kernel key, and the durations agree: ") and evidence.endswith("within 3x)")
    assert list(data["pairing"])[:4] == ["status", "counters_launch_id", "evidence", "reason"]
    assert data["pairing"]["evidence"] == evidence and f"  counters: {evidence}" in summary_lines(traced)
    launch = next(t for t in launch_tables(traced) if t.title == "Launch")
    assert ["counters", evidence] in launch.rows
    # Little's law: the steady state's edges
    law = traced.littles_law
    assert law is not None and data["littles_law"]["explanation"] == littles_law_explanation(law)
    assert data["littles_law"]["explanation"].startswith("edge effects: ")
    keys = list(data["littles_law"])
    assert keys[keys.index("clipped_relative_error") + 1] == "explanation"
    # the sweep over vector_add's 4 launches: one note for `sweep.note`, `sweep_note` and the text
    assert traced.sweep is not None and traced.sweep_family is not None and traced.sweep_family.outcome == "fitted"
    note = fitted_note(traced.sweep)
    assert note.startswith("Sweep fitted over 4 launches (ids ") and note.endswith(" warps per SM.")
    assert data["sweep"]["note"] == data["sweep_note"] == family_sweep_note(traced) == note
    assert f"  sweep: {note}" in summary_lines(traced)
    assert list(data)[list(data).index("sweep") + 1] == "sweep_note"
    alone = [r for r in results if r.sweep is None and r.sweep_family is not None]
    assert alone and all((family_sweep_note(r) or "").startswith("No occupancy sweep: ") for r in alone)
    # the gather's loads: a mix, worded with its share in the JSON's pattern keys and the DRAM unit's sentence
    mixed = [(r, d) for r, d in zip(results, results.to_dicts(), strict=True) if r.ceilings and r.ceilings.access]
    mixed = [(r, d) for r, d in mixed if r.ceilings.access.kind == "mixed"]  # type: ignore[union-attr]
    assert mixed
    for result, shown in mixed:
        section = result.ceilings
        assert section is not None and section.access is not None and section.roofline is not None
        name, basis = access_words(section.access)
        assert name.startswith("mixed (") and name.endswith("% scattered)") and basis.endswith(" used per sector")
        assert (shown["ceilings"]["access_pattern"], shown["ceilings"]["access_basis"]) == (name, basis)
        roof = shown["ceilings"]["roofline"]
        assert (roof["access_pattern"], roof["access_basis"]) == (name, basis) and "access" not in roof
        dram = next(u for u in shown["ceilings"]["units"] if u["unit"] == "dram")
        assert dram["pattern"] == name and f"what a {name} access reaches" in dram["text"]


def _texts(value: object) -> list[str]:
    """Every string a result holds, its dataclasses, tuples and enums walked."""
    if isinstance(value, str):
        return [value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [t for f in dataclasses.fields(value) for t in _texts(getattr(value, f.name))]
    if isinstance(value, (tuple, list)):
        return [t for item in value for t in _texts(item)]
    return []


def test_the_source_lines_analysis_carries_no_sentences() -> None:
    """On the recorded H200 set (every launch, each limiter form): a line's evidence is a `LineEvidence` (a code and
    numbers), the limiter's lines and the fix hold no sentence, the notes are codes. Every string the results hold is
    a code (a kind, an evidence code, a note, a stall reason, a counter's column, the limiter) or the profile's own
    data (a file, SASS, an inlined place, an operation)."""
    assert [f.type for f in dataclasses.fields(SourceLine) if f.name == "evidence"] in (
        ["LineEvidence"],
        [LineEvidence],
    )
    assert "sentence" not in {f.name for f in dataclasses.fields(LimiterLines)}
    assert "basis" not in {f.name for f in dataclasses.fields(FixEstimate)}
    assert {f.type for f in dataclasses.fields(LineEvidence)} - {"EvidenceCode", "str | None"} == {
        "float | None",
        "int | None",
        "tuple[int, ...]",
    }
    pytest.importorskip("ncu_report")
    from tests.importers.test_ncu_source import parsed

    p = parsed()
    codes = {str(c) for c in (*EvidenceCode, *SourceLinesNote)} | set(LIMITER_COUNTERS) | set(LIMITER_COUNTERS.values())
    seen: set[EvidenceCode] = set()
    for key in p.launches["launch_key"].to_list():
        samples = p.source_samples.filter(pl.col("launch_key") == key)
        for limiter in (None, "dram", "l1/shared"):
            result = analyze_source_lines(samples, 1000.0, limiter)
            assert result is not None
            data = {t for x in result.lines for t in (x.file, x.sass, *x.inline_chain, *x.operations) if t}
            kinds = {x.kind for x in result.lines}
            stalls = {s.reason for x in result.lines for s in x.stalls}
            assert set(_texts(result)) <= codes | data | kinds | stalls
            seen |= {x.evidence.code for x in result.lines}
    # the recorded set names most kinds of evidence: the views' words of each are those of the records below
    assert len(seen) >= 10, seen


# One record of each kind of evidence, and its words: the numbers as the record holds them (fractions), in the
# sentence every view shows (`tracekit lines`, its JSON, the report, the launch page).
EVIDENCE_WORDS = [
    (
        LineEvidence(EvidenceCode.LOCAL_MEMORY, samples_share=0.69),
        "local-memory loads/stores; 69% of the samples",
    ),
    (
        LineEvidence(EvidenceCode.GLOBAL_ATOMICS, samples_share=0.991),
        "global atomics; 99% of the samples",
    ),
    (
        LineEvidence(EvidenceCode.ORDERED_ATOMICS, samples_share=0.2, stall="membar", stall_share=0.25),
        "25% of its samples wait at a memory barrier, as ordered (acquire/release) atomics do (no instructions in the"
        " profile to confirm it); 20% of the samples",
    ),
    (
        LineEvidence(EvidenceCode.BANK_CONFLICT, excess_share=0.3, conflict_nway=4.0),
        "a 4-way bank conflict: 30% of its shared wavefronts are excess",
    ),
    (
        LineEvidence(EvidenceCode.BANK_CONFLICT, excess_share=0.26, conflict_nway=None),
        "a bank conflict: 26% of its shared wavefronts are excess",
    ),
    (
        LineEvidence(EvidenceCode.UNCOALESCED, excess_share=0.78, sectors_per_needed=4.54),
        "78% of its L2 sectors are excess, 4.5 sectors for each one needed",
    ),
    (
        LineEvidence(EvidenceCode.UNCOALESCED, excess_share=1.0, sectors_per_needed=None),
        "100% of its L2 sectors are excess",
    ),
    (
        LineEvidence(EvidenceCode.BRANCH_LANES, active_lanes_share=0.4, body_lines=(15,)),
        "the branch it decides runs line 15 with 40% of the lanes active",
    ),
    (
        LineEvidence(EvidenceCode.BRANCH_LANES, active_lanes_share=0.5, body_lines=(14, 16)),
        "the branch it decides runs lines 14, 16 with 50% of the lanes active",
    ),
    (
        LineEvidence(EvidenceCode.OWN_LANES, active_lanes_share=0.12),
        "12% of the lanes active on average",
    ),
    (
        LineEvidence(EvidenceCode.BARRIER_WAIT, stall="barrier", stall_share=0.8),
        "80% of its samples wait at the barrier",
    ),
    (
        LineEvidence(EvidenceCode.BARRIER_WAIT, stall="barrier", stall_share=0.8, stretch_idle_share=0.07),
        "80% of its samples wait at the barrier; lanes idle in the steps it ends: 7% of the samples",
    ),
    (
        LineEvidence(EvidenceCode.DEPENDENCY_CHAIN, stall_share=0.82),
        "82% of its samples wait on the previous instruction's result",
    ),
    (
        LineEvidence(EvidenceCode.JOINED_CHAIN, stall_share=0.9, line_first=10, line_last=13),
        "lines 10-13, one chain: 90% of their samples wait on the previous instruction's result",
    ),
    (
        LineEvidence(EvidenceCode.MEMORY_WAIT, stall="long_scoreboard", stall_share=0.53),
        "53% of its samples wait on memory (long_scoreboard)",
    ),
    (
        LineEvidence(EvidenceCode.ISSUE, stall="selected", stall_share=0.28),
        "28% of its samples issue or wait to (selected)",
    ),
    (LineEvidence(EvidenceCode.TOP_STALL, stall="imc_miss", stall_share=0.6), "top stall imc_miss"),
    (LineEvidence(EvidenceCode.NO_SAMPLES), "no samples"),
]


@pytest.mark.parametrize(("evidence", "words"), EVIDENCE_WORDS, ids=lambda x: getattr(x, "code", None))
def test_present_words_each_kind_of_evidence_from_its_numbers(evidence: LineEvidence, words: str) -> None:
    assert evidence_words(evidence) == words


def test_every_evidence_code_has_its_words() -> None:
    assert {evidence.code for evidence, _ in EVIDENCE_WORDS} == set(EvidenceCode)
    assert set(BOUND_WORDS) == set(LIMITER_COUNTERS)  # each limiter read by its excess traffic is worded


def _frame(lines: dict[int | None, dict[str, int]], **counters: int) -> pl.DataFrame:
    """Source samples of one launch, one instruction per line (an IMAD; `counters` on each)."""
    rows = [
        {
            "launch_key": 0,
            "function": "k",
            "pc_offset": 16 * n,
            "sass": "IMAD R1, R2, R3, R4",
            "file": "x.cu" if line is not None else None,
            "line": line,
            "samples": sum(stalls.values()),
            "stall_samples": json.dumps(stalls),
            **counters,
        }
        for n, (line, stalls) in enumerate(lines.items())
    ]
    return conform(pl.DataFrame(rows, infer_schema_length=None), SOURCE_SAMPLE_SCHEMA)


def test_the_views_say_the_limiters_lines_and_the_notes_in_presents_words() -> None:
    """The limiter's lines by the warp samples and by the excess traffic (a bank conflict named with its N-way), and
    the note on SASS without lines: the JSON's `limiter.sentence`, `limiter.counter` and `notes`, and the panel's
    sentences, are present's words of the analysis's data."""
    by_samples = analyze_source_lines(_frame({12: {"long_scoreboard": 35}, 13: {"wait": 65}}), 1000.0, "dram")
    assert by_samples is not None and by_samples.limiter is not None
    limiter = by_samples.limiter
    assert (limiter.counter, limiter.top_kind, limiter.lines[0][1]) == (None, KIND_CHAIN, 13)
    assert limiter_sentence(limiter) == "dram: 65% of the warp samples are on line 13 (x.cu), dependency chain"
    data = to_json(1, "k", by_samples, pl.DataFrame(), 1000.0)
    assert data["limiter"]["sentence"] == limiter_sentence(limiter) and data["limiter"]["counter"] is None
    assert data["lines"][0]["evidence"] == evidence_words(by_samples.lines[0].evidence)
    assert panel_sentences(by_samples)[0] == limiter_sentence(limiter)

    conflict = analyze_source_lines(
        _frame(
            {37: {"mio_throttle": 90, "short_scoreboard": 10}}, shared_wavefronts=400, shared_wavefronts_excess=300
        ).with_columns(shared_conflicts_nway=pl.lit(4.0)),
        1000.0,
        "l1/shared",
    )
    assert conflict is not None and conflict.limiter is not None
    assert conflict.limiter.top_kind == KIND_BANK and conflict.limiter.counter == "shared_wavefronts_excess"
    assert limiter_sentence(conflict.limiter) == (
        "L1/shared-bound: 100% of the excess shared wavefronts are on line 37 (x.cu), a 4-way bank conflict"
    )
    assert (
        evidence_words(conflict.lines[0].evidence) == "a 4-way bank conflict: 75% of its shared wavefronts are excess"
    )
    assert to_json(1, "k", conflict, pl.DataFrame(), 1000.0)["limiter"]["counter"] == "excess shared wavefronts"

    unlined = analyze_source_lines(_frame({None: {"long_scoreboard": 10}}), 1000.0)
    assert unlined is not None and unlined.notes == (SourceLinesNote.NO_LINE_INFO,)
    assert unlined.lines[0].kind == KIND_MEMORY and unlined.limiter is not None
    note = "the SASS has no source lines (built without -lineinfo): lines are unknown"
    assert to_json(1, "k", unlined, pl.DataFrame(), None)["notes"] == [note]
    assert panel_sentences(unlined) == [
        "no limiter named: 100% of the warp samples are on code without source lines, memory latency",
        f"Note: {note}",
    ]
