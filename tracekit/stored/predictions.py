"""The predictor over stored launches: each launch's counters (its own, or its paired profiled launch's) and its
device's ceilings read, then `tracekit.analysis.predict` asked."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Unpack

import polars as pl

from tracekit import counters
from tracekit.analysis.predict import (
    NOTHING_TO_PREDICT,
    Change,
    Knobs,
    PredictInputs,
    Prediction,
    inputs_from_result,
    predict,
    predictable,
    what_to_try,
)
from tracekit.analysis.types import LaunchAnalysis
from tracekit.ceilings import DeviceCeilings, ceilings_for
from tracekit.errors import TracekitError
from tracekit.present.rules.worded import analysis_json, worded, worded_prediction
from tracekit.store import Store
from tracekit.stored.inputs import metrics_by_launch

# A device profile named by the user (`--ceilings FILE`), ceilings already read, or None: the device's shipped
# measured profile, else nominal peaks (which the prediction's basis names).
Ceilings = str | Path | DeviceCeilings | None
# What `what_to_try_for` answers: the best changes, or why there are none.
Tries = list[Prediction] | str


def counters_source(result: LaunchAnalysis) -> int | None:
    """The launch whose counters predict `result`: a trace's paired profiled launch, else its own."""
    return result.pairing.counters_launch_id or result.launch_id


def inputs_of(result: LaunchAnalysis, metrics: pl.DataFrame | None, ceilings: Ceilings = None) -> PredictInputs:
    """`PredictInputs` of one analysed launch from the counters read for it and its device's ceilings."""
    if not isinstance(ceilings, DeviceCeilings):
        device = result.kernel.device
        override = Path(ceilings) if ceilings is not None else None
        ceilings = ceilings_for(device.name, device.cc, device.sm_count, override=override)
    return inputs_from_result(result, metrics, ceilings=ceilings)


def predict_inputs(store: Store, result: LaunchAnalysis, ceilings: Ceilings = None) -> PredictInputs:
    """`PredictInputs` of one analysed launch, its counters read from `store`."""
    source = counters_source(result)
    return inputs_of(result, store.metrics([source]) if source is not None else None, ceilings)


def counters_reader(store: Store, results: Iterable[LaunchAnalysis]) -> Callable[[LaunchAnalysis], PredictInputs]:
    """The predictor's inputs of each of `results`, their counters read from `store` in one pass for all of them:
    reading them a launch at a time decodes a shared chunk once per launch (a report's 20 launches of a
    1,008-launch import: 3 s)."""
    sources = sorted({s for r in results if (s := counters_source(r)) is not None})
    metrics = store.metrics(sources, counters.READ_COLUMNS) if sources else pl.DataFrame()
    by_launch = metrics_by_launch(metrics)

    def of(result: LaunchAnalysis) -> PredictInputs:
        source = counters_source(result)
        return inputs_of(result, by_launch.get(source, metrics.clear()) if source is not None else None)

    return of


def predict_stored(
    store: Store, result: LaunchAnalysis, ceilings: Ceilings = None, **knobs: Unpack[Knobs]
) -> Prediction:
    """The prediction for one analysed launch: the one function behind `tracekit predict`, `results.predict(...)`
    and the dashboard's what-if. Knobs: block, regs, smem, warps_per_sm, ilp, grid (`Change.from_knobs`)."""
    return worded_prediction(predict(predict_inputs(store, result, ceilings), Change.from_knobs(knobs)))


def what_to_try_stored(
    store: Store, result: LaunchAnalysis, top: int = 5, ceilings: Ceilings = None
) -> list[Prediction]:
    """The best few predicted changes for one launch (`analysis.predict.what_to_try`), best first."""
    return [worded_prediction(p) for p in what_to_try(predict_inputs(store, result, ceilings), top=top)]


def what_to_try_for(store: Store, result: LaunchAnalysis, top: int = 5) -> Tries:
    """The best predicted change per knob for one launch, or why there is none (`predictable`: nothing is read for
    a launch without counters or a sweep). What `analyze`, the report, the HTTP API and the launch page show."""
    return what_to_try_all(store, [result], top).get(int(result.launch_id or 0), NOTHING_TO_PREDICT)


def what_to_try_all(store: Store, results: Iterable[LaunchAnalysis], top: int = 5) -> dict[int, Tries]:
    """`what_to_try_for` of many launches, by launch id, their counters read in one pass (`counters_reader`)."""
    chosen = [r for r in results if r.launch_id is not None]
    inputs = counters_reader(store, [r for r in chosen if predictable(r)])
    found: dict[int, Tries] = {}
    for result in chosen:
        launch_id = int(result.launch_id or 0)
        try:
            found[launch_id] = (
                [worded_prediction(p) for p in what_to_try(inputs(result), top=top)]
                if predictable(result)
                else NOTHING_TO_PREDICT
            )
        except TracekitError as exc:
            found[launch_id] = str(exc)
    return found


def analysis_dict(store: Store, result: LaunchAnalysis) -> dict[str, Any]:
    """One launch's "tracekit.analysis/2" object with its `what_to_try` (null when nothing can be predicted):
    `tracekit analyze --json`, `report --format json` and `GET /api/launches/<id>/analysis` print exactly this."""
    return analysis_json(worded(result), what_to_try_for(store, result))
