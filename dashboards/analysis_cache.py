"""Per-process caches: a launch's warps and its analysis, so a page's callbacks (zoom, what-if, compare) read the
store and run the analysis once per launch, not once per request.

Small LRUs keyed by launch id. Each launch is computed under its own lock: two requests for one launch wait for
one computation, requests for other launches go on. A launch's own data never changes (an import is immutable), but
its sweep depends on the other launches of its kernel in the store: an analysis is redone when that set changed
(an import or a delete since), and a deleted launch is not found.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from threading import Lock
from typing import Any, Generic, TypeVar

import polars as pl

from tracekit.analysis import timeline, views
from tracekit.analysis.result import MIN_SWEEP_POINTS, KernelSweep, LaunchInput, analyze_launch, fit_kernel_sweep
from tracekit.errors import TracekitError
from tracekit.store import Store

log = logging.getLogger(__name__)

Value = TypeVar("Value")
MAX_SWEEP_LAUNCHES = 24  # launches of one kernel analyzed to fit its sweep; more would slow the first page draw


class LruCache(Generic[Value]):
    """At most `size` values by launch id, least recently used dropped first; `get` computes a missing one."""

    def __init__(self, size: int):
        self.size = size
        self.values: OrderedDict[int, Value] = OrderedDict()
        self.lock = Lock()
        self.key_locks: dict[int, Lock] = {}

    def get(
        self, key: int, compute: Callable[[], Value], is_current: Callable[[Value], bool] = lambda _: True
    ) -> Value:
        """The value under `key`, computed when missing or no longer `is_current`."""
        with self.lock:
            if key in self.values and is_current(self.values[key]):
                self.values.move_to_end(key)
                return self.values[key]
            key_lock = self.key_locks.setdefault(key, Lock())
        with key_lock:
            with self.lock:
                if key in self.values and is_current(self.values[key]):  # computed while this request waited
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

    def __init__(self, store: Store, size: int = 4):
        self.store = store
        self.cache: LruCache[pl.DataFrame] = LruCache(size)

    def get(self, launch_id: int) -> pl.DataFrame:
        def load() -> pl.DataFrame:
            warps = self.store.warps(launch_id)
            return timeline.relative_times(warps) if warps.height else warps

        return self.cache.get(launch_id, load)


@dataclass(frozen=True)
class LaunchAnalysis:
    """Everything the launch and compare pages show about one launch."""

    launch: dict[str, Any]  # the Store.launches() row
    metrics: pl.DataFrame
    result: dict[str, Any] | None  # "tracekit.analysis/1"; None when the analysis failed (`error` says why)
    error: str | None
    sweep: KernelSweep | None  # the kernel's sweep search (None when the analysis failed)
    same_kernel_ids: tuple[int, ...]  # the other launches of the kernel the sweep was searched over
    occupancy_curve: pl.DataFrame | None  # views.occupancy_over_time; None without warps
    latency_histogram: pl.DataFrame | None


class AnalysisCache:
    """Analyses of recently viewed launches, with the warps they came from (`warps`)."""

    def __init__(self, store: Store, size: int = 16, warp_cache_size: int = 4):
        self.store = store
        self.warps = WarpCache(store, warp_cache_size)
        self.analyses: LruCache[LaunchAnalysis | None] = LruCache(size)
        self.plain_results: LruCache[dict[str, Any]] = LruCache(8 * size)  # without a sweep: sweep points
        self.figures: LruCache[Any] = LruCache(size)  # pages' costly figures of a launch's own data, by launch id

    def get(self, launch_id: int) -> LaunchAnalysis | None:
        """The launch's analysis; None when the store has no such launch."""
        launches = self.store.launches()
        found = launches.filter(pl.col("id") == launch_id)
        if found.height == 0:
            return None
        launch = found.row(0, named=True)
        same_kernel = launches.filter(
            pl.col("kernel_name").eq_missing(launch["kernel_name"])
            & pl.col("compute_capability").eq_missing(launch["compute_capability"])
            & pl.col("device_name").eq_missing(launch["device_name"])
            & (pl.col("id") != launch_id)
        ).head(MAX_SWEEP_LAUNCHES - 1)
        others = list(same_kernel.iter_rows(named=True))
        ids = tuple(row["id"] for row in others)
        return self.analyses.get(
            launch_id, lambda: self._analyze(launch, others), lambda cached: cached.same_kernel_ids == ids
        )

    def _analyze(self, launch: dict[str, Any], others: list[dict[str, Any]]) -> LaunchAnalysis:
        launch_id = launch["id"]
        metrics = self.store.metrics([launch_id])
        warps = self.warps.get(launch_id)
        ids = tuple(row["id"] for row in others)
        try:
            result, sweep = self._analyze_with_sweep(launch, LaunchInput(launch, metrics, warps), others)
            curve = histogram = None
            if warps.height:
                sm_count = max(int(launch["sm_count"] or 0), warps["sm_id"].n_unique())
                curve = views.occupancy_over_time(warps, sm_count)
                histogram = views.latency_histogram(warps)
        except TracekitError as exc:
            return LaunchAnalysis(
                launch, metrics, None, f"The analysis cannot run on this launch: {exc}", None, ids, None, None
            )
        except Exception as exc:  # noqa: BLE001 - one bad launch must not take the page down; it is logged in full
            log.exception("analysing launch %s failed", launch_id)
            return LaunchAnalysis(
                launch,
                metrics,
                None,
                f"The analysis failed ({type(exc).__name__}: {exc}); the server log has the details.",
                None,
                ids,
                None,
                None,
            )
        return LaunchAnalysis(launch, metrics, result, None, sweep, ids, curve, histogram)

    def _analyze_with_sweep(
        self, launch: dict[str, Any], data: LaunchInput, others: list[dict[str, Any]]
    ) -> tuple[dict[str, Any], KernelSweep]:
        """The launch's analysis, with the sweep of its kernel when the store holds one: `others` are the launches
        of the same kernel name on the same device (compute capability and device name); a fit needs 3 or more
        occupancies."""
        if len(others) + 1 < MIN_SWEEP_POINTS:  # no fit is possible: analyze once, without a sweep
            result = self.plain_results.get(launch["id"], lambda: analyze_launch(data))
            return result, fit_kernel_sweep([result, *(self._plain(row) for row in others)])
        plain = self._plain(launch, data)
        sweep = fit_kernel_sweep([plain, *(self._plain(row) for row in others)])
        return (analyze_launch(data, sweep=sweep.fit) if sweep.fit else plain), sweep

    def _plain(self, launch: dict[str, Any], data: LaunchInput | None = None) -> dict[str, Any]:
        """A launch's analysis without a sweep (what gives its sweep point)."""

        def compute() -> dict[str, Any]:
            loaded = data or LaunchInput(launch, self.store.metrics([launch["id"]]), self.store.warps(launch["id"]))
            return analyze_launch(loaded)

        return self.plain_results.get(launch["id"], compute)
