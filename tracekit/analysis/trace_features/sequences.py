"""Frequent sequences of small kernels: fusion candidates (HTA's `get_frequent_cuda_kernel_sequences`).

HTA counts the kernel sequences launched under each instance of an operator the user names. Here no operator
need be named: on each stream, runs of consecutive kernels that are each short (under `small_ns`: time a fused
kernel could save in launches and memory round trips) are counted by their names, for every length from
`min_length` to `max_length`; runs of one sequence are counted without overlap. The sequences are then taken
greedily, most kernel time first, each keeping only its runs that share no kernel with one taken before: the parts
and shifted windows of a longer repeated block are not listed beside it. Fusing one saves, per run, all but one
launch and the gaps between its kernels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from tracekit.host_events import KERNEL

if TYPE_CHECKING:  # numpy in the functions that use it: every command imports this module (through tracekit.api)
    import numpy as np

SMALL_KERNEL_NS = 20_000  # a kernel this short is dominated by its launch and its loads (tens of microseconds)
MIN_LENGTH, MAX_LENGTH = 3, 8  # HTA's min_pattern_len is 3
MIN_COUNT = 2
CANDIDATES_PER_LENGTH = 50  # the sequences with most kernel time per length, counted exactly


@dataclass(frozen=True)
class KernelSequence:
    """A repeated run of kernels: their names in order, how many times it ran (without overlap), its kernels' time
    in total, and its span (first start to last end, gaps included) in total."""

    names: tuple[str, ...]
    count: int
    kernel_ns: int
    span_ns: int
    stream_ids: tuple[int, ...]

    @property
    def launches_saved(self) -> int:
        return (len(self.names) - 1) * self.count


@dataclass(frozen=True)
class KernelSequences:
    """The candidates, most kernel time first; the thresholds they were found with."""

    sequences: tuple[KernelSequence, ...]
    small_ns: int
    min_length: int
    max_length: int
    small_kernels: int
    kernels: int


def kernel_sequences(
    gpu: pl.DataFrame,
    small_ns: int = SMALL_KERNEL_NS,
    min_length: int = MIN_LENGTH,
    max_length: int = MAX_LENGTH,
    top: int = 10,
) -> KernelSequences:
    """The `top` repeated runs of small kernels, one stream at a time."""
    kernels = (
        gpu.filter(pl.col("kind") == KERNEL)
        .select(pl.col("stream_id").fill_null(-1), "name", "start_ns", "end_ns")
        .sort("stream_id", "start_ns")
        .with_columns(
            code=pl.col("name").rank("dense").cast(pl.Int64),
            duration_ns=pl.col("end_ns") - pl.col("start_ns"),
            row=pl.int_range(pl.len(), dtype=pl.Int64),  # a run stays on its stream: rows it shares are kernels
        )
    )
    small = pl.when(pl.col("duration_ns") < small_ns).then(pl.col("code").cast(pl.Utf8))
    kernels = kernels.with_columns(small_code=small)
    found: list[tuple[tuple[str, ...], Occurrences]] = []
    for length in range(min_length, max_length + 1):
        ahead = range(length)
        # kernels are in stream order: a window whose last kernel is on its first one's stream stays on it
        one_stream = pl.col("stream_id").shift(-(length - 1)) == pl.col("stream_id")
        runs = (
            kernels.select("row", "stream_id", "start_ns", "small_code", "duration_ns", "end_ns")
            .with_columns(
                key=pl.concat_str([pl.col("small_code").shift(-i) for i in ahead], separator=","),
                kernel_ns=pl.sum_horizontal([pl.col("duration_ns").shift(-i) for i in ahead]),
                span_ns=pl.col("end_ns").shift(-(length - 1)) - pl.col("start_ns"),
            )
            .filter(pl.col("key").is_not_null() & one_stream)
            .select("row", "stream_id", "key", "kernel_ns", "span_ns")
        )
        ranked = (
            runs.group_by("key")
            .agg(occurrences=pl.len(), kernel_ns=pl.col("kernel_ns").sum())
            .filter(pl.col("occurrences") >= MIN_COUNT)
            .sort("kernel_ns", "key", descending=[True, False])
            .head(CANDIDATES_PER_LENGTH)
        )
        chosen = runs.join(ranked.select("key"), on="key", how="semi").sort("key", "row")
        for (key,), rows in chosen.group_by(["key"], maintain_order=True):
            found.append((tuple(str(key).split(",")), _without_overlap(rows, length)))
    names = dict(kernels.select(pl.col("code").cast(pl.Utf8), "name").unique("code").iter_rows())
    chosen_sequences = [
        KernelSequence(tuple(names[code] for code in s.names), s.count, s.kernel_ns, s.span_ns, s.stream_ids)
        for s in _covering(found, kernels.height)
    ]
    small_count = int((kernels["duration_ns"] < small_ns).sum())
    return KernelSequences(tuple(chosen_sequences[:top]), small_ns, min_length, max_length, small_count, kernels.height)


@dataclass(frozen=True)
class Occurrences:
    """One sequence's runs: the row of each run's first kernel (kernels in stream, then start order), its stream,
    its kernels' time and its span."""

    rows: np.ndarray
    streams: np.ndarray
    kernel_ns: np.ndarray
    span_ns: np.ndarray

    def taken(self, keep: np.ndarray[Any, np.dtype[np.bool_]]) -> Occurrences:
        return Occurrences(self.rows[keep], self.streams[keep], self.kernel_ns[keep], self.span_ns[keep])


def _without_overlap(rows: pl.DataFrame, length: int) -> Occurrences:
    """The runs of one sequence taken in order, each starting after the last one taken ended."""
    import numpy as np  # here, not at import (see TYPE_CHECKING above)

    found = Occurrences(*(rows[c].to_numpy() for c in ("row", "stream_id", "kernel_ns", "span_ns")))
    if found.rows.size < 2 or bool((np.diff(found.rows) >= length).all()):
        return found  # no two runs share a kernel (most sequences)
    keep = np.zeros(found.rows.size, dtype=bool)
    next_free = -1
    for index, row in enumerate(found.rows.tolist()):
        if row >= next_free:
            keep[index], next_free = True, row + length
    return found.taken(keep)


def _covering(found: list[tuple[tuple[str, ...], Occurrences]], kernels: int) -> list[KernelSequence]:
    """The sequences taken greedily, most kernel time first, each counting only its runs that share no kernel with
    one already taken: the windows of a longer repeated block and its parts are not listed apart."""
    import numpy as np  # here, not at import (see TYPE_CHECKING above)

    ranked = sorted(found, key=lambda item: (-int(item[1].kernel_ns.sum()), -len(item[0]), item[0]))
    covered = np.zeros(kernels, dtype=bool)
    chosen: list[KernelSequence] = []
    for codes, occurrences in ranked:
        spans = occurrences.rows[:, None] + np.arange(len(codes))
        free = np.asarray(~covered[spans].any(axis=1), dtype=np.bool_)
        if int(free.sum()) < MIN_COUNT:
            continue
        covered[spans[free].ravel()] = True
        runs = occurrences.taken(free)
        streams = tuple(sorted(int(s) for s in np.unique(runs.streams)))
        chosen.append(
            KernelSequence(codes, int(free.sum()), int(runs.kernel_ns.sum()), int(runs.span_ns.sum()), streams)
        )
    return sorted(chosen, key=lambda s: (-s.kernel_ns, s.names))
