// warp_trace.cuh - record when each warp of a kernel starts and ends, and on which SM (tracekit).
//
// Use:
//   #include "warp_trace.cuh"
//
//   __global__ void my_kernel(const float* in, float* out, WarpRecord* rec) {
//       WARP_TRACE_BEGIN(rec);   // first statement of the kernel
//       ...                      // the kernel's work (no early `return` between the two macros)
//       WARP_TRACE_END(rec);     // last statement, reached by every thread that started
//   }
//
//   // host: one record per warp of the launch; rec == nullptr turns tracing off (two untaken branches remain)
//   size_t n = warp_trace::record_count(grid, block);
//   WarpRecord* rec;  cudaMalloc(&rec, n * sizeof(WarpRecord));  cudaMemset(rec, 0, n * sizeof(WarpRecord));
//   my_kernel<<<grid, block, smem>>>(in, out, rec);
//   warp_trace::write_csv("my_kernel.csv", "my_kernel", (const void*)my_kernel, grid, block, smem, rec);
//
// Each record holds %globaltimer at entry and exit (ns, one clock for all SMs; 32 ns steps on an H100), clock64()
// at entry and exit (cycles of that SM's own counter, not comparable across SMs) and %smid. The lowest active
// lane of each warp reads the timers after __syncwarp(), so a record spans the whole warp. Records are indexed by
// linearized blockIdx and by linearized threadIdx / 32. The cost is a few instructions and one 40-byte store per
// warp; tracing with a null pointer costs two predicated-off branches.
//
// write_csv writes the tracekit warp-trace CSV (v1): `# key: value` metadata lines (kernel, device, clock, launch
// configuration, registers and shared memory from cudaFuncGetAttributes), then
// `launch,sm_id,block_id,warp_in_block,start_ns,end_ns,start_cycles,end_cycles` and one row per warp.
#pragma once

struct WarpRecord {
    unsigned long long start_ns;  // %globaltimer at entry
    unsigned long long end_ns;    // %globaltimer at exit (0 if the warp never reached WARP_TRACE_END)
    long long start_cycles;       // clock64() at entry
    long long end_cycles;         // clock64() at exit
    unsigned int sm_id;           // %smid
    unsigned int reserved;
};

namespace warp_trace {

__device__ __forceinline__ unsigned long long globaltimer_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)::"memory");
    return t;
}

__device__ __forceinline__ unsigned int sm_id() {
    unsigned int id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    return id;
}

__device__ __forceinline__ unsigned int lane_id() {
    unsigned int lane;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
    return lane;
}

// Index of this warp's record: linearized block * warps per block + linearized thread / 32.
__device__ __forceinline__ unsigned long long record_index() {
    const unsigned long long block =
        blockIdx.x + (unsigned long long)gridDim.x * (blockIdx.y + (unsigned long long)gridDim.y * blockIdx.z);
    const unsigned int thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const unsigned int warps_per_block = (blockDim.x * blockDim.y * blockDim.z + 31) / 32;
    return block * warps_per_block + thread / 32;
}

}  // namespace warp_trace

// Entry: all lanes read the timers (the values of the lowest active lane are the ones stored at exit).
#define WARP_TRACE_BEGIN(rec)                                        \
    unsigned long long warp_trace_start_ns_ = 0;                     \
    long long warp_trace_start_cycles_ = 0;                          \
    if ((rec) != nullptr) {                                          \
        __syncwarp(__activemask());                                  \
        warp_trace_start_ns_ = warp_trace::globaltimer_ns();         \
        warp_trace_start_cycles_ = clock64();                        \
    }

// Exit: wait for the warp's active lanes, then its lowest active lane reads the timers and stores the record.
#define WARP_TRACE_END(rec)                                                                 \
    if ((rec) != nullptr) {                                                                 \
        const unsigned int warp_trace_mask_ = __activemask();                               \
        __syncwarp(warp_trace_mask_);                                                       \
        if (warp_trace::lane_id() == (unsigned int)(__ffs(warp_trace_mask_) - 1)) {         \
            const unsigned long long warp_trace_end_ns_ = warp_trace::globaltimer_ns();    \
            const long long warp_trace_end_cycles_ = clock64();                             \
            WarpRecord warp_trace_r_;                                                       \
            warp_trace_r_.start_ns = warp_trace_start_ns_;                                  \
            warp_trace_r_.end_ns = warp_trace_end_ns_;                                      \
            warp_trace_r_.start_cycles = warp_trace_start_cycles_;                          \
            warp_trace_r_.end_cycles = warp_trace_end_cycles_;                              \
            warp_trace_r_.sm_id = warp_trace::sm_id();                                      \
            warp_trace_r_.reserved = 0;                                                     \
            (rec)[warp_trace::record_index()] = warp_trace_r_;                              \
        }                                                                                   \
    }

// ---- named regions (warp-trace v2) ------------------------------------------------------------------------
//
//   enum Region : unsigned { LOAD, MMA, EPILOGUE };                 // ids index the host's name table
//   __global__ void k(..., WarpRecord* rec, warp_trace::RegionBuffer regions) {
//       WARP_TRACE_BEGIN(rec);
//       warp_trace::WarpRegions reg = warp_trace::regions_init(regions);   // per warp, in registers
//       WARP_REGION_BEGIN(reg, LOAD);  ...  WARP_REGION_END(reg, LOAD);     // nest freely, whole warp present
//       warp_trace::regions_flush(reg);                                     // before WARP_TRACE_END
//       WARP_TRACE_END(rec);
//   }
//   host: RegionBuffer b = warp_trace::alloc_regions(grid, block, capacity); ... write_csv_v2(...); free_regions(b);
//
// Each begin/end pair reads %globaltimer and clock64() after __syncwarp (so a region spans the whole warp) and,
// at the end, the warp's leader lane (its lowest active lane at regions_init) stores one 40-byte RegionRecord
// into the warp's own slice of `capacity` records: no atomics. Regions past the capacity are counted but not
// stored. A buffer with null records turns every marker into one untaken branch. Begin and end must be reached
// by the warp's leader lane (call them where the whole warp is converged, as in warp-specialized branches).

struct RegionRecord {
    unsigned long long start_ns;  // %globaltimer at WARP_REGION_BEGIN
    unsigned long long end_ns;    // %globaltimer at WARP_REGION_END
    long long start_cycles;       // clock64() at begin
    long long end_cycles;         // clock64() at end
    unsigned int region;          // the region id (index into the names given to write_csv_v2)
    unsigned int sm_id;           // %smid
};

namespace warp_trace {

struct RegionBuffer {
    RegionRecord* records;  // capacity records per warp, warps in record_index() order; nullptr: off
    unsigned int* counts;   // regions each warp ended (may exceed capacity: the excess was not stored)
    unsigned int capacity;
};

struct WarpRegions {
    RegionRecord* slice;
    unsigned int* count_out;
    unsigned int capacity;
    unsigned int count;
    unsigned int sm_id;
    bool leader;
};

struct RegionMark {
    unsigned long long start_ns;
    long long start_cycles;
};

__device__ __forceinline__ WarpRegions regions_init(const RegionBuffer& buffer) {
    WarpRegions w;
    w.count = 0;
    w.capacity = buffer.capacity;
    w.slice = nullptr;
    w.count_out = nullptr;
    w.sm_id = 0;
    w.leader = false;
    if (buffer.records != nullptr) {
        const unsigned long long warp = record_index();
        w.slice = buffer.records + warp * buffer.capacity;
        w.count_out = buffer.counts + warp;
        w.sm_id = sm_id();
        w.leader = lane_id() == (unsigned int)(__ffs(__activemask()) - 1);
    }
    return w;
}

__device__ __forceinline__ RegionMark region_begin(const WarpRegions& w) {
    RegionMark m;
    m.start_ns = 0;
    m.start_cycles = 0;
    if (w.slice != nullptr) {
        __syncwarp(__activemask());
        m.start_ns = globaltimer_ns();
        m.start_cycles = clock64();
    }
    return m;
}

__device__ __forceinline__ void region_end(WarpRegions& w, const RegionMark& m, unsigned int region) {
    if (w.slice != nullptr) {
        __syncwarp(__activemask());
        const unsigned long long end_ns = globaltimer_ns();
        const long long end_cycles = clock64();
        if (w.leader && w.count < w.capacity) {
            RegionRecord r;
            r.start_ns = m.start_ns;
            r.end_ns = end_ns;
            r.start_cycles = m.start_cycles;
            r.end_cycles = end_cycles;
            r.region = region;
            r.sm_id = w.sm_id;
            w.slice[w.count] = r;
        }
        ++w.count;
    }
}

__device__ __forceinline__ void regions_flush(const WarpRegions& w) {
    if (w.slice != nullptr && w.leader) *w.count_out = w.count;
}

}  // namespace warp_trace

// A region named by an identifier (an enum constant): the begin declares the mark the matching end reads.
#define WARP_REGION_BEGIN(reg, id) const warp_trace::RegionMark warp_region_mark_##id##_ = warp_trace::region_begin(reg)
#define WARP_REGION_END(reg, id) warp_trace::region_end(reg, warp_region_mark_##id##_, (unsigned int)(id))

#ifndef __CUDACC_RTC__
#include <cstdio>
#include <vector>

#include <cuda_runtime.h>

namespace warp_trace {

// Number of records one launch needs: blocks in the grid times warps per block.
inline size_t record_count(dim3 grid, dim3 block) {
    const size_t warps_per_block = ((size_t)block.x * block.y * block.z + 31) / 32;
    return (size_t)grid.x * grid.y * grid.z * warps_per_block;
}

// Copy `launches` consecutive launches' records (launch L at device_records + L * record_count) from the device
// and write them as a tracekit warp-trace CSV. `kernel` is the __global__ function (for its registers and static
// shared memory). launch_duration_ns < 0 leaves that optional line out. Records whose end_ns is 0 (warps that
// never reached WARP_TRACE_END, given a zeroed buffer) are skipped with a note on stderr. Returns the first CUDA
// error, or cudaErrorUnknown when the file cannot be written.
inline cudaError_t write_csv(const char* path, const char* kernel_name, const void* kernel, dim3 grid, dim3 block,
                             size_t dynamic_smem_bytes, const WarpRecord* device_records, int launches = 1,
                             double launch_duration_ns = -1.0) {
    int device = 0, sm_count = 0, clock_khz = 0, max_threads_per_sm = 0, major = 0, minor = 0;
    cudaDeviceProp prop;
    cudaFuncAttributes attr;
    cudaError_t err;
    if ((err = cudaGetDevice(&device)) != cudaSuccess) return err;
    if ((err = cudaGetDeviceProperties(&prop, device)) != cudaSuccess) return err;
    if ((err = cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device)) != cudaSuccess) return err;
    if ((err = cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device)) != cudaSuccess) return err;
    if ((err = cudaDeviceGetAttribute(&max_threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, device)) !=
        cudaSuccess)
        return err;
    if ((err = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device)) != cudaSuccess) return err;
    if ((err = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device)) != cudaSuccess) return err;
    if ((err = cudaFuncGetAttributes(&attr, kernel)) != cudaSuccess) return err;

    const size_t per_launch = record_count(grid, block);
    std::vector<WarpRecord> records(per_launch * launches);
    err = cudaMemcpy(records.data(), device_records, records.size() * sizeof(WarpRecord), cudaMemcpyDeviceToHost);
    if (err != cudaSuccess) return err;

    FILE* f = std::fopen(path, "w");
    if (f == nullptr) return cudaErrorUnknown;
    std::fprintf(f, "# tracekit-warp-trace v1\n");
    std::fprintf(f, "# kernel: %s\n", kernel_name);
    std::fprintf(f, "# device_name: %s\n", prop.name);
    std::fprintf(f, "# compute_capability: %d.%d\n", major, minor);
    std::fprintf(f, "# sm_count: %d\n", sm_count);
    std::fprintf(f, "# sm_clock_hz: %lld\n", (long long)clock_khz * 1000);
    std::fprintf(f, "# max_warps_per_sm: %d\n", max_threads_per_sm / 32);
    std::fprintf(f, "# grid: %u,%u,%u\n", grid.x, grid.y, grid.z);
    std::fprintf(f, "# block: %u,%u,%u\n", block.x, block.y, block.z);
    std::fprintf(f, "# registers_per_thread: %d\n", attr.numRegs);
    std::fprintf(f, "# static_smem_bytes: %zu\n", attr.sharedSizeBytes);
    std::fprintf(f, "# dynamic_smem_bytes: %zu\n", dynamic_smem_bytes);
    if (launch_duration_ns >= 0.0) std::fprintf(f, "# launch_duration_ns: %.0f\n", launch_duration_ns);
    std::fprintf(f, "# clock_bits: 64\n");
    std::fprintf(f, "launch,sm_id,block_id,warp_in_block,start_ns,end_ns,start_cycles,end_cycles\n");

    const size_t warps_per_block = ((size_t)block.x * block.y * block.z + 31) / 32;
    size_t missing = 0;
    for (size_t i = 0; i < records.size(); ++i) {
        const WarpRecord& r = records[i];
        if (r.end_ns == 0) {
            ++missing;
            continue;
        }
        const size_t in_launch = i % per_launch;
        std::fprintf(f, "%zu,%u,%zu,%zu,%llu,%llu,%lld,%lld\n", i / per_launch, r.sm_id, in_launch / warps_per_block,
                     in_launch % warps_per_block, r.start_ns, r.end_ns, r.start_cycles, r.end_cycles);
    }
    const bool write_failed = std::ferror(f) != 0;
    if (std::fclose(f) != 0 || write_failed) return cudaErrorUnknown;
    if (missing > 0)
        std::fprintf(stderr, "warp_trace: %s: %zu of %zu warps left no record (skipped)\n", path, missing,
                     records.size());
    return cudaSuccess;
}


// Device memory for `launches` launches' regions, zeroed: `capacity` records per warp.
inline RegionBuffer alloc_regions(dim3 grid, dim3 block, unsigned int capacity, int launches = 1) {
    RegionBuffer b{nullptr, nullptr, capacity};
    const size_t warps = record_count(grid, block) * launches;
    if (cudaMalloc(&b.records, warps * capacity * sizeof(RegionRecord)) != cudaSuccess) return RegionBuffer{};
    if (cudaMalloc(&b.counts, warps * sizeof(unsigned int)) != cudaSuccess) {
        cudaFree(b.records);
        return RegionBuffer{};
    }
    cudaMemset(b.counts, 0, warps * sizeof(unsigned int));
    return b;
}

inline void free_regions(RegionBuffer& b) {
    cudaFree(b.records);
    cudaFree(b.counts);
    b = RegionBuffer{};
}

// A launch's regions as seen from the host, for the writer.
inline RegionBuffer launch_slice(const RegionBuffer& b, dim3 grid, dim3 block, int launch) {
    const size_t warps = record_count(grid, block);
    return RegionBuffer{b.records + launch * warps * b.capacity, b.counts + launch * warps, b.capacity};
}

// Write the tracekit warp-trace v2 CSV: the v1 metadata, then
// `launch,sm_id,block_id,warp_in_block,region,start_ns,end_ns,start_cycles,end_cycles` with one whole-warp row
// (empty region) per warp when `warps` is not null and one row per stored region. `names[i]` names region id i
// (names must not contain commas or quotes). Warps whose regions overflowed the capacity are reported on stderr.
inline cudaError_t write_csv_v2(const char* path, const char* kernel_name, const void* kernel, dim3 grid, dim3 block,
                                size_t dynamic_smem_bytes, const WarpRecord* device_warps, const RegionBuffer& regions,
                                const char* const* names, unsigned int name_count, int launches = 1,
                                double launch_duration_ns = -1.0) {
    cudaDeviceProp prop;
    cudaFuncAttributes attr;
    int device = 0, clock_khz = 0;
    cudaError_t err;
    if ((err = cudaGetDevice(&device)) != cudaSuccess) return err;
    if ((err = cudaGetDeviceProperties(&prop, device)) != cudaSuccess) return err;
    if ((err = cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device)) != cudaSuccess) return err;
    if ((err = cudaFuncGetAttributes(&attr, kernel)) != cudaSuccess) return err;
    const size_t per_launch = record_count(grid, block);
    const size_t warps = per_launch * launches;
    std::vector<WarpRecord> warp_records(device_warps != nullptr ? warps : 0);
    std::vector<RegionRecord> records(warps * regions.capacity);
    std::vector<unsigned int> counts(warps);
    if (device_warps != nullptr &&
        (err = cudaMemcpy(warp_records.data(), device_warps, warps * sizeof(WarpRecord), cudaMemcpyDeviceToHost)) !=
            cudaSuccess)
        return err;
    if ((err = cudaMemcpy(records.data(), regions.records, records.size() * sizeof(RegionRecord),
                          cudaMemcpyDeviceToHost)) != cudaSuccess)
        return err;
    if ((err = cudaMemcpy(counts.data(), regions.counts, warps * sizeof(unsigned int), cudaMemcpyDeviceToHost)) !=
        cudaSuccess)
        return err;
    FILE* f = std::fopen(path, "w");
    if (f == nullptr) return cudaErrorUnknown;
    std::fprintf(f, "# tracekit-warp-trace v2\n# kernel: %s\n# device_name: %s\n", kernel_name, prop.name);
    std::fprintf(f, "# compute_capability: %d.%d\n# sm_count: %d\n", prop.major, prop.minor, prop.multiProcessorCount);
    std::fprintf(f, "# sm_clock_hz: %lld\n# max_warps_per_sm: %d\n", (long long)clock_khz * 1000,
                 prop.maxThreadsPerMultiProcessor / 32);
    std::fprintf(f, "# grid: %u,%u,%u\n# block: %u,%u,%u\n", grid.x, grid.y, grid.z, block.x, block.y, block.z);
    std::fprintf(f, "# registers_per_thread: %d\n# static_smem_bytes: %zu\n# dynamic_smem_bytes: %zu\n", attr.numRegs,
                 attr.sharedSizeBytes, dynamic_smem_bytes);
    if (launch_duration_ns >= 0.0) std::fprintf(f, "# launch_duration_ns: %.0f\n", launch_duration_ns);
    std::fprintf(f, "# clock_bits: 64\n# region_capacity_per_warp: %u\n", regions.capacity);
    std::fprintf(f, "launch,sm_id,block_id,warp_in_block,region,start_ns,end_ns,start_cycles,end_cycles\n");
    const size_t warps_per_block = ((size_t)block.x * block.y * block.z + 31) / 32;
    size_t overflowed = 0, lost = 0, unnamed = 0;
    for (size_t i = 0; i < warps; ++i) {
        const size_t launch = i / per_launch, in_launch = i % per_launch;
        const size_t block_id = in_launch / warps_per_block, warp = in_launch % warps_per_block;
        if (device_warps != nullptr && warp_records[i].end_ns != 0) {
            const WarpRecord& w = warp_records[i];
            std::fprintf(f, "%zu,%u,%zu,%zu,,%llu,%llu,%lld,%lld\n", launch, w.sm_id, block_id, warp, w.start_ns,
                         w.end_ns, w.start_cycles, w.end_cycles);
        }
        const unsigned int stored = counts[i] < regions.capacity ? counts[i] : regions.capacity;
        if (counts[i] > regions.capacity) {
            ++overflowed;
            lost += counts[i] - regions.capacity;
        }
        for (unsigned int k = 0; k < stored; ++k) {
            const RegionRecord& r = records[i * regions.capacity + k];
            if (r.region >= name_count) {
                ++unnamed;
                continue;
            }
            std::fprintf(f, "%zu,%u,%zu,%zu,%s,%llu,%llu,%lld,%lld\n", launch, r.sm_id, block_id, warp,
                         names[r.region], r.start_ns, r.end_ns, r.start_cycles, r.end_cycles);
        }
    }
    const bool write_failed = std::ferror(f) != 0;
    if (std::fclose(f) != 0 || write_failed) return cudaErrorUnknown;
    if (overflowed > 0)
        std::fprintf(stderr, "warp_trace: %s: %zu warps ended more regions than the capacity %u; %zu not stored\n",
                     path, overflowed, regions.capacity, lost);
    if (unnamed > 0) std::fprintf(stderr, "warp_trace: %s: %zu regions had an id without a name (skipped)\n", path,
                                  unnamed);
    return cudaSuccess;
}

}  // namespace warp_trace
#endif  // __CUDACC_RTC__
