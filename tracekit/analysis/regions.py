"""Volkov's latency-hiding view per named region of a kernel (intra-kernel profilers: Proton, hand-written
`%globaltimer` tags, the tracekit v2 header).

A region is an interval of one warp. For each region of one launch this module measures how often it ran, how
long it took (latency distribution), its inclusive and exclusive time (exclusive: minus the time of the regions
nested directly inside it in the same warp), how many warps were inside it at once per SM (its occupancy, over
time and on average), how fast instances completed (throughput per SM), and checks Little's law per region:
mean warps in the region per SM = mean region latency x region arrival rate per SM. Over the whole launch window
every instance starts inside it and is counted whole, so the law closes exactly; over a sub-window instances that
straddle its edges make the gap, as for whole warps (see littles_law.py).

Further: each region's share of the warps' time (exclusive time over the warps' lifetimes, first region start
to last region end of each warp), the region that dominates the tail (exclusive warp time inside [first SM idle
for good, last region end], the tail as tail.py's `tail_ns` and the occupancy figure's shading define it: the GPU
no longer fully used), and warp roles: positions in the block (warp_in_block)
that run the same set of regions form one role (producer and consumer warps of a warp-specialized kernel), with
per-role region statistics so their differences show.

Times are in one unit for the whole launch: ns when every region has ns, else SM cycles (`time_unit` says which;
cycles are never converted here). All functions are pure: polars frames in, frozen dataclasses out.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

import polars as pl

from tracekit.errors import TracekitError
from tracekit.scalars import as_float, as_int

TimeUnit = Literal["ns", "cycles"]
WARP_KEYS = ["sm_id", "block_id", "warp_in_block"]
NO_REGION = "(no region)"
QUANTILES = (0.5, 0.9, 0.99)


@dataclass(frozen=True)
class LatencyDistribution:
    """Region instance durations, in the analysis' time unit."""

    count: int
    mean: float
    std: float  # population standard deviation
    min: int
    p50: float
    p90: float
    p99: float
    max: int


@dataclass(frozen=True)
class RegionLittlesLaw:
    """mean warps in the region per SM (sweep) vs mean latency x arrival rate per SM, over one window."""

    window_start: int
    window_end: int
    sm_count: int
    mean_warps_in_region_per_sm: float  # time integral of the in-region warp count / (window x sm_count)
    instances_started: int  # instances starting in the window, counted whole
    mean_latency: float
    arrival_rate_per_sm: float  # instances started per time unit per SM
    latency_x_throughput: float
    relative_error: float  # (latency_x_throughput - mean_warps) / mean_warps; 0 when both are 0


@dataclass(frozen=True)
class RegionStats:
    region: str
    count: int
    warps: int  # distinct warps that ran it
    instances_per_warp: float  # over the warps that ran it
    min_depth: int
    max_depth: int
    latency: LatencyDistribution
    inclusive_total: int  # sum of durations
    exclusive_total: int  # minus time in regions nested directly inside, same warp
    share_of_warp_time: float  # exclusive_total / sum of all warps' lifetimes
    mean_share_in_own_warps: float  # mean over the warps that ran it of (its exclusive time / warp lifetime)
    throughput_per_sm: float  # completions per time unit per SM over the launch span
    peak_warps_in_region_per_sm: int  # most warps of one SM inside it at once
    littles_law: RegionLittlesLaw


@dataclass(frozen=True)
class RegionTail:
    """Which region the warps spent the tail in: exclusive warp time inside [the first SM idle for good, span end].
    Empty (no dominant region) when the file does not say on which SM warps ran."""

    tail_start: int
    tail_end: int
    tail_fraction: float  # of the span
    dominant_region: str | None  # None when the tail is empty
    dominant_share: float  # of the warp time inside the tail
    share_in_tail: dict[str, float]  # region (and NO_REGION) -> share of warp time inside the tail
    share_before_tail: dict[str, float]  # the same before the tail, for contrast


@dataclass(frozen=True)
class RoleRegion:
    region: str
    instances_per_warp: float
    mean_latency: float
    share_of_warp_time: float  # exclusive time / the role's warps' lifetimes


@dataclass(frozen=True)
class WarpRole:
    """Warps at the same positions in their blocks that run the same set of regions."""

    name: str
    warps_in_block: tuple[int, ...]
    warp_count: int
    mean_warp_lifetime: float
    regions: tuple[RoleRegion, ...]


@dataclass(frozen=True)
class RegionAnalysis:
    time_unit: TimeUnit
    time_note: str  # how to read the unit (cycles are the SM clock's, not converted)
    span: int  # first region start to last region end
    sm_count: int
    sms_known: bool  # False when the file does not say on which SM a warp ran (then sm_count is 1)
    warp_count: int
    regions: tuple[RegionStats, ...]
    tail: RegionTail
    roles: tuple[WarpRole, ...]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def region(self, name: str) -> RegionStats:
        for stats in self.regions:
            if stats.region == name:
                return stats
        raise KeyError(name)


# ---- the time base -------------------------------------------------------------------------------------------


def region_intervals(regions: pl.DataFrame) -> tuple[pl.DataFrame, TimeUnit]:
    """One launch's regions as `start`/`end` relative to its first region start, in ns when every region has ns,
    else in cycles; plus an `iid` per instance. Unknown SMs become -1."""
    if regions.height == 0:
        raise TracekitError("the launch has no region events")
    unit: TimeUnit
    if regions["start_ns"].null_count() == 0 and regions["end_ns"].null_count() == 0:
        unit = "ns"
    elif regions["start_cycles"].null_count() == 0 and regions["end_cycles"].null_count() == 0:
        unit = "cycles"
    else:
        raise TracekitError("the regions have neither complete ns nor complete cycle times")
    origin = regions[f"start_{unit}"].min()
    frame = regions.select(
        pl.col("sm_id").cast(pl.Int64).fill_null(-1),
        pl.col("block_id").cast(pl.Int64),
        pl.col("warp_in_block").cast(pl.Int64),
        pl.col("region"),
        pl.col("depth").cast(pl.Int64) if "depth" in regions.columns else pl.lit(0, pl.Int64).alias("depth"),
        (pl.col(f"start_{unit}") - origin).alias("start"),
        (pl.col(f"end_{unit}") - origin).alias("end"),
    )
    frame = frame.sort([*WARP_KEYS, "start", "end"], descending=[False, False, False, False, True])
    return frame.with_row_index("iid"), unit


def with_parents(intervals: pl.DataFrame) -> pl.DataFrame:
    """Each instance with its direct parent's iid/start/end (null at depth 0): the last instance one level up in
    the same warp that started at or before it."""
    parents = intervals.select(
        *WARP_KEYS,
        (pl.col("depth") + 1).alias("depth"),
        pl.col("start").alias("parent_start"),
        pl.col("end").alias("parent_end"),
        pl.col("iid").alias("parent_iid"),
    ).sort("parent_start")
    children = intervals.sort("start")
    linked = children.join_asof(
        parents,
        left_on="start",
        right_on="parent_start",
        by=[*WARP_KEYS, "depth"],
        strategy="backward",
        check_sortedness=False,  # sorted by start above; polars cannot check that within `by` groups
    )
    return linked.sort("iid")


def _clipped(start: pl.Expr, end: pl.Expr, lo: int | pl.Expr, hi: int | pl.Expr) -> pl.Expr:
    return (pl.min_horizontal(end, hi) - pl.max_horizontal(start, lo)).clip(lower_bound=0)


def exclusive_in(linked: pl.DataFrame, lo: int, hi: int) -> pl.DataFrame:
    """Per instance (iid, region, warp keys): its time inside [lo, hi) minus that of its direct children there."""
    own = linked.select("iid", "region", *WARP_KEYS, _clipped(pl.col("start"), pl.col("end"), lo, hi).alias("inside"))
    children = (
        linked.filter(pl.col("parent_iid").is_not_null())
        .select(
            pl.col("parent_iid").alias("iid"),
            _clipped(pl.max_horizontal("start", "parent_start"), pl.min_horizontal("end", "parent_end"), lo, hi).alias(
                "child"
            ),
        )
        .group_by("iid")
        .agg(pl.col("child").sum())
    )
    return own.join(children, on="iid", how="left").with_columns(
        (pl.col("inside") - pl.col("child").fill_null(0)).alias("exclusive")
    )


def warp_lifetimes(intervals: pl.DataFrame) -> pl.DataFrame:
    """Each warp's first region start and last region end."""
    return intervals.group_by(WARP_KEYS).agg(pl.col("start").min(), pl.col("end").max()).sort(WARP_KEYS)


# ---- occupancy -----------------------------------------------------------------------------------------------


def in_region_integral(intervals: pl.DataFrame, lo: int, hi: int) -> pl.DataFrame:
    """Per region: the time integral over [lo, hi) of the number of warps inside it, from a +1/-1 sweep of its
    instance starts and ends (summed over SMs), and the peak count on one SM."""
    events = pl.concat(
        [
            intervals.select("region", "sm_id", pl.col("start").alias("t"), pl.lit(1, pl.Int64).alias("step")),
            intervals.select("region", "sm_id", pl.col("end").alias("t"), pl.lit(-1, pl.Int64).alias("step")),
        ]
    )
    # Ends before starts at equal times, so touching instances of one warp never count twice.
    per_sm = (
        events.sort(["region", "sm_id", "t", "step"])
        .with_columns(pl.col("step").cum_sum().over(["region", "sm_id"]).alias("count"))
        .with_columns(pl.col("t").shift(-1).over(["region", "sm_id"]).alias("t_next"))
        .with_columns(_clipped(pl.col("t"), pl.col("t_next"), lo, hi).fill_null(0).alias("width"))
    )
    return per_sm.group_by("region").agg(
        (pl.col("count") * pl.col("width")).sum().alias("integral"),
        pl.col("count").max().alias("peak"),
    )


def region_occupancy(regions: pl.DataFrame, bins: int = 100) -> pl.DataFrame:
    """Warps inside each region over time, per SM: mean count in each of `bins` equal time bins of the span.

    Columns: region, sm_id, bin, bin_start, bin_end, mean_warps (time unit: `region_intervals`')."""
    intervals, _ = region_intervals(regions)
    span = as_int(intervals["end"].max())
    width = max(1, -(-span // bins))
    pieces = (
        intervals.select(
            "region",
            "sm_id",
            "start",
            "end",
            pl.int_ranges(
                pl.col("start") // width, (pl.col("end") - 1).clip(lower_bound=pl.col("start")) // width + 1
            ).alias("bin"),
        )
        .explode("bin")
        .with_columns((pl.col("bin") * width).alias("bin_start"))
        .with_columns((pl.col("bin_start") + width).alias("bin_end"))
        .with_columns(_clipped(pl.col("start"), pl.col("end"), pl.col("bin_start"), pl.col("bin_end")).alias("inside"))
    )
    return (
        pieces.group_by(["region", "sm_id", "bin", "bin_start", "bin_end"])
        .agg((pl.col("inside").sum() / width).alias("mean_warps"))
        .sort(["region", "sm_id", "bin"])
    )


# ---- the analysis --------------------------------------------------------------------------------------------


def _latency(durations: pl.Series) -> LatencyDistribution:
    return LatencyDistribution(
        count=durations.len(),
        mean=as_float(durations.mean() or 0.0),
        std=as_float(durations.std(ddof=0) or 0.0),
        min=as_int(durations.min() or 0),
        p50=float(durations.quantile(0.5, "linear") or 0.0),
        p90=float(durations.quantile(0.9, "linear") or 0.0),
        p99=float(durations.quantile(0.99, "linear") or 0.0),
        max=as_int(durations.max() or 0),
    )


def littles_law_in(intervals: pl.DataFrame, region: str, sm_count: int, lo: int, hi: int) -> RegionLittlesLaw:
    """Little's law for one region over [lo, hi): the sweep's mean against whole instances starting inside."""
    mine = intervals.filter(pl.col("region") == region)
    integral = in_region_integral(mine, lo, hi)
    area = float(integral["integral"].sum()) if integral.height else 0.0
    window = hi - lo
    mean_warps = area / (window * sm_count) if window > 0 else 0.0
    started = mine.filter((pl.col("start") >= lo) & (pl.col("start") < hi))
    # An instance of zero length at the very end of the window still counts as started in it.
    if hi > lo and mine.height and as_int(mine["start"].max()) == hi:
        started = mine.filter((pl.col("start") >= lo) & (pl.col("start") <= hi))
    count = started.height
    mean_latency = as_float((started["end"] - started["start"]).mean() or 0.0) if count else 0.0
    rate = count / (window * sm_count) if window > 0 else 0.0
    product = mean_latency * rate
    error = (product - mean_warps) / mean_warps if mean_warps else (0.0 if product == 0 else float("inf"))
    return RegionLittlesLaw(lo, hi, sm_count, mean_warps, count, mean_latency, rate, product, error)


def analyze_regions(
    regions: pl.DataFrame, sm_count: int | None = None, window: tuple[int, int] | None = None
) -> RegionAnalysis:
    """Everything above for one launch's regions (`REGION_SCHEMA` columns). `sm_count`: the device's SMs (default:
    those seen); `window`: Little's law window in the analysis unit relative to the first region start (default:
    the whole span, where the law closes exactly)."""
    intervals, unit = region_intervals(regions)
    sms_known = bool((intervals["sm_id"] >= 0).all())
    seen_sms = intervals["sm_id"].n_unique()
    sms = (sm_count or seen_sms) if sms_known else 1
    if sms_known and sms < seen_sms:
        raise TracekitError(f"sm_count {sms} is below the {seen_sms} SMs the regions ran on")
    span = as_int(intervals["end"].max())
    lo, hi = window if window is not None else (0, span)
    if not hi > lo:
        raise TracekitError(f"the Little's law window [{lo}, {hi}) is empty")
    linked = with_parents(intervals)
    exclusive = exclusive_in(linked, 0, span + 1)
    lifetimes = warp_lifetimes(intervals).with_columns((pl.col("end") - pl.col("start")).alias("lifetime"))
    total_lifetime = int(lifetimes["lifetime"].sum())
    per_warp = exclusive.group_by(["region", *WARP_KEYS]).agg(pl.col("exclusive").sum(), pl.len().alias("n"))
    # Sorted: group_by's row order varies from run to run, and float means must not change in the last digit.
    per_warp = (
        per_warp.join(lifetimes.select(*WARP_KEYS, "lifetime"), on=WARP_KEYS)
        .with_columns(
            pl.when(pl.col("lifetime") > 0).then(pl.col("exclusive") / pl.col("lifetime")).otherwise(0.0).alias("share")
        )
        .sort(["region", *WARP_KEYS])
    )
    integrals = in_region_integral(intervals, 0, span + 1)
    peaks = dict(zip(integrals["region"].to_list(), integrals["peak"].to_list(), strict=True))
    stats = []
    names = intervals.group_by("region").agg(pl.col("start").min()).sort(["start", "region"])["region"].to_list()
    for name in names:
        mine = intervals.filter(pl.col("region") == name)
        durations = mine["end"] - mine["start"]
        warps_of = per_warp.filter(pl.col("region") == name)
        excl = int(exclusive.filter(pl.col("region") == name)["exclusive"].sum())
        stats.append(
            RegionStats(
                region=name,
                count=mine.height,
                warps=warps_of.height,
                instances_per_warp=mine.height / warps_of.height,
                min_depth=as_int(mine["depth"].min()),
                max_depth=as_int(mine["depth"].max()),
                latency=_latency(durations),
                inclusive_total=int(durations.sum()),
                exclusive_total=excl,
                share_of_warp_time=excl / total_lifetime if total_lifetime else 0.0,
                mean_share_in_own_warps=as_float(warps_of["share"].mean() or 0.0),
                throughput_per_sm=mine.height / (span * sms) if span else 0.0,
                peak_warps_in_region_per_sm=int(peaks.get(name, 0)),
                littles_law=littles_law_in(intervals, name, sms, lo, hi),
            )
        )
    return RegionAnalysis(
        time_unit=unit,
        time_note=(
            "ns of %globaltimer"
            if unit == "ns"
            else "SM clock cycles as recorded (not converted: the SM clock was not given)"
        ),
        span=span,
        sm_count=sms,
        sms_known=sms_known,
        warp_count=lifetimes.height,
        regions=tuple(stats),
        tail=region_tail(intervals, linked, lifetimes),
        roles=warp_roles(intervals, exclusive, lifetimes),
    )


def _shares(linked: pl.DataFrame, lifetimes: pl.DataFrame, lo: int, hi: int) -> dict[str, float]:
    """Each region's exclusive warp time inside [lo, hi) and the warps' time in no region, as shares of their sum."""
    inside = exclusive_in(linked, lo, hi).group_by("region").agg(pl.col("exclusive").sum())
    by_region = {r: int(v) for r, v in inside.iter_rows()}
    alive = int(lifetimes.select(_clipped(pl.col("start"), pl.col("end"), lo, hi).sum()).item())
    top_level = int(
        linked.filter(pl.col("depth") == 0).select(_clipped(pl.col("start"), pl.col("end"), lo, hi).sum()).item()
    )
    by_region[NO_REGION] = max(0, alive - top_level)
    total = sum(by_region.values())
    return {r: (v / total if total else 0.0) for r, v in sorted(by_region.items())}


def region_tail(intervals: pl.DataFrame, linked: pl.DataFrame, lifetimes: pl.DataFrame) -> RegionTail:
    span = as_int(intervals["end"].max())
    # The earliest time an SM that ran warps goes idle for good (its last region end): from then on the GPU is no
    # longer fully used. With one wave every block starts at once, so the last block's start would make the whole
    # kernel a "tail".
    known = intervals.filter(pl.col("sm_id") >= 0)
    finish = known.group_by("sm_id").agg(pl.col("end").max())["end"]
    tail_start = as_int(finish.min()) if known.height else span
    in_tail = _shares(linked, lifetimes, tail_start, span) if span > tail_start else {}
    before = _shares(linked, lifetimes, 0, tail_start) if tail_start > 0 else {}
    dominant = max(in_tail, key=lambda r: (in_tail[r], r)) if in_tail and sum(in_tail.values()) else None
    return RegionTail(
        tail_start=tail_start,
        tail_end=span,
        tail_fraction=(span - tail_start) / span if span else 0.0,
        dominant_region=dominant,
        dominant_share=in_tail.get(dominant, 0.0) if dominant else 0.0,
        share_in_tail=in_tail,
        share_before_tail=before,
    )


def warp_roles(intervals: pl.DataFrame, exclusive: pl.DataFrame, lifetimes: pl.DataFrame) -> tuple[WarpRole, ...]:
    """Group warp positions in the block by the set of regions they run; per role, per region statistics."""
    signatures = (
        intervals.group_by("warp_in_block")
        .agg(pl.col("region").unique().sort().str.join("\x1f").alias("signature"))
        .sort("warp_in_block")
    )
    groups: dict[str, list[int]] = {}
    for position, signature in signatures.iter_rows():
        groups.setdefault(signature, []).append(position)
    roles = []
    for signature, positions in sorted(groups.items(), key=lambda item: item[1][0]):
        warps = lifetimes.filter(pl.col("warp_in_block").is_in(positions))
        total = int(warps["lifetime"].sum())
        mine = intervals.filter(pl.col("warp_in_block").is_in(positions))
        excl = exclusive.filter(pl.col("warp_in_block").is_in(positions))
        role_regions = []
        for name in signature.split("\x1f"):
            instances = mine.filter(pl.col("region") == name)
            role_regions.append(
                RoleRegion(
                    region=name,
                    instances_per_warp=instances.height / warps.height,
                    mean_latency=as_float((instances["end"] - instances["start"]).mean() or 0.0),
                    share_of_warp_time=int(excl.filter(pl.col("region") == name)["exclusive"].sum()) / total
                    if total
                    else 0.0,
                )
            )
        label = _positions_label(positions)
        roles.append(
            WarpRole(
                name=f"warps {label}" if len(positions) > 1 else f"warp {label}",
                warps_in_block=tuple(positions),
                warp_count=warps.height,
                mean_warp_lifetime=as_float(warps["lifetime"].mean() or 0.0),
                regions=tuple(sorted(role_regions, key=lambda r: -r.share_of_warp_time)),
            )
        )
    return tuple(roles)


def _positions_label(positions: list[int]) -> str:
    """[0] -> "0", [2, 3, 4, 5] -> "2-5", [0, 2] -> "0,2"."""
    runs: list[str] = []
    start = previous = positions[0]
    for p in [*positions[1:], None]:
        if p is not None and p == previous + 1:
            previous = p
            continue
        runs.append(str(start) if start == previous else f"{start}-{previous}")
        if p is not None:
            start = previous = p
    return ",".join(runs)
