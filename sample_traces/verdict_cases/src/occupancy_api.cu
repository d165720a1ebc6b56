// Prints, as JSON, what the CUDA occupancy API answers for a handful of kernels, block sizes, dynamic shared memory
// sizes and shared-memory carveouts: the reference tracekit's occupancy calculator is tested against.
//
//   occupancy_api > occupancy_api_h100.json
//
// For each kernel (registers and static shared memory from cudaFuncGetAttributes), each carveout (percent given to
// cudaFuncAttributePreferredSharedMemoryCarveout; -1 = the default, never set) and each dynamic shared memory size,
// it records cudaOccupancyMaxActiveBlocksPerMultiprocessor without and with the opt-in
// (cudaFuncAttributeMaxDynamicSharedMemorySize = the device's opt-in maximum) for >48 KB per block, and
// cudaOccupancyAvailableDynamicSMemPerBlock. Errors are recorded as their name, not skipped.
#include <cuda_runtime.h>

#include <cstdio>
#include <string>
#include <vector>

__global__ void small_kernel(float* out) { out[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f; }

// About 64 live registers: 48 independent accumulators.
__global__ void regs_kernel(float* out, int n) {
    float a[48];
#pragma unroll
    for (int j = 0; j < 48; ++j) a[j] = threadIdx.x + j;
#pragma unroll 1
    for (int k = 0; k < n; ++k)
#pragma unroll
        for (int j = 0; j < 48; ++j) a[j] = fmaf(a[j], a[(j + 7) % 48], 1.0f);
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < 48; ++j) s += a[j];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

// About 128 live registers.
__global__ void __launch_bounds__(512) regs128_kernel(float* out, int n) {
    float a[112];
#pragma unroll
    for (int j = 0; j < 112; ++j) a[j] = threadIdx.x + j;
#pragma unroll 1
    for (int k = 0; k < n; ++k)
#pragma unroll
        for (int j = 0; j < 112; ++j) a[j] = fmaf(a[j], a[(j + 13) % 112], 1.0f);
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < 112; ++j) s += a[j];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

// 16 KB of static shared memory, plus whatever dynamic shared memory the launch adds.
__global__ void static_smem_kernel(float* out) {
    __shared__ float tile[4096];
    extern __shared__ float dyn[];
    tile[threadIdx.x] = threadIdx.x;
    dyn[0] = 0.0f;
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = tile[(threadIdx.x + 1) % blockDim.x];
}

static const char* err_name(cudaError_t e) { return cudaGetErrorName(e); }

int main() {
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    int optin = 0, driver = 0, runtime = 0;
    cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0);
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    std::printf("{\n  \"schema\": \"tracekit.occupancy_api/1\",\n");
    std::printf("  \"device\": {\"name\": \"%s\", \"cc\": \"%d.%d\", \"sm_count\": %d, \"driver_api\": %d, "
                "\"runtime\": %d, \"max_threads_per_sm\": %d, \"max_blocks_per_sm\": %d, \"regs_per_sm\": %d, "
                "\"regs_per_block\": %d, \"shared_mem_per_sm_bytes\": %zu, \"shared_mem_per_block_bytes\": %zu, "
                "\"shared_mem_per_block_optin_bytes\": %d, \"reserved_shared_mem_per_block_bytes\": %zu, "
                "\"warp_size\": %d},\n",
                prop.name, prop.major, prop.minor, prop.multiProcessorCount, driver, runtime,
                prop.maxThreadsPerMultiProcessor, prop.maxBlocksPerMultiProcessor, prop.regsPerMultiprocessor,
                prop.regsPerBlock, prop.sharedMemPerMultiprocessor, prop.sharedMemPerBlock, optin,
                prop.reservedSharedMemPerBlock, prop.warpSize);
    struct K {
        const char* name;
        const void* fn;
    } kernels[] = {{"small_kernel", (const void*)small_kernel},
                   {"regs_kernel", (const void*)regs_kernel},
                   {"regs128_kernel", (const void*)regs128_kernel},
                   {"static_smem_kernel", (const void*)static_smem_kernel}};
    const int carveouts[] = {-1, 0, 10, 25, 33, 50, 60, 75, 100};
    const int block_sizes[] = {64, 128, 256, 512, 1024};
    const size_t smems[] = {0, 1024, 8 * 1024, 20 * 1024, 40 * 1024, 48 * 1024, 60 * 1024, 100 * 1024, 160 * 1024,
                            227 * 1024};
    std::printf("  \"rows\": [\n");
    bool first = true;
    for (const K& k : kernels) {
        cudaFuncAttributes attr;
        cudaFuncGetAttributes(&attr, k.fn);
        for (int carveout : carveouts) {
            // A fresh start for each carveout: the opt-in off (48 KB), the carveout as given.
            cudaFuncSetAttribute(k.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, 48 * 1024 - (int)attr.sharedSizeBytes);
            cudaError_t set_carveout = cudaSuccess;
            if (carveout >= 0)
                set_carveout = cudaFuncSetAttribute(k.fn, cudaFuncAttributePreferredSharedMemoryCarveout, carveout);
            else
                cudaFuncSetAttribute(k.fn, cudaFuncAttributePreferredSharedMemoryCarveout, -1);
            for (int threads : block_sizes) {
                if (threads > attr.maxThreadsPerBlock) continue;
                for (size_t smem : smems) {
                    int plain = -1, opted = -1;
                    size_t avail_plain = 0, avail_opted = 0;
                    cudaFuncSetAttribute(k.fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         48 * 1024 - (int)attr.sharedSizeBytes);
                    cudaError_t e1 = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&plain, k.fn, threads, smem);
                    cudaGetLastError();
                    cudaError_t a1 = cudaOccupancyAvailableDynamicSMemPerBlock(&avail_plain, k.fn, 1, threads);
                    cudaGetLastError();
                    cudaError_t set_optin = cudaFuncSetAttribute(
                        k.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, optin - (int)attr.sharedSizeBytes);
                    cudaGetLastError();
                    cudaError_t e2 = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&opted, k.fn, threads, smem);
                    cudaGetLastError();
                    cudaError_t a2 = cudaOccupancyAvailableDynamicSMemPerBlock(&avail_opted, k.fn, 1, threads);
                    cudaGetLastError();
                    cudaFuncAttributes now;
                    cudaFuncGetAttributes(&now, k.fn);
                    std::printf("%s    {\"kernel\": \"%s\", \"registers_per_thread\": %d, \"static_smem_bytes\": %zu, "
                                "\"max_threads_per_block\": %d, \"carveout_pct\": %d, \"set_carveout\": \"%s\", "
                                "\"preferred_carveout_attr\": %d, \"block_threads\": %d, \"dynamic_smem_bytes\": %zu, "
                                "\"blocks_per_sm\": %d, \"blocks_per_sm_error\": \"%s\", "
                                "\"available_dynamic_smem_bytes\": %zu, \"available_error\": \"%s\", "
                                "\"optin_max_dynamic_smem_bytes\": %d, \"set_optin\": \"%s\", "
                                "\"blocks_per_sm_optin\": %d, \"blocks_per_sm_optin_error\": \"%s\", "
                                "\"available_dynamic_smem_bytes_optin\": %zu, \"available_optin_error\": \"%s\"}",
                                first ? "" : ",\n", k.name, attr.numRegs, attr.sharedSizeBytes, attr.maxThreadsPerBlock,
                                carveout, err_name(set_carveout), now.preferredShmemCarveout, threads, smem, plain,
                                err_name(e1), avail_plain, err_name(a1), optin - (int)attr.sharedSizeBytes,
                                err_name(set_optin), opted, err_name(e2), avail_opted, err_name(a2));
                    first = false;
                }
            }
        }
    }
    std::printf("\n  ]\n}\n");
    return 0;
}
