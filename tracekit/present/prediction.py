"""One wording of a prediction (`tracekit.analysis.predict.Prediction`): the answer, what binds before and after,
the basis and the derivation. `tracekit predict`, What to try first and the dashboard's what-if all show these.
And its one JSON shape (`prediction_dict`): `predict --json`'s objects and every `what_to_try` entry of the
analysis JSON are the same object."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from tracekit import format as fmt
from tracekit.analysis.predict import Prediction, json
from tracekit.analysis.types import LaunchAnalysis
from tracekit.present.rules.headline import unit_name
from tracekit.present.rules.worded import worded_prediction
from tracekit.present.sections import Table
from tracekit.present.verdict import limited_by

# A ceilings profile as the predictor's sentences cite it: "(measured: tracekit/ceilings/profiles/h100.json)".
_PROFILE = re.compile(r"\(measured: ([^()]+)\)")
_REGIMES = {"throughput": "throughput-bound", "latency": "latency-bound", "launch": "bound by block launches"}


@dataclass(frozen=True)
class PredictionText:
    """A prediction in words. `answer` leads; `binds` says what bounds the launch now and after the change;
    `profiles` are the measured ceilings files the other texts cite as "(measured)", to be printed once."""

    title: str  # "launch 52: vector_add -- block 512"
    answer: str  # "block 512: predicted 55.5 µs (now 71.1 µs), speed-up 1.28x (interval 1.19x to 1.39x)"
    binds: str  # "now throughput-bound by DRAM; after the change throughput-bound by L2"
    occupancy: str  # "64 / 60.2 warps per SM (theoretical / achieved), limited by warps, ... (now 8 / 7.9, ...)"
    basis: str  # "this launch's counters, the device's ceilings (measured)"
    nsight: str | None  # Nsight Compute's own estimate for the same change, when the report has one
    narrow: str | None  # what measurement would narrow a wide interval
    note: str | None  # what the change as given means where it may not be what was meant (`grid_note`)
    steps: tuple[str, ...]  # the derivation, one line per step
    profiles: tuple[str, ...]  # the measured ceilings files cited


def prediction_dict(p: Prediction) -> dict[str, Any]:
    """The one JSON shape of a prediction (`analysis.predict.json`), its sentences worded."""
    return json.prediction_dict(worded_prediction(p))


def cite_once(text: str, profiles: list[str]) -> str:
    """`text` with each measured profile's path taken out ("(measured)"), the path kept in `profiles`."""

    def cite(match: re.Match[str]) -> str:
        if match.group(1) not in profiles:
            profiles.append(match.group(1))
        return "(measured)"

    return _PROFILE.sub(cite, text)


def _unit(name: str) -> str:
    """The predictor's unit ids ("dram", "l2", "fma pipe") as the verdict's labels write them."""
    first, _, rest = name.partition(" ")
    return unit_name(f"{first.upper()} {rest}".strip() if first in ("dram", "l2") else name)


def after(p: Prediction) -> str:
    """What bounds the launch after the change: "throughput-bound by DRAM", "latency-bound"."""
    regime = _REGIMES.get(p.regime, f"{p.regime}-bound")
    return f"{regime} by {_unit(p.binding_unit)}" if p.binding_unit and p.regime == "throughput" else regime


def now(result: LaunchAnalysis | None) -> str | None:
    """What bounds the launch as run, from its verdict: "throughput-bound by DRAM", "latency-bound"."""
    if result is None:
        return None
    verdict = result.classification
    if not verdict.limiter:
        return verdict.mode
    bound = next((u for u in verdict.utilization if u.limiter == verdict.limiter), None)
    return f"{verdict.mode} by {unit_name(bound.label) if bound is not None else verdict.limiter}"


def answer(p: Prediction) -> str:
    """The one-line answer: "block 512: predicted 55.5 µs (now 71.1 µs), speed-up 1.28x (interval 1.19x to
    1.39x)"."""
    got = p.predicted
    return (
        f"{p.change.describe()}: predicted {fmt.duration(got.duration_ns)} (now "
        f"{fmt.duration(p.current_duration_ns)}), speed-up {fmt.times(got.speedup)} (interval {fmt.times(got.low)} "
        f"to {fmt.times(got.high)})"
    )


def occupancy(p: Prediction) -> str:
    """The launch's occupancy and waves after the change, beside those as run (an occupancy calculator's answer:
    the dashboard's what-if shows it under the prediction)."""
    new, was = p.new, p.current
    return (
        f"{fmt.number(new.theoretical_warps_per_sm)} / {fmt.number(new.achieved_warps_per_sm)} warps per SM "
        f"(theoretical / achieved), {limited_by(new.limiter)}, {fmt.number(new.blocks_per_sm)} blocks per SM, "
        f"{fmt.number(new.waves)} waves (now {fmt.number(was.theoretical_warps_per_sm)} / "
        f"{fmt.number(was.achieved_warps_per_sm)}, {fmt.number(was.waves)} waves)"
    )


def grid_note(p: Prediction) -> str | None:
    """A block size and an ILP changed without a grid: the grid kept the threads, so the ILP is more requests in
    flight per thread over the same threads, not the same work over fewer threads with more items each (a tile of
    BLOCK x ITEMS): the grid that would mean the latter, in one line."""
    change, now, new = p.change, p.current, p.new
    if change.threads_per_block is None or change.ilp is None or change.grid_blocks is not None:
        return None
    items = new.ilp / now.ilp
    if abs(items - 1.0) < 1e-9 or new.threads_per_block == now.threads_per_block:
        return None
    spread = max(1, math.ceil(now.grid_blocks * now.threads_per_block / (new.threads_per_block * items)))
    return (
        f"without a grid, {fmt.number(new.grid_blocks)} blocks of {new.threads_per_block} keep the launch's "
        f"threads, and ILP {change.ilp:g} is more requests in flight per thread; the same work over fewer threads "
        f"with {items:g}x the items each is grid {spread}"
    )


def nsight_estimate(p: Prediction) -> str | None:
    if p.nsight is None:
        return None
    return (
        f"Nsight Compute's {p.nsight.rule} rule estimates {fmt.times(p.nsight.speedup)} "
        f"({fmt.percent(p.nsight.estimated_speedup_pct)} of the duration) for {p.nsight.applies_to}"
    )


def prediction_text(p: Prediction, result: LaunchAnalysis | None = None, name: str | None = None) -> PredictionText:
    """The words of one prediction; `result` (the launch's analysis) says what binds it now, `name` is the kernel
    name as the caller shows it."""
    p = worded_prediction(p)
    profiles: list[str] = []
    before = now(result)
    binds = (f"now {before}; " if before else "") + f"after the change {after(p)}"
    return PredictionText(
        title=f"launch {p.launch_id}: {name or p.kernel_name or '?'} -- {p.change.describe()}",
        answer=answer(p),
        binds=binds,
        occupancy=occupancy(p),
        basis=cite_once(", ".join(p.basis), profiles),
        nsight=nsight_estimate(p),
        narrow=p.narrow,
        note=grid_note(p),
        steps=tuple(cite_once(f"{f.step}: {f.text}", profiles) for f in p.findings),
        profiles=tuple(profiles),
    )


def prediction_table(text: PredictionText) -> Table:
    """What binds now and after the change, the occupancy after it, the basis, Nsight Compute's estimate, what would
    narrow the interval and what the change means: the table under the answer in every view of a prediction (the
    measured ceilings it cites are listed once, after it)."""
    rows = [["binds", text.binds], ["basis", text.basis], ["occupancy after the change", text.occupancy]]
    for field, value in (("Nsight Compute", text.nsight), ("to narrow it", text.narrow), ("note", text.note)):
        if value:
            rows.append([field, value])
    return Table(text.title, ["field", "value"], rows)


def profiles_of(texts: Iterable[PredictionText]) -> list[str]:
    """The measured ceilings files a set of predictions cite, each once, in order."""
    return list(dict.fromkeys(path for text in texts for path in text.profiles))


def ceilings_cited(profiles: Sequence[str]) -> str | None:
    """The measured ceilings files that predictions cite as "(measured)", named once in one line; None when none
    is cited."""
    return f"measured ceilings: {', '.join(profiles)}" if profiles else None


@dataclass(frozen=True)
class PredictionTables:
    """A launch's predicted changes (What to try first's), each as the table `tracekit predict` prints under its
    answer, best first: the reports show them under What to try first."""

    heading: str
    tables: tuple[Table, ...]
    ceilings: str | None  # `ceilings_cited` of the tables' texts


PREDICTIONS_HEADING = "The predictions (tracekit predict)"


def prediction_tables(
    predictions: Sequence[Prediction], result: LaunchAnalysis | None = None, name: str | None = None
) -> PredictionTables:
    """Each prediction's `prediction_table` (`result`: the launch, for what binds it now; `name`: the kernel name as
    the view shows it, by default the launch's base name as `tracekit predict` prints it), and the measured ceilings
    they cite."""
    if name is None and result is not None:
        name = fmt.kernel_name(result.kernel.name or result.kernel.mangled_name)
    texts = [prediction_text(p, result, name) for p in predictions]
    return PredictionTables(
        PREDICTIONS_HEADING, tuple(prediction_table(text) for text in texts), ceilings_cited(profiles_of(texts))
    )
