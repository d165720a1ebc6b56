"""`tracekit occupancy`: text and JSON output with values, and one-line errors with exit code 2."""

from __future__ import annotations

import json
import re
import subprocess

import pytest
from typer.testing import CliRunner

from tests.helpers import run_cli
from tracekit.cli.main import app
from tracekit.errors import TracekitError


def occupancy(*args: str) -> subprocess.CompletedProcess:
    return run_cli("occupancy", *args)


def table_row(output: str, label: str) -> list[str]:
    """The cells of the rich table row whose first cell is `label`."""
    for line in output.splitlines():
        cells = [cell.strip() for cell in re.split(r"[│┃]", line) if cell.strip()]
        if cells and cells[0] == label:
            return cells
    raise AssertionError(f"no row {label!r} in:\n{output}")


def test_text_output_register_limited():
    # CC 9.0, 256 threads, 64 registers: 2,048 registers per warp, 16,384 / 2,048 = 8 warps per sub-partition,
    # 32 per SM -> 4 blocks of 8 warps = 32 of 64 warps = 50%; warps alone would allow 64 / 8 = 8 blocks.
    result = CliRunner().invoke(app, ["occupancy", "--cc", "9.0", "--block", "256", "--regs", "64", "--smem", "0"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert table_row(out, "registers") == ["registers", "4", "limiter"]
    assert table_row(out, "warps") == ["warps", "8"]
    assert table_row(out, "shared memory") == ["shared memory", "228"]  # 233,472 B per SM // 1 KB reserve
    assert table_row(out, "block slots") == ["block slots", "32"]
    assert "active blocks per SM: 4" in out
    assert "theoretical warps per SM: 32 of 64" in out
    assert "theoretical occupancy: 50%" in out
    # 49..64 registers keep 4 blocks; 65 -> 2,304 per warp -> 7 per sub-partition -> 28 warps -> 3 blocks.
    assert "at 65 registers per thread occupancy drops from 50% to 37.5%" in out
    assert "at 48 registers per thread occupancy rises from 50% to 62.5%" in out
    # The compact registers table: one row per step, e.g. 49-64 registers -> 4 blocks, 32 warps, 50%.
    assert table_row(out, "49-64") == ["49-64", "4", "32", "50%", "registers"]
    assert table_row(out, "129-255") == ["129-255", "1", "8", "12.5%", "registers"]


def test_json_output_with_waves():
    completed = occupancy(
        "--cc", "9.0", "--block", "256", "--regs", "32", "--smem", "0", "--grid", "1000", "--sms", "132", "--json"
    )
    assert completed.returncode == 0, completed.stderr
    data = json.loads(completed.stdout)
    assert data["limits_blocks_per_sm"] == {"registers": 8, "shared_memory": 228, "warps": 8, "blocks": 32}
    assert (data["active_blocks_per_sm"], data["theoretical_warps_per_sm"], data["theoretical_pct"]) == (8, 64, 100.0)
    assert data["limiter"] == "warps" and data["limiters"] == ["warps", "registers"]
    texts = [cliff["text"] for cliff in data["nearest_cliffs"]]
    assert "at 33 registers per thread occupancy drops from 100% to 75%" in texts
    steps = data["cliffs"]["registers"]
    assert [step["registers_per_thread_from"] for step in steps] == [1, 33, 41, 49, 65, 81, 129]
    # 8 blocks x 132 SMs = 1,056 per wave: 1,000 blocks are 0.947 waves, no full wave, so no tail effect.
    assert data["tail"]["blocks_per_wave"] == 1056
    assert data["tail"]["waves_per_sm"] == pytest.approx(1000 / 1056)
    assert data["tail"]["tail_effect"] is False


def test_carveout_and_tail_in_text():
    # CC 8.0, 128 threads, 16 regs, 20,000 B: 21,120 B allocated; a 64 KB carveout holds 3 blocks = 12 warps.
    # 1,000 blocks at 3 per SM on 108 SMs: 324 per wave, 3 full waves + 28 blocks -> up to 1/4 of the runtime.
    result = CliRunner().invoke(
        app,
        [
            "occupancy",
            "--cc",
            "8.0",
            "--block",
            "128",
            "--regs",
            "16",
            "--smem",
            "20000",
            "--carveout",
            "65536",
            "--grid",
            "1000",
            "--sms",
            "108",
        ],
    )
    assert result.exit_code == 0, result.output
    assert table_row(result.output, "shared memory") == ["shared memory", "3", "limiter"]
    assert "theoretical occupancy: 18.75%" in result.output
    assert "waves per SM: 3.09 (3 full, partial wave of 28 of 324 blocks)" in result.output
    assert "tail effect: the partial wave may take up to 25.0% of the runtime" in result.output


@pytest.mark.parametrize(
    "args, message",
    [
        (["--cc", "9.0", "--block", "0", "--regs", "32"], "block size 0"),
        (["--cc", "9.0", "--block", "1025", "--regs", "32"], "block size 1025"),
        (["--cc", "9.0", "--block", "256", "--regs", "256"], "256 registers per thread"),
        (["--cc", "4.0", "--block", "256", "--regs", "32"], "unknown compute capability '4.0'"),
        (["--cc", "8.6", "--block", "256", "--regs", "32", "--smem", "102400"], "can use 0 to 101376 bytes"),
        (["--cc", "9.0", "--block", "256", "--regs", "32", "--grid", "100"], "--grid and --sms go together"),
    ],
)
def test_invalid_input_raises_one_line_error(args, message):
    result = CliRunner().invoke(app, ["occupancy", *args])
    assert isinstance(result.exception, TracekitError)
    assert message in str(result.exception)


def test_invalid_input_exits_2_with_one_line():
    completed = occupancy("--cc", "9.0", "--block", "256", "--regs", "32", "--smem", "300000")
    assert completed.returncode == 2
    assert completed.stdout == ""
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tracekit: error: 300000 bytes of shared memory per block")
    assert "Traceback" not in completed.stderr


def test_carveout_rounded_up_is_said_and_used_by_the_cliffs():
    # CC 9.0 has no 120,000 B carveout: the driver takes 132 KB. 30,000 B + 1 KB -> 31,104 B: 4 blocks.
    result = CliRunner().invoke(
        app,
        ["occupancy", "--cc", "9.0", "--block", "256", "--regs", "32", "--smem", "30000", "--carveout", "120000"],
    )
    assert result.exit_code == 0, result.output
    out = result.output
    assert "shared-memory carveout: 135168 bytes (132 KB)" in out
    assert "note: the carveout of 120000 bytes is not one CC 9.0 offers" in out
    assert table_row(out, "shared memory") == ["shared memory", "4", "limiter"]
    # The cliffs are drawn at 132 KB too: 5 blocks need 5 x (s + 1,024) <= 135,168 -> s <= 26,009 -> 25,984;
    # at the full 228 KB 4 blocks would hold up to 57,344 B, and 5 blocks up to 45,568.
    assert "at 25984 bytes of shared memory per block occupancy rises from 50% to 62.5%" in out


def test_json_carries_the_notes_and_the_opt_in():
    completed = occupancy(
        "--cc",
        "9.0",
        "--block",
        "128",
        "--regs",
        "32",
        "--smem",
        "100000",
        "--opt-in",
        "--carveout",
        "233470",
        "--json",
    )
    assert completed.returncode == 0, completed.stderr
    data = json.loads(completed.stdout)
    assert data["opt_in"] is True and data["shared_mem_config_bytes"] == 233_472
    assert data["requested_shared_mem_config_bytes"] == 233_470 and len(data["notes"]) == 1
    assert data["limits_blocks_per_sm"]["shared_memory"] == 2  # 101,120 B per block
    assert data["cliffs"]["shared_memory"][-1]["shared_mem_per_block_bytes_to"] == 232_448


def test_carveout_ignored_on_pascal():
    completed = occupancy("--cc", "6.1", "--block", "256", "--regs", "32", "--carveout", "8192", "--json")
    assert completed.returncode == 0, completed.stderr
    data = json.loads(completed.stdout)
    assert data["shared_mem_config_bytes"] is None
    assert data["notes"] == [
        "CC 6.1 has a fixed 96 KB of shared memory per SM: the carveout of 8192 bytes does not apply and is ignored"
    ]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--smem", "50000"], "more than 49152 needs the kernel's opt-in"),
        (["--carveout", "240000"], "carveout of 240000 bytes: no carveout on CC 9.0 holds it"),
    ],
)
def test_opt_in_and_impossible_carveout_exit_2(args, message):
    completed = occupancy("--cc", "9.0", "--block", "256", "--regs", "32", *args)
    assert completed.returncode == 2 and completed.stdout == ""
    [line] = completed.stderr.strip().splitlines()
    assert line.startswith("tracekit: error: ") and message in line
    if "opt-in" in message:
        assert line.endswith("pass --opt-in if the kernel opts in")


def test_carveout_as_a_percentage():
    # 10% of the H100's 228 KB is 23,348 B, which the driver rounds up to 32 KB: 32,768 // (8,192 + 1,024) = 3
    # blocks, what cudaOccupancyMaxActiveBlocksPerMultiprocessor answered on the H100 for a 10% preferred carveout.
    completed = occupancy(
        "--cc", "9.0", "--block", "64", "--regs", "10", "--smem", "8192", "--carveout", "10%", "--json"
    )
    assert completed.returncode == 0, completed.stderr
    data = json.loads(completed.stdout)
    assert (data["requested_shared_mem_config_bytes"], data["shared_mem_config_bytes"]) == (23_348, 32_768)
    assert data["active_blocks_per_sm"] == 3
    bad = occupancy("--cc", "9.0", "--block", "64", "--regs", "10", "--carveout", "half")
    assert bad.returncode == 2 and "--carveout 'half': expected bytes (65536) or a percentage (50%)" in bad.stderr
