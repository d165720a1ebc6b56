"""Block replacement: the occupancy a kernel loses between one block and the next on an SM.

Two losses, both invisible to a mean-latency view:
- the replacement gap: from a block's last warp ending to the next block start on that SM ("next": the first block
  start on the SM at or after that block's end); its slots stand empty meanwhile;
- the end spread within a block (last warp end - first warp end): warps that have finished hold their slot
  until the whole block exits, since a new block needs the block's resources back.
A block starts with its first warp and ends with its last. Losses are also given as warps per SM over the launch
(warp-ns lost / (span x sm_count)), comparable with the mean occupancy.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import polars as pl

from tracekit.analysis.warp_occupancy import relative_times, resolve_sm_count
from tracekit.scalars import as_int


def blocks_frame(warps: pl.DataFrame) -> pl.DataFrame:
    """One row per block: sm_id, block_id, warps, start_ns, end_ns, end_spread_ns, warp_ns_after_own_end,
    next_start_ns, gap_ns (relative ns; the last columns null when no block follows on the SM), sorted by
    (sm_id, start_ns, block_id)."""
    return _unordered_blocks(warps).sort("sm_id", "start_ns", "block_id")


def _unordered_blocks(warps: pl.DataFrame) -> pl.DataFrame:
    """`blocks_frame` in no particular order: the summaries need no order, and a 3-key sort of a million blocks
    costs as much as computing them."""
    rel = relative_times(warps)
    end = pl.col("end_rel_ns")
    blocks = (
        rel.lazy()
        .group_by("block_id")
        .agg(
            sm_id=pl.col("sm_id").first(),
            warps=pl.len(),
            start_ns=pl.col("start_rel_ns").min(),
            end_ns=end.max(),
            end_spread_ns=end.max() - end.min(),
            warp_ns_after_own_end=end.max() * pl.len() - end.sum(),
        )
        .collect()
    )
    starts = blocks.select("sm_id", next_start_ns=pl.col("start_ns")).sort("next_start_ns")
    return (
        blocks.sort("end_ns")
        .join_asof(
            starts,
            left_on="end_ns",
            right_on="next_start_ns",
            by="sm_id",
            strategy="forward",
            check_sortedness=False,
            coalesce=False,
        )  # both sides sorted just above
        .select(
            "sm_id",
            "block_id",
            "warps",
            "start_ns",
            "end_ns",
            "end_spread_ns",
            "warp_ns_after_own_end",
            "next_start_ns",
            gap_ns=pl.col("next_start_ns") - pl.col("end_ns"),
        )
    )


@dataclass(frozen=True)
class BlockReplacement:
    blocks: int
    replacements: int  # blocks followed by another on their SM
    gap_mean_ns: float | None
    gap_p50_ns: float | None
    gap_p90_ns: float | None
    gap_p99_ns: float | None
    gap_max_ns: int | None
    end_spread_mean_ns: float
    end_spread_p50_ns: float
    end_spread_p90_ns: float
    end_spread_p99_ns: float
    end_spread_max_ns: int
    lost_to_gaps_warps_per_sm: float  # sum(gap x warps of the ended block) / (span x sm_count)
    lost_to_end_spread_warps_per_sm: float  # sum over warps of (block end - warp end) / (span x sm_count)
    duration_relative_spread: float | None  # (p90 - p10) / median of block durations: imbalance between blocks

    def to_dict(self) -> dict:
        return asdict(self)


def block_replacement(warps: pl.DataFrame, sm_count: int | None = None) -> BlockReplacement:
    rel = relative_times(warps)
    sm_count = resolve_sm_count(rel, sm_count)
    capacity_ns = max(as_int(rel["end_rel_ns"].max()), 1) * sm_count
    gap, spread = pl.col("gap_ns"), pl.col("end_spread_ns")
    duration = pl.col("end_ns") - pl.col("start_ns")
    row = (
        _unordered_blocks(rel)
        .select(
            blocks=pl.len(),
            replacements=gap.count(),
            gap_mean_ns=gap.mean(),
            gap_p50_ns=gap.quantile(0.5, "linear"),
            gap_p90_ns=gap.quantile(0.9, "linear"),
            gap_p99_ns=gap.quantile(0.99, "linear"),
            gap_max_ns=gap.max(),
            end_spread_mean_ns=spread.mean(),
            end_spread_p50_ns=spread.quantile(0.5, "linear"),
            end_spread_p90_ns=spread.quantile(0.9, "linear"),
            end_spread_p99_ns=spread.quantile(0.99, "linear"),
            end_spread_max_ns=spread.max(),
            lost_to_gaps_warps_per_sm=(gap * pl.col("warps")).sum() / capacity_ns,
            lost_to_end_spread_warps_per_sm=pl.col("warp_ns_after_own_end").sum() / capacity_ns,
            duration_relative_spread=pl.when(duration.median() > 0).then(
                (duration.quantile(0.9, "linear") - duration.quantile(0.1, "linear")) / duration.median()
            ),
        )
        .row(0, named=True)
    )
    return BlockReplacement(**row)
