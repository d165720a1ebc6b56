"""The words of `tracekit.analysis.rules.atomics_contention`'s findings and advice, from their values."""

from __future__ import annotations

from tracekit.present.rules.values import (
    V,
    Words,
    num,
    pct,
)


def _hot_slice(v: V) -> str:
    unit_text = (
        f"; its atomic unit is busy {pct(v.n('atomic_unit_pct'))} ({v.s('atomic_unit_metric')})"
        if v.o("atomic_unit_pct") is not None
        else ""
    )
    return (
        f"The busiest L2 slice runs at {pct(v.n('hot_pct'))} of peak ({v.s('hot_metric')}) while the L2 average is "
        f"{pct(v.n('mean_pct'))} ({v.s('mean_metric')}){unit_text}, with {num(v.n('atomics'))} global atomic "
        f"instructions ({v.s('atomics_metric')}): atomics on one address serialize in one slice, which bounds the "
        f"launch while the rest of the GPU waits."
    )


TEMPLATES: dict[str, Words] = {
    "atomics-contention.hot-slice": _hot_slice,
}

ADVICE: dict[str, Words] = {
    "spread-atomics": lambda v: (
        "Spread the atomics: aggregate per warp or block first (shared memory, warp reductions), then one "
        "atomic per block; or use several counters and combine them."
    ),
}
