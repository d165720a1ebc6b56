"""What kind of work a GPU activity is, from its name: the categories a step's GPU time is split into.

Names are the libraries' own conventions: cuBLAS/cuBLASLt GEMMs (`*gemm*`, `sm90_xmma_*`, Hopper's `nvjet_*`),
CUTLASS (`cutlass*`), Triton's generated kernels (`triton_poi_*` pointwise, `triton_red_*`/`triton_per_*`
reductions, `triton_tem_*` templates, mostly matmuls), flash/memory-efficient attention (`flash*`, `fmha*`),
cuDNN convolutions (`*fprop*`, `*dgrad*`, `*wgrad*`, `implicit_convolve*`, `winograd*`), NCCL of every
generation (`ncclKernel_*`, `ncclDevKernel_*`, `ncclKernel`), and ATen's elementwise and reduction templates.
The first matching rule wins: attention before GEMM (a flash kernel does GEMMs), convolution before GEMM
(cuDNN's implicit GEMM).
"""

from __future__ import annotations

import polars as pl

COMMUNICATION = "communication"
ATTENTION = "attention"
CONVOLUTION = "convolution"
GEMM = "GEMM"
REDUCTION = "reduction and normalization"
ELEMENTWISE = "elementwise"
COPIES = "copies and sets"
OTHER = "other"
# A collective run on host threads (gloo: no kernel of it reaches the GPU): the process group's worker range that ran
# it (`gloo:all_reduce`, a user annotation). Communication as much as an NCCL kernel is, though not GPU time.
HOST_COLLECTIVE_RANGE = r"^gloo:"
CATEGORIES = (GEMM, ATTENTION, CONVOLUTION, ELEMENTWISE, REDUCTION, COPIES, COMMUNICATION, OTHER)
# A step's time with two streams busy at once is counted once, for the first of these categories running then
# (`operators.categories`): computation before copies before communication, so the copies' time is what ran with
# no kernel beside it, and communication's what computation did not hide (exposed communication); the shares add
# up to the step's busy time.
COUNTED_FIRST = (GEMM, ATTENTION, CONVOLUTION, ELEMENTWISE, REDUCTION, OTHER, COPIES, COMMUNICATION)

RULES: tuple[tuple[str, str], ...] = (
    (COMMUNICATION, r"(?i)^(void\s+)?nccl|ncclDevKernel|ncclKernel|all_?reduce|allgather|reduce_?scatter|cross_device"),
    (ATTENTION, r"(?i)flash|fmha|attention|attn|sdpa"),
    (CONVOLUTION, r"(?i)conv|fprop|dgrad|wgrad|winograd|implicit_convolve|cudnn"),
    (GEMM, r"(?i)gemm|matmul|xmma|cutlass|cublas|nvjet|wgmma|triton_tem|splitk|_mma_|gemv"),
    (REDUCTION, r"(?i)reduce|norm|softmax|welford|triton_red|triton_per|argmax|argmin|cumsum|scan|topk|sort"),
    (COPIES, r"(?i)copy|memcpy|memset|cat_?array|fill_kernel|transpose"),
    (
        ELEMENTWISE,
        r"(?i)elementwise|triton_poi|vectorized|unrolled|pointwise|activation|gelu|relu|silu|dropout|add|mul",
    ),
)


def category(name: pl.Expr, kind: pl.Expr) -> pl.Expr:
    """The category of each activity: copies and sets by kind, kernels by the first rule their name matches."""
    expr: pl.Expr = pl.lit(OTHER)
    for label, pattern in reversed(RULES):
        expr = pl.when(name.str.contains(pattern)).then(pl.lit(label)).otherwise(expr)
    return pl.when(kind != "kernel").then(pl.lit(COPIES)).otherwise(expr)
