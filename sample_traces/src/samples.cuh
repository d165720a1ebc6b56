// Declarations shared by samples.cu and black_scholes.cu (compiled twice: with and without -use_fast_math).
#pragma once

#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#include "warp_trace.cuh"

#define CHECK(call)                                                                                  \
    do {                                                                                             \
        cudaError_t check_err_ = (call);                                                             \
        if (check_err_ != cudaSuccess) {                                                             \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                       \
                         cudaGetErrorString(check_err_));                                            \
            std::exit(1);                                                                            \
        }                                                                                            \
    } while (0)

// Black-Scholes: black_scholes.cu defines the kernel under the name BS_KERNEL and these two functions for it.
#define BLACK_SCHOLES_DECLARE(name)                                                                   \
    const void* name##_function();                                                                    \
    void name##_launch(dim3 grid, dim3 block, float* call, float* put, const float* price,           \
                       const float* strike, const float* years, float riskfree, float volatility,   \
                       int options_per_thread, WarpRecord* rec);

BLACK_SCHOLES_DECLARE(black_scholes)
BLACK_SCHOLES_DECLARE(black_scholes_fast_math)
