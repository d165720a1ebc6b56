"""The words of `tracekit.analysis.rules.stall_summary`'s findings and advice, from their values."""

from __future__ import annotations

from tracekit.present.rules.values import (
    V,
    Words,
    frac,
    num,
)


def _stall_breakdown(v: V) -> str:
    top = ", ".join(f"{reason} {num(float(cycles or 0))}" for reason, cycles in v.prefixed("reason:"))
    shares = ", ".join(f"{group} {frac(v.n('share_' + group))}" for group in ("latency", "bandwidth", "other"))
    return (
        f"Warps wait {num(v.n('total_cycles_per_issue'))} cycles per issued instruction "
        f"({v.s('source')} stall metrics, e.g. {v.s('example_metric')}); of the stalled "
        f"cycles {shares}; largest reasons (cycles per instruction): {top}."
    )


TEMPLATES: dict[str, Words] = {
    "stall-summary.breakdown": _stall_breakdown,
    "stall-summary.largest": lambda v: (
        f"The largest stall is {v.s('reason')} at {num(v.n('cycles_per_issue'))} cycles per issued instruction "
        f"({v.s('metric')})."
    ),
}
