"""The words of `tracekit.analysis.rules.partial_wave`'s findings and advice, from their values."""

from __future__ import annotations

from tracekit.present.rules.values import (
    Words,
    frac,
    num,
)

TEMPLATES: dict[str, Words] = {
    "partial-wave.partial": lambda v: (
        f"The launch runs {num(v.n('waves'))} waves ({v.s('waves_metric')}): the last wave is partial and leaves "
        f"{frac(v.n('idle'))} of the SM time of {int(v.n('full_waves'))} waves without blocks."
    ),
}

ADVICE: dict[str, Words] = {
    "whole-waves": lambda v: (
        "Size the grid to a whole number of waves, or give each block more work so the partial last wave matters less."
    ),
}
