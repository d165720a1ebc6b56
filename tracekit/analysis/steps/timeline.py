"""What a step's timeline figure draws, as frames: the GPU activities per stream, the host's API calls per thread,
and the idle gaps with the cause that explains most of each (the dashboard's steps page and the HTML report lay
them out; nothing is computed there)."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from tracekit.analysis.steps.analysis import device_events
from tracekit.analysis.steps.busy import gpu_union, idle_pieces, window_frame
from tracekit.analysis.steps.calls import call_class
from tracekit.analysis.steps.categories import category
from tracekit.analysis.steps.causes import attribute
from tracekit.analysis.steps.types import Step
from tracekit.host_events import HostEvents

MAX_BARS = 20_000  # per frame: the longest are kept (a figure stays drawable for any step)


@dataclass(frozen=True)
class StepTimeline:
    gpu: pl.DataFrame  # lane ("stream 7"), name, category, start_ns, end_ns (from the step's start)
    host: pl.DataFrame  # lane ("thread 1234"), name, call_class, start_ns, end_ns
    idle: pl.DataFrame  # start_ns, end_ns, cause (the one that explains most of the gap)
    span_ns: int


def step_timeline(events: HostEvents, step: Step) -> StepTimeline:
    gpu, _ = device_events(events)
    calls = call_class(events.calls, gpu)
    windows = window_frame((step.start_ns,), (step.end_ns,))
    pieces = idle_pieces(gpu_union(gpu), windows)
    attributed = attribute(pieces, gpu, calls, events.ranges).rows
    idle = (
        attributed.sort("idle_ns", descending=True)
        .unique(["start_ns", "end_ns"], keep="first")
        .select("start_ns", "end_ns", "cause")
        .sort("start_ns")
    )
    inside = (pl.col("end_ns") > step.start_ns) & (pl.col("start_ns") < step.end_ns)
    shown = gpu.filter(inside).select(
        pl.concat_str(pl.lit("stream "), pl.col("stream_id").cast(pl.Utf8).fill_null("?")).alias("lane"),
        pl.col("name").fill_null(""),
        category(pl.col("name").fill_null(""), pl.col("kind")).alias("category"),
        "start_ns",
        "end_ns",
    )
    host = calls.filter(inside).select(
        pl.concat_str(pl.lit("thread "), (pl.col("thread") & 0xFFFFFFFF).cast(pl.Utf8)).alias("lane"),
        pl.col("base").fill_null("").alias("name"),
        "call_class",
        "start_ns",
        "end_ns",
    )
    return StepTimeline(
        gpu=_relative(shown, step),
        host=_relative(host, step),
        idle=_relative(idle, step),
        span_ns=step.span_ns,
    )


def _relative(frame: pl.DataFrame, step: Step) -> pl.DataFrame:
    """Times from the step's start, clipped to the step; the longest MAX_BARS kept."""
    frame = frame.with_columns(
        (pl.col("start_ns").clip(lower_bound=step.start_ns) - step.start_ns).alias("start_ns"),
        (pl.col("end_ns").clip(upper_bound=step.end_ns) - step.start_ns).alias("end_ns"),
    )
    if frame.height > MAX_BARS:
        frame = frame.sort(pl.col("end_ns") - pl.col("start_ns"), descending=True).head(MAX_BARS)
    return frame.sort("start_ns")
