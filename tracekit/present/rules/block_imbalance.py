"""The words of `tracekit.analysis.rules.block_imbalance`'s findings and advice, from their values."""

from __future__ import annotations

from tracekit.present.rules.values import (
    Words,
    frac,
    num,
)

TEMPLATES: dict[str, Words] = {
    "block-imbalance.costly": lambda v: (
        f"Block durations spread by {num(v.n('spread'))} (relative) in the trace, and SMs sit "
        f"idle before the launch ends: uneven blocks cost that idle time."
    ),
    "block-imbalance.free": lambda v: (
        f"Block durations spread by {num(v.n('spread'))} (relative) in the trace, but the SMs "
        f"stay busy until the end (no measured idle SM time above {frac(v.n('threshold'))}): the "
        f"spread costs no time (on a saturated GPU it comes from the warp schedulers)."
    ),
}

ADVICE: dict[str, Words] = {
    "balance-blocks-refill": lambda v: (
        "Balance work across blocks (or hand out work dynamically) so SMs refill evenly."
    ),
}
