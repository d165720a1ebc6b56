"""What a report says moved to `tracekit/present/` (`launch.py`: one launch; `comparison.py`: A against B); these
names stay importable from here for the modules not yet moved over."""

from __future__ import annotations

from tracekit import format as fmt
from tracekit.present.comparison import ComparedPair, comparison_table, gate_message, pair_heading
from tracekit.present.launch import LaunchContent, index_table, launch_content, region_table, verdict_text
from tracekit.present.sections import Table

fraction = fmt.fraction

__all__ = [
    "ComparedPair",
    "LaunchContent",
    "Table",
    "comparison_table",
    "fraction",
    "gate_message",
    "index_table",
    "launch_content",
    "pair_heading",
    "region_table",
    "verdict_text",
]
