"""What to try first: always a section of a launch's view (the launch page, the report, `tracekit analyze`). It lists
the best predicted change per knob, or says under the same heading why there is none: nothing the predictor models
gains enough (and which unit is at its ceiling), or nothing could be predicted (and why)."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass

from tracekit import format as fmt
from tracekit.analysis.predict import Prediction, what_to_try
from tracekit.analysis.types import LaunchAnalysis
from tracekit.present.prediction import after, answer, nsight_estimate

HEADING = "What to try first"
KNOBS_MODELLED = "block size, registers, shared memory, ILP, grid"
# A change predicted to gain less than this is left out: what_to_try's own default, read from it (one home)
MIN_SPEEDUP: float = inspect.signature(what_to_try).parameters["min_speedup"].default


# What `tracekit.api.what_to_try_for` answers: the predictions, why there are none, or None when not asked.
Tries = Sequence[Prediction] | str | None


@dataclass(frozen=True)
class TryItem:
    """One predicted change: the answer line, what binds after it, its basis and Nsight Compute's estimate."""

    text: str  # "block 512: predicted 55.5 µs (now 71.1 µs), speed-up 1.28x (interval 1.19x to 1.39x)"
    after: str  # "throughput-bound by DRAM"
    basis: str
    nsight: str | None
    speedup: float  # exact, for a renderer that orders or charts

    @property
    def line(self) -> str:
        """The change and what binds after it, as every view writes it (each escapes it for its medium):
        "block 512: predicted 55.5 µs (now 71.1 µs), speed-up 1.28x (...); throughput-bound by DRAM after"."""
        return f"{self.text}; {self.after} after"


@dataclass(frozen=True)
class TryFirst:
    """The section: `items` best first, or `note` saying why there are none."""

    heading: str
    items: tuple[TryItem, ...]
    note: str | None


def nothing_gains(result: LaunchAnalysis) -> str:
    """Why no change the predictor models helps: the launch's verdict in plain words (the limiter finding, which
    names the unit at its ceiling), and for a throughput-bound launch that only less work for that unit helps."""
    verdict = result.classification
    words = next((f.text for f in verdict.findings if f.kind == "limiter"), None) or verdict.mode
    gain = fmt.fraction(MIN_SPEEDUP - 1)
    text = (
        f"No change the predictor models ({KNOBS_MODELLED}) is predicted to gain {gain} or more. "
        f"{words.removesuffix('.')}"
    )
    if verdict.mode == "throughput-bound":
        return f"{text}: more warps, ILP or another block shape only queue on that unit; doing less work in it helps."
    return f"{text}."


def try_first(result: LaunchAnalysis, found: Tries) -> TryFirst:
    """The section for one launch from `tracekit.api.what_to_try_for`: its predictions, or the reason there are
    none (a text from the API, or None when nothing was asked)."""
    if found is None:
        where = f"tracekit analyze launch:{result.launch_id}" if result.launch_id is not None else "tracekit analyze"
        return TryFirst(HEADING, (), f"Not predicted in this view: {where} lists the predicted changes.")
    if isinstance(found, str):
        return TryFirst(HEADING, (), f"Nothing predicted: {found}.")
    if not found:
        return TryFirst(HEADING, (), nothing_gains(result))
    items = tuple(
        TryItem(answer(p), after(p), ", ".join(p.basis), nsight_estimate(p), p.predicted.speedup) for p in found
    )
    return TryFirst(HEADING, items, None)
