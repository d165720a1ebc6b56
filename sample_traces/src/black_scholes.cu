// Black-Scholes European call and put prices (after the CUDA sample), written with the standard math functions
// (expf, logf, sqrtf, '/') so that -use_fast_math changes the instructions: make_samples.sh compiles this file
// twice, as black_scholes (IEEE) and black_scholes_fast_math (-use_fast_math), into one program.
#include "samples.cuh"

#ifndef BS_KERNEL
#define BS_KERNEL black_scholes
#endif
#define BS_CAT2(a, b) a##b
#define BS_CAT(a, b) BS_CAT2(a, b)

// Cumulative normal distribution, polynomial approximation (Abramowitz and Stegun 26.2.17).
__device__ inline float cumulative_normal(float d) {
    const float a1 = 0.31938153f, a2 = -0.356563782f, a3 = 1.781477937f, a4 = -1.821255978f, a5 = 1.330274429f;
    const float rsqrt_2pi = 0.39894228040143267794f;
    const float k = 1.0f / (1.0f + 0.2316419f * fabsf(d));
    float cnd = rsqrt_2pi * expf(-0.5f * d * d) * (k * (a1 + k * (a2 + k * (a3 + k * (a4 + k * a5)))));
    if (d > 0.0f) cnd = 1.0f - cnd;
    return cnd;
}

__global__ void BS_KERNEL(float* __restrict__ call, float* __restrict__ put, const float* __restrict__ price,
                          const float* __restrict__ strike, const float* __restrict__ years, float riskfree,
                          float volatility, int options_per_thread, WarpRecord* rec) {
    WARP_TRACE_BEGIN(rec);
    const size_t base = (size_t)blockIdx.x * blockDim.x * options_per_thread + threadIdx.x;
#pragma unroll 1
    for (int k = 0; k < options_per_thread; ++k) {
        const size_t i = base + (size_t)k * blockDim.x;
        const float s = price[i], x = strike[i], t = years[i];
        const float sqrt_t = sqrtf(t);
        const float d1 = (logf(s / x) + (riskfree + 0.5f * volatility * volatility) * t) / (volatility * sqrt_t);
        const float d2 = d1 - volatility * sqrt_t;
        const float cnd1 = cumulative_normal(d1), cnd2 = cumulative_normal(d2);
        const float discount = expf(-riskfree * t);
        call[i] = s * cnd1 - x * discount * cnd2;
        put[i] = x * discount * (1.0f - cnd2) - s * (1.0f - cnd1);
    }
    WARP_TRACE_END(rec);
}

const void* BS_CAT(BS_KERNEL, _function)() { return (const void*)BS_KERNEL; }

void BS_CAT(BS_KERNEL, _launch)(dim3 grid, dim3 block, float* call, float* put, const float* price,
                                const float* strike, const float* years, float riskfree, float volatility,
                                int options_per_thread, WarpRecord* rec) {
    BS_KERNEL<<<grid, block>>>(call, put, price, strike, years, riskfree, volatility, options_per_thread, rec);
}
