"""A unit at 80% of its peak or more is the limiter; a pipe filling the issue slots is named instead of them."""

from __future__ import annotations

import pytest

from tests.analysis.rules.ctx import A100, H100, H100_NOMINAL_DRAM, ceilings, context, ids, texts, unit
from tracekit.analysis.rules import saturated_unit
from tracekit.ceilings import ceilings_for


def test_saturated_dram_is_the_limiter() -> None:
    found = saturated_unit.apply(context(units=(unit("DRAM", "dram", 91.0), unit("L2", "l2", 40.0))))
    assert ids(found) == ["saturated-unit.unit", "saturated-unit.limiter"]
    assert found[-1].limiter == "dram" and found[0].get("unit_pct") == 91.0
    assert "More occupancy will not help: DRAM is saturated" in texts(found)


def test_issue_slots_full_of_fma_name_the_fma_pipe() -> None:
    found = saturated_unit.apply(context(units=(unit("issue slots", "issue", 99.0), unit("fma pipe", "fma", 94.0))))
    assert "saturated-unit.issue-pipe" in ids(found) and found[-1].limiter == "fma"


def test_nothing_at_80_percent_does_not_fire() -> None:
    assert saturated_unit.apply(context(units=(unit("DRAM", "dram", 79.7),))) == []


# Issue 20: saturation judged against the achievable ceiling of the access pattern (the shipped H100 profile).
H100_PROFILE = ceilings_for(H100, "9.0", 132)
SCATTERED_DRAM = 0.603 * H100_NOMINAL_DRAM  # the scattered_gather case: 2.02 TB/s, 60.3% of nominal


def test_scattered_gather_at_its_scattered_ceiling_is_saturated_far_below_80_percent_of_nominal() -> None:
    section = ceilings(dram_bytes_per_s=SCATTERED_DRAM, bytes_per_sector=4.0)
    ctx = context(units=(unit("DRAM", "dram", 60.3), unit("L2", "l2", 77.9)), ceilings=section)
    found = saturated_unit.apply(ctx)
    assert ids(found) == ["saturated-unit.at-ceiling", "saturated-unit.limiter"] and found[-1].limiter == "dram"
    assert found[0].get("ceiling_ceiling_name") == "dram_random_sector_bytes_per_s"
    share, scattered = found[0].get("ceiling_of_achievable"), H100_PROFILE.dram_random_sector_bytes_per_s
    assert (
        scattered is not None and isinstance(share, float) and share == pytest.approx(SCATTERED_DRAM / scattered.value)
    )
    assert share >= 0.85  # at its ceiling (the scattered plateau, or a real gather that ran faster: issue 26)
    text = texts(found)
    assert "DRAM 2.02 TB/s is " in text and ", what scattered 32-byte sectors reach on this GPU" in text
    assert "counter reads 60.3% of the nominal peak" in text and "measured: tracekit/ceilings/profiles/" in text


def test_the_same_dram_rate_as_a_stream_is_far_from_its_ceiling() -> None:
    section = ceilings(dram_bytes_per_s=SCATTERED_DRAM, bytes_per_sector=32.0)  # 72% of the stream ceiling
    assert saturated_unit.apply(context(units=(unit("DRAM", "dram", 60.3),), ceilings=section)) == []


def test_a_copy_below_80_percent_of_nominal_at_its_stream_ceiling_is_dram_bound() -> None:
    """A copy (half its DRAM bytes written) at 88% of the copy stream's ceiling, below 80% of nominal: saturated by
    the measured ceiling of its read:write mix, which the 80%-of-nominal rule would not say."""
    copy = H100_PROFILE.dram_stream_by_mix["1:1"].value
    section = ceilings(dram_bytes_per_s=0.88 * copy, write_fraction=0.5)
    pct = 100 * 0.88 * copy / H100_NOMINAL_DRAM
    assert pct < 80.0
    found = saturated_unit.apply(context(units=(unit("DRAM", "dram", pct),), ceilings=section))
    assert found[-1].limiter == "dram" and found[0].get("ceiling_ceiling_name") == "dram_stream_by_mix.1:1"
    assert "88% of " in texts(found) and ", what a stream reaches on this GPU" in texts(found)


def test_without_a_profile_the_nominal_rule_judges_and_says_so() -> None:
    nominal = ceilings(device=A100, cc="8.0", sm_count=108, dram_bytes_per_s=0.764 * 2.039e12)
    assert nominal.source == "nominal"
    assert saturated_unit.apply(context(units=(unit("DRAM", "dram", 76.4),), ceilings=nominal)) == []
    found = saturated_unit.apply(context(units=(unit("DRAM", "dram", 91.0),), ceilings=nominal))
    assert ids(found) == ["saturated-unit.unit", "saturated-unit.limiter"]
    assert texts(found).startswith(
        "DRAM throughput is 91% of peak (dram__throughput.avg.pct_of_peak), above the 80% at which a unit counts as "
        "saturated (against nominal peaks: no measured profile for NVIDIA A100-SXM4-80GB)."
    )
