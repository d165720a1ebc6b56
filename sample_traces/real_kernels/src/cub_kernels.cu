// CUB's block-wide primitives (NVIDIA's CCCL, the headers the CUDA toolkit ships) at the launch configurations a
// user tunes them over: BLOCK_THREADS x ITEMS_PER_THREAD at one tile size of 1,024 items, as CUB's own block
// examples sweep them (1024 x 1 to 32 x 32; a warp-transposed load needs whole warps, so not 16 x 64).
// Each kernel is a grid of tiles, one per block; everything it does is CUB's (BlockLoad, BlockReduce, BlockScan,
// BlockRadixSort, BlockStore), the kernel only places its block's tile. Built by cub_kernels.py:
//   nvcc -arch=sm_90 -O3 -lineinfo -Xcompiler -fPIC -shared cub_kernels.cu -o libcub_kernels.so
#include <cub/block/block_load.cuh>
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/block/block_store.cuh>

#include <cuda_runtime.h>

// Sum of each tile (one int per block): a load transposed through shared memory, then the block's reduction.
template <int BLOCK_THREADS, int ITEMS_PER_THREAD>
__global__ void cub_block_reduce(const int* __restrict__ in, int* __restrict__ out)
{
  using Load   = cub::BlockLoad<int, BLOCK_THREADS, ITEMS_PER_THREAD, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
  using Reduce = cub::BlockReduce<int, BLOCK_THREADS>;
  __shared__ union
  {
    typename Load::TempStorage load;
    typename Reduce::TempStorage reduce;
  } smem;
  const long long tile = static_cast<long long>(blockIdx.x) * BLOCK_THREADS * ITEMS_PER_THREAD;
  int items[ITEMS_PER_THREAD];
  Load(smem.load).Load(in + tile, items);
  __syncthreads();
  const int sum = Reduce(smem.reduce).Sum(items);
  if (threadIdx.x == 0)
  {
    out[blockIdx.x] = sum;
  }
}

// Exclusive prefix sum of each tile, written back in place of the input's layout.
template <int BLOCK_THREADS, int ITEMS_PER_THREAD>
__global__ void cub_block_scan(const int* __restrict__ in, int* __restrict__ out)
{
  using Load  = cub::BlockLoad<int, BLOCK_THREADS, ITEMS_PER_THREAD, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
  using Store = cub::BlockStore<int, BLOCK_THREADS, ITEMS_PER_THREAD, cub::BLOCK_STORE_WARP_TRANSPOSE>;
  using Scan  = cub::BlockScan<int, BLOCK_THREADS>;
  __shared__ union
  {
    typename Load::TempStorage load;
    typename Store::TempStorage store;
    typename Scan::TempStorage scan;
  } smem;
  const long long tile = static_cast<long long>(blockIdx.x) * BLOCK_THREADS * ITEMS_PER_THREAD;
  int items[ITEMS_PER_THREAD];
  Load(smem.load).Load(in + tile, items);
  __syncthreads();
  Scan(smem.scan).ExclusiveSum(items, items);
  __syncthreads();
  Store(smem.store).Store(out + tile, items);
}

// Each tile sorted (32-bit keys, every radix pass in shared memory).
template <int BLOCK_THREADS, int ITEMS_PER_THREAD>
__global__ void cub_block_radix_sort(const int* __restrict__ in, int* __restrict__ out)
{
  using Load  = cub::BlockLoad<int, BLOCK_THREADS, ITEMS_PER_THREAD, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
  using Store = cub::BlockStore<int, BLOCK_THREADS, ITEMS_PER_THREAD, cub::BLOCK_STORE_WARP_TRANSPOSE>;
  using Sort  = cub::BlockRadixSort<int, BLOCK_THREADS, ITEMS_PER_THREAD>;
  __shared__ union
  {
    typename Load::TempStorage load;
    typename Store::TempStorage store;
    typename Sort::TempStorage sort;
  } smem;
  const long long tile = static_cast<long long>(blockIdx.x) * BLOCK_THREADS * ITEMS_PER_THREAD;
  int keys[ITEMS_PER_THREAD];
  Load(smem.load).Load(in + tile, keys);
  __syncthreads();
  Sort(smem.sort).Sort(keys);
  __syncthreads();
  Store(smem.store).Store(out + tile, keys);
}

// One C entry point per kernel and configuration: tiles = number of blocks, launched on `stream`.
#define TRACEKIT_CUB_LAUNCHER(KERNEL, THREADS, ITEMS)                                                   \
  extern "C" int launch_##KERNEL##_##THREADS##_##ITEMS(const int* in, int* out, int tiles, cudaStream_t s) \
  {                                                                                                   \
    KERNEL<THREADS, ITEMS><<<tiles, THREADS, 0, s>>>(in, out);                                        \
    return static_cast<int>(cudaGetLastError());                                                      \
  }

#define TRACEKIT_CUB_CONFIGS(KERNEL)      \
  TRACEKIT_CUB_LAUNCHER(KERNEL, 1024, 1)  \
  TRACEKIT_CUB_LAUNCHER(KERNEL, 512, 2)   \
  TRACEKIT_CUB_LAUNCHER(KERNEL, 256, 4)   \
  TRACEKIT_CUB_LAUNCHER(KERNEL, 128, 8)   \
  TRACEKIT_CUB_LAUNCHER(KERNEL, 64, 16)   \
  TRACEKIT_CUB_LAUNCHER(KERNEL, 32, 32)

TRACEKIT_CUB_CONFIGS(cub_block_reduce)
TRACEKIT_CUB_CONFIGS(cub_block_scan)
TRACEKIT_CUB_CONFIGS(cub_block_radix_sort)
