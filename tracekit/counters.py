"""Named counters from the long metrics frame of one launch, with the aliases metric ids have had.

Nsight Compute renamed some metrics across versions and GPU generations (`dram__throughput` became
`gpu__dram_throughput` in some sections, the Turing tensor pipe `tensor_op_hmma` became `tensor_subpipe_hmma`,
...), and its `--page details` CSV shows display names ("DRAM Throughput") instead of ids. Each alias tuple
below lists the names one quantity has been seen under, best first; `metric(frame, *ALIASES)` takes the first
one the launch has. The frame is what `Store.metrics([launch_id])` returns (or an importer's `.metrics`); these
helpers read its columns `READ_COLUMNS` and ignore the others.
"""

from __future__ import annotations

import functools
import re
import weakref

import polars as pl

READ_COLUMNS = ("name", "value", "text_value")  # what the analysis and the predictor read: the rest stays compressed

# ---- Speed of Light: % of peak sustained throughput per unit ------------------------------------------------
DRAM_THROUGHPUT_PCT = (
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "DRAM Throughput",
)
L2_THROUGHPUT_PCT = ("lts__throughput.avg.pct_of_peak_sustained_elapsed", "L2 Cache Throughput")
L1_THROUGHPUT_PCT = (
    "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "l1tex__throughput.avg.pct_of_peak_sustained_elapsed",
    "L1/TEX Cache Throughput",
)
SM_THROUGHPUT_PCT = ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "Compute (SM) Throughput")
MEMORY_THROUGHPUT_PCT = ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",)
ISSUE_ACTIVE_PCT = (
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "sm__inst_issued.avg.pct_of_peak_sustained_active",
    "sm__inst_issued.avg.pct_of_peak_sustained_elapsed",  # what the 2025 details page shows as Issue Slots Busy
    "Issue Slots Busy",
)

# ---- Occupancy -------------------------------------------------------------------------------------------
ACHIEVED_OCCUPANCY_PCT = ("sm__warps_active.avg.pct_of_peak_sustained_active", "Achieved Occupancy")
ACHIEVED_WARPS_PER_SM = ("sm__warps_active.avg.per_cycle_active", "Achieved Active Warps Per SM")
THEORETICAL_OCCUPANCY_PCT = ("sm__maximum_warps_per_active_cycle_pct", "Theoretical Occupancy")
THEORETICAL_WARPS_PER_SM = ("sm__maximum_warps_avg_per_active_cycle", "Theoretical Active Warps per SM")
SM_ACTIVE_CYCLES = ("sm__cycles_active.avg", "SM Active Cycles")
ELAPSED_CYCLES = ("sm__cycles_elapsed.avg", "gpc__cycles_elapsed.max", "Elapsed Cycles")
WAVES_PER_SM = ("launch__waves_per_multiprocessor", "Waves Per SM")
GRID_BLOCKS = ("launch__grid_size", "Grid Size")
SM_COUNT = ("launch__sm_count", "device__attribute_multiprocessor_count", "# SMs")
BLOCK_LIMIT_NAMES = {  # what bounds blocks per SM; the smallest wins
    "registers": ("launch__occupancy_limit_registers", "Block Limit Registers"),
    "shared memory": ("launch__occupancy_limit_shared_mem", "Block Limit Shared Mem"),
    "warps": ("launch__occupancy_limit_warps", "Block Limit Warps"),
    "blocks per SM": ("launch__occupancy_limit_blocks", "Block Limit SM"),
    "barriers": ("launch__occupancy_limit_barriers", "Block Limit Barriers"),
}

# ---- Memory hierarchy: where the bytes come from -------------------------------------------------------------
L2_HIT_RATE_PCT = ("lts__t_sector_hit_rate.pct", "L2 Hit Rate")
# Loads only: stores are write-allocated in L2 and always "hit", so a pure stream shows ~50% overall hit rate.
L2_READ_HIT_RATE_PCT = ("lts__t_sector_op_read_hit_rate.pct",)
L2_THROUGHPUT_MAX_PCT = ("lts__throughput.max.pct_of_peak_sustained_elapsed",)  # the busiest L2 slice
L2_ATOMIC_INPUT_MAX_PCT = ("lts__d_atomic_input_cycles_active.max.pct_of_peak_sustained_elapsed",)
DRAM_BYTES = ("dram__bytes.sum", "DRAM Bytes")
DRAM_BYTES_PER_SECOND = ("dram__bytes.sum.per_second", "DRAM Bandwidth")
GLOBAL_ATOMIC_INSTRUCTIONS = (
    "smsp__inst_executed_op_global_red.sum",
    "smsp__inst_executed_op_global_atom.sum",
    "smsp__sass_inst_executed_op_global_red.sum",
    "smsp__sass_inst_executed_op_global_atom.sum",
)
DURATION_NS = ("gpu__time_duration.sum", "Duration")
# Blocks the launch ran: the front end's count, else the grid.
CTAS_LAUNCHED = (
    "sm__ctas_launched.sum",
    "gr__ctas_launched.sum",
    "FE_B.TriageCompute.gr__ctas_launched_realtime.sum",
    "launch__grid_size",
    "Grid Size",
)
BRANCH_INSTRUCTIONS = ("smsp__inst_executed_op_branch.sum", "smsp__sass_inst_executed_op_branch.sum")

# ---- Warp state: warp cycles per issued instruction (the total the stall reasons split) --------------------
WARP_CYCLES_PER_ISSUE = (
    "smsp__average_warps_active_per_issue_active.ratio",
    "smsp__average_warp_latency_per_inst_issued.ratio",
    "Warp Cycles Per Issued Instruction",
)

# ---- Memory access efficiency ----------------------------------------------------------------------------
GLOBAL_LOAD_SECTORS = ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",)
GLOBAL_LOAD_REQUESTS = ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",)
GLOBAL_STORE_SECTORS = ("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",)
GLOBAL_STORE_REQUESTS = ("l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",)
# Nsight's own count of sectors beyond the ideal for each global access (from the SourceCounters section).
GLOBAL_EXCESSIVE_SECTORS = ("derived__memory_l2_theoretical_sectors_global_excessive",)
GLOBAL_THEORETICAL_SECTORS = ("memory_l2_theoretical_sectors_global",)
SHARED_BANK_CONFLICTS = (
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",  # only loads when the total is missing
)
SHARED_WAVEFRONTS = ("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",)
LOCAL_LOAD_INSTRUCTIONS = ("smsp__sass_inst_executed_op_local_ld.sum", "sass__inst_executed_local_loads")
LOCAL_STORE_INSTRUCTIONS = ("smsp__sass_inst_executed_op_local_st.sum", "sass__inst_executed_local_stores")
LOCAL_LOAD_SECTORS = ("l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",)
LOCAL_STORE_SECTORS = ("l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",)
LOCAL_SPILL_REQUESTS = ("derived__local_spilling_requests", "Local Memory Spilling Requests")
INSTRUCTIONS_EXECUTED = ("smsp__inst_executed.sum", "inst_executed", "Executed Instructions")

# ---- Divergence ------------------------------------------------------------------------------------------
THREADS_PER_INSTRUCTION = (
    "smsp__thread_inst_executed_per_inst_executed.ratio",
    "derived__avg_thread_executed",
    "Avg. Active Threads Per Warp",
)
BRANCH_EFFICIENCY_PCT = ("smsp__sass_average_branch_targets_threads_uniform.pct", "Branch Efficiency")

# Execution pipes: `sm__inst_executed_pipe_<pipe>` (share of the pipe's peak instruction rate) and
# `sm__pipe_<pipe>_cycles_active` (share of cycles the pipe was busy). Nsight's Compute Workload Analysis
# charts both per active cycle; the elapsed form is the fallback.
_PIPE_PATTERNS = (
    re.compile(r"^sm__inst_executed_pipe_([a-z0-9_]+)\.avg\.pct_of_peak_sustained_(active|elapsed)$"),
    re.compile(r"^sm__pipe_([a-z0-9_]+)_cycles_active\.avg\.pct_of_peak_sustained_(active|elapsed)$"),
)


def pipe_family(pipe: str) -> str:
    """The limiter name for a pipe id: `fmaheavy` -> "fma", `tensor_op_hmma` -> "tensor", `fp64` -> "fp64"."""
    if pipe.startswith(("tensor", "tc")) or pipe in ("hmma", "imma", "dmma"):
        return "tensor"
    if pipe.startswith("fp64"):
        return "fp64"
    if pipe.startswith("fma") and "fp16" not in pipe:
        return "fma"
    if pipe.startswith("fp16") or pipe == "fma_type_fp16":
        return "fp16"
    if pipe.startswith("cbu"):
        return "cbu"
    if pipe == "shared":
        return "shared pipe"  # Volta/Turing: the fp16 + tensor pipe pair, not shared memory
    return pipe


class _Layout:
    """Where each metric name sits in a launch's frame. Launches of one kernel in one import share their name
    column, so a layout is built once per distinct column and each launch then reads only its values: converting
    every launch's few thousand names to Python cost more than the rest of a 1,000-launch analysis."""

    def __init__(self, names: pl.Series):
        self.name_list: list[str] = names.to_list()
        # the column it was built from, to compare a new frame's with (a copy: a slice would keep the whole
        # frame it came from alive)
        self.names = pl.Series(self.name_list, dtype=pl.String)
        self.rows: dict[str, list[int]] = {}  # each name's rows, in frame order
        for row, name in enumerate(self.name_list):
            self.rows.setdefault(name, []).append(row)
        self._starting_with: dict[tuple[str, ...], list[int]] = {}
        self._pipe_rows: list[tuple[int, str, list[tuple[str, bool]]]] | None = None

    def starting_with(self, prefixes: tuple[str, ...]) -> list[int]:
        """The rows whose name starts with one of `prefixes`, in frame order (kept per prefix set)."""
        found = self._starting_with.get(prefixes)
        if found is None:
            found = self._starting_with[prefixes] = [
                row for row, name in enumerate(self.name_list) if name.startswith(prefixes)
            ]
        return found

    def pipe_rows(self) -> list[tuple[int, str, list[tuple[str, bool]]]]:
        """(row, name, what `_PIPE_PATTERNS` read from it) of the rows naming a pipe, in frame order: the names
        are the layout's, so they are matched once per layout, not once per launch."""
        if self._pipe_rows is None:
            prefixes = tuple(_literal_prefix(p) for p in _PIPE_PATTERNS)
            rows = self.starting_with(prefixes if all(prefixes) else ("",))
            self._pipe_rows = [
                (row, name, found) for row in rows if (found := _pipe_matches(name := self.name_list[row]))
            ]
        return self._pipe_rows


_LAYOUTS: dict[tuple[int, tuple[str, ...]], list[_Layout]] = {}  # by _layout_key; a few hundred at most
MAX_LAYOUTS = 512


def _layout_key(names: pl.Series) -> tuple[int, tuple[str, ...]]:
    """Rows and the names at five places: one import's launches list one set of names in a few orders, which the
    first name alone did not tell apart (each launch compared its whole column with ~4 layouts)."""
    rows = names.len()
    return rows, tuple(names[(rows - 1) * i // 4] for i in range(5)) if rows else ()


def _layout(names: pl.Series) -> _Layout:
    key = _layout_key(names)
    for layout in _LAYOUTS.get(key, ()):
        if layout.names.equals(names):
            return layout
    if sum(len(layouts) for layouts in _LAYOUTS.values()) >= MAX_LAYOUTS:
        _LAYOUTS.clear()
    layout = _Layout(names)
    _LAYOUTS.setdefault(key, []).append(layout)
    return layout


class _Index:
    """One launch's metrics frame, read for the analysis's questions: its name layout and its values."""

    def __init__(self, metrics: pl.DataFrame):
        self.metrics = weakref.ref(metrics)  # not a strong reference: the index lives as long as the frame
        self.layout = _layout(metrics["name"])
        # a tuple of floats and None: the cyclic collector untracks it at its first pass, so no later collection
        # walks its thousands of items (a list was walked again by every middle and full collection)
        self.values: tuple[float | None, ...] = tuple(metrics["value"].cast(pl.Float64).to_list())
        self._texts: dict[str, str] | None = None

    def first(self, name: str) -> float | None:
        """The name's first value in frame order, or None."""
        for row in self.layout.rows.get(name, ()):
            value = self.values[row]
            if value is not None:
                return value
        return None

    def rows_starting_with(self, prefixes: tuple[str, ...]) -> list[tuple[str, float]]:
        """(name, value) of the rows with a value whose name starts with one of `prefixes`, in frame order."""
        names, values = self.layout.name_list, self.values
        return [
            (names[row], value) for row in self.layout.starting_with(prefixes) if (value := values[row]) is not None
        ]

    @property
    def texts(self) -> dict[str, str]:
        """Each name's first text_value, or its first value as written (built on first use)."""
        if self._texts is None:
            metrics = self.metrics()
            assert metrics is not None  # asked through `_index(frame)`, so the frame is alive
            first = metrics.filter(pl.col("text_value").is_not_null() | pl.col("value").is_not_null()).unique(
                "name", keep="first", maintain_order=True
            )
            self._texts = {
                name: str(text) if text is not None else f"{value:g}"
                for name, text, value in first.select("name", "text_value", "value").iter_rows()
            }
        return self._texts


_INDEXES: dict[int, _Index] = {}  # by id() of a live frame; dropped when the frame is collected


def _index(metrics: pl.DataFrame) -> _Index | None:
    """The frame's index, None for a frame without metrics; a frame seen before is found by id() alone, before any
    call into polars (a 1,008-launch report asks ~80 questions per launch)."""
    key = id(metrics)
    index = _INDEXES.get(key)  # a live frame's: the entry goes when the frame is collected, before its id is reused
    if index is None:
        if metrics.is_empty() or "name" not in metrics.columns:
            return None
        index = _INDEXES[key] = _Index(metrics)
        weakref.finalize(metrics, _INDEXES.pop, key, None)
    return index


def metric_row(metrics: pl.DataFrame, *names: str) -> tuple[str, float] | None:
    """(name, value) of the first name the frame has with a numeric value, or None."""
    index = _index(metrics)
    if index is None:
        return None
    for name in names:
        value = index.first(name)
        if value is not None:
            return name, value
    return None


def metric(metrics: pl.DataFrame, *names: str) -> float | None:
    """The value of the first of `names` the frame has (aliases, best first), or None."""
    row = metric_row(metrics, *names)
    return row[1] if row else None


def metric_text(metrics: pl.DataFrame, *names: str) -> str | None:
    """The text of the first of `names` the frame has: `text_value`, else the number as written."""
    index = _index(metrics)
    if index is None:
        return None
    if not any(name in index.layout.rows for name in names):
        return None  # none of them in the frame: the launch's texts are not built (1,008 launches: 14 s)
    texts = index.texts
    for name in names:
        if name in texts:
            return texts[name]
    return None


def candidate_rows(metrics: pl.DataFrame, *patterns: re.Pattern[str]) -> list[tuple[str, float]]:
    """(name, value) of the rows with a value whose name one of `patterns` may match, in frame order: a test of
    each pattern's literal prefix narrows a launch's thousands of metrics to the few that matter; the caller
    still decides with `pattern.match` (every row, when a pattern has no literal prefix)."""
    index = _index(metrics)
    if index is None:
        return []
    prefixes = tuple(_literal_prefix(p) for p in patterns)
    return index.rows_starting_with(prefixes if all(prefixes) else ("",))


def rows_with_prefix(metrics: pl.DataFrame, prefix: str) -> list[tuple[str, str | None, float | None]]:
    """(name, text_value, value) of every row whose name starts with `prefix`, in frame order (with or without
    a value: Nsight's rule rows are text)."""
    index = _index(metrics)
    if index is None:
        return []
    rows = index.layout.starting_with((prefix,))
    if not rows:
        return []
    texts = metrics["text_value"].gather(rows).to_list()
    return [(index.layout.name_list[row], text, index.values[row]) for row, text in zip(rows, texts, strict=True)]


@functools.cache
def _literal_prefix(pattern: re.Pattern[str]) -> str:
    """The text every match of an anchored pattern starts with ("" when it has none): a plain prefix test
    narrows rows many times faster than a regex."""
    source = pattern.pattern
    if not source.startswith("^"):
        return ""
    prefix = []
    index = 1
    while index < len(source):
        char = source[index]
        if char == "\\" and index + 1 < len(source) and not source[index + 1].isalnum():
            prefix.append(source[index + 1])
            index += 2
            continue
        if char in ".^$*+?{}[]()|\\":
            break
        prefix.append(char)
        index += 1
    # a quantifier applies to the character before it: that one is not certain
    if index < len(source) and source[index] in "*?{" and prefix:
        prefix.pop()
    return "".join(prefix)


_PIPES: dict[str, list[tuple[str, bool]]] = {}  # metric name -> (pipe family, active form) per matching pattern


def _pipe_matches(name: str) -> list[tuple[str, bool]]:
    """What `_PIPE_PATTERNS` read from a metric name, memoized: launches share their metric names."""
    found = _PIPES.get(name)
    if found is None:
        found = _PIPES[name] = [
            (pipe_family(match.group(1)), match.group(2) == "active")
            for pattern in _PIPE_PATTERNS
            if (match := pattern.match(name))
        ]
    return found


def pipe_utilization_pct(metrics: pl.DataFrame) -> dict[str, tuple[str, float]]:
    """Per pipe family, the highest utilization (% of peak) any of its pipe metrics shows, with that metric.

    Active-cycle forms are preferred; an elapsed form counts only for a pipe that has no active form.
    """
    index = _index(metrics)
    if index is None:
        return {}
    best: dict[str, tuple[str, float, bool]] = {}
    values = index.values
    for row, name, matches in index.layout.pipe_rows():
        value = values[row]
        if value is None:
            continue
        for family, active in matches:
            current = best.get(family)
            if current is None or (active, value) > (current[2], current[1]):
                best[family] = (name, float(value), active)
    return {family: (name, value) for family, (name, value, _) in best.items()}
