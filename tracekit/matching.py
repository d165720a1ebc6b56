"""Matching the two sides of a comparison: which launches of side A are compared with which of side B (same
kernel key configuration, `KernelKey.version_config`: normalized name, grid, block, dynamic shared memory; or the
kernels named). Not to be confused with pairing (`analysis/pairing.py`): a trace's launch taking its counters
from a profiled one.

Pure over `Store.launches()` frames. Several launches of one kernel and configuration on a side are its
run-to-run spread, so they stay together as one group.
"""

from __future__ import annotations

import polars as pl

from tracekit.errors import TracekitError
from tracekit.format import dims, size
from tracekit.kernel_key import base_name, kernel_key, normalize_kernel_name

CONFIG_COLUMN = "_version_config"
MAX_NAMES_SHOWN = 5


def _with_config(launches: pl.DataFrame) -> pl.DataFrame:
    configs = [repr(kernel_key(row).version_config()) for row in launches.iter_rows(named=True)]
    return launches.with_columns(pl.Series(CONFIG_COLUMN, configs, dtype=pl.Utf8))


def named(launches: pl.DataFrame, kernel: str, side: str) -> pl.DataFrame:
    """The launches of `kernel`: those named exactly so (full name, or the normalized or base name), else those
    whose name contains it."""
    wanted = normalize_kernel_name(kernel)
    matching = [  # each distinct name tested once (100k launches share a few hundred names)
        name
        for name in launches["kernel_name"].drop_nulls().unique().to_list()
        if name == kernel or normalize_kernel_name(name) == wanted or base_name(name) == kernel
    ]
    exact = launches.filter(pl.col("kernel_name").is_in(matching))
    if exact.height:
        return exact
    containing = launches.filter(pl.col("kernel_name").str.contains(kernel, literal=True))
    if containing.height == 0:
        raise TracekitError(f"side {side}: no launch of a kernel whose name contains {kernel!r}")
    if containing["kernel_name"].n_unique() > 1:
        names = ", ".join(repr(n) for n in containing["kernel_name"].unique(maintain_order=True)[:MAX_NAMES_SHOWN])
        raise TracekitError(f"side {side}: {kernel!r} matches several kernels ({names}); give a longer name")
    return containing


def _configs(launches: pl.DataFrame) -> str:
    """The distinct (name, grid, block, dynamic shared memory) of a side, as a person reads them."""
    seen: list[str] = []
    for row in launches.iter_rows(named=True):
        key = kernel_key(row)
        text = (
            f"{base_name(row['kernel_name']) or row['kernel_name']!r} grid {dims(key.grid)} block {dims(key.block)}"
            f" with {size(key.dynamic_smem_bytes or 0)} dynamic shared memory"
        )
        if text not in seen:
            seen.append(text)
    shown = ", ".join(seen[:MAX_NAMES_SHOWN])
    return shown + (f" and {len(seen) - MAX_NAMES_SHOWN} more" if len(seen) > MAX_NAMES_SHOWN else "")


def match_launches(
    launches_a: pl.DataFrame, launches_b: pl.DataFrame, kernel_a: str | None = None, kernel_b: str | None = None
) -> list[tuple[pl.DataFrame, pl.DataFrame]]:
    """The matched (A launches, B launches) groups to compare, in A's order.

    With a kernel named on either side (the other side defaults to the same name) that is the one match, whatever
    the launch configurations; otherwise each (kernel name, grid, block) present on both sides is a match."""
    if launches_a.height == 0 or launches_b.height == 0:
        raise TracekitError(f"nothing to compare: side {'A' if launches_a.height == 0 else 'B'} has no launches")
    if kernel_a or kernel_b:
        name_a, name_b = kernel_a or kernel_b or "", kernel_b or kernel_a or ""
        return [(named(launches_a, name_a, "A"), named(launches_b, name_b, "B"))]
    groups_b = _with_config(launches_b).partition_by(CONFIG_COLUMN, as_dict=True, maintain_order=True)
    groups_a = _with_config(launches_a).partition_by(CONFIG_COLUMN, as_dict=True, maintain_order=True)
    matches = [
        (group_a.drop(CONFIG_COLUMN), groups_b[key].drop(CONFIG_COLUMN))
        for key, group_a in groups_a.items()
        if key in groups_b
    ]
    if not matches:
        raise TracekitError(
            f"no launch of A matches one of B by kernel name, grid, block and dynamic shared memory (A has "
            f"{_configs(launches_a)}; B has {_configs(launches_b)}): name them with --kernel-a and --kernel-b"
        )
    return matches
