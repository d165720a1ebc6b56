"""The words of `tracekit.analysis.rules.barrier_stalls`'s findings and advice, from their values."""

from __future__ import annotations

from tracekit.present.rules.values import (
    Words,
    frac,
    num,
)

TEMPLATES: dict[str, Words] = {
    "barrier-stalls.barrier": lambda v: (
        f"Warps wait at barriers {num(v.n('barrier_cycles'))} of {num(v.n('stalled_cycles'))} stalled cycles per "
        f"issued instruction ({frac(v.n('share'))}; {v.s('metric')}): the block waits for its slowest warp at "
        f"each __syncthreads."
    ),
}

ADVICE: dict[str, Words] = {
    "sync-less": lambda v: (
        "Synchronize less often: do more work between barriers, or use warp-level sync where it suffices."
    ),
}
