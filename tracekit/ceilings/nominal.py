"""Nominal peaks of common NVIDIA GPUs, from NVIDIA's datasheets and architecture whitepapers (dense tensor rates,
no sparsity). Pure data: a device without a measured profile is judged against these, and says so."""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class NominalPeaks:
    """One product's published peaks. Shared-memory bandwidth is 128 B per clock per SM at the boost clock (the
    whitepapers' figure since Volta); L2 bandwidth and block launch rate are not published (None)."""

    name: str
    pattern: str  # regular expression on the lowercased device name, as the driver reports it
    compute_capability: str
    sm_count: int
    boost_clock_hz: float
    dram_bytes_per_s: float
    fp32_flop_per_s: float
    fp64_flop_per_s: float
    tensor_flop_per_s: dict[str, float] = field(default_factory=dict)
    reference: str = ""

    @property
    def shared_bytes_per_s(self) -> float:
        return 128.0 * self.sm_count * self.boost_clock_hz


NOMINAL_PEAKS: tuple[NominalPeaks, ...] = (
    NominalPeaks(
        "H100 SXM5",
        r"h100.*(sxm|hbm3)",
        "9.0",
        132,
        1.98e9,
        3.35e12,
        66.9e12,
        33.5e12,
        {"tf32": 494.7e12, "fp16": 989.4e12, "bf16": 989.4e12, "fp8": 1978.9e12},
        "NVIDIA H100 Tensor Core GPU datasheet (SXM5, HBM3 3.35 TB/s)",
    ),
    NominalPeaks(
        "H100 NVL",
        r"h100.*nvl",
        "9.0",
        132,
        1.785e9,
        3.9e12,
        60.0e12,
        30.0e12,
        {"tf32": 417.5e12, "fp16": 835.0e12, "bf16": 835.0e12, "fp8": 1670.5e12},
        "NVIDIA H100 Tensor Core GPU datasheet (H100 NVL, per GPU)",
    ),
    NominalPeaks(
        "H100 PCIe",
        r"h100.*pcie",
        "9.0",
        114,
        1.755e9,
        2.0e12,
        51.2e12,
        25.6e12,
        {"tf32": 378.0e12, "fp16": 756.0e12, "bf16": 756.0e12, "fp8": 1513.0e12},
        "NVIDIA H100 Tensor Core GPU datasheet (PCIe, HBM2e 2 TB/s)",
    ),
    NominalPeaks(
        "GH200 (96 GB HBM3)",
        r"gh200(?!.*(144|hbm3e))",
        "9.0",
        132,
        1.98e9,
        4.0e12,
        66.9e12,
        33.5e12,
        {"tf32": 494.7e12, "fp16": 989.4e12, "bf16": 989.4e12, "fp8": 1978.9e12},
        "NVIDIA GH200 Grace Hopper Superchip datasheet (H100 with 96 GB HBM3, 4 TB/s)",
    ),
    NominalPeaks(
        "GH200 (144 GB HBM3e)",
        r"gh200",
        "9.0",
        132,
        1.98e9,
        4.9e12,
        66.9e12,
        33.5e12,
        {"tf32": 494.7e12, "fp16": 989.4e12, "bf16": 989.4e12, "fp8": 1978.9e12},
        "NVIDIA GH200 Grace Hopper Superchip datasheet (H100 with 144 GB HBM3e, 4.9 TB/s)",
    ),
    NominalPeaks(
        "H200",
        r"(?<!g)h200",
        "9.0",
        132,
        1.98e9,
        4.8e12,
        66.9e12,
        33.5e12,
        {"tf32": 494.7e12, "fp16": 989.4e12, "bf16": 989.4e12, "fp8": 1978.9e12},
        "NVIDIA H200 Tensor Core GPU datasheet (SXM, HBM3e 4.8 TB/s)",
    ),
    NominalPeaks(
        "B200",
        r"b200",
        "10.0",
        148,
        1.965e9,
        8.0e12,
        80.0e12,
        40.0e12,
        {"tf32": 1100.0e12, "fp16": 2250.0e12, "bf16": 2250.0e12, "fp8": 4500.0e12},
        "NVIDIA HGX B200 datasheet, per GPU (dense); FP32 approximate",
    ),
    NominalPeaks(
        "A100 SXM4 80GB",
        r"a100.*80",
        "8.0",
        108,
        1.41e9,
        2.039e12,
        19.5e12,
        9.7e12,
        {"tf32": 156.0e12, "fp16": 312.0e12, "bf16": 312.0e12},
        "NVIDIA A100 Tensor Core GPU datasheet (80GB SXM, HBM2e 2.039 TB/s)",
    ),
    NominalPeaks(
        "A100 40GB",
        r"a100",
        "8.0",
        108,
        1.41e9,
        1.555e12,
        19.5e12,
        9.7e12,
        {"tf32": 156.0e12, "fp16": 312.0e12, "bf16": 312.0e12},
        "NVIDIA A100 Tensor Core GPU datasheet (40GB, HBM2 1.555 TB/s)",
    ),
    NominalPeaks(
        "V100 SXM2",
        r"v100.*sxm",
        "7.0",
        80,
        1.53e9,
        0.9e12,
        15.7e12,
        7.8e12,
        {"fp16": 125.0e12},
        "NVIDIA Tesla V100 datasheet (SXM2)",
    ),
    NominalPeaks(
        "V100 PCIe",
        r"v100",
        "7.0",
        80,
        1.38e9,
        0.9e12,
        14.0e12,
        7.0e12,
        {"fp16": 112.0e12},
        "NVIDIA Tesla V100 datasheet (PCIe)",
    ),
    NominalPeaks(
        "T4",
        r"\bt4\b",
        "7.5",
        40,
        1.59e9,
        0.32e12,
        8.1e12,
        0.253e12,
        {"fp16": 65.0e12},
        "NVIDIA T4 datasheet (FP64 at 1/32 of FP32, Turing whitepaper)",
    ),
    NominalPeaks(
        "L4",
        r"\bl4\b",
        "8.9",
        58,
        2.04e9,
        0.3e12,
        30.3e12,
        0.49e12,
        {"tf32": 60.0e12, "fp16": 121.0e12, "bf16": 121.0e12, "fp8": 242.5e12},
        "NVIDIA L4 datasheet (dense tensor rates; FP64 at 1/64 of FP32, Ada whitepaper)",
    ),
    NominalPeaks(
        "RTX 4090",
        r"rtx 4090",
        "8.9",
        128,
        2.52e9,
        1.008e12,
        82.6e12,
        1.29e12,
        {"tf32": 82.6e12, "fp16": 165.2e12, "bf16": 165.2e12, "fp8": 330.3e12},
        "NVIDIA Ada Lovelace whitepaper, GeForce RTX 4090 (FP32 accumulate, dense)",
    ),
)

# A device seen only by its compute capability is assumed to be that generation's datacenter part.
BY_COMPUTE_CAPABILITY = {"9.0": "H100 SXM5", "8.0": "A100 SXM4 80GB", "7.0": "V100 SXM2", "7.5": "T4", "10.0": "B200"}


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
