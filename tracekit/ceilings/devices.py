"""The one device table: every GPU architecture tracekit knows (per-SM limits, L1, warp size, by compute capability)
with the products built on it (datasheet peaks). A new GPU enters here, in one place: its architecture (if new) and
its product, each one keyword-constructed entry. `tracekit.analysis.occupancy` reads the SM limits (and hands them on
as `DeviceLimits`, in bytes and warps), the predictor's cache footprint the L1 size, `tracekit.ceilings.nominal` the
peaks. Pure data.

SM limits: NVIDIA's `cuda_occupancy.h` (CUDA 13.0) and the CUDA C++ Programming Guide's "Technical Specifications
per Compute Capability"; the unified L1 data cache: the Programming Guide's "Compute Capabilities" sections. Peaks:
NVIDIA's datasheets and architecture whitepapers (dense tensor rates, no sparsity)."""

from __future__ import annotations

from dataclasses import dataclass, field

# Configurable shared-memory carveouts per SM, in KB (cudaOccAlignUpShmemSizeVoltaPlus).
VOLTA_CARVEOUTS_KB = (0, 8, 16, 32, 64, 96)
TURING_CARVEOUTS_KB = (32, 64)
GA100_CARVEOUTS_KB = (0, 8, 16, 32, 64, 100, 132, 164)
GA10X_CARVEOUTS_KB = (0, 8, 16, 32, 64, 100)
GH100_CARVEOUTS_KB = (0, 8, 16, 32, 64, 100, 132, 164, 196, 228)
# Threads per warp on every NVIDIA architecture (the analysis reads this one constant; Architecture.warp_size too).
WARP_SIZE = 32


@dataclass(frozen=True, kw_only=True)
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


@dataclass(frozen=True, kw_only=True)
class Architecture:
    """One compute capability's SM: what it offers and how it hands it out, and the products built on it (the
    first is the one assumed when only the compute capability is known). The defaults hold on every architecture
    tracekit knows; an entry names every field that differs between them."""

    compute_capability: str
    max_threads_per_sm: int
    max_blocks_per_sm: int
    max_registers_per_block: int
    shared_mem_per_sm_kb: int  # the largest carveout
    max_shared_mem_per_block_kb: int  # with the opt-in attribute, excluding the driver's reserve
    carveouts_kb: tuple[int, ...] | None  # configurable carveouts; None: a fixed split of shared memory and L1
    shared_mem_allocation_unit_bytes: int  # a block's shared memory is rounded up to this
    reserved_shared_mem_per_block_bytes: int  # the driver's per-block reserve (CC >= 8.0)
    barriers_per_block_slot: int | None  # block barrier slots per block slot (CC >= 9.0); None: no barrier limit
    unified_l1_kb: int | None  # unified L1 data cache and shared memory; None: loads bypass L1 (before Volta)
    # or not recorded here
    sub_partitions: int = 4  # registers are split evenly over the SM's sub-partitions (schedulers)
    warp_size: int = WARP_SIZE
    registers_per_sm: int = 65536
    max_threads_per_block: int = 1024
    max_registers_per_thread: int = 255
    register_allocation_unit: int = 256  # registers; each warp's allocation is rounded up to this
    default_shared_mem_per_block_kb: int = 48  # without the opt-in attribute
    products: tuple[NominalPeaks, ...] = ()
    # the product assumed for a device known only by this compute capability (a generation's datacenter part; none
    # where consumer and datacenter parts share it)
    assumed: str | None = None

    @property
    def max_warps_per_sm(self) -> int:
        return self.max_threads_per_sm // self.warp_size


ARCHITECTURES: tuple[Architecture, ...] = (
    Architecture(
        compute_capability="5.0",
        max_threads_per_sm=2048,
        max_blocks_per_sm=32,
        max_registers_per_block=65536,
        shared_mem_per_sm_kb=64,
        max_shared_mem_per_block_kb=48,
        carveouts_kb=None,
        shared_mem_allocation_unit_bytes=256,
        reserved_shared_mem_per_block_bytes=0,
        barriers_per_block_slot=None,
        unified_l1_kb=None,
    ),
    Architecture(
        compute_capability="5.2",
        max_threads_per_sm=2048,
        max_blocks_per_sm=32,
        max_registers_per_block=65536,
        shared_mem_per_sm_kb=96,
        max_shared_mem_per_block_kb=48,
        carveouts_kb=None,
        shared_mem_allocation_unit_bytes=256,
        reserved_shared_mem_per_block_bytes=0,
        barriers_per_block_slot=None,
        unified_l1_kb=None,
    ),
    Architecture(
        compute_capability="5.3",
        max_threads_per_sm=2048,
        max_blocks_per_sm=32,
        max_registers_per_block=32768,
        shared_mem_per_sm_kb=64,
        max_shared_mem_per_block_kb=48,
        carveouts_kb=None,
        shared_mem_allocation_unit_bytes=256,
        reserved_shared_mem_per_block_bytes=0,
        barriers_per_block_slot=None,
        unified_l1_kb=None,
    ),
    Architecture(
        compute_capability="6.0",
        max_threads_per_sm=2048,
        max_blocks_per_sm=32,
        max_registers_per_block=65536,
        sub_partitions=2,
        shared_mem_per_sm_kb=64,
        max_shared_mem_per_block_kb=48,
        carveouts_kb=None,
        shared_mem_allocation_unit_bytes=256,
        reserved_shared_mem_per_block_bytes=0,
        barriers_per_block_slot=None,
        unified_l1_kb=None,
    ),
    Architecture(
        compute_capability="6.1",
        max_threads_per_sm=2048,
        max_blocks_per_sm=32,
        max_registers_per_block=65536,
        shared_mem_per_sm_kb=96,
        max_shared_mem_per_block_kb=48,
        carveouts_kb=None,
        shared_mem_allocation_unit_bytes=256,
        reserved_shared_mem_per_block_bytes=0,
        barriers_per_block_slot=None,
        unified_l1_kb=None,
    ),
    Architecture(
        compute_capability="6.2",
        max_threads_per_sm=2048,
        max_blocks_per_sm=32,
        max_registers_per_block=32768,
        shared_mem_per_sm_kb=64,
        max_shared_mem_per_block_kb=48,
        carveouts_kb=None,
        shared_mem_allocation_unit_bytes=256,
        reserved_shared_mem_per_block_bytes=0,
        barriers_per_block_slot=None,
        unified_l1_kb=None,
    ),
    Architecture(
        compute_capability="7.0",
        max_threads_per_sm=2048,
        max_blocks_per_sm=32,
        max_registers_per_block=65536,
        shared_mem_per_sm_kb=96,
        max_shared_mem_per_block_kb=96,
        carveouts_kb=VOLTA_CARVEOUTS_KB,
        shared_mem_allocation_unit_bytes=256,
        reserved_shared_mem_per_block_bytes=0,
        barriers_per_block_slot=None,
        unified_l1_kb=128,
        products=(
            NominalPeaks(
                name="V100 SXM2",
                pattern=r"v100.*sxm",
                compute_capability="7.0",
                sm_count=80,
                boost_clock_hz=1.53e9,
                dram_bytes_per_s=0.9e12,
                fp32_flop_per_s=15.7e12,
                fp64_flop_per_s=7.8e12,
                tensor_flop_per_s={"fp16": 125.0e12},
                reference="NVIDIA Tesla V100 datasheet (SXM2)",
            ),
            NominalPeaks(
                name="V100 PCIe",
                pattern=r"v100",
                compute_capability="7.0",
                sm_count=80,
                boost_clock_hz=1.38e9,
                dram_bytes_per_s=0.9e12,
                fp32_flop_per_s=14.0e12,
                fp64_flop_per_s=7.0e12,
                tensor_flop_per_s={"fp16": 112.0e12},
                reference="NVIDIA Tesla V100 datasheet (PCIe)",
            ),
        ),
        assumed="V100 SXM2",
    ),
    Architecture(
        compute_capability="7.2",
        max_threads_per_sm=2048,
        max_blocks_per_sm=32,
        max_registers_per_block=65536,
        shared_mem_per_sm_kb=96,
        max_shared_mem_per_block_kb=96,
        carveouts_kb=VOLTA_CARVEOUTS_KB,
        shared_mem_allocation_unit_bytes=256,
        reserved_shared_mem_per_block_bytes=0,
        barriers_per_block_slot=None,
        unified_l1_kb=128,
    ),
    Architecture(
        compute_capability="7.5",
        max_threads_per_sm=1024,
        max_blocks_per_sm=16,
        max_registers_per_block=65536,
        shared_mem_per_sm_kb=64,
        max_shared_mem_per_block_kb=64,
        carveouts_kb=TURING_CARVEOUTS_KB,
        shared_mem_allocation_unit_bytes=256,
        reserved_shared_mem_per_block_bytes=0,
        barriers_per_block_slot=None,
        unified_l1_kb=96,
        products=(
            NominalPeaks(
                name="T4",
                pattern=r"\bt4\b",
                compute_capability="7.5",
                sm_count=40,
                boost_clock_hz=1.59e9,
                dram_bytes_per_s=0.32e12,
                fp32_flop_per_s=8.1e12,
                fp64_flop_per_s=0.253e12,
                tensor_flop_per_s={"fp16": 65.0e12},
                reference="NVIDIA T4 datasheet (FP64 at 1/32 of FP32, Turing whitepaper)",
            ),
        ),
        assumed="T4",
    ),
    Architecture(
        compute_capability="8.0",
        max_threads_per_sm=2048,
        max_blocks_per_sm=32,
        max_registers_per_block=65536,
        shared_mem_per_sm_kb=164,
        max_shared_mem_per_block_kb=163,
        carveouts_kb=GA100_CARVEOUTS_KB,
        shared_mem_allocation_unit_bytes=128,
        reserved_shared_mem_per_block_bytes=1024,
        barriers_per_block_slot=None,
        unified_l1_kb=192,
        products=(
            NominalPeaks(
                name="A100 SXM4 80GB",
                pattern=r"a100.*80",
                compute_capability="8.0",
                sm_count=108,
                boost_clock_hz=1.41e9,
                dram_bytes_per_s=2.039e12,
                fp32_flop_per_s=19.5e12,
                fp64_flop_per_s=9.7e12,
                tensor_flop_per_s={"tf32": 156.0e12, "fp16": 312.0e12, "bf16": 312.0e12},
                reference="NVIDIA A100 Tensor Core GPU datasheet (80GB SXM, HBM2e 2.039 TB/s)",
            ),
            NominalPeaks(
                name="A100 40GB",
                pattern=r"a100",
                compute_capability="8.0",
                sm_count=108,
                boost_clock_hz=1.41e9,
                dram_bytes_per_s=1.555e12,
                fp32_flop_per_s=19.5e12,
                fp64_flop_per_s=9.7e12,
                tensor_flop_per_s={"tf32": 156.0e12, "fp16": 312.0e12, "bf16": 312.0e12},
                reference="NVIDIA A100 Tensor Core GPU datasheet (40GB, HBM2 1.555 TB/s)",
            ),
        ),
        assumed="A100 SXM4 80GB",
    ),
    Architecture(
        compute_capability="8.6",
        max_threads_per_sm=1536,
        max_blocks_per_sm=16,
        max_registers_per_block=65536,
        shared_mem_per_sm_kb=100,
        max_shared_mem_per_block_kb=99,
        carveouts_kb=GA10X_CARVEOUTS_KB,
        shared_mem_allocation_unit_bytes=128,
        reserved_shared_mem_per_block_bytes=1024,
        barriers_per_block_slot=None,
        unified_l1_kb=128,
    ),
    Architecture(
        compute_capability="8.7",
        max_threads_per_sm=1536,
        max_blocks_per_sm=16,
        max_registers_per_block=65536,
        shared_mem_per_sm_kb=164,
        max_shared_mem_per_block_kb=163,
        carveouts_kb=GA100_CARVEOUTS_KB,
        shared_mem_allocation_unit_bytes=128,
        reserved_shared_mem_per_block_bytes=1024,
        barriers_per_block_slot=None,
        unified_l1_kb=192,
    ),
    Architecture(
        compute_capability="8.9",
        max_threads_per_sm=1536,
        max_blocks_per_sm=24,
        max_registers_per_block=65536,
        shared_mem_per_sm_kb=100,
        max_shared_mem_per_block_kb=99,
        carveouts_kb=GA10X_CARVEOUTS_KB,
        shared_mem_allocation_unit_bytes=128,
        reserved_shared_mem_per_block_bytes=1024,
        barriers_per_block_slot=None,
        unified_l1_kb=128,
        products=(
            NominalPeaks(
                name="L4",
                pattern=r"\bl4\b",
                compute_capability="8.9",
                sm_count=58,
                boost_clock_hz=2.04e9,
                dram_bytes_per_s=0.3e12,
                fp32_flop_per_s=30.3e12,
                fp64_flop_per_s=0.49e12,
                tensor_flop_per_s={"tf32": 60.0e12, "fp16": 121.0e12, "bf16": 121.0e12, "fp8": 242.5e12},
                reference="NVIDIA L4 datasheet (dense tensor rates; FP64 at 1/64 of FP32, Ada whitepaper)",
            ),
            NominalPeaks(
                name="RTX 4090",
                pattern=r"rtx 4090",
                compute_capability="8.9",
                sm_count=128,
                boost_clock_hz=2.52e9,
                dram_bytes_per_s=1.008e12,
                fp32_flop_per_s=82.6e12,
                fp64_flop_per_s=1.29e12,
                tensor_flop_per_s={"tf32": 82.6e12, "fp16": 165.2e12, "bf16": 165.2e12, "fp8": 330.3e12},
                reference="NVIDIA Ada Lovelace whitepaper, GeForce RTX 4090 (FP32 accumulate, dense)",
            ),
        ),
    ),
    Architecture(
        compute_capability="9.0",
        max_threads_per_sm=2048,
        max_blocks_per_sm=32,
        max_registers_per_block=65536,
        shared_mem_per_sm_kb=228,
        max_shared_mem_per_block_kb=227,
        carveouts_kb=GH100_CARVEOUTS_KB,
        shared_mem_allocation_unit_bytes=128,
        reserved_shared_mem_per_block_bytes=1024,
        barriers_per_block_slot=2,
        unified_l1_kb=256,
        products=(
            NominalPeaks(
                name="H100 SXM5",
                pattern=r"h100.*(sxm|hbm3)",
                compute_capability="9.0",
                sm_count=132,
                boost_clock_hz=1.98e9,
                dram_bytes_per_s=3.35e12,
                fp32_flop_per_s=66.9e12,
                fp64_flop_per_s=33.5e12,
                tensor_flop_per_s={
                    "tf32": 494.7e12,
                    "fp16": 989.4e12,
                    "bf16": 989.4e12,
                    "fp8": 1978.9e12,
                    "int8": 1978.9e12,
                },
                reference="NVIDIA H100 Tensor Core GPU datasheet (SXM5, HBM3 3.35 TB/s)",
            ),
            NominalPeaks(
                name="H100 NVL",
                pattern=r"h100.*nvl",
                compute_capability="9.0",
                sm_count=132,
                boost_clock_hz=1.785e9,
                dram_bytes_per_s=3.9e12,
                fp32_flop_per_s=60.0e12,
                fp64_flop_per_s=30.0e12,
                tensor_flop_per_s={
                    "tf32": 417.5e12,
                    "fp16": 835.0e12,
                    "bf16": 835.0e12,
                    "fp8": 1670.5e12,
                    "int8": 1670.5e12,
                },
                reference="NVIDIA H100 Tensor Core GPU datasheet (H100 NVL, per GPU)",
            ),
            NominalPeaks(
                name="H100 PCIe",
                pattern=r"h100.*pcie",
                compute_capability="9.0",
                sm_count=114,
                boost_clock_hz=1.755e9,
                dram_bytes_per_s=2.0e12,
                fp32_flop_per_s=51.2e12,
                fp64_flop_per_s=25.6e12,
                tensor_flop_per_s={
                    "tf32": 378.0e12,
                    "fp16": 756.0e12,
                    "bf16": 756.0e12,
                    "fp8": 1513.0e12,
                    "int8": 1513.0e12,
                },
                reference="NVIDIA H100 Tensor Core GPU datasheet (PCIe, HBM2e 2 TB/s)",
            ),
            NominalPeaks(
                name="GH200 (96 GB HBM3)",
                pattern=r"gh200(?!.*(144|hbm3e))",
                compute_capability="9.0",
                sm_count=132,
                boost_clock_hz=1.98e9,
                dram_bytes_per_s=4.0e12,
                fp32_flop_per_s=66.9e12,
                fp64_flop_per_s=33.5e12,
                tensor_flop_per_s={
                    "tf32": 494.7e12,
                    "fp16": 989.4e12,
                    "bf16": 989.4e12,
                    "fp8": 1978.9e12,
                    "int8": 1978.9e12,
                },
                reference="NVIDIA GH200 Grace Hopper Superchip datasheet (H100 with 96 GB HBM3, 4 TB/s)",
            ),
            NominalPeaks(
                name="GH200 (144 GB HBM3e)",
                pattern=r"gh200",
                compute_capability="9.0",
                sm_count=132,
                boost_clock_hz=1.98e9,
                dram_bytes_per_s=4.9e12,
                fp32_flop_per_s=66.9e12,
                fp64_flop_per_s=33.5e12,
                tensor_flop_per_s={
                    "tf32": 494.7e12,
                    "fp16": 989.4e12,
                    "bf16": 989.4e12,
                    "fp8": 1978.9e12,
                    "int8": 1978.9e12,
                },
                reference="NVIDIA GH200 Grace Hopper Superchip datasheet (H100 with 144 GB HBM3e, 4.9 TB/s)",
            ),
            NominalPeaks(
                name="H200",
                pattern=r"(?<!g)h200",
                compute_capability="9.0",
                sm_count=132,
                boost_clock_hz=1.98e9,
                dram_bytes_per_s=4.8e12,
                fp32_flop_per_s=66.9e12,
                fp64_flop_per_s=33.5e12,
                tensor_flop_per_s={
                    "tf32": 494.7e12,
                    "fp16": 989.4e12,
                    "bf16": 989.4e12,
                    "fp8": 1978.9e12,
                    "int8": 1978.9e12,
                },
                reference="NVIDIA H200 Tensor Core GPU datasheet (SXM, HBM3e 4.8 TB/s)",
            ),
        ),
        assumed="H100 SXM5",
    ),
    Architecture(
        compute_capability="10.0",
        max_threads_per_sm=2048,
        max_blocks_per_sm=32,
        max_registers_per_block=65536,
        shared_mem_per_sm_kb=228,
        max_shared_mem_per_block_kb=227,
        carveouts_kb=GH100_CARVEOUTS_KB,
        shared_mem_allocation_unit_bytes=128,
        reserved_shared_mem_per_block_bytes=1024,
        barriers_per_block_slot=2,
        unified_l1_kb=256,
        products=(
            NominalPeaks(
                name="B200",
                pattern=r"b200",
                compute_capability="10.0",
                sm_count=148,
                boost_clock_hz=1.965e9,
                dram_bytes_per_s=8.0e12,
                fp32_flop_per_s=80.0e12,
                fp64_flop_per_s=40.0e12,
                tensor_flop_per_s={"tf32": 1100.0e12, "fp16": 2250.0e12, "bf16": 2250.0e12, "fp8": 4500.0e12},
                reference="NVIDIA HGX B200 datasheet, per GPU (dense); FP32 approximate",
            ),
        ),
        assumed="B200",
    ),
    Architecture(
        compute_capability="10.1",  # Thor before CUDA 13 renamed it 11.0
        max_threads_per_sm=1536,
        max_blocks_per_sm=24,
        max_registers_per_block=65536,
        shared_mem_per_sm_kb=228,
        max_shared_mem_per_block_kb=227,
        carveouts_kb=GH100_CARVEOUTS_KB,
        shared_mem_allocation_unit_bytes=128,
        reserved_shared_mem_per_block_bytes=1024,
        barriers_per_block_slot=1,
        unified_l1_kb=None,
    ),
    Architecture(
        compute_capability="10.3",
        max_threads_per_sm=2048,
        max_blocks_per_sm=32,
        max_registers_per_block=65536,
        shared_mem_per_sm_kb=228,
        max_shared_mem_per_block_kb=227,
        carveouts_kb=GH100_CARVEOUTS_KB,
        shared_mem_allocation_unit_bytes=128,
        reserved_shared_mem_per_block_bytes=1024,
        barriers_per_block_slot=2,
        unified_l1_kb=None,
    ),
    Architecture(
        compute_capability="11.0",
        max_threads_per_sm=1536,
        max_blocks_per_sm=24,
        max_registers_per_block=65536,
        shared_mem_per_sm_kb=228,
        max_shared_mem_per_block_kb=227,
        carveouts_kb=GH100_CARVEOUTS_KB,
        shared_mem_allocation_unit_bytes=128,
        reserved_shared_mem_per_block_bytes=1024,
        barriers_per_block_slot=1,
        unified_l1_kb=None,
    ),
    Architecture(
        compute_capability="12.0",
        max_threads_per_sm=1536,
        max_blocks_per_sm=24,
        max_registers_per_block=65536,
        shared_mem_per_sm_kb=100,
        max_shared_mem_per_block_kb=99,
        carveouts_kb=GA10X_CARVEOUTS_KB,
        shared_mem_allocation_unit_bytes=128,
        reserved_shared_mem_per_block_bytes=1024,
        barriers_per_block_slot=1,
        unified_l1_kb=128,
    ),
    Architecture(
        compute_capability="12.1",
        max_threads_per_sm=1536,
        max_blocks_per_sm=24,
        max_registers_per_block=65536,
        shared_mem_per_sm_kb=100,
        max_shared_mem_per_block_kb=99,
        carveouts_kb=GA10X_CARVEOUTS_KB,
        shared_mem_allocation_unit_bytes=128,
        reserved_shared_mem_per_block_bytes=1024,
        barriers_per_block_slot=1,
        unified_l1_kb=None,
    ),
)

ARCHITECTURE_BY_CC = {a.compute_capability: a for a in ARCHITECTURES}
# Every product, most specific name pattern first within an architecture (a name is matched in this order).
PRODUCTS: tuple[NominalPeaks, ...] = tuple(p for a in ARCHITECTURES for p in a.products)
