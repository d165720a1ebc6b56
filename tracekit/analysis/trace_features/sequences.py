"""Frequent sequences of small kernels: fusion candidates (HTA's `get_frequent_cuda_kernel_sequences`).

HTA counts the kernel sequences launched under each instance of an operator the user names. Here no operator
need be named: on each stream, runs of consecutive kernels that are each short (under `small_ns`: time a fused
kernel could save in launches and memory round trips) are counted by their names, for every length from
`min_length` to `max_length`; occurrences of one sequence are counted without overlap. A sequence inside a longer
one found as often is left out (the longer one is the candidate). Fusing one saves, per occurrence, all but one
launch and the gaps between its kernels.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from tracekit.host_events import KERNEL

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
            position=pl.int_range(pl.len()).over("stream_id"),
        )
    )
    small = pl.when(pl.col("duration_ns") < small_ns).then(pl.col("code").cast(pl.Utf8))
    kernels = kernels.with_columns(small_code=small)
    found: list[tuple[tuple[str, ...], list[Occurrence]]] = []
    for length in range(min_length, max_length + 1):
        ahead = range(length)
        runs = kernels.with_columns(
            key=pl.concat_str([pl.col("small_code").shift(-i).over("stream_id") for i in ahead], separator=","),
            kernel_ns=pl.sum_horizontal([pl.col("duration_ns").shift(-i).over("stream_id") for i in ahead]),
            span_ns=pl.col("end_ns").shift(-(length - 1)).over("stream_id") - pl.col("start_ns"),
        ).filter(pl.col("key").is_not_null())
        ranked = (
            runs.group_by("key")
            .agg(occurrences=pl.len(), kernel_ns=pl.col("kernel_ns").sum())
            .filter(pl.col("occurrences") >= MIN_COUNT)
            .sort("kernel_ns", "key", descending=[True, False])
            .head(CANDIDATES_PER_LENGTH)
        )
        chosen = runs.join(ranked.select("key"), on="key", how="semi").sort("key", "stream_id", "position")
        for (key,), rows in chosen.group_by(["key"], maintain_order=True):
            found.append((tuple(str(key).split(",")), _without_overlap(rows, length)))
    names = dict(kernels.select(pl.col("code").cast(pl.Utf8), "name").unique("code").iter_rows())
    chosen_sequences = [
        KernelSequence(tuple(names[code] for code in s.names), s.count, s.kernel_ns, s.span_ns, s.stream_ids)
        for s in _covering(found)
    ]
    small_count = int((kernels["duration_ns"] < small_ns).sum())
    return KernelSequences(tuple(chosen_sequences[:top]), small_ns, min_length, max_length, small_count, kernels.height)


Occurrence = tuple[int, int, int, int]  # stream, position of its first kernel, kernel time, span


def _without_overlap(rows: pl.DataFrame, length: int) -> list[Occurrence]:
    """The occurrences of one sequence taken in order, each starting after the last one taken ended."""
    taken: list[Occurrence] = []
    for stream, position, kernel, span in rows.select("stream_id", "position", "kernel_ns", "span_ns").iter_rows():
        if taken and taken[-1][0] == stream and position < taken[-1][1] + length:
            continue
        taken.append((stream, position, kernel, span))
    return taken


def _covering(found: list[tuple[tuple[str, ...], list[Occurrence]]]) -> list[KernelSequence]:
    """The sequences taken greedily, most kernel time first, each counting only its occurrences that share no
    kernel with one already taken: the windows of a longer repeated block and its parts are not listed apart."""
    ranked = sorted(found, key=lambda item: (-sum(o[2] for o in item[1]), -len(item[0]), item[0]))
    covered: set[tuple[int, int]] = set()
    chosen: list[KernelSequence] = []
    for codes, occurrences in ranked:
        length = len(codes)
        free = [o for o in occurrences if not any((o[0], o[1] + i) in covered for i in range(length))]
        if len(free) < MIN_COUNT:
            continue
        covered |= {(o[0], o[1] + i) for o in free for i in range(length)}
        streams = tuple(sorted({o[0] for o in free}))
        kernel_ns, span_ns = sum(o[2] for o in free), sum(o[3] for o in free)
        chosen.append(KernelSequence(codes, len(free), kernel_ns, span_ns, streams))
    return sorted(chosen, key=lambda s: (-s.kernel_ns, s.names))
