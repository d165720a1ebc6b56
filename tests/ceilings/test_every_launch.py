"""No launch runs above the achievable ceiling it is judged against (issue 26).

Every launch with counters of `sample_traces/` (the team's real-kernel set `sample_traces/real_kernels/` included)
and of `../shared/real_exports/`, each unit (DRAM per access pattern and read:write mix, L2, shared, FP32, FP64,
tensor per input type, block launch rate) against the ceiling its verdict uses: no more than 3% above it (the
run-to-run spread of a measured plateau). A ceiling is the best of the microbenchmarks and of the real kernels the
shipped profile records (`tests/ceilings/observe.py --write`); a new export whose kernels run faster fails here until
its observations are recorded.
"""

from __future__ import annotations

import pytest

from tests.ceilings import observe
from tests.helpers import skip_or_fail
from tracekit.ceilings import ceilings_for


@pytest.fixture(scope="module")
def rates() -> list[observe.UnitRate]:
    if not observe.REAL_EXPORTS.is_dir():
        skip_or_fail(f"needs the real exports in {observe.REAL_EXPORTS}")
    return observe.scan()


def test_no_unit_runs_more_than_3_percent_above_its_ceiling(rates: list[observe.UnitRate]) -> None:
    files = {r.file for r in rates}
    assert any(f.startswith("sample_traces/real_kernels/") for f in files)  # the real-kernel set is scanned
    assert any(f.startswith("real_exports/") for f in files) and any(f.startswith("sample_traces/h100/") for f in files)
    units = {r.unit for r in rates}
    assert {"dram", "l2", "shared", "fp32", "fp64", "block_launch"} <= units
    assert {"tensor_bf16", "tensor_fp16", "tensor_tf32", "tensor_fp8"} <= units
    above = [
        f"{r.file}#{r.launch_index} {r.kernel[:50]}: {r.unit} {r.achieved:.4g} is {r.of_achievable:.1%} of "
        f"{r.ceiling_name} ({r.ceiling_source})"
        for r in observe.above(rates)
    ]
    assert not above, "\n".join(above)


def test_the_h100_ceilings_are_never_below_the_real_kernels_it_records(rates: list[observe.UnitRate]) -> None:
    """The shipped H100 profile's observations are the fastest real kernels of the scan per ceiling, and the
    ceilings it gives are at least their rates: ATen's vectorized add at ~3.06 TB/s of DRAM raises the stream
    ceiling above the copy microbenchmark's 2.81 TB/s; a cuBLASLt GEMM's L2 traffic raises L2 above the
    microbenchmark's 6.65 TB/s."""
    h100 = ceilings_for("NVIDIA H100 80GB HBM3", "9.0", 132)
    assert h100.observations
    judged = [r for r in rates if r.ceiling_source == h100.source]
    for name in ("l2_bytes_per_s", "fp32_flop_per_s", "tensor_flop_per_s.bf16"):
        fastest = max(r.achieved for r in judged if r.ceiling_name == name)
        recorded = max(o.value for o in h100.observations if o.ceiling == name)
        assert recorded == pytest.approx(fastest, rel=1e-9), name
    l2 = h100.l2_bytes_per_s
    assert l2 is not None and l2.benchmark_value is not None and l2.value > l2.benchmark_value
    assert l2.observed_by.startswith("nvjet_sm90") and "library.raw.csv.gz#" in l2.observed_by
    stream = max(h100.dram_stream_by_mix.values(), key=lambda c: c.value)
    assert stream.value > 3.05e12
