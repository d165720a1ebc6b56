"""The warp-trace importer: CSV (plain and gzip), Parquet, JSON records and cuda_scheduling_examiner logs.

Fixtures are written in each test from literal text, so every expected value below is read off that text or
computed by hand in the comment next to it.
"""

from __future__ import annotations

import gzip
import json
import math
import os
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tracekit.errors import InputError
from tracekit.importers.warp_trace import reader as warp_trace
from tracekit.importers.warp_trace.reader import read, sniff

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"

METADATA = """\
# tracekit-warp-trace v1
# kernel: vector_add
# device_name: NVIDIA H100 80GB HBM3
# compute_capability: 9.0
# sm_count: 132
# sm_clock_hz: 1980000000
# max_warps_per_sm: 64
# grid: 2,1,1
# block: 64,1,1
# registers_per_thread: 16
# static_smem_bytes: 0
# dynamic_smem_bytes: 128
"""
COLUMNS = "launch,sm_id,block_id,warp_in_block,start_ns,end_ns,start_cycles,end_cycles\n"
ROWS = """\
0,12,0,0,1700000000123,1700000004567,123456789,123465000
0,12,0,1,1700000000130,1700000004600,123456800,123465100
0,13,1,0,1700000000200,1700000004000,5000,9000
0,13,1,1,1700000000210,1700000004100,5010,9100
"""
HEADER_LINES = METADATA.count("\n") + 1  # the CSV header is line 13; data starts at line 14


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


def error_of(path: Path, **options) -> str:
    with pytest.raises(InputError) as caught:
        read(path, **options)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(str(path))
    return message


# ---- the CSV format ------------------------------------------------------------------------------------------


def test_csv_fills_warps_launch_and_device(tmp_path):
    parsed = read(write(tmp_path, "trace.csv", METADATA + COLUMNS + ROWS))
    assert parsed.format == "warp-trace"
    assert (parsed.tool, parsed.tool_version) == ("tracekit-warp-trace", "v1")
    assert parsed.warnings == []
    warps = parsed.warps
    assert warps.height == 4
    assert warps.row(1, named=True) == {
        "launch_key": 0,
        "sm_id": 12,
        "block_id": 0,
        "warp_in_block": 1,
        "start_ns": 1700000000130,
        "end_ns": 1700000004600,
        "start_cycles": 123456800,
        "end_cycles": 123465100,
    }
    assert warps["sm_id"].to_list() == [12, 12, 13, 13]
    launch = parsed.launches.row(0, named=True)
    assert parsed.launches.height == 1
    assert launch["kernel_name"] == "vector_add"
    assert (launch["grid_x"], launch["grid_y"], launch["grid_z"]) == (2, 1, 1)
    assert (launch["block_x"], launch["block_y"], launch["block_z"]) == (64, 1, 1)
    assert (launch["registers_per_thread"], launch["static_smem_bytes"], launch["dynamic_smem_bytes"]) == (16, 0, 128)
    # no launch_duration_ns: the warps' span, last end 1700000004600 - first start 1700000000123
    assert launch["duration_ns"] == 4477.0
    assert (launch["start_ns"], launch["end_ns"]) == (1700000000123, 1700000004600)
    device = parsed.device
    assert (device.name, device.compute_capability, device.sm_count) == ("NVIDIA H100 80GB HBM3", "9.0", 132)
    assert (device.sm_clock_hz, device.max_warps_per_sm) == (1.98e9, 64)


def test_launch_duration_from_metadata_and_unknown_keys_kept(tmp_path):
    text = METADATA + "# launch_duration_ns: 6000\n# driver: 575.51\n" + COLUMNS + ROWS
    parsed = read(write(tmp_path, "trace.csv", text))
    assert parsed.launches["duration_ns"].to_list() == [6000.0]
    assert parsed.device.extra == {"driver": "575.51"}


def test_without_launch_column_and_blank_and_comment_lines(tmp_path):
    text = "sm_id,block_id,warp_in_block,start_ns,end_ns\n3,0,0,100,250\n\n# a comment between rows\n4,1,0,110,300\n"
    assert sniff(text.encode())
    parsed = read(write(tmp_path, "plain.csv", text))
    assert parsed.warps["launch_key"].to_list() == [0, 0]
    assert parsed.warps["end_ns"].to_list() == [250, 300]
    assert parsed.warps["start_cycles"].to_list() == [None, None]
    assert parsed.launches["kernel_name"].to_list() == [None]
    assert parsed.launches["duration_ns"].to_list() == [200.0]  # 300 - 100
    assert parsed.device is None and parsed.tool is None


def test_repeated_launches(tmp_path):
    rows = "1,5,0,0,2000,2600\n0,5,0,0,1000,1500\n1,6,1,0,2100,2900\n0,6,1,0,1100,1400\n"
    text = "# kernel: k\n# launch_duration_ns: 999\nlaunch,sm_id,block_id,warp_in_block,start_ns,end_ns\n" + rows
    parsed = read(write(tmp_path, "two.csv", text))
    # launch_key follows the launch number, whatever the row order
    assert parsed.warps["launch_key"].to_list() == [1, 0, 1, 0]
    launches = parsed.launches
    assert launches["source_launch_id"].to_list() == ["0", "1"]
    assert launches["duration_ns"].to_list() == [500.0, 900.0]  # 1500-1000, 2900-2000
    assert launches["kernel_name"].to_list() == ["k", "k"]
    assert any("launch_duration_ns ignored" in w for w in parsed.warnings)


def test_kernel_column_makes_one_launch_per_kernel_and_launch(tmp_path):
    text = (
        "# kernel: a\n# grid: 1\n# block: 32,2\n"
        "kernel,launch,sm_id,block_id,warp_in_block,start_ns,end_ns\n"
        "a,0,0,0,0,10,20\n"
        "b,0,1,0,0,15,45\n"
        "a,0,0,0,1,11,22\n"
        ",1,2,0,0,30,31\n"
    )  # empty kernel: the header's kernel; launch 1 of kernel a records 1 of its 2 warps
    with pytest.raises(InputError, match=r"kernels.csv:2: launch 1 holds 1 of the 2 warps .* incomplete"):
        read(write(tmp_path, "kernels.csv", text))
    parsed = read(write(tmp_path, "kernels.csv", text), allow_incomplete=True)
    assert [w for w in parsed.warnings if w.startswith("INCOMPLETE: launch 1 holds 1 of the 2 warps")]
    launches = parsed.launches
    assert launches["kernel_name"].to_list() == ["a", "b", "a"]
    assert launches["source_launch_id"].to_list() == ["0", "0", "1"]
    assert parsed.warps["launch_key"].to_list() == [0, 1, 0, 2]
    # the header's grid/block describe kernel a only
    assert launches["grid_x"].to_list() == [1, None, 1]
    assert launches["block_y"].to_list() == [2, None, 2]
    assert launches["duration_ns"].to_list() == [12.0, 30.0, 1.0]


def test_kernel_column_launch_keys_follow_launch_then_first_appearance(tmp_path):
    """Kernel names in runs and interleaved, a missing name, launch numbers past 2^30: each (launch, kernel) pair
    gets the key its order asks for, whatever the container (CSV reads the names as categories, JSON as text)."""
    rows = [
        ("zeta", 2**40, 0),
        ("zeta", 2**40, 1),
        ("alpha", 2**40, 0),
        (None, 7, 0),
        ("zeta", 7, 0),
        ("alpha", 2**40, 1),
        ("zeta", 2**40, 2),
        (None, 7, 1),
        ("beta", 0, 0),
    ]
    # reference: sorted by launch number, ties by first appearance
    pairs = list(dict.fromkeys((launch, kernel) for kernel, launch, _ in rows))
    order = sorted(range(len(pairs)), key=lambda i: (pairs[i][0], i))
    key_of = {pairs[i]: key for key, i in enumerate(order)}
    expected = [key_of[(launch, kernel)] for kernel, launch, _ in rows]
    csv_text = "kernel,launch,sm_id,block_id,warp_in_block,start_ns,end_ns\n" + "".join(
        f"{kernel or ''},{launch},0,{block},0,{10 + i},{20 + i}\n" for i, (kernel, launch, block) in enumerate(rows)
    )
    records = [
        {
            "kernel": kernel,
            "launch": launch,
            "sm_id": 0,
            "block_id": block,
            "warp_in_block": 0,
            "start_ns": 10 + i,
            "end_ns": 20 + i,
        }
        for i, (kernel, launch, block) in enumerate(rows)
    ]
    json_text = json.dumps({"metadata": {"kernel": "header_k"}, "warps": records})
    for parsed, unnamed in (
        (read(write(tmp_path, "k.csv", csv_text)), None),
        (read(write(tmp_path, "k.json", json_text)), "header_k"),
    ):
        assert parsed.warps["launch_key"].to_list() == expected
        assert parsed.launches["launch_key"].to_list() == list(range(len(pairs)))
        assert parsed.launches["kernel_name"].to_list() == [pairs[i][1] or unnamed for i in order]
        assert parsed.launches["source_launch_id"].to_list() == [str(pairs[i][0]) for i in order]


def test_gzip_detected_by_content_not_name(tmp_path):
    text = METADATA + COLUMNS + ROWS
    path = tmp_path / "trace.dat"
    path.write_bytes(gzip.compress(text.encode()))
    assert sniff(path.read_bytes()[:65536])
    parsed = read(path)
    plain = read(write(tmp_path, "trace.csv", text))
    assert parsed.warps.equals(plain.warps)
    assert parsed.launches.equals(plain.launches)


# ---- cycles, clocks and wrap ---------------------------------------------------------------------------------

CYCLES_ONLY = (
    "launch,sm_id,block_id,warp_in_block,start_cycles,end_cycles\n"
    "0,0,0,0,1000,3000\n"
    "0,0,1,0,1400,2400\n"
    "0,1,2,0,500,700\n"
    "0,1,3,0,900,5900\n"
)


def test_cycles_only_converted_per_sm_with_clock_option(tmp_path):
    parsed = read(write(tmp_path, "cycles.csv", CYCLES_ONLY), clock_hz=2e9)  # 0.5 ns per cycle
    warps = parsed.warps
    # SM 0 starts at cycle 1000, SM 1 at cycle 500: (start - sm_first) / 2, (end - sm_first) / 2
    assert warps["start_ns"].to_list() == [0, 200, 0, 200]
    assert warps["end_ns"].to_list() == [1000, 700, 100, 2700]
    assert warps["start_cycles"].to_list() == [1000, 1400, 500, 900]  # raw cycles kept
    assert parsed.device.sm_clock_hz == 2e9
    assert any("cross-SM alignment is unknown" in w for w in parsed.warnings)
    assert parsed.launches["start_ns"].to_list() == [None]  # no absolute time without %globaltimer


def test_cycles_clock_from_metadata_and_option_wins(tmp_path):
    path = write(tmp_path, "cycles.csv", "# sm_clock_hz: 1e9\n" + CYCLES_ONLY)
    assert read(path).warps["end_ns"].to_list() == [2000, 1400, 200, 5400]  # 1 ns per cycle
    assert read(path, clock_hz=4e9).warps["end_ns"].to_list() == [500, 350, 50, 1350]


def test_cycles_without_clock_says_to_pass_clock_hz(tmp_path):
    message = error_of(write(tmp_path, "cycles.csv", CYCLES_ONLY))
    assert "--clock-hz" in message


def test_cycles_64_bit_end_before_start_is_an_error(tmp_path):
    text = "# clock_bits: 64\n" + CYCLES_ONLY + "0,1,4,0,9000,8000\n"
    message = error_of(write(tmp_path, "back.csv", text), clock_hz=1e9)
    assert message.startswith(f"{tmp_path / 'back.csv'}:7 (column 'end_cycles')")


def test_32_bit_wrap_gives_duration_modulo_2_32(tmp_path):
    text = (
        "# clock_bits: 32\nsm_id,block_id,warp_in_block,start_cycles,end_cycles\n"
        "0,0,0,4294966000,4294967100\n"
        "0,0,1,4294967000,200\n"  # wraps: 2**32 - 4294967000 + 200 = 496 cycles
        "1,1,0,4294967200,40\n"  # SM 1 straddles the wrap: 2**32 - 4294967200 + 40 = 136 cycles
        "1,1,1,100,300\n"
    )  # after the wrap: 2**32 - 4294967200 + 100 = 196 cycles after SM 1's first
    parsed = read(write(tmp_path, "wrap.csv", text), clock_hz=1e9)
    warps = parsed.warps
    assert warps["start_ns"].to_list() == [0, 1000, 0, 196]
    assert warps["end_ns"].to_list() == [1100, 1496, 136, 396]
    assert warps["end_cycles"].to_list() == [4294967100, 200, 40, 300]
    assert not any("ambiguous" in w for w in parsed.warnings)


def test_32_bit_detected_when_values_fit_and_end_precedes_start(tmp_path):
    text = "sm_id,block_id,warp_in_block,start_cycles,end_cycles\n0,0,0,4294967000,200\n0,0,1,10,20\n"
    parsed = read(write(tmp_path, "auto.csv", text), clock_hz=1e9)
    # the second warp started after the wrap: 2**32 - 4294967000 + 10 = 306 cycles after the first; lasts 10
    assert parsed.warps["start_ns"].to_list() == [0, 306]
    assert parsed.warps["end_ns"].to_list() == [496, 316]
    assert any("32-bit clock()" in w for w in parsed.warnings)


def test_32_bit_ambiguous_durations_warn(tmp_path):
    # 3 * 2**30 cycles is over half the wrap period (2**31)
    text = f"# clock_bits: 32\nsm_id,block_id,warp_in_block,start_cycles,end_cycles\n0,0,0,0,{3 * 2**30}\n"
    parsed = read(write(tmp_path, "long.csv", text), clock_hz=1e9)
    warning = next(w for w in parsed.warnings if "ambiguous" in w)
    assert warning.startswith("1 warps last over half the 32-bit clock wrap period (4,294.967 ms at")


def test_32_bit_launch_longer_than_wrap_period_warns(tmp_path):
    # ns span 5e9 > 2**32 cycles at 1 GHz (4.29e9 ns): cycle differences may have wrapped more than once
    text = (
        "# clock_bits: 32\n# sm_clock_hz: 1000000000\n"
        "sm_id,block_id,warp_in_block,start_ns,end_ns,start_cycles,end_cycles\n"
        "0,0,0,0,100,10,110\n0,1,0,4999999900,5000000000,20,120\n"
    )
    parsed = read(write(tmp_path, "span.csv", text))
    assert parsed.warps["end_ns"].to_list() == [100, 5000000000]
    assert any("span more than the 32-bit clock wrap period" in w for w in parsed.warnings)


def test_clock_bits_32_with_wide_value_is_an_error(tmp_path):
    text = f"# clock_bits: 32\nsm_id,block_id,warp_in_block,start_cycles,end_cycles\n0,0,0,1,{2**32}\n"
    message = error_of(write(tmp_path, "wide.csv", text), clock_hz=1e9)
    assert message.startswith(f"{tmp_path / 'wide.csv'}:3 (column 'end_cycles')")


# ---- column mapping ------------------------------------------------------------------------------------------

MAPPED = "smid,blk,w,t0,t1,extra\n7,0,0,100,180,x\n8,1,0,120,260,y\n"


def test_column_map_with_aliases_and_full_names(tmp_path):
    path = write(tmp_path, "mapped.csv", MAPPED)
    assert not sniff(path.read_bytes())  # no recognisable header: the user names the format and the columns
    parsed = read(path, column_map={"start": "t0", "end": "t1", "sm": "smid", "block_id": "blk", "warp": "w"})
    assert parsed.warps["sm_id"].to_list() == [7, 8]
    assert parsed.warps["end_ns"].to_list() == [180, 260]
    assert parsed.warps["block_id"].to_list() == [0, 1]


def test_column_map_errors(tmp_path):
    path = write(tmp_path, "mapped.csv", MAPPED)
    assert "unknown field 'begin'" in error_of(path, column_map={"begin": "t0"})
    assert "no column 'T0'" in error_of(path, column_map={"start": "T0"})
    message = error_of(path, column_map={"start": "t0", "end": "t1", "block": "blk", "warp": "w"})
    assert message.startswith(f"{path}:1: missing column 'sm_id'") and "--map sm=COLUMN" in message


# ---- bad input -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bad_row", "column", "words"),
    [
        ("0,12,1,0,1700000000500,1700000000400,1,2", "end_ns", "end_ns is before start_ns"),
        ("0,-1,1,0,1700000000500,1700000000900,1,2", "sm_id", "negative SM id"),
        ("0,12,1,0,17000000x0500,1700000000900,1,2", "start_ns", "not an integer: '17000000x0500'"),
        ("0,12,1,0,1700000000500,,1,2", "end_ns", "missing value"),
        (
            "0,12,0,1,1700000000500,1700000000900,1,2",
            "warp_in_block",
            f"duplicate warp: block 0, warp 1 of launch 0 appeared before at line {HEADER_LINES + 2}",
        ),
    ],
)
def test_bad_rows_name_line_and_column(tmp_path, bad_row, column, words):
    # the bad row follows a blank line and a comment line, which must not shift the line number
    path = write(tmp_path, "bad.csv", METADATA + COLUMNS + ROWS + "\n# note\n" + bad_row + "\n")
    line = HEADER_LINES + 4 + 3  # 4 good rows, a blank line, a comment, then the bad row
    message = error_of(path)
    assert message.startswith(f"{path}:{line} (column '{column}'): ")
    assert words in message


def test_duplicate_with_ids_too_large_to_pack(tmp_path):
    text = f"sm_id,block_id,warp_in_block,start_ns,end_ns\n0,{2**41},0,1,2\n1,{2**41},0,3,4\n"
    message = error_of(write(tmp_path, "dup.csv", text))
    assert message.startswith(f"{tmp_path / 'dup.csv'}:3 (column 'warp_in_block'): duplicate warp")


def test_ragged_line(tmp_path):
    path = write(tmp_path, "ragged.csv", COLUMNS + "0,1,0,0,1,2,3,4\n0,1,0,1,1,2,3,4,5\n")
    assert error_of(path).startswith(f"{path}:3: 9 fields where the header has 8")


def test_empty_file(tmp_path):
    assert error_of(write(tmp_path, "empty.csv", "")).endswith("the file is empty")


def test_header_without_rows(tmp_path):
    assert "no warp rows" in error_of(write(tmp_path, "header.csv", METADATA + COLUMNS))


def test_only_comments(tmp_path):
    assert "no CSV header line" in error_of(write(tmp_path, "comments.csv", METADATA))


def test_binary_garbage(tmp_path):
    path = tmp_path / "garbage.bin"
    path.write_bytes(bytes(range(256)) * 8)
    assert not sniff(path.read_bytes())
    assert "binary data: not a warp trace" in error_of(path)


def test_missing_required_column(tmp_path):
    path = write(tmp_path, "nosm.csv", "launch,block_id,warp_in_block,start_ns,end_ns\n0,0,0,1,2\n")
    message = error_of(path)
    assert message.startswith(f"{path}:1: missing column 'sm_id' (columns: launch, block_id, warp_in_block")


def test_missing_time_columns(tmp_path):
    assert "no time columns" in error_of(write(tmp_path, "notime.csv", "sm_id,block_id,warp_in_block\n0,0,0\n"))
    assert "'start_ns' without 'end_ns'" in error_of(
        write(tmp_path, "half.csv", "sm_id,block_id,warp_in_block,start_ns\n0,0,0,1\n")
    )


def test_bad_metadata_value_names_its_line(tmp_path):
    path = write(tmp_path, "meta.csv", "# tracekit-warp-trace v1\n# sm_count: many\n" + COLUMNS + ROWS)
    assert error_of(path).startswith(f"{path}:2: metadata 'sm_count': 'many' is not a number")


def test_unsupported_version(tmp_path):
    path = write(tmp_path, "v2.csv", "# tracekit-warp-trace v2\n" + COLUMNS + ROWS)
    assert error_of(path).startswith(f"{path}:1: unsupported warp trace version 'v2'")


def test_gzip_bomb_refused_without_inflating_it_all(tmp_path):
    # 64 MiB of one repeated row compresses to ~100 kB; with a 1 MiB limit the reader must stop early
    row = b"0,1,0,0,1,2,3,4\n"
    path = tmp_path / "bomb.csv.gz"
    with gzip.open(path, "wb", compresslevel=9) as handle:
        handle.write(COLUMNS.encode())
        for _ in range(64):
            handle.write(row * (2**20 // len(row)))
    assert path.stat().st_size < 2**20
    message = error_of(path, max_inflated_bytes=2**20)
    assert "inflates past 1,048,576 bytes" in message and "TRACEKIT_MAX_INFLATED_BYTES" in message


def test_bad_row_in_gzip_names_the_line_of_the_inflated_text(tmp_path):
    path = tmp_path / "bad.csv.gz"
    path.write_bytes(gzip.compress((METADATA + COLUMNS + ROWS + "0,1,9,0,50,40,1,2\n").encode()))
    assert error_of(path).startswith(f"{path}:{HEADER_LINES + 5} (column 'end_ns'): end_ns is before start_ns")


def test_truncated_gzip(tmp_path):
    data = gzip.compress((METADATA + COLUMNS + ROWS * 50).encode())
    path = tmp_path / "cut.csv.gz"
    path.write_bytes(data[: len(data) // 2])
    assert "gzip stream is truncated" in error_of(path)


def test_corrupt_gzip(tmp_path):
    data = bytearray(gzip.compress((METADATA + COLUMNS + ROWS).encode()))
    data[10:20] = b"\xff" * 10
    path = tmp_path / "bad.csv.gz"
    path.write_bytes(bytes(data))
    assert "corrupt gzip data" in error_of(path)


def test_multi_member_gzip(tmp_path):
    path = tmp_path / "members.csv.gz"
    path.write_bytes(gzip.compress((METADATA + COLUMNS).encode()) + gzip.compress(ROWS.encode()))
    assert read(path).warps.height == 4


# ---- Parquet and JSON ----------------------------------------------------------------------------------------


def test_parquet_with_key_value_metadata(tmp_path):
    table = pa.table(
        {
            "sm_id": pa.array([3, 4], pa.int32()),
            "block_id": pa.array([0, 1], pa.uint32()),
            "warp_in_block": pa.array([0, 0], pa.int64()),
            "start_ns": pa.array([1000, 1100], pa.uint64()),
            "end_ns": pa.array([1800, 1500], pa.uint64()),
        }
    ).replace_schema_metadata(
        {"kernel": "saxpy", "sm_count": "132", "grid": "2,1,1", "block": "32,1,1", "sm_clock_hz": "1755000000"}
    )
    path = tmp_path / "trace.bin"
    pq.write_table(table, path)
    assert sniff(path.read_bytes()[:65536])
    parsed = read(path)
    assert parsed.warps["end_ns"].to_list() == [1800, 1500]
    assert parsed.warps["sm_id"].dtype == pl.Int32
    assert parsed.launches["kernel_name"].to_list() == ["saxpy"]
    assert parsed.launches["duration_ns"].to_list() == [800.0]
    assert (parsed.device.sm_count, parsed.device.sm_clock_hz) == (132, 1.755e9)


def test_parquet_bad_row_names_row_index(tmp_path):
    path = tmp_path / "bad.parquet"
    pl.DataFrame(
        {"sm_id": [0, 0], "block_id": [0, 0], "warp_in_block": [0, 1], "start_ns": [5, 9], "end_ns": [6, 8]}
    ).write_parquet(path)
    assert error_of(path).endswith("row 1 (column 'end_ns'): end_ns is before start_ns")


def test_json_records(tmp_path):
    document = {
        "metadata": {"kernel": "k", "grid": [2, 1, 1], "sm_count": 80},
        "warps": [
            {"sm": 1, "block_id": 0, "warp_in_block": 0, "start_ns": 10, "end_ns": 90},
            {"sm": 2, "block_id": 1, "warp_in_block": 0, "start_ns": "20", "end_ns": 70},
        ],
    }
    path = write(tmp_path, "trace.json", json.dumps(document))
    assert sniff(path.read_bytes())
    parsed = read(path, column_map={"sm": "sm"})
    assert parsed.warps["sm_id"].to_list() == [1, 2]
    assert parsed.warps["start_ns"].to_list() == [10, 20]
    assert parsed.launches["grid_x"].to_list() == [2]
    assert parsed.device.sm_count == 80


def test_json_record_errors(tmp_path):
    document = {
        "warps": [
            {"sm_id": 1, "block_id": 0, "warp_in_block": 0, "start_ns": 10, "end_ns": 90},
            {"sm_id": 1, "block_id": 1, "warp_in_block": 0, "start_ns": 10.5, "end_ns": 90},
        ]
    }
    assert error_of(write(tmp_path, "float.json", json.dumps(document))).endswith(
        "warps[1] (column 'start_ns'): not an integer: 10.5"
    )
    message = error_of(write(tmp_path, "cut.json", '{"warps": [{"sm_id": 1,\n "block_id"'))
    assert message.startswith(f"{tmp_path / 'cut.json'}:2:12: invalid JSON")


# A log in the shape cuda_scheduling_examiner's runner writes (README "Output File Format" and runner.c
# WriteTimesToOutput): header keys, "times" = [{}, CPU times, kernel, CPU times, kernel]; times in seconds (%.9f).
EXAMINER_LOG = """{
"scenario_name": "Two timer_spin instances",
"benchmark_name": "Timer spin",
"label": "Stream 1",
"max_resident_threads": 4096,
"data_size": 0,
"release_time": 0.000000,
"PID": 4242,
"TID": 4243,
"times": [{},
{"copy_in_times": [0.101000000,0.101000100], "execute_times": [0.101000200,0.101500000], \
"copy_out_times": [0.101500100,0.101600000], "cpu_times": [0.101000000,0.101600000]},
{"kernel_name": "GPUSpin", "block_count": 3, "thread_count": 512, "shared_memory": 0, \
"cuda_launch_times": [0.101000300, 0.101010000, 0.101490000], \
"block_times": [0.101020480,0.101470720,0.101020512,0.101480000,0.101471008,0.101489984], \
"block_smids": [0,1,0], "cpu_core": 2},
{"copy_in_times": [0.201000000,0.201000100], "execute_times": [0.201000200,0.201500000], \
"copy_out_times": [0.201500100,0.201600000], "cpu_times": [0.201000000,0.201600000]},
{"kernel_name": "GPUSpin", "block_count": 2, "thread_count": 512, "shared_memory": 1024, \
"cuda_launch_times": [0.201000300, 0.201010000, 0.201490000], \
"block_times": [0.201020000,0.201300000,0.201020032,0.201350016], \
"block_smids": [5,7], "cpu_core": 2}
]}"""


def test_cuda_scheduling_examiner_log(tmp_path):
    path = write(tmp_path, "timer_spin_1.json", EXAMINER_LOG)
    assert sniff(path.read_bytes())
    parsed = read(path)
    assert parsed.tool == "cuda_scheduling_examiner"
    assert any(w.startswith("per-block timings: each block is imported as one warp record") for w in parsed.warnings)
    warps = parsed.warps
    assert warps.height == 5
    assert warps["launch_key"].to_list() == [0, 0, 0, 1, 1]
    assert warps["block_id"].to_list() == [0, 1, 2, 0, 1]
    assert warps["warp_in_block"].to_list() == [0, 0, 0, 0, 0]
    assert warps["sm_id"].to_list() == [0, 1, 0, 5, 7]
    # seconds with 9 decimals to ns: 0.101020480 s = 101020480 ns
    assert warps["start_ns"].to_list() == [101020480, 101020512, 101471008, 201020000, 201020032]
    assert warps["end_ns"].to_list() == [101470720, 101480000, 101489984, 201300000, 201350016]
    launches = parsed.launches
    assert launches["kernel_name"].to_list() == ["GPUSpin", "GPUSpin"]
    assert launches["grid_x"].to_list() == [3, 2]
    assert launches["block_x"].to_list() == [512, 512]
    assert launches["dynamic_smem_bytes"].to_list() == [0, 1024]
    assert launches["duration_ns"].to_list() == [101489984 - 101020480, 201350016 - 201020000]


def test_cuda_scheduling_examiner_mismatched_lengths(tmp_path):
    log = json.loads(EXAMINER_LOG)
    log["times"][4]["block_times"].pop()
    message = error_of(write(tmp_path, "bad.json", json.dumps(log)))
    assert 'times[4]: "block_times" has 3 values, expected 2 per block for the 2 blocks' in message


def test_cuda_scheduling_examiner_end_before_start_names_the_block(tmp_path):
    log = json.loads(EXAMINER_LOG)
    log["times"][2]["block_times"][3] = 0.1
    assert error_of(write(tmp_path, "back.json", json.dumps(log))).endswith(
        "times[2] block 1 (column 'block_times'): end_ns is before start_ns"
    )


def test_cuda_scheduling_examiner_log_without_sm_ids(tmp_path):
    log = json.loads(EXAMINER_LOG)
    del log["times"][2]["block_smids"]
    assert 'times[2] has no "block_smids"' in error_of(write(tmp_path, "old.json", json.dumps(log)))


# ---- detection -----------------------------------------------------------------------------------------------


def test_sniff_rejects_other_formats(real_export):
    assert not sniff(b"SQLite format 3\x00" + bytes(100))
    assert not sniff(b"NVR\x00" + bytes(100))
    assert not sniff(b'{"traceEvents": []}')
    head = real_export("ncu_details_T4_2025_rules_speedup_nsightful_copy_blocked.csv").read_bytes()[:65536]
    assert not sniff(head)


# ---- the store -----------------------------------------------------------------------------------------------


def test_store_round_trip(store, tmp_path):
    path = write(tmp_path, "trace.csv", METADATA + COLUMNS + ROWS)
    parsed = read(path)
    result = store.add_import(parsed, path)
    assert (result.created, result.launch_count, result.warp_count) == (True, 1, 4)
    launches = store.launches(import_id=result.import_id)
    assert launches["kernel_name"].to_list() == ["vector_add"]
    assert launches["duration_ns"].to_list() == [4477.0]
    assert launches["sm_clock_hz"].to_list() == [1.98e9]
    back = store.warps(int(launches["id"][0]))
    expected = parsed.warps.drop("launch_key")
    assert back.columns == expected.columns
    assert back.cast(expected.schema).equals(expected)


# ---- the team's H100 samples ---------------------------------------------------------------------------------


@pytest.mark.gpu_samples
def test_h100_sample_traces():
    # the warp traces among the gzip CSVs (the samples also hold gzipped Nsight Compute pages)
    paths = [path for path in sorted(SAMPLES.glob("**/*.csv.gz")) if sniff(path.read_bytes()[:4096])]
    if not paths:
        reason = f"no {SAMPLES}/**/*.csv.gz: run sample_traces/make_samples.sh on a GPU machine"
        if os.environ.get("CI"):
            pytest.fail(f"required in CI: {reason}")
        pytest.skip(reason)
    for path in paths:
        parsed = read(path)
        warps, device = parsed.warps, parsed.device
        assert device.sm_count == 132, path
        assert warps["sm_id"].min() >= 0 and warps["sm_id"].max() <= 131, path
        counts = warps.group_by("launch_key").len().sort("launch_key")
        for launch, count in zip(parsed.launches.iter_rows(named=True), counts["len"], strict=True):
            blocks = launch["grid_x"] * launch["grid_y"] * launch["grid_z"]
            warps_per_block = math.ceil(launch["block_x"] * launch["block_y"] * launch["block_z"] / 32)
            assert count == blocks * warps_per_block, path
        # %globaltimer ticks every 32 ns on an H100, so a short warp may show start == end in ns; clock64 may not
        assert (warps["end_ns"] >= warps["start_ns"]).all(), path
        assert (warps["end_cycles"] > warps["start_cycles"]).all(), path
        # the host-timed launch (launch_duration_ns) contains all of its warps
        spans = warps.group_by("launch_key").agg((pl.col("end_ns").max() - pl.col("start_ns").min()).alias("span"))
        spans = spans.sort("launch_key")["span"].to_list()
        assert all(d >= s for d, s in zip(parsed.launches["duration_ns"], spans, strict=True)), path
    assert len(paths) >= 10  # the samples cover vector_add, memcpy, permute, reduce, black_scholes, ...


def test_module_constants():
    assert warp_trace.FORMAT == "warp-trace"


def test_duplicate_warps_are_found_in_any_row_order() -> None:
    from tracekit.importers.warp_trace.validate import first_duplicate

    def rows(triples: list[tuple[int, int, int]]) -> pl.DataFrame:
        return pl.DataFrame(triples, schema=["launch_key", "block_id", "warp_in_block"], orient="row")

    assert first_duplicate(rows([(0, 0, 0), (0, 0, 1), (0, 1, 0), (1, 0, 0)])) is None  # in order
    assert first_duplicate(rows([(1, 0, 0), (0, 1, 0), (0, 0, 1), (0, 0, 0)])) is None  # any order
    assert first_duplicate(rows([(0, 0, 0), (0, 0, 1), (0, 0, 1), (0, 1, 0)])) == 2  # in order, repeated
    assert first_duplicate(rows([(0, 1, 0), (0, 0, 0), (0, 1, 0)])) == 2
