"""Which ceilings judge a device: a user's profile (--ceilings FILE), else a shipped measured profile matching the
device's name and compute capability, else the datasheet's nominal peaks."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from tracekit.ceilings.nominal import nominal_peaks, normalize_cc
from tracekit.ceilings.profile import ProfileFormatError, ceilings_from_json, nominal_ceilings
from tracekit.ceilings.types import DeviceCeilings
from tracekit.errors import TracekitError, one_line


class CeilingsError(TracekitError):
    """A ceilings profile that cannot be read (one line naming the file)."""


def _key(name: str | None) -> str:
    return " ".join((name or "").lower().split())


# Words every NVIDIA device name may carry or leave out: they tell no product apart.
_VENDOR_WORDS = frozenset({"nvidia", "tesla", "geforce"})


def _tokens(name: str | None) -> frozenset[str]:
    """The words of a device name, lowercased, vendor words left out: "NVIDIA H100 80GB HBM3" -> h100, 80gb, hbm3."""
    return frozenset(re.findall(r"[a-z0-9]+", (name or "").lower())) - _VENDOR_WORDS


def read_profile(path: Path, source_name: str | None = None) -> DeviceCeilings:
    """A profile file as DeviceCeilings, source "measured: <file name>"; a bad file is one CeilingsError line."""
    try:
        data: Any = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CeilingsError(f"{path}: no such ceilings file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CeilingsError(one_line(f"{path}: cannot read: {exc}")) from None
    except json.JSONDecodeError as exc:
        raise CeilingsError(f"{path}:{exc.lineno}:{exc.colno}: not JSON ({exc.msg})") from None
    device = data.get("device") if isinstance(data, dict) else None
    name = device.get("name") if isinstance(device, dict) else None
    cc = device.get("compute_capability") if isinstance(device, dict) else None
    peaks, basis = nominal_peaks(str(name) if name else None, str(cc) if cc is not None else None)
    try:
        return ceilings_from_json(data, f"measured: {source_name or Path(path).name}", peaks, basis)
    except ProfileFormatError as exc:
        raise CeilingsError(one_line(f"{path}: {exc}")) from None


@lru_cache(maxsize=1)
def shipped_profiles() -> tuple[DeviceCeilings, ...]:
    """The measured profiles shipped as package data (tracekit/ceilings/profiles/*.json)."""
    found: list[DeviceCeilings] = []
    folder = resources.files("tracekit.ceilings").joinpath("profiles")
    if not folder.is_dir():
        return ()
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".json"):
            with resources.as_file(entry) as path:
                found.append(read_profile(path, f"tracekit/ceilings/profiles/{entry.name}"))
    return tuple(found)


def _product(profile: DeviceCeilings) -> str | None:
    peaks, basis = nominal_peaks(profile.device_name, profile.compute_capability)
    return peaks.name if peaks is not None and not basis.endswith("the device name was not recognized") else None


def ceilings_for(
    device_name: str | None,
    compute_capability: str | None,
    sm_count: int | None = None,
    override: Path | None = None,
) -> DeviceCeilings:
    """The ceilings to judge a device by. `override` (a profile file) wins; then a shipped profile whose device name
    and compute capability match (and SM count, when both are known: a MIG slice or a cut-down part has other
    whole-GPU rates); else nominal peaks by name or compute capability, source "nominal"."""
    if override is not None:
        return read_profile(override)
    cc = normalize_cc(compute_capability)
    peaks, basis = nominal_peaks(device_name, cc)
    product = peaks.name if peaks is not None and not basis.endswith("the device name was not recognized") else None
    typed = _tokens(device_name)
    for same, unique in (
        (lambda profile: _key(profile.device_name) == _key(device_name), False),
        # tools spell one product differently (CUDA "NVIDIA H100 80GB HBM3", an ncu details page "H100 SXM5"):
        # the same product by the datasheet table's patterns, with the same compute capability and SM count
        (lambda profile: product is not None and _product(profile) == product, False),
        # as users type it ("H100", "h100 80gb"): every word of the name is a word of the device name of exactly
        # one profile (two would be a guess: "H100" of an SXM and a PCIe profile)
        (lambda profile: bool(typed) and typed <= _tokens(profile.device_name), True),
    ):
        found = [
            profile
            for profile in shipped_profiles()
            if same(profile)
            and (cc is None or profile.compute_capability in (None, cc))
            and (sm_count is None or profile.sm_count is None or sm_count == profile.sm_count)
        ]
        if found and (len(found) == 1 or not unique):
            return found[0]
    return nominal_ceilings(device_name or "", cc, sm_count, peaks, basis)
