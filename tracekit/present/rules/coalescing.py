"""The words of `tracekit.analysis.rules.coalescing`'s findings and advice, from their values."""

from __future__ import annotations

from tracekit.present.rules.values import (
    V,
    Words,
    frac,
    num,
    pct,
)


def _coalescing(v: V) -> str:
    if v.o("basis") == "excessive-sectors":
        return (
            f"{frac(v.n('excess_share'))} of global sectors are beyond the ideal for their accesses "
            f"({v.s('excess_metric')} = {num(v.n('excess_sectors'))} of {num(v.n('ideal_sectors'))}): "
            f"uncoalesced access"
        )
    basis = (
        "for coalesced accesses of the kernel's width mix (smsp__sass_inst_executed_op_memory_*b)"
        if v.o("ideal_basis") == "width-mix"
        else "for coalesced 32-bit loads (32 threads x 4 B / 32 B sectors)"
    )
    return (
        f"Global loads take {num(v.n('sectors_per_request'))} sectors per request ({v.s('sectors_metric')} / "
        f"{v.s('requests_metric')}) against {num(v.n('ideal'))} {basis}"
    )


TEMPLATES: dict[str, Words] = {
    "coalescing.uncoalesced": lambda v: _coalescing(v) + ".",
    "coalescing.uncoalesced-quiet": lambda v: (
        f"{_coalescing(v)}; but no memory unit is above {pct(v.n('memory_busy_pct'))} of peak, so the extra sectors "
        f"cost little time (not flagged below {pct(v.n('busy_threshold_pct'))})."
    ),
}

ADVICE: dict[str, Words] = {
    "coalesce": lambda v: "Coalesce global accesses: consecutive threads should touch consecutive addresses.",
}
