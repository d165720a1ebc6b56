"""How tracekit writes a number or a kernel name for a person: one module for the CLI, the reports and the
dashboard, so that 256,800 ns reads "256.8 µs" everywhere.

Rules: engineering units (SI prefixes for time, rates and frequencies, binary ones for memory sizes, as
cudaDeviceProp gives them), 4 significant digits with trailing zeros dropped, thousands separators, and never
scientific notation. Exact values stay in `--json`; nothing here is used to compute.

Kernel names: the base function name by default (`ncu --print-kernel-base function`), the full signature on
request; a mangled name (`_Z10vector_addPKfS0_Pfi`) is demangled first, with libstdc++'s `__cxa_demangle`
(the demangler behind c++filt) through the `cxxfilt` package.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from decimal import ROUND_HALF_EVEN, Decimal
from enum import StrEnum
from functools import lru_cache
from typing import Any

from tracekit.cxx_name import demangle  # the kernel-name grammar's home
from tracekit.errors import TracekitError
from tracekit.kernel_key import base_name

# C0/C1 control characters (newline and tab aside), DEL, and the bidirectional overrides that reorder text.
UNSAFE_CHARACTERS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def escape_control(text: str) -> str:
    """Control characters as visible escapes (ESC -> `\\x1b`), so a kernel name cannot drive a terminal or hide in
    a page: the terminal, the HTML and the Markdown views all show text from an input through it."""
    return UNSAFE_CHARACTERS.sub(
        lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}", text
    )


MISSING = "n/a"
DIGITS = 4  # significant digits: 256.8 µs, 1.274 TB/s, 58.3 warps/SM
PERCENT_DIGITS = 3  # 12.5%, 84.3%, 5.9%: Nsight's two decimals say more than a sample's run-to-run spread
MAX_DECIMALS = 12  # below 1e-12 a value prints as 0: far under any profiler's resolution
MICRO = "\u00b5"  # MICRO SIGN, as Nsight writes "µs"

_TIME_UNITS = ((1e9, "s"), (1e6, "ms"), (1e3, f"{MICRO}s"), (1.0, "ns"))
_SI = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))
_BINARY = ((1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"), (1, "B"))


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _trim(text: str) -> str:
    return text.rstrip("0").rstrip(".") if "." in text else text


@lru_cache(maxsize=8192)
def significant(value: float, digits: int = DIGITS) -> str:
    """`value` to `digits` significant digits in plain decimal notation, with thousands separators and no
    trailing zeros: 256.8, 0.0004755, 12,346 (a value of 10**digits or more is rounded to an integer).

    Kept per (value, digits): the sentences of 1,008 launches write ~44k numbers, a few hundred distinct. Keys that
    compare equal write the same text (1 and 1.0, 0.0 and -0.0 both "0"); NaN and infinities raise, and are not kept."""
    if value == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = min(max(digits - 1 - magnitude, 0), MAX_DECIMALS)
    written = repr(float(value))
    fraction_digits = len(written) - written.find(".") - 1
    if "e" in written or (fraction_digits == decimals + 1 and written.endswith("5")):
        # The value as written (its shortest repr) rounded half to even: a written tie (0.125 to 2 decimals) rounds
        # as its digits say, not as the binary value just above or below it does.
        rounded = Decimal(written).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_EVEN)
        text = _trim(f"{rounded:,.{decimals}f}")
    else:
        # Otherwise the float's own correctly rounded formatting gives the same digits, 5x faster (no rounding
        # boundary lies between a float and its shortest repr).
        text = _trim(f"{value:,.{decimals}f}")
    return "0" if text in ("-0", "") else text


def number(value: Any, unit: str = "", digits: int = DIGITS) -> str:
    """An integer exactly, with thousands separators (16,384); any other number to `digits` significant
    digits (0.0004755, 12.5); `unit` after a space. None, NaN and infinities are "n/a"."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return MISSING
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    suffix = f" {unit}" if unit else ""
    if float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):,}{suffix}"
    return f"{significant(float(value), digits)}{suffix}"


def _rounded(value: float, digits: int) -> float:
    """`value` rounded to `digits` significant digits, so that 999.96 ns picks µs as "1 µs" would."""
    return float(f"{value:.{digits}g}") if value else 0.0


def _scaled(value: float, scales: Sequence[tuple[float, str]], unit: str, digits: int) -> str:
    for factor, prefix in scales:
        if abs(_rounded(value / factor, digits)) >= 1:
            return f"{significant(value / factor, digits)} {prefix}{unit}"
    return f"{significant(value / scales[-1][0], digits)} {scales[-1][1]}{unit}"


def duration(ns: Any, digits: int = DIGITS) -> str:
    """A time given in ns, in the unit that keeps 1 to 999 of it: 850 ns, 256.8 µs, 12.34 ms, 1.5 s."""
    if not _finite(ns):
        return MISSING
    if ns == 0:
        return "0 ns"
    for factor, unit in _TIME_UNITS:
        if abs(_rounded(ns / factor, digits)) >= 1 or unit == "ns":
            return f"{significant(ns / factor, digits)} {unit}"
    raise AssertionError("unreachable")


def si(value: Any, unit: str, digits: int = DIGITS) -> str:
    """A value with an SI prefix on `unit`: 1.274 TB/s, 1.98 GHz, 3.2 MB."""
    if not _finite(value):
        return MISSING
    return _scaled(float(value), _SI, unit, digits)


def bandwidth(bytes_per_s: Any) -> str:
    """Bytes per second with SI prefixes, as Nsight Compute prints throughput: 1.274 TB/s."""
    return si(bytes_per_s, "B/s")


def frequency(hz: Any) -> str:
    return si(hz, "Hz")


def size(size_bytes: Any) -> str:
    """A memory size: exact bytes below 1 KiB, else binary prefixes (48 KiB, 227 KiB, 80 GiB) as the CUDA
    runtime states shared memory and device memory."""
    if not _finite(size_bytes):
        return MISSING
    if abs(size_bytes) < 1024:
        return number(size_bytes, "B")
    return _scaled(float(size_bytes), _BINARY, "", DIGITS)


def percent(value: Any) -> str:
    """A value already in percent (Nsight's 12.5 -> "12.5%")."""
    return MISSING if not _finite(value) else f"{significant(float(value), PERCENT_DIGITS)}%"


def fraction(value: Any, signed: bool = False) -> str:
    """A fraction as percent (0.125 -> "12.5%"; signed: "+12.5%")."""
    if not _finite(value):
        return MISSING
    text = f"{significant(abs(float(value)) * 100, PERCENT_DIGITS)}%"
    if signed:
        return ("+" if value >= 0 else "-") + text
    return ("-" if value < 0 else "") + text


def times(value: Any) -> str:
    """A speed-up or a ratio, three significant digits: 1.28x, 3.49x, 0.98x."""
    return MISSING if not _finite(value) else f"{significant(float(value), 3)}x"


def per_ns_rate(per_ns: Any, what: str) -> str:
    """A rate given per ns, per µs (warps per ns per SM are 0.0004755: per µs they read 0.4755)."""
    if not _finite(per_ns):
        return MISSING
    return f"{significant(float(per_ns) * 1e3)} {what}/{MICRO}s"


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """ "1 launch", "2 launches", "16,384 warps"."""
    word = (
        noun if count == 1 else (plural_form or (noun + "es" if noun.endswith(("s", "sh", "ch", "x")) else noun + "s"))
    )
    return f"{count:,} {word}"


def dims(values: Sequence[Any] | None) -> str:
    """Grid or block dimensions: 2048 x 1 x 1 (not thousands-separated: they are CUDA's dim3 as written)."""
    if not values or any(v is None for v in values):
        return MISSING
    return " x ".join(str(int(v)) for v in values)


# ---- values of Nsight Compute metrics, in the importers' base units ----------------------------------------------

_BASE_UNIT_FORMATS: dict[str, Callable[[Any], str]] = {
    "ns": duration,
    "byte": size,
    "byte/s": bandwidth,
    "hz": frequency,
    "%": percent,
}


def metric(value: Any, unit: str | None) -> str:
    """One stored metric value with its base unit (importers.units): ns, byte, byte/s and hz get prefixes, a
    percentage its sign, anything else the number and the unit as Nsight names it."""
    formatter = _BASE_UNIT_FORMATS.get((unit or "").lower())
    if formatter is not None:
        return formatter(value)
    return number(value, unit or "")


# ---- kernel names ---------------------------------------------------------------------------------------------------


class NameStyle(StrEnum):
    base = "base"  # the function name alone, as `ncu --print-kernel-base function` prints it
    full = "full"  # the whole signature: return type, template arguments, parameters


@lru_cache(maxsize=4096)
def kernel_name(name: str | None, style: NameStyle | str = NameStyle.base) -> str:
    """A kernel's name for display: demangled, then its base name unless the full signature is asked for."""
    if not name:
        return "(unnamed)"
    readable = demangle(name.strip())
    if NameStyle(style) is NameStyle.full:
        return readable
    return base_name(readable) or readable


_STEP_TIME = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(ns|us|µs|ms|s|/s|it/s|steps/s)\s*$")
_NS_PER = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}


def parse_step_time(text: str) -> int:
    """A step time as a training log prints it, in ns: a duration with its unit (22.7ms, 0.5 s, 850us) or a rate
    of steps per second (44/s, 3.2 it/s)."""
    found = _STEP_TIME.match(text)
    if not found or float(found.group(1)) <= 0:
        raise TracekitError(
            f"--step-time {text!r}: expected a positive duration with its unit (22.7ms, 0.5s) or a rate (44/s)"
        )
    value, unit = float(found.group(1)), found.group(2)
    return round(1e9 / value) if unit.endswith("/s") else round(value * _NS_PER[unit])


_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(ns|us|µs|ms|s)\s*$")


def parse_duration(text: str, option: str) -> int:
    """A positive duration with its unit (20us, 0.5 ms), in ns; `option` names the flag in the line a bad one gives."""
    found = _DURATION.match(text)
    if not found or float(found.group(1)) <= 0:
        raise TracekitError(f"{option} {text!r}: expected a positive duration with its unit (20us, 0.5ms)")
    return round(float(found.group(1)) * _NS_PER[found.group(2)])
