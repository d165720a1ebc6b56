"""GPU time by category: time with two streams busy is counted once, for one category (categories.COUNTED_FIRST),
so a step's category table adds up to no more than its busy time, on every recorded step and public trace."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from tests.analysis.steps.independent import GPU_CATEGORIES, load, ns
from tracekit.analysis.steps import analyze_steps
from tracekit.analysis.steps.categories import COMMUNICATION, COUNTED_FIRST, category
from tracekit.importers.kineto import read_host_events

STEPS = Path(__file__).resolve().parents[3] / "sample_traces/steps"
RECORDED = sorted(str(p.relative_to(STEPS)) for p in STEPS.rglob("*.pt.trace.json.gz"))
PUBLIC = ["kineto_2021_resnet50_nw0_train.pt.trace.json.gz", "kineto_GH200_transformer.pt.trace.json"]


def _shares_hold(path: Path) -> None:
    result = analyze_steps(read_host_events(path))
    for step in result.steps:
        counted = sum(c.gpu_ns for c in step.categories)
        # every activity clipped to the step its start falls in: the table is the busy union less the tails of
        # work begun in the step before
        assert 0.98 * step.busy_ns <= counted <= step.busy_ns, (step.label, counted, step.busy_ns)
        assert all(c.gpu_ns >= 0 and c.count > 0 for c in step.categories)


@pytest.mark.parametrize("trace", RECORDED)
def test_no_category_table_above_the_busy_time_on_a_recorded_step(trace, sample_trace):
    _shares_hold(sample_trace(f"steps/{trace}"))


@pytest.mark.parametrize("name", PUBLIC)
def test_no_category_table_above_the_busy_time_on_a_public_trace(name, real_export):
    _shares_hold(real_export(name))


def _by_priority(events: list[dict], start: int, end: int) -> dict[str, int]:
    """Each instant of [start, end) to the first category of COUNTED_FIRST running then, by a sweep over the
    activities that start in the window (plain Python: a second computation of the table)."""
    names = [(e["name"], "kernel" if e["cat"] == "kernel" else "copy") for e in events]
    frame = pl.DataFrame(names, schema=["name", "kind"], orient="row")
    labels = frame.select(category(pl.col("name"), pl.col("kind"))).to_series()
    spans = []
    for e, label in zip(events, labels, strict=True):
        a = ns(e["ts"])
        if start <= a < end:
            spans.append((a, min(a + ns(e["dur"]), end), COUNTED_FIRST.index(label)))
    edges = sorted({t for a, b, _ in spans for t in (a, b)})
    totals: dict[str, int] = {}
    for left, right in zip(edges, edges[1:], strict=False):
        running = [rank for a, b, rank in spans if a <= left and right <= b]
        if running:
            label = COUNTED_FIRST[min(running)]
            totals[label] = totals.get(label, 0) + right - left
    return totals


def test_overlapped_communication_is_counted_once_for_the_computation_beside_it(sample_trace):
    """h200_lean/ddp_rank0: NCCL's all-reduce runs beside the backward's kernels; counted on both streams the
    table came to 123% of a step. Each instant goes to the computation running then, so communication keeps only
    what no kernel hid, as a sweep over the raw events finds."""
    path = sample_trace("steps/h200_lean/ddp_rank0.pt.trace.json.gz")
    result = analyze_steps(read_host_events(path))
    raw = [e for e in load(path) if e.get("ph") == "X" and e.get("cat") in GPU_CATEGORIES]
    device = max({e["args"].get("device") for e in raw}, key=lambda d: sum(e["args"].get("device") == d for e in raw))
    raw = [e for e in raw if e["args"].get("device") == device]
    for step in result.steps:
        expected = _by_priority(raw, step.start_ns, step.end_ns)
        found = {c.category: c.gpu_ns for c in step.categories}
        assert found.keys() == expected.keys()
        for label, value in expected.items():
            assert found[label] == pytest.approx(value, abs=2_000), (step.label, label)  # ns rounding per event
        communication = found[COMMUNICATION]
        assert 0 < communication < step.communication_ns  # part of the all-reduce was hidden
        assert sum(found.values()) <= step.busy_ns
