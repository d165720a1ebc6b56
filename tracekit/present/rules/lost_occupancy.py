"""The words of `tracekit.analysis.rules.lost_occupancy`'s findings and advice, from their values."""

from __future__ import annotations

from tracekit.present.rules.values import (
    Words,
    num,
)

TEMPLATES: dict[str, Words] = {
    "lost-occupancy.end-spread": lambda v: (
        f"The warp trace loses {num(v.n('lost_warps'))} warps per SM of occupancy to finished warps holding their slot "
        f"until their block's last warp ends (imbalance within blocks)."
    ),
    "lost-occupancy.block-gaps": lambda v: (
        f"The warp trace loses {num(v.n('lost_warps'))} warps per SM of occupancy to empty slots between one block's "
        f"end and the next block's start on an SM."
    ),
}

ADVICE: dict[str, Words] = {
    "balance-warps": lambda v: "Balance work across the warps of a block.",
    "fewer-longer-blocks": lambda v: "Give each block more work (fewer, longer blocks) so block launches are rarer.",
}
