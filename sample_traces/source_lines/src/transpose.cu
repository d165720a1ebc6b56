// Matrix transpose, from Mark Harris, "An Efficient Matrix Transpose in CUDA C/C++" (NVIDIA Developer Blog, 2013),
// code: github.com/NVIDIA-developer-blog/code-samples, series/cuda-cpp/transpose/transpose.cu.
// Kernels kept as published; the last statement of transposeCoalesced and transposeNoBankConflicts is split in two
// (shared read, then global write) so that the shared-memory read and the global store sit on lines of their own.
#define TILE_DIM 32
#define BLOCK_ROWS 8

// Naive transpose: the reads are coalesced, the writes stride by `width` floats.
__global__ void transposeNaive(float *odata, const float *idata)
{
  int x = blockIdx.x * TILE_DIM + threadIdx.x;
  int y = blockIdx.y * TILE_DIM + threadIdx.y;
  int width = gridDim.x * TILE_DIM;

  for (int j = 0; j < TILE_DIM; j+= BLOCK_ROWS)
    odata[x*width + (y+j)] = idata[(y+j)*width + x];  // [transpose_naive: limiter]
}

// Coalesced transpose through a shared-memory tile: reads a column of the tile, a 32-way bank conflict.
__global__ void transposeCoalesced(float *odata, const float *idata)
{
  __shared__ float tile[TILE_DIM][TILE_DIM];

  int x = blockIdx.x * TILE_DIM + threadIdx.x;
  int y = blockIdx.y * TILE_DIM + threadIdx.y;
  int width = gridDim.x * TILE_DIM;

  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
     tile[threadIdx.y+j][threadIdx.x] = idata[(y+j)*width + x];

  __syncthreads();

  x = blockIdx.y * TILE_DIM + threadIdx.x;  // transpose block offset
  y = blockIdx.x * TILE_DIM + threadIdx.y;

  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
     float v = tile[threadIdx.x][threadIdx.y + j];  // [transpose_bank: limiter]
     odata[(y+j)*width + x] = v;  // [transpose_naive: fixed]
  }
}

// No bank conflicts: the tile is padded by one column.
__global__ void transposeNoBankConflicts(float *odata, const float *idata)
{
  __shared__ float tile[TILE_DIM][TILE_DIM+1];

  int x = blockIdx.x * TILE_DIM + threadIdx.x;
  int y = blockIdx.y * TILE_DIM + threadIdx.y;
  int width = gridDim.x * TILE_DIM;

  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
     tile[threadIdx.y+j][threadIdx.x] = idata[(y+j)*width + x];

  __syncthreads();

  x = blockIdx.y * TILE_DIM + threadIdx.x;  // transpose block offset
  y = blockIdx.x * TILE_DIM + threadIdx.y;

  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
     float v = tile[threadIdx.x][threadIdx.y + j];  // [transpose_bank: fixed]
     odata[(y+j)*width + x] = v;
  }
}
