"""The words of `tracekit.analysis.rules.too_few_blocks`'s findings and advice, from their values."""

from __future__ import annotations

from tracekit.present.rules.values import (
    V,
    Words,
    num,
)


def _too_few_blocks(v: V) -> str:
    grid_text = f"{num(v.n('grid_blocks'))} blocks" if v.o("grid_blocks") is not None else "the grid"
    fill = (
        f"fill only {num(v.n('waves'))} of one wave of the GPU's block slots ({v.s('waves_metric')})"
        if v.o("waves") is not None
        else f"are fewer than the {int(v.n('sms'))} SMs"
    )
    return f"{grid_text} {fill}: too few blocks for the SMs, so most SMs run few warps or none."


TEMPLATES: dict[str, Words] = {
    "too-few-blocks.few": _too_few_blocks,
}

ADVICE: dict[str, Words] = {
    "launch-more-blocks": lambda v: (
        "Launch more blocks (a larger grid, smaller tiles, or split-K style work splitting) so every "
        "SM gets its full share of warps."
    ),
}
