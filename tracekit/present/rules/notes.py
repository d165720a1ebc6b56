"""The words of what the engine notes about a launch's inputs (`tracekit.analysis.engine`): a trace that holds fewer
warps than the launch ran (`Source.incomplete`, flag `incomplete-trace`) and a profile cut off mid-launch
(`Source.incomplete_launch`, flag `incomplete-launch`), said first in the evidence since every number after them
covers only what was recorded; and why a launch of its sweep family is not one of the sweep's points
(`LeftOut.kind`, the JSON's `sweep.left_out[].reason`)."""

from __future__ import annotations

from tracekit.analysis.types import LeftOutKind, Source

LEFT_OUT: dict[str, str] = {
    LeftOutKind.TRACED: "profiled run of a traced launch: the trace's point stands for it",
    LeftOutKind.UNMEASURED: "no measured occupancy and throughput",
    LeftOutKind.REPEATED: "the same measurement as a fitted launch (one run in two exports)",
}


def incomplete_notes(source: Source) -> list[str]:
    """The evidence's first lines for an incomplete input: the launch's profile, then its trace."""
    notes = []
    if source.incomplete_launch is not None:
        notes.append(f"The launch's profile is incomplete: {source.incomplete_launch}.")
    if source.incomplete is not None:
        notes.append(f"The trace is incomplete ({source.incomplete}).")
    return notes
