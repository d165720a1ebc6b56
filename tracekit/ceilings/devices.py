"""The one device table: every GPU architecture tracekit knows (per-SM limits, by compute capability) with the
products built on it (datasheet peaks). A new GPU enters here, in one place: its architecture (if new) and its
product. `tracekit.analysis.occupancy` reads the SM limits, `tracekit.ceilings.nominal` the peaks. Pure data.

SM limits: NVIDIA's `cuda_occupancy.h` (CUDA 13.0) and the CUDA C++ Programming Guide's "Technical Specifications
per Compute Capability". Peaks: NVIDIA's datasheets and architecture whitepapers (dense tensor rates, no sparsity)."""

from __future__ import annotations

from dataclasses import dataclass, field

# Configurable shared-memory carveouts per SM, in KB (cudaOccAlignUpShmemSizeVoltaPlus).
VOLTA_CARVEOUTS_KB = (0, 8, 16, 32, 64, 96)
TURING_CARVEOUTS_KB = (32, 64)
GA100_CARVEOUTS_KB = (0, 8, 16, 32, 64, 100, 132, 164)
GA10X_CARVEOUTS_KB = (0, 8, 16, 32, 64, 100)
GH100_CARVEOUTS_KB = (0, 8, 16, 32, 64, 100, 132, 164, 196, 228)


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


@dataclass(frozen=True)
class Architecture:
    """One compute capability's SM: what it offers and how it hands it out, and the products built on it (the
    first is the one assumed when only the compute capability is known)."""

    compute_capability: str
    max_threads_per_sm: int
    max_blocks_per_sm: int
    shared_mem_per_sm_kb: int
    max_shared_mem_per_block_kb: int  # with the opt-in attribute
    max_registers_per_block: int
    carveouts_kb: tuple[int, ...] | None  # None: a fixed split of shared memory and L1
    barriers_per_block_slot: int | None  # block barrier slots per block slot (CC >= 9.0)
    products: tuple[NominalPeaks, ...] = ()
    # the product assumed for a device known only by this compute capability (a generation's datacenter part; none
    # where consumer and datacenter parts share it)
    assumed: str | None = None


ARCHITECTURES: tuple[Architecture, ...] = (
    Architecture(
        "5.0",
        2048,
        32,
        64,
        48,
        65536,
        None,
        None,
    ),
    Architecture(
        "5.2",
        2048,
        32,
        96,
        48,
        65536,
        None,
        None,
    ),
    Architecture(
        "5.3",
        2048,
        32,
        64,
        48,
        32768,
        None,
        None,
    ),
    Architecture(
        "6.0",
        2048,
        32,
        64,
        48,
        65536,
        None,
        None,
    ),
    Architecture(
        "6.1",
        2048,
        32,
        96,
        48,
        65536,
        None,
        None,
    ),
    Architecture(
        "6.2",
        2048,
        32,
        64,
        48,
        32768,
        None,
        None,
    ),
    Architecture(
        "7.0",
        2048,
        32,
        96,
        96,
        65536,
        VOLTA_CARVEOUTS_KB,
        None,
        (
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
        ),
        assumed="V100 SXM2",
    ),
    Architecture(
        "7.2",
        2048,
        32,
        96,
        96,
        65536,
        VOLTA_CARVEOUTS_KB,
        None,
    ),
    Architecture(
        "7.5",
        1024,
        16,
        64,
        64,
        65536,
        TURING_CARVEOUTS_KB,
        None,
        (
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
        ),
        assumed="T4",
    ),
    Architecture(
        "8.0",
        2048,
        32,
        164,
        163,
        65536,
        GA100_CARVEOUTS_KB,
        None,
        (
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
        ),
        assumed="A100 SXM4 80GB",
    ),
    Architecture(
        "8.6",
        1536,
        16,
        100,
        99,
        65536,
        GA10X_CARVEOUTS_KB,
        None,
    ),
    Architecture(
        "8.7",
        1536,
        16,
        164,
        163,
        65536,
        GA100_CARVEOUTS_KB,
        None,
    ),
    Architecture(
        "8.9",
        1536,
        24,
        100,
        99,
        65536,
        GA10X_CARVEOUTS_KB,
        None,
        (
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
        ),
    ),
    Architecture(
        "9.0",
        2048,
        32,
        228,
        227,
        65536,
        GH100_CARVEOUTS_KB,
        2,
        (
            NominalPeaks(
                "H100 SXM5",
                r"h100.*(sxm|hbm3)",
                "9.0",
                132,
                1.98e9,
                3.35e12,
                66.9e12,
                33.5e12,
                {"tf32": 494.7e12, "fp16": 989.4e12, "bf16": 989.4e12, "fp8": 1978.9e12, "int8": 1978.9e12},
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
                {"tf32": 417.5e12, "fp16": 835.0e12, "bf16": 835.0e12, "fp8": 1670.5e12, "int8": 1670.5e12},
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
                {"tf32": 378.0e12, "fp16": 756.0e12, "bf16": 756.0e12, "fp8": 1513.0e12, "int8": 1513.0e12},
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
                {"tf32": 494.7e12, "fp16": 989.4e12, "bf16": 989.4e12, "fp8": 1978.9e12, "int8": 1978.9e12},
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
                {"tf32": 494.7e12, "fp16": 989.4e12, "bf16": 989.4e12, "fp8": 1978.9e12, "int8": 1978.9e12},
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
                {"tf32": 494.7e12, "fp16": 989.4e12, "bf16": 989.4e12, "fp8": 1978.9e12, "int8": 1978.9e12},
                "NVIDIA H200 Tensor Core GPU datasheet (SXM, HBM3e 4.8 TB/s)",
            ),
        ),
        assumed="H100 SXM5",
    ),
    Architecture(
        "10.0",
        2048,
        32,
        228,
        227,
        65536,
        GH100_CARVEOUTS_KB,
        2,
        (
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
        ),
        assumed="B200",
    ),
    Architecture(
        "10.1",
        1536,
        24,
        228,
        227,
        65536,
        GH100_CARVEOUTS_KB,
        1,
    ),  # Thor before CUDA 13 renamed it 11.0
    Architecture(
        "10.3",
        2048,
        32,
        228,
        227,
        65536,
        GH100_CARVEOUTS_KB,
        2,
    ),
    Architecture(
        "11.0",
        1536,
        24,
        228,
        227,
        65536,
        GH100_CARVEOUTS_KB,
        1,
    ),
    Architecture(
        "12.0",
        1536,
        24,
        100,
        99,
        65536,
        GA10X_CARVEOUTS_KB,
        1,
    ),
    Architecture(
        "12.1",
        1536,
        24,
        100,
        99,
        65536,
        GA10X_CARVEOUTS_KB,
        1,
    ),
)

ARCHITECTURE_BY_CC = {a.compute_capability: a for a in ARCHITECTURES}
# Every product, most specific name pattern first within an architecture (a name is matched in this order).
PRODUCTS: tuple[NominalPeaks, ...] = tuple(p for a in ARCHITECTURES for p in a.products)
