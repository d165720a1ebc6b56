// Shared-memory bank conflicts in C = A A^T, held out (issue 45), from the CUDA C++ Best Practices Guide (NVIDIA),
// "Shared Memory in Matrix Multiplication (C=AA^T)": coalescedMultiply reads a tile of A^T into shared memory as
// `transposedTile[threadIdx.x][threadIdx.y]`, a column of a 32 x 32 float array, so the 32 lanes of a warp hit one
// bank; the guide's fix pads the array to TILE_DIM + 1 columns. Kernels as published (A is M x TILE_DIM, C is M x M,
// blocks of TILE_DIM x TILE_DIM threads), except that the tile store is split in two statements (the global load,
// then the shared store) so that the shared store has a line of its own, as in transpose.cu.
#define AAT_TILE_DIM 32

__global__ void coalescedMultiply(const float *a, float *c, int M)
{
  __shared__ float aTile[AAT_TILE_DIM][AAT_TILE_DIM], transposedTile[AAT_TILE_DIM][AAT_TILE_DIM];
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  float sum = 0.0f;
  aTile[threadIdx.y][threadIdx.x] = a[row * AAT_TILE_DIM + threadIdx.x];
  float t = a[(blockIdx.x * blockDim.x + threadIdx.y) * AAT_TILE_DIM + threadIdx.x];
  transposedTile[threadIdx.x][threadIdx.y] = t;  // [aat_tile_bank: limiter]
  __syncthreads();
  for (int i = 0; i < AAT_TILE_DIM; i++) {
    sum += aTile[threadIdx.y][i] * transposedTile[i][threadIdx.x];
  }
  c[row * M + col] = sum;
}

__global__ void coalescedMultiplyNoBankConflicts(const float *a, float *c, int M)
{
  __shared__ float aTile[AAT_TILE_DIM][AAT_TILE_DIM], transposedTile[AAT_TILE_DIM][AAT_TILE_DIM + 1];
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  float sum = 0.0f;
  aTile[threadIdx.y][threadIdx.x] = a[row * AAT_TILE_DIM + threadIdx.x];
  float t = a[(blockIdx.x * blockDim.x + threadIdx.y) * AAT_TILE_DIM + threadIdx.x];
  transposedTile[threadIdx.x][threadIdx.y] = t;  // [aat_tile_bank: fixed]
  __syncthreads();
  for (int i = 0; i < AAT_TILE_DIM; i++) {
    sum += aTile[threadIdx.y][i] * transposedTile[i][threadIdx.x];
  }
  c[row * M + col] = sum;
}
