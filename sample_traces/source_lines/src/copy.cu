// Strided access, from Mark Harris, "How to Access Global Memory Efficiently in CUDA C/C++ Kernels" (NVIDIA
// Developer Blog, 2013), code: github.com/NVIDIA-developer-blog/code-samples, series/cuda-cpp/coalescing-global.
// The published template `stride<T>(T* a, int s)` for T = float, once with the blog's stride 32 and once with
// stride 1 (its fix), as two kernels so that each launch has a name of its own.

__global__ void stride_float(float *a, int s)
{
  int i = (blockDim.x * blockIdx.x + threadIdx.x) * s;
  a[i] = a[i] + 1;  // [strided_copy: limiter]
}

__global__ void stride_float_unit(float *a)
{
  int i = (blockDim.x * blockIdx.x + threadIdx.x) * 1;
  a[i] = a[i] + 1;  // [strided_copy: fixed]
}
