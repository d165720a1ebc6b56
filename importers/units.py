"""Nsight units to base units: `usecond` to ns, `Kbyte` to byte, `Gbyte/second` to byte/s, `Mhz` to hz.

Nsight Compute spells units as an SI prefix glued to a base (`nsecond`, `Kbyte`, `Mbyte/second`, `Ghz`,
`cycle/usecond`); binary prefixes use `Ki`/`Mi`/`Gi`. Everything is scaled to ns for time, byte for data,
byte/s for bandwidth and hz for frequency, so metrics from any file compare directly.
"""

from __future__ import annotations

import re
from typing import overload

_SI = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_BINARY = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40}
_TIME_TO_NS = {
    "nsecond": 1.0,
    "ns": 1.0,
    "usecond": 1e3,
    "us": 1e3,
    "msecond": 1e6,
    "ms": 1e6,
    "second": 1e9,
    "s": 1e9,
    "psecond": 1e-3,
}
_PREFIXED = re.compile(r"^(Ki|Mi|Gi|Ti|K|M|G|T|P)?(byte|hz|Hz|inst|sector|request|warp|thread|cycle|block)$")


def _scale_base(token: str) -> tuple[str, float] | None:
    """`Kbyte` -> ("byte", 1000); `Ghz` -> ("hz", 1e9); `nsecond` -> ("ns", 1)."""
    if token in _TIME_TO_NS:
        return "ns", _TIME_TO_NS[token]
    match = _PREFIXED.match(token)
    if not match:
        return None
    prefix, base = match.group(1) or "", match.group(2).lower()
    factor = _BINARY[prefix] if prefix in _BINARY else _SI[prefix]
    return base, factor


@overload
def normalize_unit(unit: str) -> tuple[str, float]: ...
@overload
def normalize_unit(unit: None) -> tuple[None, float]: ...
@overload
def normalize_unit(unit: str | None) -> tuple[str | None, float]: ...
def normalize_unit(unit: str | None) -> tuple[str | None, float]:
    """The base unit and the factor to multiply values by. Unknown units pass through with factor 1."""
    if unit is None:
        return None, 1.0
    unit = unit.strip()
    if not unit:
        return "", 1.0
    if "/" in unit:
        numerator, _, denominator = unit.partition("/")
        if denominator in _TIME_TO_NS:  # rates: per second
            scaled = _scale_base(numerator)
            if scaled is not None:
                base, factor = scaled
                return f"{base}/s", factor * 1e9 / _TIME_TO_NS[denominator]
        return unit, 1.0
    scaled = _scale_base(unit)
    if scaled is None:
        return unit, 1.0
    base, factor = scaled
    return base, factor
