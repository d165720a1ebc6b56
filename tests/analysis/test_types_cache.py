"""The store's cache text of a launch's analysis: orjson's own dataclass encoder writes it, and it holds exactly the
serialized fields (those marked `json: False` left out) and reads back to the same result."""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from typing import Any, get_args, get_origin, get_type_hints

import orjson

from tracekit.analysis.classification import Classification
from tracekit.analysis.types import LaunchAnalysis, _field_names, from_json_dict, to_cache_text, to_json_dict
from tracekit.api import analyze_stored
from tracekit.ingest import ingest
from tracekit.store import Store


def _dataclasses_in(hint: Any) -> set[type]:
    """The dataclasses a type hint names, at any depth of unions, tuples, lists and dicts."""
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return {hint}
    if get_origin(hint) in (typing.Union, types.UnionType, tuple, list, dict):
        return set().union(*(_dataclasses_in(arg) for arg in get_args(hint)))
    return set()


def _trims(cls: type) -> bool:
    return len(_field_names(cls)) != len(dataclasses.fields(cls))


def test_only_direct_fields_of_a_result_leave_fields_out() -> None:
    """`to_cache_text` trims a value that leaves fields out only as a direct field of the result: no such type may
    sit deeper, where orjson's encoder would write all of its fields."""
    direct = set().union(*(_dataclasses_in(hint) for hint in get_type_hints(LaunchAnalysis).values()))
    assert Classification in direct and _trims(Classification)
    seen: set[type] = set()
    deeper: list[type] = []
    for cls in direct:
        for name, hint in get_type_hints(cls).items():
            if name in _field_names(cls):
                deeper.extend(_dataclasses_in(hint))
    while deeper:
        cls = deeper.pop()
        if cls in seen:
            continue
        seen.add(cls)
        assert not _trims(cls), f"{cls.__name__} leaves fields out but sits below a result's own fields"
        for hint in get_type_hints(cls).values():
            deeper.extend(_dataclasses_in(hint))


def _walked(value: Any) -> Any:
    """The cache text as a Python `default` per dataclass writes it (the encoder `to_cache_text` replaced)."""
    return {name: getattr(value, name) for name in _field_names(value.__class__)}


def test_cache_text_is_the_serialized_fields_and_reads_back(tmp_path, sample_trace) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 's.sqlite'}")
    ingest(store, sample_trace("h100/samples.ncu-rep.gz"))
    ingest(store, sample_trace("h100/vector_add_32warps.csv.gz"))
    results = list(analyze_stored(store, store.launches()))
    assert len(results) > 2
    assert any(r.classification.stalls is not None for r in results)
    assert any(r.classification.ceilings is not None for r in results)
    for result in results:
        text = to_cache_text(result)
        expected = orjson.dumps(
            result, default=_walked, option=orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_NON_STR_KEYS
        ).decode()
        assert text == expected
        data = json.loads(text)
        assert list(data) == list(_field_names(LaunchAnalysis))
        assert list(data["classification"]) == list(_field_names(Classification))
        assert "stalls" not in data["classification"] and "ceilings" not in data["classification"]
        back = from_json_dict(LaunchAnalysis, data)
        assert to_json_dict(back) == to_json_dict(result)
        assert to_cache_text(back) == text
