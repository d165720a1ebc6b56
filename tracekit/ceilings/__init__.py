"""Empirical ceilings: what each GPU can really reach per unit and access pattern (issue 20).

`ceilings_for(device_name, compute_capability)` gives the profile that judges a device; `tracekit calibrate`
measures one; `tracekit ceilings` prints the one in use."""

from tracekit.ceilings.lookup import CeilingsError, ceilings_for, read_profile, shipped_profiles
from tracekit.ceilings.types import NOMINAL, Ceiling, DeviceCeilings, LatencyPoint

__all__ = [
    "NOMINAL",
    "Ceiling",
    "CeilingsError",
    "DeviceCeilings",
    "LatencyPoint",
    "ceilings_for",
    "read_profile",
    "shipped_profiles",
]
