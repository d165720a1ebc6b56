"""Nsight Compute raw-page CSV import speed, next to the floor of polars parsing the same file.

Builds a large `--page raw` CSV by repeating the launch rows of a real B200 export (IDs renumbered) to
`--launches` launches in a temporary folder, then times `tracekit.importers.read_file` on it and
`polars.read_csv` alone (all columns as strings). The importer should stay within 3x of that floor.
With `--store`, also times `Store.add_import` of the parsed result into a fresh SQLite file (once: seconds),
so that a change which only moves cost from the importer to the store shows.

    python benchmarks/bench_import_ncu_csv.py [--launches 1024 4096] [--repeat 3] [--source PATH] [--store]

The ratio shrinks as files grow (fixed per-file costs); the machine's load moves both figures (polars reads
on all cores, most of the importer runs on one).
"""

from __future__ import annotations

import argparse
import csv
import io
import tempfile
import time
from pathlib import Path

import polars as pl

from tracekit.importers import read_file
from tracekit.store import Store

DEFAULT_SOURCE = (
    Path(__file__).resolve().parents[2] / "shared" / "real_exports" / "ncu_raw_B200_sdpa_flash_RooflineAnalysis.csv"
)


def build_large_raw_csv(source: Path, launches: int, target: Path) -> int:
    """Write `target`: the source's tool lines, header, units row and its launch rows repeated; returns bytes."""
    lines = source.read_text(encoding="utf-8").splitlines()
    header_at = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    prelude, header, units, rows = lines[:header_at], lines[header_at], lines[header_at + 1], lines[header_at + 2 :]
    parsed = [next(csv.reader([row])) for row in rows]
    out = io.StringIO()
    out.write("\n".join([*prelude, header, units]) + "\n")
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    for launch_id in range(launches):
        row = list(parsed[launch_id % len(parsed)])
        row[0] = str(launch_id)
        writer.writerow(row)
    target.write_text(out.getvalue(), encoding="utf-8")
    return target.stat().st_size


def best_of(repeat: int, action) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times)


def measure(source: Path, launches: int, repeat: int, store: bool) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "large_raw.csv"
        size_bytes = build_large_raw_csv(source, launches, path)
        header_at = next(i for i, line in enumerate(path.open(encoding="utf-8")) if line.startswith('"ID"'))

        def polars_floor() -> pl.DataFrame:
            return pl.read_csv(path, skip_rows=header_at, infer_schema=False)

        columns = polars_floor().width
        parsed = read_file(path)
        floor_s = best_of(repeat, polars_floor)
        import_s = best_of(repeat, lambda: read_file(path))
        store_s = None
        if store:
            sqlite_store = Store.open(f"sqlite:///{Path(folder) / 'store.sqlite'}")
            store_s = best_of(1, lambda: sqlite_store.add_import(parsed, path))
    print(
        f"{launches} launches x {columns} columns, {size_bytes / 1e6:.1f} MB "
        f"-> {parsed.launches.height} launches, {parsed.metrics.height} metric rows"
    )
    print(f"  polars.read_csv (floor): {floor_s * 1e3:8.1f} ms")
    print(f"  ncu_csv read_file:       {import_s * 1e3:8.1f} ms   ({import_s / floor_s:.2f}x the floor; target <= 3x)")
    if store_s is not None:
        print(f"  Store.add_import (SQLite): {store_s * 1e3:8.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--store", action="store_true", help="also time Store.add_import into a fresh SQLite file")
    args = parser.parse_args()
    for launches in args.launches:
        measure(args.source, launches, args.repeat, args.store)


if __name__ == "__main__":
    main()
