"""nvprof's metric names and values, in the quantities the analysis reads (Nsight Compute metric ids).

nvprof (CUDA 5 to 11, the only profiler for GPUs before Volta) names metrics `achieved_occupancy`,
`gld_efficiency`, `dram_utilization` ... The pairs below follow NVIDIA's nvprof-to-Nsight Compute metric table
(Nsight Compute CLI documentation, "nvprof Transition Guide", "Metric Comparison"); a value is converted where the
two differ in scale:
- `achieved_occupancy` is a fraction of the SM's warp slots (0.85); `sm__warps_active...pct...` is in percent.
- `warp_execution_efficiency` is a percent of 32 threads; `smsp__thread_inst_executed_per_inst_executed.ratio`
  counts threads (0 to 32).
- `*_utilization` metrics are levels from 0 (idle) to 10 (max) of the unit's peak ("Low (2)", "High (8)"); a level
  L is stored as L x 10 % of peak, a 10-point bucket. It is the only % of peak nvprof gives for DRAM, L2 and the
  L1/texture/shared unit, and what lets a `--metrics` table get a verdict (Volkov's 80%-of-peak rule reads it).
"""

from __future__ import annotations

# nvprof name -> (Nsight Compute id, factor applied to nvprof's value in its base unit).
NVPROF_TO_NCU: dict[str, tuple[str, float]] = {
    "achieved_occupancy": ("sm__warps_active.avg.pct_of_peak_sustained_active", 100.0),
    "sm_efficiency": ("smsp__cycles_active.avg.pct_of_peak_sustained_elapsed", 1.0),
    "branch_efficiency": ("smsp__sass_average_branch_targets_threads_uniform.pct", 1.0),
    "warp_execution_efficiency": ("smsp__thread_inst_executed_per_inst_executed.ratio", 32.0 / 100.0),
    "issue_slot_utilization": ("smsp__issue_active.avg.pct_of_peak_sustained_active", 1.0),
    "ipc": ("sm__inst_executed.avg.per_cycle_active", 1.0),
    "issued_ipc": ("sm__inst_issued.avg.per_cycle_active", 1.0),
    "inst_executed": ("smsp__inst_executed.sum", 1.0),
    "inst_issued": ("smsp__inst_issued.sum", 1.0),
    "eligible_warps_per_cycle": ("smsp__warps_eligible.avg.per_cycle_active", 1.0),
    "gld_efficiency": ("smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct", 1.0),
    "gst_efficiency": ("smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct", 1.0),
    "shared_efficiency": ("smsp__sass_average_data_bytes_per_wavefront_mem_shared.pct", 1.0),
    "dram_read_transactions": ("dram__sectors_read.sum", 1.0),
    "dram_write_transactions": ("dram__sectors_write.sum", 1.0),
    "dram_read_bytes": ("dram__bytes_read.sum", 1.0),
    "dram_write_bytes": ("dram__bytes_write.sum", 1.0),
    "dram_read_throughput": ("dram__bytes_read.sum.per_second", 1.0),
    "dram_write_throughput": ("dram__bytes_write.sum.per_second", 1.0),
    "global_hit_rate": ("l1tex__t_sector_hit_rate.pct", 1.0),
    "l2_tex_hit_rate": ("lts__t_sector_hit_rate.pct", 1.0),
    # Utilization levels (0-10) as % of peak.
    "dram_utilization": ("dram__throughput.avg.pct_of_peak_sustained_elapsed", 10.0),
    "l2_utilization": ("lts__throughput.avg.pct_of_peak_sustained_elapsed", 10.0),
    "shared_utilization": ("l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed", 10.0),
    "single_precision_fu_utilization": ("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active", 10.0),
    "double_precision_fu_utilization": ("sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active", 10.0),
    "half_precision_fu_utilization": ("sm__pipe_fp16_cycles_active.avg.pct_of_peak_sustained_active", 10.0),
    "tensor_precision_fu_utilization": ("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", 10.0),
    "special_fu_utilization": ("sm__pipe_xu_cycles_active.avg.pct_of_peak_sustained_active", 10.0),
    "ldst_fu_utilization": ("sm__pipe_lsu_cycles_active.avg.pct_of_peak_sustained_active", 10.0),
    "cf_fu_utilization": ("sm__pipe_cbu_cycles_active.avg.pct_of_peak_sustained_active", 10.0),
    # Kepler (CC 3.x) has one arithmetic unit for integer and floating-point instructions, `alu_fu_utilization`
    # (Maxwell on splits it into the single/double/half precision units above): as Nsight's ALU pipe.
    "alu_fu_utilization": ("sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active", 10.0),
}

# Sums of two nvprof metrics that make one engine quantity (read + write DRAM traffic).
NVPROF_SUMS: dict[str, tuple[str, str]] = {
    "dram__bytes.sum.per_second": ("dram_read_throughput", "dram_write_throughput"),
    "dram__bytes.sum": ("dram_read_bytes", "dram_write_bytes"),
}
# Where the transition guide names a narrower counter than the unit's throughput the engine reads (L2's
# `lts__t_sectors`, the texture unit's request cycles), the level is stored under the engine's unit id. nvprof's
# L1/texture and shared utilizations are two views of one unit on Maxwell and later: the busier is its % of peak.
L1_SHARED = "l1tex__throughput.avg.pct_of_peak_sustained_active"
L1_SHARED_LEVELS = ("tex_utilization", "shared_utilization")
# Not mapped: nvprof's global, local and shared "transactions". The guide pairs them with L1 sectors and
# wavefronts, but their size differs by GPU: a fully coalesced 32-bit load (gld_efficiency 100%) counts 8
# transactions per request on a GTX 1080 Ti, where 4 sectors would be coalesced, so as sectors they would
# report uncoalesced access that did not happen. gld_efficiency / gst_efficiency say it directly.
