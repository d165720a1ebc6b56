"""tracekit.format: engineering units, separators and significant digits, never scientific notation; kernel names."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tracekit import format as fmt


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (0, "0 ns"),
        (850, "850 ns"),
        (999.96, "1 µs"),  # rounds up into the next unit, not "1,000 ns"
        (3_000, "3 µs"),
        (256_800, "256.8 µs"),
        (15_592.3, "15.59 µs"),
        (1_075_000_000, "1.075 s"),
        (12_000_000_000, "12 s"),
        (3_600_000_000_000, "3,600 s"),
        (None, "n/a"),
        (float("nan"), "n/a"),
    ],
)
def test_duration(ns, text):
    assert fmt.duration(ns) == text


def test_units():
    assert fmt.bandwidth(1.274e12) == "1.274 TB/s"
    assert fmt.frequency(1.98e9) == "1.98 GHz"
    assert fmt.size(232_448) == "227 KiB"  # the H100's largest dynamic shared memory per block
    assert fmt.size(49_152) == "48 KiB"
    assert fmt.size(512) == "512 B"
    assert fmt.size(2_883_944) == "2.75 MiB"
    assert fmt.percent(84.32) == "84.3%" and fmt.percent(12.114995) == "12.1%"
    assert fmt.fraction(-0.025791, signed=True) == "-2.58%" and fmt.fraction(0.059, signed=True) == "+5.9%"
    assert fmt.per_ns_rate(0.0004755, "warps") == "0.4755 warps/µs"
    assert fmt.dims([2048, 1, 1]) == "2048 x 1 x 1" and fmt.dims([None, 1, 1]) == "n/a"
    assert fmt.metric(256_800, "ns") == "256.8 µs" and fmt.metric(7.5, "warp") == "7.5 warp"


def test_numbers():
    assert fmt.number(16_384) == "16,384"
    assert fmt.number(12_345.678) == "12,346"
    assert fmt.number(58.3) == "58.3"
    assert fmt.number(7.4121) == "7.412"
    assert fmt.number(0.0004755) == "0.0004755"
    assert fmt.number(-3.0) == "-3"
    assert fmt.number(1e-20) == "0"


def test_plural():
    assert fmt.plural(1, "launch") == "1 launch"
    assert fmt.plural(14, "launch") == "14 launches"
    assert fmt.plural(16_384, "warp") == "16,384 warps"
    assert fmt.plural(1, "copy", "copies") == "1 copy" and fmt.plural(89, "copy", "copies") == "89 copies"


@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e18, max_value=1e18))
def test_never_scientific(value):
    for text in (fmt.number(value), fmt.duration(value), fmt.bandwidth(value), fmt.size(abs(value))):
        assert not re.search(r"\de[+-]?\d", text), text


@given(st.floats(min_value=1e-3, max_value=1e15))
def test_significant_digits_keep_the_value(value):
    """Four significant digits: the shown number is within half a unit of the fourth digit of the value."""
    shown = float(fmt.significant(value).replace(",", ""))
    assert shown == pytest.approx(value, rel=5.01e-4)


def _written_half_even(value: float, digits: int) -> str:
    """The oracle: the value as Python writes it (repr), rounded half to even at the last kept digit."""
    from decimal import ROUND_HALF_EVEN, Decimal

    decimals = min(max(digits - 1 - math.floor(math.log10(abs(value))), 0), fmt.MAX_DECIMALS)
    text = f"{Decimal(repr(value)).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_EVEN):,.{decimals}f}"
    text = text.rstrip("0").rstrip(".") if "." in text else text
    return "0" if text in ("-0", "") else text


@given(
    st.one_of(
        st.floats(allow_nan=False, allow_infinity=False, min_value=-1e18, max_value=1e18).filter(bool),
        # written ties: the digit after the last kept one is a final 5 (0.125, 12.345, 99999.5)
        st.builds(lambda digits, exponent: float(f"{digits}5e{exponent}"), st.integers(0, 10**6), st.integers(-9, 6)),
    ),
    st.sampled_from([3, 4]),
)
def test_significant_rounds_the_written_value_half_to_even(value, digits):
    """A tie as written rounds to even (0.125 -> 0.12, 0.375 -> 0.38), whichever side of it the binary value lies."""
    assert fmt.significant(value, digits) == _written_half_even(value, digits)


def test_significant_kept_per_value_writes_what_each_value_would():
    """`significant` is kept per (value, digits): values that compare equal share a key, and write the same text."""
    uncached = fmt.significant.__wrapped__
    for values in ((1, 1.0, True), (0.0, -0.0, 0, False), (2**60, float(2**60)), (12_345.5, 12_345.5)):
        for digits in (3, 4):
            fmt.significant.cache_clear()
            texts = {fmt.significant(v, digits) for v in values} | {uncached(v, digits) for v in values}
            assert len(texts) == 1, (values, digits, texts)
    for bad in (math.nan, math.inf):  # raise every time, nothing kept
        for _ in range(2):
            with pytest.raises((ValueError, OverflowError)):
                fmt.significant(bad)


@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e18, max_value=1e18), st.sampled_from([3, 4]))
def test_significant_kept_is_the_computed_text(value, digits):
    first = fmt.significant(value, digits)
    assert first == fmt.significant(value, digits) == fmt.significant.__wrapped__(value, digits)


def test_significant_written_ties():
    assert fmt.significant(0.125, 2) == "0.12" and fmt.significant(0.375, 2) == "0.38"
    assert fmt.significant(2.675, 3) == "2.68"  # the binary value is 2.67499999...: the written digits decide
    assert fmt.significant(12_345.5, 4) == "12,346" and fmt.significant(12_344.5, 4) == "12,344"


@pytest.mark.parametrize(
    ("name", "base", "full"),
    [
        ("void fma_chain<(int)4>(float *, int)", "fma_chain", "void fma_chain<(int)4>(float *, int)"),
        ("vector_add(const float *, const float *, float *, int)", "vector_add", None),
        ("_Z16reduceNeighboredPiS_j", "reduceNeighbored", "reduceNeighbored(int*, int*, unsigned int)"),
        ("_Z3fooILi4EEvPf", "foo", "void foo<4>(float*)"),
        ("_Znot_valid_at_all", "_Znot_valid_at_all", "_Znot_valid_at_all"),  # kept as written
        (None, "(unnamed)", "(unnamed)"),
    ],
)
def test_kernel_names(name, base, full):
    assert fmt.kernel_name(name) == base
    assert fmt.kernel_name(name, "full") == (full or name)


@pytest.mark.parametrize(
    ("ratio", "text"),
    [(1.0, "1x"), (3.4567, "3.46x"), (0.98, "0.98x"), (0.98039, "0.98x"), (12.345, "12.3x"), (None, "n/a")],
)
def test_times(ratio, text):
    """A speed-up to three significant digits, the way every view writes one (predict, What to try first)."""
    assert fmt.times(ratio) == text


@given(st.floats(min_value=1e-3, max_value=1e4, allow_nan=False))
def test_times_reads_back_within_its_rounding(ratio):
    written = fmt.times(ratio)
    assert written.endswith("x") and not re.search(r"\de[+-]?\d", written)
    assert float(written.removesuffix("x").replace(",", "")) == pytest.approx(ratio, rel=5.01e-3)
