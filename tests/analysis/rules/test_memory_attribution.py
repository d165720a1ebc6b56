"""DRAM or L2: a busy L2 with a low read hit rate and DRAM near its peak stands for DRAM."""

from __future__ import annotations

from tests.analysis.rules.ctx import context, ids, texts, unit
from tracekit.analysis.rules import memory_attribution

HIT = "lts__t_sector_op_read_hit_rate.pct"
UNITS = (unit("L2", "l2", 90.0), unit("DRAM", "dram", 75.0))


def test_streaming_misses_through_l2_are_dram_traffic() -> None:
    ctx = context({HIT: 3.0, "dram__bytes.sum": 134e6}, UNITS)
    chosen, found = memory_attribution.attribute(ctx, ctx.units[0])
    assert chosen.limiter == "dram" and ids(found) == ["dram-vs-l2.dram-serves"]
    assert "read hit rate is only 3%" in texts(found) and "DRAM moved 134 MB (dram__bytes.sum)" in texts(found)


def test_l2_hits_keep_l2_the_bound() -> None:
    ctx = context({HIT: 90.0}, UNITS)
    chosen, found = memory_attribution.attribute(ctx, ctx.units[0])
    assert chosen.limiter == "l2" and ids(found) == ["dram-vs-l2.l2-serves"]


def test_a_dram_bound_is_left_alone() -> None:
    ctx = context({HIT: 3.0}, (unit("DRAM", "dram", 90.0),))
    assert memory_attribution.attribute(ctx, ctx.units[0]) == (ctx.units[0], [])
    assert memory_attribution.apply(ctx) == []
