"""The one device table (tracekit/ceilings/devices.py): each architecture's SM limits and its products' peaks in
one place, read by the occupancy calculator and the nominal ceilings alike (issue 26)."""

from __future__ import annotations

from tracekit.analysis.occupancy import device_limits
from tracekit.ceilings.devices import ARCHITECTURE_BY_CC, ARCHITECTURES, PRODUCTS
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
