"""Bulk-insert rate of 1,000,000 warp records into the store, on SQLite and on PostgreSQL.

Baseline: the time polars needs to write the same frame as CSV (the floor for any text-based path).
Run: python benchmarks/bench_store_bulk_insert.py [--warps N] [--postgres URL]
"""

from __future__ import annotations

import argparse
import io
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
import polars as pl
from sqlalchemy import create_engine, text

from tracekit.parsed import LAUNCH_SCHEMA, ParsedImport, conform
from tracekit.store import Store


def synthetic_warps(count: int) -> pl.DataFrame:
    rng = np.random.default_rng(0)
    warps_per_block = 8
    block = np.arange(count) // warps_per_block
    start = block * 50 + rng.integers(0, 40, count)
    return pl.DataFrame(
        {
            "launch_key": np.zeros(count, dtype=np.int64),
            "sm_id": (block % 132).astype(np.int32),
            "block_id": block,
            "warp_in_block": (np.arange(count) % warps_per_block).astype(np.int32),
            "start_ns": start,
            "end_ns": start + rng.integers(2_000, 6_000, count),
            "start_cycles": start * 2,
            "end_cycles": start * 2 + 9_000,
        }
    )


def time_insert(store: Store, parsed: ParsedImport, source: Path) -> float:
    started = time.perf_counter()
    result = store.add_import(parsed, source, sha256=uuid.uuid4().hex + uuid.uuid4().hex)
    elapsed = time.perf_counter() - started
    assert result.warp_count == parsed.warps.height
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warps", type=int, default=1_000_000)
    parser.add_argument("--postgres", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    args = parser.parse_args()

    warps = synthetic_warps(args.warps)
    launches = conform(pl.DataFrame({"launch_key": [0], "kernel_name": ["bench"]}), LAUNCH_SCHEMA)
    parsed = ParsedImport(format="warp-trace", launches=launches, warps=warps)

    started = time.perf_counter()
    warps.write_csv(io.BytesIO())
    csv_floor = time.perf_counter() - started
    print(f"{args.warps:,} warp records")
    print(f"  baseline: polars write_csv to memory       {csv_floor:6.2f} s")

    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "source.bin"
        source.write_bytes(b"x")
        sqlite = Store.open(f"sqlite:///{Path(tmp) / 'bench.sqlite'}")
        elapsed = time_insert(sqlite, parsed, source)
        print(f"  SQLite (executemany, one transaction)     {elapsed:6.2f} s  {args.warps / elapsed:12,.0f} warps/s")

        schema = f"bench_{uuid.uuid4().hex[:8]}"
        admin = create_engine(args.postgres)
        try:
            with admin.begin() as connection:
                connection.execute(text(f"create schema {schema}"))
        except Exception as exc:  # noqa: BLE001 - report and go on without PostgreSQL
            print(f"  PostgreSQL: skipped ({str(exc).splitlines()[0]})")
            return
        try:
            engine = create_engine(args.postgres, connect_args={"options": f"-csearch_path={schema}"})
            elapsed = time_insert(Store(engine), parsed, source)
            print(
                f"  PostgreSQL (COPY, one transaction)        {elapsed:6.2f} s  {args.warps / elapsed:12,.0f} warps/s"
            )
            engine.dispose()
        finally:
            with admin.begin() as connection:
                connection.execute(text(f"drop schema {schema} cascade"))


if __name__ == "__main__":
    main()
