"""Uncoalesced access: sectors per request against the access width, and Nsight's excessive-sector count."""

from __future__ import annotations

from tests.analysis.rules.ctx import context, flags, ids, texts, unit
from tracekit.analysis.rules import coalescing

SECTORS, REQUESTS = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
BUSY = (unit("DRAM", "dram", 60.0),)


def test_scattered_loads_take_many_sectors_per_request() -> None:
    found = coalescing.apply(context({SECTORS: 32_000, REQUESTS: 1_000}, BUSY))
    assert flags(found) == ["uncoalesced-access"]
    assert found[0].get("sectors_per_request") == 32.0 and found[0].get("ideal") == 4.0
    assert "Global loads take 32 sectors per request" in texts(found)


def test_coalesced_32bit_loads_do_not_fire() -> None:
    assert coalescing.apply(context({SECTORS: 4_000, REQUESTS: 1_000}, BUSY)) == []


def test_128bit_loads_need_16_sectors_per_request() -> None:
    """A vector (128-bit) load needs 16 sectors: 16 per request is coalesced for it."""
    metrics = {SECTORS: 16_000, REQUESTS: 1_000, "smsp__sass_inst_executed_op_memory_128b.sum": 500}
    assert coalescing.apply(context(metrics, BUSY)) == []


def test_excessive_sectors_share_and_a_quiet_memory_system() -> None:
    metrics = {
        "derived__memory_l2_theoretical_sectors_global_excessive": 300,
        "memory_l2_theoretical_sectors_global": 1000,
    }
    busy = coalescing.apply(context(metrics, BUSY))
    assert ids(busy) == ["coalescing.uncoalesced"] and busy[0].get("excess_share") == 0.3
    quiet = coalescing.apply(context(metrics, (unit("DRAM", "dram", 5.0),)))
    assert ids(quiet) == ["coalescing.uncoalesced-quiet"] and flags(quiet) == []
    assert "cost little time" in texts(quiet)
