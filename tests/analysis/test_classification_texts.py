"""The verdict's findings and ceiling units get their sentences as copies of themselves with the text set: the same
records `dataclasses.replace` would give (equal, fields in their order, nothing run in `__init__` skipped)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tracekit import api
from tracekit.analysis.achievable import AchievableUtilization
from tracekit.analysis.rules.base import Finding
from tracekit.ingest import ingest
from tracekit.present.rules.worded import _with_text
from tracekit.store import Store

H100 = Path(__file__).resolve().parents[2] / "sample_traces" / "h100"


def test_the_texted_records_store_their_fields_only() -> None:
    for cls in (Finding, AchievableUtilization):
        assert dataclasses.is_dataclass(cls) and getattr(cls, "__dataclass_params__").frozen  # noqa: B009
        assert not hasattr(cls, "__post_init__") and "__slots__" not in vars(cls)
        assert "text" in {f.name for f in dataclasses.fields(cls)}
        assert all(f.init and f.name != "__post_init__" for f in dataclasses.fields(cls))


def test_with_text_is_replace(tmp_path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'store.sqlite'}")
    ingest(store, H100 / "samples.raw.csv")
    results = list(api.analyze_stored(store, store.launches()))
    findings = [f for r in results for f in r.classification.rule_findings]
    units = [u for r in results if r.ceilings is not None for u in r.ceilings.units]
    assert len(findings) > 20 and len(units) > 5
    assert all(f.text or f.template is None for f in findings)  # worded by present.rules through _with_text
    assert all(u.text for u in units)
    for finding in findings:
        for text in ("another sentence", None):
            _same_as_replace(finding, dataclasses.replace(finding, text=text), _with_text(finding, text))
    for unit in units:
        _same_as_replace(unit, dataclasses.replace(unit, text="another"), _with_text(unit, "another"))


def _same_as_replace(item: object, expected: object, got: object) -> None:
    assert got == expected and type(got) is type(expected) and got is not item
    assert list(vars(got).items()) == list(vars(expected).items())
    assert hash(got) == hash(expected)
