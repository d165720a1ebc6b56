"""The verdict line and the occupancy limits' names, as every view writes them (CLI, report, dashboard, notebook,
`tracekit occupancy`): worded here once."""

from __future__ import annotations

from tracekit import format as fmt
from tracekit.analysis.classification import Classification

# The occupancy limits (`OccupancyLimits` fields, the occupancy calculator's limiter keys) in words, in the order
# every table lists them.
LIMIT_LABELS = {
    "registers": "registers",
    "shared_memory": "shared memory",
    "warps": "warps",
    "blocks": "block slots",
    "barriers": "barriers",
}
BLOCK_LIMITS = ("registers", "shared_memory", "warps", "blocks")  # the limits every launch has (barriers: 9.0+)


def limit_label(key: str | None) -> str:
    """An occupancy limiter in words ("shared memory"); `fmt.MISSING` when unknown."""
    return LIMIT_LABELS.get(key, key) if key else fmt.MISSING


def limited_by(key: str | None) -> str:
    """ "limited by shared memory", or "limiter n/a"."""
    return f"limited by {limit_label(key)}" if key else "limiter n/a"


def verdict_text(classification: Classification) -> str:
    """The verdict line: the mode, the limiting unit and the units tied with it
    ("throughput-bound, limited by dram (tied with l2)")."""
    line = classification.mode + (f", limited by {classification.limiter}" if classification.limiter else "")
    if classification.tied_limiters:
        line += f" (tied with {', '.join(classification.tied_limiters)})"
    return line
