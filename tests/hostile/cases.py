"""Hostile inputs for every importer, generated: truncated files, wrong types, huge fields, bombs, impossible
values, glob and escape characters in names, wrong formats with a right extension, empty files, garbage.

Each `Case` is a file name, its bytes, and a regular expression that the error line must match after the file
name, so that a test checks that the problem named is the right one, not only that something failed.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import random
import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from tests.helpers import REAL_EXPORTS

REPO = Path(__file__).resolve().parents[2]
NCU_CSV_DATA = REPO / "tests" / "importers" / "data" / "ncu_csv"
NCU_REP_EXPORT = REAL_EXPORTS / "ncu_rep_2020_RTX3080_montecarlopi.ncu-rep"
# The hostile test runs tracekit with this inflation cap, so a gzip bomb needs only 256 MiB to go past it.
BOMB_CAP_BYTES = 32 * 2**20


@dataclass(frozen=True)
class Case:
    case_id: str
    importer: str  # "warp-trace", "nsys-sqlite", "ncu-csv", "ncu-rep", "any"
    file_name: str
    content: bytes
    problem: str  # a regex the error line must contain after the file name


# ---- valid bases ------------------------------------------------------------------------------------------------

WARP_HEADER = (
    "# tracekit-warp-trace v1\n# kernel: k\n# device_name: Test GPU\n# sm_count: 4\n# max_warps_per_sm: 64\n"
    "# grid: 4,1,1\n# block: 64,1,1\n"
)
WARP_COLUMNS = "launch,sm_id,block_id,warp_in_block,start_ns,end_ns\n"


def warp_rows(blocks: int = 4, warps: int = 2) -> list[list[int]]:
    return [
        [0, block % 4, block, warp, 1000 + 100 * block + warp, 1500 + 100 * block + warp]
        for block in range(blocks)
        for warp in range(warps)
    ]


def warp_csv(rows: list[list] | None = None, header: str = WARP_HEADER, columns: str = WARP_COLUMNS) -> bytes:
    rows = warp_rows() if rows is None else rows
    return (header + columns + "".join(",".join(map(str, row)) + "\n" for row in rows)).encode()


def with_cell(row: int, column: int, value) -> bytes:
    rows = warp_rows()
    rows[row][column] = value
    return warp_csv(rows)


def parquet_bytes(table: pa.Table) -> bytes:
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


def warp_parquet(**overrides) -> bytes:
    rows = warp_rows()
    columns = {name: [row[i] for row in rows] for i, name in enumerate(WARP_COLUMNS.strip().split(","))}
    columns.update(overrides)
    return parquet_bytes(pa.table(columns))


def warp_json(records=None, metadata=None) -> bytes:
    names = WARP_COLUMNS.strip().split(",")
    records = [dict(zip(names, row, strict=True)) for row in warp_rows()] if records is None else records
    document = {"metadata": metadata or {"kernel": "k", "grid": "4", "block": "64"}, "warps": records}
    return json.dumps(document).encode()


def nsys_sqlite(
    kernel_rows: list[tuple] | None = None, gpu_rows: list[tuple] | None = None, wal: bool = False
) -> bytes:
    """A minimal Nsight Systems export: StringIds, one kernel table, one GPU; `wal` leaves it in WAL mode,
    which a reader that opens it writable turns into -wal/-shm files beside it."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "export.sqlite"
        connection = sqlite3.connect(path)
        if wal:
            connection.execute("PRAGMA journal_mode=WAL")
        connection.executescript(
            """
            CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT, smCount INTEGER, clockRate INTEGER,
                                          maxWarpsPerSm INTEGER, computeMajor INTEGER, computeMinor INTEGER);
            CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, "end" INTEGER NOT NULL,
                deviceId INTEGER, contextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER,
                registersPerThread INTEGER, gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER,
                blockY INTEGER, blockZ INTEGER, staticSharedMemory INTEGER, dynamicSharedMemory INTEGER,
                demangledName INTEGER, shortName INTEGER, mangledName INTEGER);
            INSERT INTO StringIds VALUES (1, 'void k(float*)'), (2, 'k'), (3, '_Z1kPf');
            """
        )
        connection.executemany(
            "INSERT INTO TARGET_INFO_GPU VALUES (?, ?, ?, ?, ?, ?, ?)",
            gpu_rows or [(0, "Test GPU", 4, 1_500_000_000, 64, 9, 0)],
        )
        kernel_rows = kernel_rows or [
            (1000 + 100 * i, 1050 + 100 * i, 0, 1, 7, 10 + i, 1 << 24, 32, 64, 1, 1, 128, 1, 1, 0, 0, 1, 2, 3)
            for i in range(3)
        ]
        connection.executemany(f"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES ({','.join('?' * 19)})", kernel_rows)
        connection.commit()
        connection.close()  # a WAL-mode file stays in WAL mode (its header says so) after the last close
        return path.read_bytes()


def kernel_row(**changes) -> tuple:
    names = [
        "start",
        "end",
        "deviceId",
        "contextId",
        "streamId",
        "correlationId",
        "globalPid",
        "registersPerThread",
        "gridX",
        "gridY",
        "gridZ",
        "blockX",
        "blockY",
        "blockZ",
        "staticSharedMemory",
        "dynamicSharedMemory",
        "demangledName",
        "shortName",
        "mangledName",
    ]
    values = dict(zip(names, (1000, 1050, 0, 1, 7, 99, 1 << 24, 32, 64, 1, 1, 128, 1, 1, 0, 0, 1, 2, 3), strict=True))
    values.update(changes)
    return tuple(values[name] for name in names)


def ncu_details() -> bytes:
    return (NCU_CSV_DATA / "details_two_processes.csv").read_bytes()


def ncu_replace(old: bytes, new: bytes, count: int = -1) -> bytes:
    data = ncu_details()
    assert old in data, old
    return data.replace(old, new, count)


def garbage(size: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(size)


def gzip_bomb() -> bytes:
    """A valid warp-trace header, then 256 MiB of digits: about 250 KB compressed."""
    compressor = gzip.GzipFile(fileobj=(buffer := io.BytesIO()), mode="wb", compresslevel=9)
    compressor.write(WARP_HEADER.encode() + WARP_COLUMNS.encode())
    block = b"0" * (1 << 20)
    for _ in range(256):
        compressor.write(block)
    compressor.close()
    return buffer.getvalue()


# ---- the cases ----------------------------------------------------------------------------------------------------


def warp_trace_cases() -> list[Case]:
    base = warp_csv()
    cases = [
        Case("warp-negative-start", "warp-trace", "t.csv", with_cell(1, 4, -5), r"negative time"),
        Case("warp-end-before-start", "warp-trace", "t.csv", with_cell(2, 5, 900), r"end_ns is before start_ns"),
        Case("warp-int64-overflow", "warp-trace", "t.csv", with_cell(0, 4, 2**63), r"not an integer|out of"),
        Case("warp-int64-min-overflow", "warp-trace", "t.csv", with_cell(0, 5, -(2**64)), r"not an integer|out of"),
        Case("warp-nan", "warp-trace", "t.csv", with_cell(3, 5, "nan"), r"not an integer: 'nan'"),
        Case("warp-inf", "warp-trace", "t.csv", with_cell(3, 4, "inf"), r"not an integer"),
        Case("warp-float", "warp-trace", "t.csv", with_cell(0, 2, "1.5"), r"not an integer"),
        Case("warp-text", "warp-trace", "t.csv", with_cell(0, 1, "sm7"), r"not an integer: 'sm7'"),
        Case("warp-negative-sm", "warp-trace", "t.csv", with_cell(0, 1, -1), r"negative SM id"),
        Case("warp-negative-block", "warp-trace", "t.csv", with_cell(0, 2, -3), r"negative block id"),
        Case("warp-negative-warp", "warp-trace", "t.csv", with_cell(0, 3, -1), r"negative warp index"),
        Case("warp-sm-huge", "warp-trace", "t.csv", with_cell(0, 1, 2**40), r"SM id out of range"),
        Case("warp-duplicate", "warp-trace", "t.csv", with_cell(1, 3, 0), r"duplicate warp"),
        Case("warp-missing-value", "warp-trace", "t.csv", with_cell(2, 4, ""), r"missing value"),
        Case("warp-block-outside-grid", "warp-trace", "t.csv", with_cell(0, 2, 4), r"block_id 4 is outside the grid"),
        Case("warp-warp-outside-block", "warp-trace", "t.csv", with_cell(1, 3, 2), r"outside the block"),
        Case(
            "warp-truncated-rows",
            "warp-trace",
            "t.csv",
            warp_csv(warp_rows()[:3]),
            r"holds 3 of the 8 warps .* incomplete",
        ),
        Case(
            "warp-truncated-15-of-16384",
            "warp-trace",
            "t.csv",
            warp_csv(
                warp_rows(blocks=15, warps=1),
                header=WARP_HEADER.replace("grid: 4,1,1", "grid: 4096,1,1").replace("block: 64,1,1", "block: 128,1,1"),
            ),
            r"holds 15 of the 16,384 warps",
        ),
        Case(
            "warp-truncated-bytes", "warp-trace", "t.csv", base[: len(base) - 7], r"\(column 'end_ns'\): missing value"
        ),
        Case("warp-ragged", "warp-trace", "t.csv", base + b"0,1,2\n", r"missing value"),
        Case(
            "warp-too-many-fields", "warp-trace", "t.csv", base + b"0,1,2,3,4,5,6,7\n", r"fields where the header has"
        ),
        Case("warp-only-header", "warp-trace", "t.csv", warp_csv([]), r"no warp rows"),
        Case("warp-no-header", "warp-trace", "t.csv", WARP_HEADER.encode(), r"no CSV header"),
        Case(
            "warp-bad-version", "warp-trace", "t.csv", base.replace(b"v1", b"v9", 1), r"unsupported warp trace version"
        ),
        Case(
            "warp-missing-column", "warp-trace", "t.csv", base.replace(b"warp_in_block", b"warp_x"), r"missing column"
        ),
        Case("warp-no-time", "warp-trace", "t.csv", base.replace(b"start_ns,end_ns", b"a,b"), r"no time columns"),
        Case("warp-half-time", "warp-trace", "t.csv", base.replace(b",end_ns", b",stop"), r"without 'end_ns'"),
        Case("warp-not-utf8", "warp-trace", "t.csv", base.replace(b"Test GPU", b"Test \xff\xfe GPU"), r"not UTF-8"),
        Case("warp-nul-bytes", "warp-trace", "t.csv", base[:200] + b"\x00" * 64 + base[200:], r"binary data"),
        Case("warp-huge-field", "warp-trace", "t.csv", with_cell(0, 4, "9" * 5_000_000), r"not an integer|out of"),
        Case(
            "warp-huge-kernel-name",
            "warp-trace",
            "t.csv",
            base.replace(b"# kernel: k", b"# kernel: " + b"K" * 500_000).replace(b"0,0,0,0,1000", b"0,-1,0,0,1000"),
            r"negative SM id",
        ),
        Case(
            "warp-huge-preamble",
            "warp-trace",
            "t.csv",
            b"# tracekit-warp-trace v1\n" + b"# " + b"x" * 3_000_000,
            r"no CSV header in the first",
        ),
        Case(
            "warp-many-columns",
            "warp-trace",
            "t.csv",
            b"# tracekit-warp-trace v1\n" + b",".join(b"c%d" % i for i in range(50_000)) + b"\n1\n",
            r"missing column 'sm_id'",
        ),
        Case(
            "warp-grid-negative",
            "warp-trace",
            "t.csv",
            base.replace(b"grid: 4,1,1", b"grid: -4,1,1"),
            r"'grid': -4 is impossible",
        ),
        Case(
            "warp-grid-zero",
            "warp-trace",
            "t.csv",
            base.replace(b"grid: 4,1,1", b"grid: 0"),
            r"'grid': 0 is impossible",
        ),
        Case(
            "warp-grid-int64",
            "warp-trace",
            "t.csv",
            base.replace(b"grid: 4,1,1", b"grid: 99999999999999999999"),
            r"impossible",
        ),
        Case("warp-block-2000", "warp-trace", "t.csv", base.replace(b"block: 64,1,1", b"block: 2000"), r"impossible"),
        Case(
            "warp-registers-negative",
            "warp-trace",
            "t.csv",
            base.replace(b"# sm_count", b"# registers_per_thread: -8\n# sm_count"),
            r"'registers_per_thread': -8",
        ),
        Case(
            "warp-registers-300",
            "warp-trace",
            "t.csv",
            base.replace(b"# sm_count", b"# registers_per_thread: 300\n# sm_count"),
            r"'registers_per_thread': 300",
        ),
        Case(
            "warp-sm-count-text",
            "warp-trace",
            "t.csv",
            base.replace(b"sm_count: 4", b"sm_count: four"),
            r"not a number",
        ),
        Case("warp-sm-count-zero", "warp-trace", "t.csv", base.replace(b"sm_count: 4", b"sm_count: 0"), r"impossible"),
        Case(
            "warp-clock-nan",
            "warp-trace",
            "t.csv",
            base.replace(b"# sm_count", b"# sm_clock_hz: nan\n# sm_count"),
            r"'sm_clock_hz' must be positive",
        ),
        Case(
            "warp-clock-inf",
            "warp-trace",
            "t.csv",
            base.replace(b"# sm_count", b"# sm_clock_hz: inf\n# sm_count"),
            r"'sm_clock_hz' must be positive",
        ),
        Case(
            "warp-duration-negative",
            "warp-trace",
            "t.csv",
            base.replace(b"# sm_count", b"# launch_duration_ns: -5\n# sm_count"),
            r"launch_duration_ns",
        ),
        Case(
            "warp-duration-nan",
            "warp-trace",
            "t.csv",
            base.replace(b"# sm_count", b"# launch_duration_ns: NaN\n# sm_count"),
            r"launch_duration_ns",
        ),
        Case(
            "warp-clock-bits-16",
            "warp-trace",
            "t.csv",
            base.replace(b"# sm_count", b"# clock_bits: 16\n# sm_count"),
            r"'clock_bits' must be 32 or 64",
        ),
        Case(
            "warp-cycles-only-no-clock",
            "warp-trace",
            "t.csv",
            base.replace(b"start_ns,end_ns", b"start_cycles,end_cycles"),
            r"--clock-hz",
        ),
        Case(
            "warp-cycles-past-int64",
            "warp-trace",
            "t.csv",
            b"# tracekit-warp-trace v1\n# sm_clock_hz: 1\nlaunch,sm_id,block_id,warp_in_block,start_cycles,end_cycles\n"
            b"0,0,0,0,0,4611686018427387904\n",
            r"times past 2\^63 ns",
        ),
        # gzip
        Case("gzip-truncated", "warp-trace", "t.csv.gz", gzip.compress(base)[:-20], r"truncated"),
        Case(
            "gzip-corrupt",
            "warp-trace",
            "t.csv.gz",
            (lambda z: z[:30] + bytes(b ^ 0x5A for b in z[30:60]) + z[60:])(gzip.compress(base)),
            r"corrupt gzip",
        ),
        Case("gzip-bomb", "warp-trace", "bomb.csv.gz", gzip_bomb(), rf"inflates past {BOMB_CAP_BYTES:,} bytes"),
        Case("gzip-empty-member", "warp-trace", "t.csv.gz", gzip.compress(b""), r"gzip content is empty"),
        Case("gzip-of-garbage", "warp-trace", "t.gz", gzip.compress(garbage(5000, 1)), r"not a format"),
        Case("gzip-bad-values", "warp-trace", "t.csv.gz", gzip.compress(with_cell(0, 4, -1)), r"negative time"),
        # Parquet
        Case("parquet-truncated", "warp-trace", "t.parquet", warp_parquet()[:-40], r"unreadable Parquet"),
        Case("parquet-magic-garbage", "warp-trace", "t.parquet", b"PAR1" + garbage(3000, 2), r"unreadable Parquet"),
        Case("parquet-text-sm", "warp-trace", "t.parquet", warp_parquet(sm_id=["a"] * 8), r"not an integer: 'a'"),
        Case(
            "parquet-nan",
            "warp-trace",
            "t.parquet",
            warp_parquet(start_ns=[float("nan")] + [1000.0] * 7),
            r"not an integer",
        ),
        Case(
            "parquet-uint64-max",
            "warp-trace",
            "t.parquet",
            warp_parquet(end_ns=pa.array([2**64 - 1] * 8, pa.uint64())),
            r"out of the 64-bit integer range",
        ),
        Case(
            "parquet-negative-block",
            "warp-trace",
            "t.parquet",
            warp_parquet(block_id=[-1, 0, 1, 1, 2, 2, 3, 3]),
            r"negative block id",
        ),
        Case("parquet-no-columns", "warp-trace", "t.parquet", parquet_bytes(pa.table({"x": [1]})), r"missing column"),
        Case(
            "parquet-list-column", "warp-trace", "t.parquet", warp_parquet(sm_id=[[1]] * 8), r"holds|expected integers"
        ),
        # JSON
        Case("json-truncated", "warp-trace", "t.json", warp_json()[:-30], r"invalid JSON"),
        Case(
            "json-nan-literal",
            "warp-trace",
            "t.json",
            warp_json().replace(b'"start_ns": 1000', b'"start_ns": NaN', 1),
            r"not an integer",
        ),
        Case(
            "json-huge-number",
            "warp-trace",
            "t.json",
            warp_json().replace(b'"end_ns": 1500', b'"end_ns": 1e400', 1),
            r"not an integer",
        ),
        Case(
            "json-bigint",
            "warp-trace",
            "t.json",
            warp_json().replace(b'"end_ns": 1500', b'"end_ns": 99999999999999999999999', 1),
            r".",
        ),
        Case(
            "json-string-values",
            "warp-trace",
            "t.json",
            warp_json().replace(b'"sm_id": 0', b'"sm_id": "zero"', 1),
            r"not an integer: 'zero'",
        ),
        Case(
            "json-deep-nesting",
            "warp-trace",
            "t.json",
            b'{"warps": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
            r"nested too deeply|invalid JSON|not an object|mixed",
        ),
        Case("json-warps-not-list", "warp-trace", "t.json", b'{"warps": 5, "block_times": 1}', r"without a \"warps\""),
        Case(
            "json-records-not-objects", "warp-trace", "t.json", b'{"warps": [1, 2, 3]}', r"warps\[0\] is not an object"
        ),
        Case("json-empty-warps", "warp-trace", "t.json", b'{"warps": []}', r'"warps" is empty'),
        Case("json-metadata-list", "warp-trace", "t.json", b'{"warps": [{"a": 1}], "metadata": [1]}', r'"metadata"'),
        Case(
            "json-end-before-start",
            "warp-trace",
            "t.json",
            warp_json().replace(b'"end_ns": 1500', b'"end_ns": 10', 1),
            r"end_ns is before start_ns",
        ),
        Case(
            "examiner-mismatch",
            "warp-trace",
            "t.json",
            json.dumps(
                {"times": [{}, {"kernel_name": "k", "block_times": [1.0, 2.0, 3.0], "block_smids": [0, 1]}]}
            ).encode(),
            r'"block_times" has 3 values',
        ),
        Case(
            "examiner-text-time",
            "warp-trace",
            "t.json",
            json.dumps({"times": [{"kernel_name": "k", "block_times": ["a", 2.0], "block_smids": [0]}]}).encode(),
            r"not a number of seconds",
        ),
        Case(
            "examiner-no-smids",
            "warp-trace",
            "t.json",
            json.dumps({"times": [{"kernel_name": "k", "block_times": [1.0, 2.0]}]}).encode(),
            r"block_smids",
        ),
        Case(
            "examiner-end-before-start",
            "warp-trace",
            "t.json",
            json.dumps({"times": [{"kernel_name": "k", "block_times": [2.0, 1.0], "block_smids": [0]}]}).encode(),
            r"end_ns is before start_ns",
        ),
        Case(
            "examiner-negative-smid",
            "warp-trace",
            "t.json",
            json.dumps({"times": [{"kernel_name": "k", "block_times": [1.0, 2.0], "block_smids": [-4]}]}).encode(),
            r"negative SM id",
        ),
    ]
    return cases


def nsys_cases() -> list[Case]:
    base = nsys_sqlite()
    return [
        Case(
            "nsys-end-before-start",
            "nsys-sqlite",
            "r.sqlite",
            nsys_sqlite([kernel_row(start=5000, end=4000)]),
            r"ends before it starts \(start_ns 5000, end_ns 4000\)",
        ),
        Case(
            "nsys-negative-grid",
            "nsys-sqlite",
            "r.sqlite",
            nsys_sqlite([kernel_row(gridX=-64)]),
            r"grid_x is -64, impossible",
        ),
        Case("nsys-zero-block", "nsys-sqlite", "r.sqlite", nsys_sqlite([kernel_row(blockY=0)]), r"block_y is 0"),
        Case(
            "nsys-block-too-big",
            "nsys-sqlite",
            "r.sqlite",
            nsys_sqlite([kernel_row(blockX=1024, blockY=2)]),
            r"over 1024 threads",
        ),
        Case(
            "nsys-negative-registers",
            "nsys-sqlite",
            "r.sqlite",
            nsys_sqlite([kernel_row(registersPerThread=-1)]),
            r"registers_per_thread is -1",
        ),
        Case(
            "nsys-registers-300",
            "nsys-sqlite",
            "r.sqlite",
            nsys_sqlite([kernel_row(registersPerThread=300)]),
            r"registers_per_thread is 300",
        ),
        Case(
            "nsys-negative-smem",
            "nsys-sqlite",
            "r.sqlite",
            nsys_sqlite([kernel_row(dynamicSharedMemory=-8)]),
            r"dynamic_smem_bytes is -8",
        ),
        Case(
            "nsys-negative-start",
            "nsys-sqlite",
            "r.sqlite",
            nsys_sqlite([kernel_row(start=-10, end=5)]),
            r"start_ns is -10",
        ),
        Case(
            "nsys-text-start",
            "nsys-sqlite",
            "r.sqlite",
            nsys_sqlite([kernel_row(start="soon")]),
            r"start_ns is 'soon', not an integer",
        ),
        Case("nsys-real-start", "nsys-sqlite", "r.sqlite", nsys_sqlite([kernel_row(start=1e30)]), r"not an integer"),
        Case(
            "nsys-blob-grid", "nsys-sqlite", "r.sqlite", nsys_sqlite([kernel_row(gridX=b"\x00\x01")]), r"not an integer"
        ),
        Case(
            "nsys-gpu-negative-sms",
            "nsys-sqlite",
            "r.sqlite",
            nsys_sqlite(gpu_rows=[(0, "Test GPU", -2, 1_500_000_000, 64, 9, 0)]),
            r"sm_count is -2",
        ),
        Case(
            "nsys-gpu-text-clock",
            "nsys-sqlite",
            "r.sqlite",
            nsys_sqlite(gpu_rows=[(0, "Test GPU", 4, "fast", 64, 9, 0)]),
            r"fast|clock",
        ),
        Case(
            "nsys-truncated-half",
            "nsys-sqlite",
            "r.sqlite",
            base[: len(base) // 2],
            r"malformed|not a database|readable",
        ),
        Case("nsys-truncated-header", "nsys-sqlite", "r.sqlite", base[:100], r"malformed|not a database|readable"),
        Case(
            "nsys-magic-garbage",
            "nsys-sqlite",
            "r.sqlite",
            base[:16] + garbage(8000, 3),
            r"not a database|malformed|readable",
        ),
        Case(
            "nsys-empty-database",
            "nsys-sqlite",
            "r.sqlite",
            (
                lambda: (
                    lambda p: (
                        sqlite3.connect(p).execute("CREATE TABLE t(x)").connection.commit(),
                        Path(p).read_bytes(),
                    )[1]
                )(tempfile.mktemp(suffix=".sqlite"))
            )(),
            r"not an Nsight Systems export",
        ),
        Case(
            "nsys-wal-mode-bad-values",
            "nsys-sqlite",
            "w.sqlite",
            nsys_sqlite([kernel_row(end=1)], wal=True),
            r"ends before it starts",
        ),
        Case("nsys-sqlite-named-rep", "nsys-sqlite", "r.ncu-rep", nsys_sqlite([kernel_row(gridZ=0)]), r"grid_z is 0"),
    ]


def ncu_csv_cases() -> list[Case]:
    grid = b'"(64, 1, 1)"'
    return [
        Case("ncu-negative-grid", "ncu-csv", "n.csv", ncu_replace(grid, b'"(-64, 1, 1)"'), r"-64|Grid Size|grid"),
        Case("ncu-zero-block", "ncu-csv", "n.csv", ncu_replace(b'"(128, 2, 1)"', b'"(0, 2, 1)"'), r"block|Block"),
        Case(
            "ncu-grid-overflow",
            "ncu-csv",
            "n.csv",
            ncu_replace(grid, b'"(99999999999999999999, 1, 1)"'),
            r"Grid Size|grid|impossible",
        ),
        Case(
            "ncu-negative-registers",
            "ncu-csv",
            "n.csv",
            ncu_replace(
                b'"Registers Per Thread","register/thread","32"', b'"Registers Per Thread","register/thread","-32"'
            ),
            r"registers",
        ),
        Case("ncu-nan-grid", "ncu-csv", "n.csv", ncu_replace(grid, b'"(nan, 1, 1)"'), r"is not an \(x, y, z\) size"),
        Case(
            "ncu-negative-duration",
            "ncu-csv",
            "n.csv",
            ncu_replace(b'"Duration","usecond","1.50"', b'"Duration","usecond","-1.50"'),
            r"duration",
        ),
        Case(
            "ncu-inf-metric",
            "ncu-csv",
            "n.csv",
            ncu_replace(b'"DRAM Throughput","%","12.50"', b'"DRAM Throughput","%","inf"'),
            r"inf|not a number",
        ),
        Case(
            "ncu-huge-field",
            "ncu-csv",
            "n.csv",
            ncu_replace(b'"app"', b'"' + b"x" * 3_000_000 + b'"', 1) + b'"' + b"y" * 2_000_000,
            r".",
        ),
        Case(
            "ncu-huge-number",
            "ncu-csv",
            "n.csv",
            ncu_replace(b'"Duration","usecond","1.50"', b'"Duration","usecond","' + b"9" * 3_000_000 + b'"'),
            r"duration_ns is inf, impossible",
        ),
        Case(
            "ncu-unbalanced-quote", "ncu-csv", "n.csv", ncu_details() + b'"0","4001","app\n', r"quote|truncated|fields"
        ),
        Case(
            "ncu-truncated-half",
            "ncu-csv",
            "n.csv",
            ncu_details()[: len(ncu_details()) // 2],
            r"truncated|fields|quote",
        ),
        Case("ncu-header-only", "ncu-csv", "n.csv", ncu_details().split(b"\n")[2] + b"\n", r"no rows"),
        Case(
            "ncu-prof-lines-only",
            "ncu-csv",
            "n.csv",
            b"==PROF== Connected to process 1 (/x)\n==PROF== Disconnected\n",
            r"no Nsight Compute table",
        ),
        Case(
            "ncu-binary-after-header",
            "ncu-csv",
            "n.csv",
            ncu_details().split(b"\n")[2] + b"\n" + garbage(4000, 4),
            r".",
        ),
        Case("ncu-latin1", "ncu-csv", "n.csv", ncu_replace(b"app", b"\xe9\xe8app", 1), r"UTF-8|decode|text"),
        Case("ncu-wrong-field-count", "ncu-csv", "n.csv", ncu_details() + b'"1","2"\n', r"fields|truncated"),
        Case(
            "ncu-bad-grid-file",
            "ncu-csv",
            "bad grid.csv",
            (NCU_CSV_DATA / "bad_grid_size.csv").read_bytes(),
            r"Grid Size|grid",
        ),
        Case(
            "ncu-bad-registers-file",
            "ncu-csv",
            "bad regs.csv",
            (NCU_CSV_DATA / "bad_registers.csv").read_bytes(),
            r"egisters",
        ),
    ]


def generic_cases() -> list[Case]:
    """Any importer: empty files, garbage, wrong formats behind a right extension, hostile names."""
    cases = [
        Case("empty-csv", "any", "e.csv", b"", r"the file is empty"),
        Case("empty-sqlite", "any", "e.sqlite", b"", r"the file is empty"),
        Case("empty-ncu-rep", "any", "e.ncu-rep", b"", r"the file is empty"),
        Case("whitespace-only", "any", "w.csv", b" \n\n\t\n", r"not a format|empty"),
        Case("json-as-sqlite", "any", "j.sqlite", b'{"a": 1}', r"not a format"),
        Case("csv-as-ncu-rep", "any", "c.ncu-rep", b"a,b,c\n1,2,3\n", r"not a format"),
        Case("png-as-csv", "any", "p.csv", b"\x89PNG\r\n\x1a\n" + garbage(2000, 5), r"not a format"),
        Case("elf-as-parquet", "any", "e.parquet", b"\x7fELF" + garbage(2000, 6), r"not a format"),
        Case("utf16-csv", "any", "u.csv", "launch,sm_id,block_id\n".encode("utf-16"), r"not a format"),
        Case("bom-only", "any", "b.csv", b"\xef\xbb\xbf", r"not a format|empty"),
    ]
    for seed in range(8):
        cases.append(
            Case(f"garbage-{seed}", "any", f"g{seed}.csv", garbage(1 << (8 + seed), 100 + seed), r"not a format")
        )
    # hostile file names: the content is bad in a known way, so the line must name this exact file
    bad = with_cell(0, 1, -1)
    for index, name in enumerate(
        [
            "a*.csv",
            "[ab]?.csv",
            "{x,y}.csv",
            "**.csv",
            "\x1b[31mred\x1b[0m.csv",
            "\x1b]8;;http:evil.example\x07link.csv",
            "bell\x07\x08.csv",
            "name with [bold red]markup.csv",
            "[link=http:evil.example]click.csv",
            ":smile: emoji.csv",
            "\u202egnp.csv",
            "line\nbreak.csv",
            "-starts-with-dash.csv",
            "semi;colon$(touch x).csv",
            "ünïcødé ✓.csv",
        ]
    ):
        cases.append(Case(f"name-{index}", "warp-trace", name, bad, r"negative SM id"))
    return cases


def ncu_rep_cases() -> list[Case]:
    cases = [
        Case("ncu-rep-magic-garbage", "ncu-rep", "r.ncu-rep", b"NVR\x00" + garbage(5000, 7), r"truncated or corrupt"),
        Case("ncu-rep-magic-only", "ncu-rep", "r.ncu-rep", b"NVR\x00", r"truncated or corrupt"),
    ]
    if not NCU_REP_EXPORT.exists() and os.environ.get("CI"):
        raise FileNotFoundError(f"required in CI: {NCU_REP_EXPORT} (the truncated real .ncu-rep cases)")
    if NCU_REP_EXPORT.exists():
        real = NCU_REP_EXPORT.read_bytes()
        cases += [
            Case("ncu-rep-truncated-half", "ncu-rep", "r.ncu-rep", real[: len(real) // 2], r"truncated or corrupt"),
            Case("ncu-rep-truncated-64", "ncu-rep", "r.ncu-rep", real[:64], r"truncated or corrupt"),
            Case(
                "ncu-rep-corrupt-middle",
                "ncu-rep",
                "r.ncu-rep",
                real[:200] + garbage(len(real) - 400, 8) + real[-200:],
                r"truncated or corrupt|impossible",
            ),
        ]
    return cases


def all_cases() -> list[Case]:
    cases = warp_trace_cases() + nsys_cases() + ncu_csv_cases() + generic_cases() + ncu_rep_cases()
    ids = [case.case_id for case in cases]
    assert len(ids) == len(set(ids)), "case ids must be unique"
    return cases
