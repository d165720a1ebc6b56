"""The words of `tracekit.analysis.rules.divergence`'s findings and advice, from their values."""

from __future__ import annotations

from tracekit.present.rules.values import (
    Words,
    num,
    pct,
)

TEMPLATES: dict[str, Words] = {
    "divergence.threads": lambda v: (
        f"Only {num(v.n('threads'))} of {int(v.n('warp_size'))} threads are active per executed instruction "
        f"({v.s('metric')}): divergence or partial warps."
    ),
    "divergence.no-branches": lambda v: (
        f"Branch efficiency reads {pct(v.n('efficiency_pct'))} ({v.s('metric')}) but the kernel executed no "
        f"branches ({v.s('branches_metric')} = 0): no divergence."
    ),
    "divergence.no-branch-count": lambda v: (
        f"Branch efficiency reads 0% ({v.s('metric')}), what a kernel without branches shows; the report has "
        f"no branch count to tell, so no divergence is flagged."
    ),
    "divergence.cheap": lambda v: (
        f"Branch efficiency is {pct(v.n('efficiency_pct'))} ({v.s('metric')}), yet {num(v.n('threads'))} of "
        f"{int(v.n('warp_size'))} threads are active per instruction ({v.s('threads_metric')}): the divergent "
        f"branches cost little."
    ),
    "divergence.branch-efficiency": lambda v: f"Branch efficiency is {pct(v.n('efficiency_pct'))} ({v.s('metric')}).",
}

ADVICE: dict[str, Words] = {
    "reduce-divergence": lambda v: "Reduce divergence: make the threads of a warp take the same branches.",
}
