"""One L2 slice far busier than the average, with global atomics: atomic contention bounds the launch."""

from __future__ import annotations

from tests.analysis.rules.ctx import context, flags, texts
from tracekit.analysis.rules import atomics_contention

HOT, MEAN = "lts__throughput.max.pct_of_peak_sustained_elapsed", "lts__throughput.avg.pct_of_peak_sustained_elapsed"
ATOMICS = "smsp__inst_executed_op_global_red.sum"


def test_one_hot_slice_with_atomics_fires() -> None:
    found = atomics_contention.apply(context({HOT: 95.0, MEAN: 5.0, ATOMICS: 1e6}))
    assert flags(found) == ["atomic-contention"] and found[0].limiter == "l2"
    assert "busiest L2 slice runs at 95%" in texts(found)


def test_evenly_busy_slices_or_no_atomics_do_not_fire() -> None:
    assert atomics_contention.apply(context({HOT: 95.0, MEAN: 80.0, ATOMICS: 1e6})) == []
    assert atomics_contention.apply(context({HOT: 95.0, MEAN: 5.0, ATOMICS: 0})) == []
