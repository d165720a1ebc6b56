// Matrix-vector multiplication, held out (issue 45), from Wen-mei Hwu, David Kirk and Izzat El Hajj, "Programming
// Massively Parallel Processors" (4th ed., Morgan Kaufmann 2022): chapter 3, exercise 2 (A = B C, one thread per
// output element, each thread the dot product of one row of B with C), with B row-major as the chapter stores
// matrices: the lanes of a warp read one element of 32 different rows, n floats apart. The fix is chapter 6.1's
// (memory coalescing; the corner turning of figure 6.4): B laid out column-major (B^T row-major), so that the lanes
// of a warp read consecutive addresses. Here B is tall and thin (rows x n) so that there is one thread per row and
// enough of them to fill the GPU.

__global__ void matvec_row_major(const float *B, const float *C, float *A, int rows, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows) {
    float sum = 0.0f;
    for (int j = 0; j < n; ++j) {
      sum += B[(size_t)i * n + j] * C[j];  // [matvec_rows: limiter]
    }
    A[i] = sum;
  }
}

__global__ void matvec_col_major(const float *Bt, const float *C, float *A, int rows, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows) {
    float sum = 0.0f;
    for (int j = 0; j < n; ++j) {
      sum += Bt[(size_t)j * rows + i] * C[j];  // [matvec_rows: fixed]
    }
    A[i] = sum;
  }
}
