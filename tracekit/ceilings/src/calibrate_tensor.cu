// tracekit calibrate, dense tensor FLOP/s through cuBLASLt (wgmma kernels on Hopper, which mma.sync cannot reach).
// Square matmuls, TN layout (what FP8 and int8 require), FP32 accumulation (int32 for int8); prints one JSON object
// of sweep points on stdout.
//   calibrate_tensor [--quick] [--repeats N]
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

static int g_repeats = 5;
static std::vector<std::string> g_points;

static void emit_error(const char* sweep, const char* what, int code) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "{\"sweep\": \"%s\", \"error\": \"%s (status %d)\"}", sweep, what, code);
    g_points.push_back(buf);
}

static void matmul(const char* sweep, cudaDataType_t ab, cudaDataType_t cd, cublasComputeType_t compute, int size,
                   cublasLtHandle_t handle, void* workspace, size_t workspace_bytes) {
    const size_t e_ab = ab == CUDA_R_32F ? 4 : (ab == CUDA_R_8F_E4M3 || ab == CUDA_R_8I ? 1 : 2),
                 e_cd = cd == CUDA_R_32F || cd == CUDA_R_32I ? 4 : 2;
    const size_t m = size, n = size, k = size;
    void *A = nullptr, *B = nullptr, *C = nullptr;
    if (cudaMalloc(&A, m * k * e_ab) || cudaMalloc(&B, k * n * e_ab) || cudaMalloc(&C, m * n * e_cd)) {
        emit_error(sweep, "cudaMalloc failed", 0);
        cudaFree(A), cudaFree(B), cudaFree(C);
        return;
    }
    cudaMemset(A, 0x3c, m * k * e_ab);  // small nonzero values in every format
    cudaMemset(B, 0x3c, k * n * e_ab);
    cudaMemset(C, 0, m * n * e_cd);
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
    cublasLtMatmulPreference_t pref = nullptr;
    const bool integer = compute == CUBLAS_COMPUTE_32I;
    cublasStatus_t st = cublasLtMatmulDescCreate(&op, compute, integer ? CUDA_R_32I : CUDA_R_32F);
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    if (!st) st = cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
    if (!st) st = cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
    if (!st) st = cublasLtMatrixLayoutCreate(&la, ab, k, m, k);
    if (!st) st = cublasLtMatrixLayoutCreate(&lb, ab, k, n, k);
    if (!st) st = cublasLtMatrixLayoutCreate(&lc, cd, m, n, m);
    if (!st) st = cublasLtMatmulPreferenceCreate(&pref);
    if (!st)
        st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                                  sizeof workspace_bytes);
    cublasLtMatmulHeuristicResult_t result;
    int found = 0;
    if (!st) st = cublasLtMatmulAlgoGetHeuristic(handle, op, la, lb, lc, lc, pref, 1, &result, &found);
    if (st || !found) {
        emit_error(sweep, "no cuBLASLt algorithm", (int)st);
    } else {
        const float alpha = 1.0f, beta = 0.0f;
        const int ialpha = 1, ibeta = 0;  // int8 (IMMA) scales in the int32 compute type
        const void* pa = integer ? (const void*)&ialpha : (const void*)&alpha;
        const void* pb = integer ? (const void*)&ibeta : (const void*)&beta;
        auto run = [&] {
            return cublasLtMatmul(handle, op, pa, A, la, B, lb, pb, C, lc, C, lc, &result.algo, workspace,
                                  workspace_bytes, 0);
        };
        st = run();
        cudaDeviceSynchronize();
        if (st) {
            emit_error(sweep, "cublasLtMatmul failed", (int)st);
        } else {
            cudaEvent_t e0, e1;
            cudaEventCreate(&e0);
            cudaEventCreate(&e1);
            std::string secs;
            const int inner = 5;  // matmuls per timed repeat
            for (int r = 0; r < g_repeats; ++r) {
                cudaEventRecord(e0);
                for (int i = 0; i < inner; ++i) run();
                cudaEventRecord(e1);
                cudaEventSynchronize(e1);
                float ms = 0;
                cudaEventElapsedTime(&ms, e0, e1);
                char buf[64];
                std::snprintf(buf, sizeof buf, "%s%.9g", r ? ", " : "", ms * 1e-3);
                secs += buf;
            }
            char head[256];
            std::snprintf(head, sizeof head,
                          "{\"sweep\": \"%s\", \"params\": {\"size\": %d, \"matmuls\": %d}, \"amount\": %.17g, "
                          "\"unit\": \"flop\", \"seconds\": [",
                          sweep, size, inner, 2.0 * m * n * k * inner);
            g_points.push_back(std::string(head) + secs + "]}");
            cudaEventDestroy(e0);
            cudaEventDestroy(e1);
        }
    }
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (lc) cublasLtMatrixLayoutDestroy(lc);
    if (op) cublasLtMatmulDescDestroy(op);
    cudaFree(A), cudaFree(B), cudaFree(C);
}

int main(int argc, char** argv) {
    bool quick = false;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--quick")) quick = true;
        else if (!std::strcmp(argv[i], "--repeats") && i + 1 < argc) g_repeats = std::max(2, std::atoi(argv[++i]));
    }
    if (quick) g_repeats = std::min(g_repeats, 3);
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, 0)) return 3;
    cublasLtHandle_t handle;
    if (cublasLtCreate(&handle)) return 3;
    const size_t workspace_bytes = 64ull << 20;
    void* workspace = nullptr;
    cudaMalloc(&workspace, workspace_bytes);
    std::fprintf(stderr, "calibrate: tensor cores (cuBLASLt matmuls)\n");
    const std::vector<int> sizes = quick ? std::vector<int>{4096} : std::vector<int>{4096, 8192, 16384};
    const int cc = prop.major * 10 + prop.minor;
    for (int s : sizes) {
        matmul("tensor_cublaslt_fp16", CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, s, handle, workspace,
               workspace_bytes);
        matmul("tensor_cublaslt_bf16", CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, s, handle, workspace,
               workspace_bytes);
        matmul("tensor_cublaslt_tf32", CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, s, handle, workspace,
               workspace_bytes);
        if (cc >= 89 && s <= 8192)  // fp8 at twice the size (8192, 16384): it needs more work to fill the GPU
            matmul("tensor_cublaslt_fp8", CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, s * 2, handle, workspace,
                   workspace_bytes);
        if (cc >= 75 && s <= 8192)  // int8 IMMA, int32 accumulation
            matmul("tensor_cublaslt_int8", CUDA_R_8I, CUDA_R_32I, CUBLAS_COMPUTE_32I, s * 2, handle, workspace,
                   workspace_bytes);
    }
    std::printf("{\"points\": [\n");
    for (size_t i = 0; i < g_points.size(); ++i)
        std::printf("%s%s\n", g_points[i].c_str(), i + 1 < g_points.size() ? "," : "");
    std::printf("]}\n");
    cublasLtDestroy(handle);
    return 0;
}
