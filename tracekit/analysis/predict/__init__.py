"""What will a change buy? One launch, a changed configuration, and the predicted duration with its interval.

The knobs (block size, registers, dynamic shared memory, warps per SM, ILP, grid) go through the occupancy
calculator to warps per SM (`occupancy_step`); the warps the launch really keeps resident (achieved, not
theoretical) scale with them; concurrency is warps x ILP; throughput follows the latency-hiding model
(`throughput`, over `tracekit.analysis.model`): fitted where a sweep of three or more occupancies exists and
pinned by the launch's counters against the device's ceilings where only this launch exists. Waves, the partial
last wave and the block launch rate (`launch_rate`) turn throughput into time; effects the model cannot see widen
the interval (`uncertainty`). Every step returns findings (data) that `tracekit.present.rules` words.

Pure functions: the caller reads the store (`inputs_from_result`) and passes what it read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from tracekit.analysis.predict.core import WIDE_INTERVAL, predict
from tracekit.analysis.predict.inputs import inputs_from_result, nsight_estimates, unit_uses
from tracekit.analysis.predict.try_first import NOTHING_TO_PREDICT, predictable, what_to_try
from tracekit.analysis.predict.types import (
    KNOBS,
    Change,
    ConfigState,
    DramCurve,
    Finding,
    Knobs,
    NsightEstimate,
    Predicted,
    PredictInputs,
    Prediction,
    PredictionRefused,
    SweepSample,
    UnitUse,
    knob_of,
)

__all__ = [
    "Knobs",
    "NOTHING_TO_PREDICT",
    "predictable",
    "KNOBS",
    "WIDE_INTERVAL",
    "Change",
    "ConfigState",
    "DramCurve",
    "Finding",
    "NsightEstimate",
    "PredictInputs",
    "Predicted",
    "Prediction",
    "PredictionRefused",
    "SweepSample",
    "UnitUse",
    "inputs_from_result",
    "knob_of",
    "nsight_estimates",
    "predict",
    "unit_uses",
    "what_to_try",
    "with_sweep",
]


def with_sweep(inputs: PredictInputs, samples: Sequence[SweepSample]) -> PredictInputs:
    """The same inputs with another set of measured launches (a benchmark chooses which)."""
    return replace(inputs, sweep=tuple(samples))
