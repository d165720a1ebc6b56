"""The words of `tracekit.analysis.rules.memory_attribution`'s findings and advice, from their values."""

from __future__ import annotations

from tracekit import format as fmt
from tracekit.present.rules.values import (
    V,
    Words,
    pct,
)


def _dram_serves(v: V) -> str:
    moved = (
        f"; DRAM moved {fmt.si(v.n('dram_bytes'), 'B')} ({v.s('dram_bytes_metric')})"
        if v.o("dram_bytes") is not None
        else ""
    )
    rate = (
        f" at {fmt.bandwidth(v.n('dram_bytes_per_s'))} ({v.s('dram_rate_metric')})"
        if v.o("dram_bytes_per_s") is not None
        else ""
    )
    return (
        f"L2 reads {pct(v.n('l2_pct'))} of peak ({v.s('l2_metric')}) but its read hit rate is only "
        f"{pct(v.n('hit_pct'))} ({v.s('hit_metric')}): the L2 traffic is mostly misses and their fills, which DRAM "
        f"must serve; DRAM is at {pct(v.n('dram_pct'))} ({v.s('dram_metric')}){moved}{rate}. DRAM, not L2, bounds "
        f"the launch."
    )


TEMPLATES: dict[str, Words] = {
    "dram-vs-l2.l2-serves": lambda v: (
        f"L2 read hit rate is {pct(v.n('hit_pct'))} ({v.s('hit_metric')}): the L2 serves most loads itself, so L2, "
        f"not DRAM, is the memory level at work."
    ),
    "dram-vs-l2.dram-serves": _dram_serves,
}
