"""Per-process caches for the pages: a launch's warps (for zooming) and its figure frames.

The analysis itself comes from the one engine (`tracekit.api.TraceAnalysis.analyze`), which caches results in the store:
the launch page shows exactly what `tracekit analyze` prints for the launch. A launch's own data never changes
(an import is immutable), so its warps and figure frames are cached here by launch id; its analysis is asked of
the engine on each page build, which recomputes it only when its context (pairing candidates, sweep family)
changed since.
"""

from __future__ import annotations

import logging
import os
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from threading import Lock
from typing import Any, Generic, TypeVar

import polars as pl

from tracekit.api import LaunchAnalysis, TraceAnalysis
from tracekit.errors import TracekitError

log = logging.getLogger(__name__)

# A launch with more warps than this whose analysis is not in the store yet gets its page drawn first and its
# verdict after (about a second of analysis per million warps on a laptop core).
DEFER_ANALYSIS_WARPS = int(os.environ.get("TRACEKIT_DEFER_ANALYSIS_WARPS", "1000000"))


@dataclass(frozen=True)
class LaunchAggregates:
    """A traced launch's figure aggregates: all the launch page needs to draw it before any zoom, so a 10M-warp
    launch's first draw reads a few kB from the store instead of its warps."""

    sm_ids: list[int]  # the SMs that ran warps
    warp_count: int
    occupancy_curve: pl.DataFrame  # aggregates.occupancy_over_time
    latency_histogram: pl.DataFrame  # aggregates.latency_histogram
    activity: pl.DataFrame | None  # the whole launch binned on all SMs; None when each warp can be drawn


Value = TypeVar("Value")


class LruCache(Generic[Value]):
    """At most `size` values by key, least recently used dropped first; `get` computes a missing one."""

    def __init__(self, size: int):
        self.size = size
        self.values: OrderedDict[Any, Value] = OrderedDict()
        self.lock = Lock()
        self.key_locks: dict[Any, Lock] = {}

    def get(self, key: Any, compute: Callable[[], Value]) -> Value:
        """The value under `key`, computed when missing (once, however many requests wait for it)."""
        with self.lock:
            if key in self.values:
                self.values.move_to_end(key)
                return self.values[key]
            key_lock = self.key_locks.setdefault(key, Lock())
        with key_lock:
            with self.lock:
                if key in self.values:  # computed while this request waited
                    return self.values[key]
            value = compute()
            with self.lock:
                self.values[key] = value
                while len(self.values) > self.size:
                    self.values.popitem(last=False)
                self.key_locks.pop(key, None)
        return value


class WarpCache:
    """The last few launches' warps, in relative time: zooming re-reads nothing from the store."""

    def __init__(self, traces: TraceAnalysis, size: int = 4):
        self.traces = traces
        self.cache: LruCache[pl.DataFrame] = LruCache(size)

    def get(self, launch_id: int) -> pl.DataFrame:
        return self.cache.get(launch_id, lambda: self.traces.relative_warps(launch_id))


@dataclass(frozen=True)
class LaunchPage:
    """Everything the launch and compare pages show about one launch."""

    launch: dict[str, Any]  # the Store.launches() row
    metrics: pl.DataFrame
    result: LaunchAnalysis | None  # the engine's result; None when the analysis failed (`error` says why)
    error: str | None
    occupancy_curve: pl.DataFrame | None  # aggregates.occupancy_over_time; None without warps
    latency_histogram: pl.DataFrame | None
    pending_warps: int = 0  # > 0: the analysis of this many warps is not done yet (`result` is None)


class AnalysisCache:
    """The pages' view of launches: the engine's result with the figure frames of the launch's own data."""

    def __init__(self, traces: TraceAnalysis, size: int = 16, warp_cache_size: int = 4):
        self.traces = traces
        self.warps = WarpCache(traces, warp_cache_size)
        self.frames: LruCache[tuple[pl.DataFrame, pl.DataFrame | None, pl.DataFrame | None]] = LruCache(size)
        self.figures: LruCache[Any] = LruCache(size)  # pages' costly figures of a launch's own data, by launch id
        self.regions: LruCache[Any] = LruCache(warp_cache_size)  # region_views: a launch's region layout, by id
        self.launch_aggregates: LruCache[LaunchAggregates | None] = LruCache(size)

    def result(self, launch_id: int, pair: int | None = None) -> LaunchAnalysis:
        """The engine's result for one launch (what `GET /api/launches/<id>/analysis` serves); `pair` names the
        profiled launch to take the counters from, as `--pair` does on the command line."""
        return self.traces.analyze([launch_id], pairs={launch_id: pair} if pair is not None else None)[0]

    def get(self, launch_id: int, pair: int | None = None, defer: bool = False) -> LaunchPage | None:
        """The launch's page data; None when the store has no such launch. With `defer`, a launch of more than
        DEFER_ANALYSIS_WARPS warps whose analysis the store does not hold yet comes without it (`pending_warps`),
        so that its page is drawn at once."""
        found = self.traces.launches(launch_ids=[launch_id])
        if found.height == 0:
            return None
        launch = found.row(0, named=True)
        metrics, curve, histogram = self.frames.get(launch_id, lambda: self._frames(launch))
        aggregates = self.aggregates(launch)
        warp_count = aggregates.warp_count if aggregates else 0
        if defer and warp_count > DEFER_ANALYSIS_WARPS:
            result = self.traces.cached(launch_id, pair)
            if result is None:
                return LaunchPage(launch, metrics, None, None, curve, histogram, pending_warps=warp_count)
            return LaunchPage(launch, metrics, result, None, curve, histogram)
        try:
            result = self.result(launch_id, pair)
        except TracekitError as exc:
            return LaunchPage(launch, metrics, None, f"The analysis cannot run on this launch: {exc}", None, None)
        except Exception as exc:  # noqa: BLE001 - one bad launch must not take the page down; it is logged in full
            log.exception("analysing launch %s failed", launch_id)
            message = f"The analysis failed ({type(exc).__name__}: {exc}); the server log has the details."
            return LaunchPage(launch, metrics, None, message, None, None)
        return LaunchPage(launch, metrics, result, None, curve, histogram)

    def _frames(self, launch: dict[str, Any]) -> tuple[pl.DataFrame, pl.DataFrame | None, pl.DataFrame | None]:
        launch_id = launch["id"]
        metrics = self.traces.metrics(launch_id)
        aggregates = self.aggregates(launch)
        if aggregates is None:
            return metrics, None, None
        return metrics, aggregates.occupancy_curve, aggregates.latency_histogram

    def aggregates(self, launch: dict[str, Any]) -> LaunchAggregates | None:
        """The launch's figure aggregates (None without warps): from this process, else from the store, else
        computed from its warps once and kept in the store for every process after."""
        return self.launch_aggregates.get(launch["id"], lambda: self._aggregates(launch))

    def _aggregates(self, launch: dict[str, Any]) -> LaunchAggregates | None:
        frames = self.traces.figure_aggregates(launch, lambda: self.warps.get(int(launch["id"])))
        if frames is None:
            return None
        sms = frames["sms"]
        return LaunchAggregates(
            sm_ids=sms["sm_id"].to_list(),
            warp_count=int(sms["warp_count"][0]) if sms.height else 0,
            occupancy_curve=frames["occupancy"],
            latency_histogram=frames["latency"],
            activity=frames["activity"] if frames["activity"].width else None,
        )
