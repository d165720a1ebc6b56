"""Effects the latency-hiding model cannot see, read from the launch's counters and the change."""

from __future__ import annotations

from dataclasses import dataclass

from tracekit.analysis.predict.occupancy_step import Config
from tracekit.analysis.predict.types import Change, Finding, PredictInputs


@dataclass(frozen=True)
class Unseen:
    """An effect the model cannot see: how far it may move the duration each way, and why."""

    effect: str
    faster: float  # the duration may be this many times shorter than predicted
    slower: float  # or this many times longer
    why: str


def unseen_effects(
    inputs: PredictInputs, change: Change, now: Config, new: Config
) -> tuple[list[Unseen], list[Finding]]:
    return [], []
