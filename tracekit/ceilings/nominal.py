"""Nominal peaks of a device by its name or compute capability, from the one device table
(`tracekit/ceilings/devices.py`: datasheets and whitepapers, dense tensor rates). A device without a measured profile
is judged against these, and says so."""

from __future__ import annotations

import re

from tracekit.ceilings.devices import ARCHITECTURES, PRODUCTS, NominalPeaks

__all__ = ["BY_COMPUTE_CAPABILITY", "NOMINAL_PEAKS", "NominalPeaks", "nominal_peaks", "normalize_cc"]


NOMINAL_PEAKS = PRODUCTS
# A device seen only by its compute capability is assumed to be that generation's datacenter part.
BY_COMPUTE_CAPABILITY = {a.compute_capability: a.assumed for a in ARCHITECTURES if a.assumed}


def nominal_peaks(device_name: str | None, compute_capability: str | None = None) -> tuple[NominalPeaks | None, str]:
    """The nominal peaks of a device and how they were chosen: by name, else by compute capability (an assumption
    that the basis states), else none."""
    name = (device_name or "").lower()
    cc = normalize_cc(compute_capability)
    if name:
        for peaks in NOMINAL_PEAKS:
            if re.search(peaks.pattern, name) and (cc is None or cc == peaks.compute_capability):
                return peaks, f"{peaks.reference}"
    if cc in BY_COMPUTE_CAPABILITY:
        chosen = next(p for p in NOMINAL_PEAKS if p.name == BY_COMPUTE_CAPABILITY[cc])
        return chosen, f"{chosen.reference}: assumed from compute capability {cc}, the device name was not recognized"
    return None, "no nominal peaks known for this device"


def normalize_cc(compute_capability: str | float | None) -> str | None:
    """ "9.0", "9", 9.0, "sm_90" -> "9.0"."""
    if compute_capability is None:
        return None
    text = str(compute_capability).strip().lower().removeprefix("sm_").removeprefix("sm")
    if not text:
        return None
    if "." in text:
        major, minor = text.split(".", 1)
        return f"{int(major)}.{int(minor or 0)}" if major.isdigit() and (minor or "0").isdigit() else text
    if text.isdigit():
        return f"{int(text[:-1])}.{text[-1]}" if len(text) >= 2 else f"{int(text)}.0"
    return text
