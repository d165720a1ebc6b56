"""A prediction as JSON: one shape wherever it is printed (`predict --json`, `what_to_try` in `analyze --json`, the
report's JSON, the HTTP API, `results.to_dicts()`); docs/analysis-schema.md documents each field."""

from __future__ import annotations

from typing import Any

from tracekit.analysis.predict.types import Prediction, knob_of
from tracekit.analysis.types import LaunchAnalysis, to_json_dict

PREDICTION_SCHEMA = "tracekit.prediction/1"


def prediction_dict(p: Prediction) -> dict[str, Any]:
    """Exact values (NaN and infinities as null); `knob` and `description` name the change for a reader of a
    list."""
    return {
        "schema": PREDICTION_SCHEMA,
        "knob": knob_of(p.change),
        "description": p.change.describe(),
        **to_json_dict(p),
    }


def analysis_with_tries(result: LaunchAnalysis, found: list[Prediction] | str) -> dict[str, Any]:
    """The launch's "tracekit.analysis/2" object with `found` (`what_to_try`'s answer) as its `what_to_try`: null
    when nothing was predicted (`found` then says why)."""
    tries = [prediction_dict(p) for p in found] if isinstance(found, list) else None
    return {**to_json_dict(result), "what_to_try": tries}
