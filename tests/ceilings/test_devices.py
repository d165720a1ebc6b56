"""The one device table (tracekit/ceilings/devices.py): each architecture's SM limits and its products' peaks in
one place, read by the occupancy calculator and the nominal ceilings alike (issue 26)."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from tracekit.analysis.occupancy import device_limits, theoretical_occupancy
from tracekit.ceilings.devices import ARCHITECTURE_BY_CC, ARCHITECTURES, PRODUCTS, Architecture
from tracekit.ceilings.nominal import BY_COMPUTE_CAPABILITY, NOMINAL_PEAKS, nominal_peaks


def test_every_product_sits_on_an_architecture_the_occupancy_calculator_knows() -> None:
    assert NOMINAL_PEAKS == PRODUCTS and len(PRODUCTS) >= 14
    for product in PRODUCTS:
        arch = ARCHITECTURE_BY_CC[product.compute_capability]
        assert product in arch.products
        limits = device_limits(product.compute_capability)
        assert limits.max_threads_per_sm == arch.max_threads_per_sm
        assert limits.shared_mem_per_sm_bytes == arch.shared_mem_per_sm_kb * 1024
    # the H100's SM, as Nsight Compute reports it: 64 warps, 32 blocks, 228 KB, 64 barrier slots
    h100 = device_limits("9.0")
    assert (h100.max_warps_per_sm, h100.max_blocks_per_sm, h100.shared_mem_per_sm_bytes, h100.barriers_per_sm) == (
        64,
        32,
        228 * 1024,
        64,
    )


def test_a_device_known_by_its_compute_capability_alone_is_the_architectures_assumed_product() -> None:
    assert {a.compute_capability: a.assumed for a in ARCHITECTURES if a.assumed} == BY_COMPUTE_CAPABILITY
    assert BY_COMPUTE_CAPABILITY["9.0"] == "H100 SXM5" and "8.9" not in BY_COMPUTE_CAPABILITY  # L4 or RTX 4090?
    peaks, basis = nominal_peaks("some future board", "9.0")
    assert peaks is not None and peaks.name == "H100 SXM5" and "assumed from compute capability 9.0" in basis
    assert nominal_peaks("some future board", "8.9") == (None, "no nominal peaks known for this device")


def test_a_row_names_its_fields() -> None:
    """Rows are keyword-constructed: a positional row (which field was 164?) is refused."""
    with pytest.raises(TypeError):
        Architecture("8.0", 2048, 32, 65536, 164, 163, None, 128, 1024, None, 192)  # type: ignore[misc]
    a100 = ARCHITECTURE_BY_CC["8.0"]
    assert (a100.max_threads_per_sm, a100.shared_mem_per_sm_kb, a100.unified_l1_kb, a100.warp_size) == (
        2048,
        164,
        192,
        32,
    )


def test_a_new_gpu_is_one_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    """An entry the table did not hold is read by the occupancy calculator (SM limits, warp size, registers) and by
    the predictor's cache footprint (its L1) with no other change."""
    new_gpu = replace(
        ARCHITECTURE_BY_CC["9.0"],
        compute_capability="13.7",
        max_threads_per_sm=1536,
        max_blocks_per_sm=24,
        registers_per_sm=131072,
        max_registers_per_block=131072,
        unified_l1_kb=512,
        products=(),
        assumed=None,
    )
    monkeypatch.setitem(ARCHITECTURE_BY_CC, "13.7", new_gpu)
    device_limits.cache_clear()
    try:
        limits = device_limits("sm_137")
        assert (limits.max_warps_per_sm, limits.registers_per_sm, limits.unified_l1_bytes) == (48, 131072, 512 * 1024)
        # 256 threads x 128 registers: 32,768 registers a block, 4 blocks of the new SM's 131,072 (2 on the H100's)
        assert theoretical_occupancy("13.7", 256, 128, 0).limits_blocks_per_sm["registers"] == 4
        assert theoretical_occupancy("9.0", 256, 128, 0).limits_blocks_per_sm["registers"] == 2
    finally:
        device_limits.cache_clear()


def test_device_facts_live_in_the_device_table_alone() -> None:
    """No other module defines the warp size or an L1 table of its own, nor hard-codes an SM's registers."""
    repo = Path(__file__).resolve().parents[2]
    home = repo / "tracekit" / "ceilings" / "devices.py"
    sources = [p for folder in ("tracekit", "importers") for p in (repo / folder).rglob("*.py") if p != home]
    pattern = re.compile(r"^\s*(WARP_SIZE|UNIFIED_L1_BYTES)\s*=|registers_per_sm\s*=\s*65_?536", re.MULTILINE)
    assert [str(p.relative_to(repo)) for p in sources if pattern.search(p.read_text())] == []
    assert re.search(r"^WARP_SIZE = 32$", home.read_text(), re.MULTILINE)
