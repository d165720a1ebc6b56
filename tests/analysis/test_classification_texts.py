"""The verdict's findings get their sentences as copies of themselves with the text set: the same records
`dataclasses.replace` would give (equal, fields in their order, nothing run in `__init__` skipped). Ceiling units
carry no text at all: present words them when a view shows them (`present.rules.ceilings`)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tracekit import api
from tracekit.analysis.achievable import AchievableUtilization
from tracekit.analysis.rules.base import Finding
from tracekit.ingest import ingest
from tracekit.present.rules.ceilings import unit_sentences
from tracekit.present.rules.worded import _with_text
from tracekit.store import Store

H100 = Path(__file__).resolve().parents[2] / "sample_traces" / "h100"


def test_the_texted_records_store_their_fields_only() -> None:
    assert dataclasses.is_dataclass(Finding) and getattr(Finding, "__dataclass_params__").frozen  # noqa: B009
    assert not hasattr(Finding, "__post_init__") and "__slots__" not in vars(Finding)
    assert "text" in {f.name for f in dataclasses.fields(Finding)}
    assert all(f.init and f.name != "__post_init__" for f in dataclasses.fields(Finding))
    assert "text" not in {f.name for f in dataclasses.fields(AchievableUtilization)}


def test_with_text_is_replace(tmp_path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'store.sqlite'}")
    ingest(store, H100 / "samples.raw.csv")
    results = list(api.analyze_stored(store, store.launches()))
    findings = [f for r in results for f in r.classification.rule_findings]
    units = [u for r in results if r.ceilings is not None for u in r.ceilings.units]
    assert len(findings) > 20 and len(units) > 5
    assert all(f.text or f.template is None for f in findings)  # worded by present.rules through _with_text
    for result in results:  # every unit worded, by present
        if result.ceilings is not None:
            words = unit_sentences(result.ceilings)
            assert {u.unit for u in result.ceilings.units} == set(words) and all(words.values())
    for finding in findings:
        for text in ("another sentence", None):
            _same_as_replace(finding, dataclasses.replace(finding, text=text), _with_text(finding, text))


def _same_as_replace(item: object, expected: object, got: object) -> None:
    assert got == expected and type(got) is type(expected) and got is not item
    assert list(vars(got).items()) == list(vars(expected).items())
    assert hash(got) == hash(expected)
