"""What the job would gain without its straggler: each step replayed with the part of the straggler's own time that
made it late (its cause) set to the median of the other ranks', the job's step then read where every rank meets.

The replay is the step replay's (`steps.critical_path.replay`, `steps.unprofiled`) at the grain the job holds: each
event starts when its last constraint is met and keeps what the trace shows beyond it, with the changed durations
moving everything that waits on them. Here the events are each rank's arrival at each collective of the step and the
collective's end on each rank (on the reference clock, `align`):

- an arrival is the rank's window (`rank.rank_tables`: its own time before the collective) after the window's
  start, which is the later of its previous arrival and the ends of the collectives that had ended on the rank
  before it arrived (NCCL's stream order; gloo's waits), or, when the window began before the step's first
  collective, that start as recorded;
- a collective ends on each rank when the last rank has arrived, plus that rank's own recorded time after the last
  arrival (its transfer: a slower link shows here).

The straggler's change, at every collective of the step: compute, data loading, host sync or host (Python): that
part of its window no longer than the other ranks' median there (the window shortened by the excess);
communication: its transfer after the last arrival no longer than the others' median. The step's time is the job's
at its last meeting point, the latest end over the ranks and collectives; the gain is how much earlier that comes.
The ranks' own time after the last collective (the optimizer) waits on no one and is left as it is.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl

from tracekit.analysis.job.align import KEY
from tracekit.analysis.job.cause import PARTS
from tracekit.analysis.job.types import COMMUNICATION

if TYPE_CHECKING:  # numpy in the functions that use it: every command imports this module (through tracekit.api)
    import numpy as np


def _matrix(frame: pl.DataFrame, column: str, ranks: list[int], keys: int) -> np.ndarray:
    """ranks x collectives of `column` (the frame: rank_index, key_index, column; NaN where a rank lacks one)."""
    import numpy as np  # here, not at import (see TYPE_CHECKING above)

    out = np.full((len(ranks), keys), np.nan)
    out[frame["rank_index"].to_numpy(), frame["key_index"].to_numpy()] = frame[column].cast(pl.Float64).to_numpy()
    return out


def _median_of_others(values: np.ndarray, mask: np.ndarray, straggler: int) -> np.ndarray:
    """Per collective, the median over the ranks but the straggler that hold it (NaN where none)."""
    import numpy as np  # here, not at import (see TYPE_CHECKING above)

    others = np.where(mask, values, np.nan)
    others = np.delete(others, straggler, axis=0)
    if others.shape[0] == 0:
        return np.full(values.shape[1], np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a collective only the straggler holds: NaN, said here
        return np.nanmedian(others, axis=0)


@dataclass(frozen=True)
class _Grid:
    """Shared collectives (one step's, or several steps') as ranks x collectives matrices (in meeting order), with
    each window's anchors: its previous arrival among them, and the gating collective that ended last on the rank
    before it arrived (-1: none); anchored: the window began at one of them, not before the first."""

    frame: pl.DataFrame  # the rows given, with rank_index and key_index
    ranks: list[int]
    arrival: np.ndarray
    begun: np.ndarray  # the kernel's start (after the rank's previous collective, where `ordered`)
    end: np.ndarray
    ordered: np.ndarray  # the rank runs its collectives one after another (NCCL's stream)
    start: np.ndarray
    present: np.ndarray
    previous: np.ndarray
    ended: np.ndarray
    anchored: np.ndarray

    def matrix(self, column: str) -> np.ndarray:
        return _matrix(self.frame, column, self.ranks, self.arrival.shape[1])

    @property
    def transfer(self) -> np.ndarray:
        """Each rank's own recorded time after the last rank began the collective (its transfer)."""
        import numpy as np  # here, not at import (see TYPE_CHECKING above)

        last_begun = np.nanmax(np.where(self.present, self.begun, np.nan), axis=0)
        return self.end - last_begun


def _grid(late: pl.DataFrame) -> _Grid:
    import numpy as np  # here, not at import (see TYPE_CHECKING above)

    ranks = sorted(set(late["rank"]))
    order = (
        late.group_by(KEY)
        .agg(pl.col("arrival_ns").max().alias("_meets"))
        .sort("_meets", *KEY)
        .with_row_index("key_index")
    )
    frame = late.join(order.select(*KEY, "key_index"), on=KEY).with_columns(
        pl.col("rank").replace_strict(ranks, range(len(ranks)), return_dtype=pl.Int64).alias("rank_index"),
        pl.col("key_index").cast(pl.Int64),
    )
    keys = order.height
    arrival = _matrix(frame, "arrival_ns", ranks, keys)
    begun = _matrix(frame, "kernel_start_ns", ranks, keys)
    end = _matrix(frame, "end_ns", ranks, keys)
    gating = _matrix(frame, "gating", ranks, keys) > 0
    ordered = _matrix(frame, "ordered", ranks, keys) > 0
    start = _matrix(frame, "window_start_ns", ranks, keys)
    present = ~np.isnan(arrival)
    count = len(ranks)
    previous = np.full((count, keys), -1)
    ended = np.full((count, keys), -1)
    for r in range(count):
        held = np.flatnonzero(present[r])
        by_arrival = held[np.argsort(arrival[r, held], kind="stable")]
        previous[r, by_arrival[1:]] = by_arrival[:-1]
        gates = held[gating[r, held]]
        by_end = gates[np.argsort(end[r, gates], kind="stable")]
        at = np.searchsorted(end[r, by_end], arrival[r, held], side="right") - 1
        ended[r, held] = np.where(at >= 0, by_end[np.maximum(at, 0)], -1) if by_end.size else -1
    rows = np.arange(count)[:, None]
    recorded = np.fmax(
        np.where(previous >= 0, arrival[rows, previous], np.nan), np.where(ended >= 0, end[rows, ended], np.nan)
    )
    anchored = present & (recorded >= start)
    return _Grid(frame, ranks, arrival, begun, end, ordered, start, present, previous, ended, anchored)


def _meet(grid: _Grid, own: np.ndarray, transfer: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each rank's arrivals, the collectives' beginnings and their ends on each rank, replayed with these windows
    and transfers."""
    import numpy as np  # here, not at import (see TYPE_CHECKING above)

    count, keys = grid.arrival.shape
    previous, ended, present = grid.previous, grid.ended, grid.present
    new_arrival, new_begun, new_end = grid.arrival.copy(), grid.begun.copy(), grid.end.copy()
    mine = np.arange(count)
    for _ in range(keys + 1):  # in meeting order one pass settles it; ranks that order collectives apart take more
        before = new_end.copy()
        for k in range(keys):
            moved = np.fmax(
                np.where(previous[:, k] >= 0, new_arrival[mine, previous[:, k]], np.nan),
                np.where(ended[:, k] >= 0, new_end[mine, ended[:, k]], np.nan),
            )
            new_arrival[:, k] = np.where(grid.anchored[:, k], moved, grid.start[:, k]) + own[:, k]
            # a rank on NCCL's stream begins once its previous collective has ended there
            behind = np.where(
                grid.ordered[:, k] & (previous[:, k] >= 0), new_end[mine, np.maximum(previous[:, k], 0)], np.nan
            )
            new_begun[:, k] = np.fmax(new_arrival[:, k], behind)
            met = np.nanmax(np.where(present[:, k], new_begun[:, k], np.nan))
            new_end[:, k] = np.where(present[:, k], met + transfer[:, k], np.nan)
        if np.array_equal(before, new_end, equal_nan=True):
            break
    return new_arrival, new_begun, new_end


def step_gain_ns(late: pl.DataFrame, rank: int, cause: str | None) -> int:
    """The step's gain with `rank`'s `cause` set to the median of the other ranks' (see the module). `late`: the
    step's shared collectives on the reference clock (`straggler.arrivals`: rank, KEY, arrival_ns, end_ns,
    window_start_ns and the window's parts, `cause.PARTS`)."""
    import numpy as np  # here, not at import (see TYPE_CHECKING above)

    if cause is None or late.height == 0 or rank not in set(late["rank"]):
        return 0
    grid = _grid(late)
    straggler = grid.ranks.index(rank)
    own = grid.arrival - grid.start
    transfer = grid.transfer
    if cause == COMMUNICATION:
        typical = _median_of_others(transfer, grid.present, straggler)
        transfer[straggler] = np.where(np.isnan(typical), transfer[straggler], np.fmin(transfer[straggler], typical))
    else:
        part = grid.matrix(PARTS[cause])
        typical = _median_of_others(part, grid.present, straggler)
        excess = np.nan_to_num(part[straggler] - typical, nan=0.0)
        own[straggler] -= np.clip(excess, 0.0, np.nan_to_num(own[straggler], nan=0.0))
    _, _, new_end = _meet(grid, own, transfer)
    return max(0, round(float(np.nanmax(grid.end) - np.nanmax(new_end))))


def rewindowed(late: pl.DataFrame, own_column: str) -> pl.DataFrame:
    """The collectives replayed with each window's own time read from `own_column` (the windows without the
    profiler: `unprofiled`; where null, as recorded): arrival_ns, end_ns, window_start_ns and previous_end_ns as the
    replay places them. Given several steps, the windows chain from one step into the next."""
    import numpy as np  # here, not at import (see TYPE_CHECKING above)

    if late.height == 0:
        return late
    grid = _grid(late)
    own = grid.matrix(own_column)
    own = np.where(np.isnan(own), grid.arrival - grid.start, own)
    new_arrival, new_begun, new_end = _meet(grid, own, grid.transfer)
    rows = np.arange(len(grid.ranks))[:, None]
    previous_end = np.where(grid.previous >= 0, new_end[rows, np.maximum(grid.previous, 0)], np.nan)
    r, k = grid.frame["rank_index"].to_numpy(), grid.frame["key_index"].to_numpy()

    def column(values: np.ndarray) -> pl.Series:
        return pl.Series(np.round(values[r, k]), dtype=pl.Float64).fill_nan(None).cast(pl.Int64)

    return grid.frame.with_columns(
        column(new_arrival).alias("arrival_ns"),
        column(new_begun).alias("kernel_start_ns"),
        column(new_end).alias("end_ns"),
        column(new_arrival - own).alias("window_start_ns"),
        pl.coalesce(column(previous_end), pl.col("previous_end_ns")).alias("previous_end_ns"),
    ).drop("rank_index", "key_index")
