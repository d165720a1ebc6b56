"""Nsight Compute display names to metric ids, per section: what `--page details` shows versus what the analysis reads.

The details page prints each section's metrics under their display labels ("Achieved Occupancy" in "Occupancy"),
while the raw page and `.ncu-rep` files use metric ids (`sm__warps_active.avg.pct_of_peak_sustained_active`).
The pairs below come from Nsight Compute's own section files (`sections/*.section`, 2025 releases: the `Label` /
`Name` pairs of each section's Header and Body) and were cross-checked against the labels an `.ncu-rep` report
carries (RTX 2080 Ti report read with `ncu_report`, `ISection.header_metrics()` / `body_metrics()`).

A label is keyed by (section display name, label) because labels repeat across sections with different meanings:
"Memory Throughput" is a % in "GPU Speed Of Light Throughput" but byte/s in "Memory Workload Analysis".
Where releases disagree the newer section file wins (older releases used `.pct_of_peak_sustained_active` for
"SM Busy" and "Issue Slots Busy"; 2025 files use `..._elapsed`).

Older releases (2019.x to 2020.3) named the Speed Of Light section "GPU Speed Of Light" and labelled its header
"SM [%]", "Memory [%]", "SOL FB" / "SOL DRAM", "SOL L2" / "SOL L2 Cache", "SOL TEX" / "SOL L1/TEX Cache" and
"Memory Frequency" (2020.1 exports in tests/importers/data/ncu_csv/; the 2020.3 labels as scripts of that time
read them). The metric ids behind these labels did not change, only the labels did; `_OLD_SPEED_OF_LIGHT` maps
them under both section names, since 2021-2022 releases printed "Compute (SM) [%]" and "Memory [%]" under the new
name.
"""

from __future__ import annotations

SPEED_OF_LIGHT = "GPU Speed Of Light Throughput"
OLD_SPEED_OF_LIGHT = "GPU Speed Of Light"  # the section's display name up to 2020.3
LAUNCH_STATISTICS = "Launch Statistics"
OCCUPANCY = "Occupancy"
COMPUTE_WORKLOAD = "Compute Workload Analysis"
MEMORY_WORKLOAD = "Memory Workload Analysis"
SCHEDULER_STATISTICS = "Scheduler Statistics"
WARP_STATE_STATISTICS = "Warp State Statistics"
SOURCE_COUNTERS = "Source Counters"
INSTRUCTION_STATISTICS = "Instruction Statistics"
WORKLOAD_DISTRIBUTION = "GPU and Memory Workload Distribution"

# Speed Of Light header labels of 2019.x-2020.x (and "[%]" labels of 2021-2022), for the same metric ids.
_OLD_SPEED_OF_LIGHT = {
    "SM [%]": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "Compute (SM) [%]": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "Memory [%]": "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    # "FB" is the frame buffer: DRAM. The old sections read dram__throughput (gpu__dram_throughput came later).
    "SOL FB": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "SOL DRAM": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "SOL L2": "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "SOL L2 Cache": "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "SOL TEX": "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "SOL L1/TEX Cache": "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "Memory Frequency": "dram__cycles_elapsed.avg.per_second",
}

_BY_SECTION: dict[str, dict[str, str]] = {
    SPEED_OF_LIGHT: {
        "Compute (SM) Throughput": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        "Duration": "gpu__time_duration.sum",
        "Memory Throughput": "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
        "Elapsed Cycles": "gpc__cycles_elapsed.max",
        "L1/TEX Cache Throughput": "l1tex__throughput.avg.pct_of_peak_sustained_active",
        "SM Active Cycles": "sm__cycles_active.avg",
        "L2 Cache Throughput": "lts__throughput.avg.pct_of_peak_sustained_elapsed",
        "SM Frequency": "gpc__cycles_elapsed.avg.per_second",
        "DRAM Throughput": "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
        "DRAM Frequency": "dram__cycles_elapsed.avg.per_second",
        "Waves Per SM": "launch__waves_per_multiprocessor",
    },
    LAUNCH_STATISTICS: {
        "Grid Size": "launch__grid_size",
        "Function Cache Configuration": "launch__func_cache_config",
        "Cluster Size": "launch__cluster_size",
        "Preferred Cluster Size": "launch__preferred_cluster_size",
        "Registers Per Thread": "launch__registers_per_thread",
        "Cluster Scheduling Policy": "launch__cluster_scheduling_policy",
        "Static Shared Memory Per Block": "launch__shared_mem_per_block_static",
        "Block Size": "launch__block_size",
        "Dynamic Shared Memory Per Block": "launch__shared_mem_per_block_dynamic",
        "Threads": "launch__thread_count",
        "Driver Shared Memory Per Block": "launch__shared_mem_per_block_driver",
        "Waves Per SM": "launch__waves_per_multiprocessor",
        "Shared Memory Configuration Size": "launch__shared_mem_config_size",
        "Uses Green Context": "launch__uses_green_context",
        "Stack Size": "launch__stack_size",
        "# SMs": "launch__sm_count",
        "# TPCs": "launch__tpc_count",
        "Enabled TPC IDs": "launch__tpc_enabled",
    },
    OCCUPANCY: {
        "Theoretical Occupancy": "sm__maximum_warps_per_active_cycle_pct",
        "Theoretical Active Warps per SM": "sm__maximum_warps_avg_per_active_cycle",
        "Achieved Occupancy": "sm__warps_active.avg.pct_of_peak_sustained_active",
        "Achieved Active Warps Per SM": "sm__warps_active.avg.per_cycle_active",
        "Block Limit Registers": "launch__occupancy_limit_registers",
        "Block Limit Shared Mem": "launch__occupancy_limit_shared_mem",
        "Block Limit Warps": "launch__occupancy_limit_warps",
        "Block Limit SM": "launch__occupancy_limit_blocks",
        "Block Limit Barriers": "launch__occupancy_limit_barriers",
        "Cluster Occupancy": "launch__occupancy_cluster_pct",
        "Overall GPU Occupancy": "launch__occupancy_cluster_gpu_pct",
        "Max Active Clusters": "launch__cluster_max_active",
        "Max Cluster Size": "launch__cluster_max_potential_size",
        "GPU Maximum Warps Per Scheduler": "smsp__warps_active.avg.peak_sustained",
        "Theoretical Warps Per Scheduler": "smsp__maximum_warps_avg_per_active_cycle",
    },
    COMPUTE_WORKLOAD: {
        "Executed Ipc Elapsed": "sm__inst_executed.avg.per_cycle_elapsed",
        "SM Busy": "sm__instruction_throughput.avg.pct_of_peak_sustained_elapsed",
        "Executed Ipc Active": "sm__inst_executed.avg.per_cycle_active",
        "Issue Slots Busy": "sm__inst_issued.avg.pct_of_peak_sustained_elapsed",
        "Issued Ipc Active": "sm__inst_issued.avg.per_cycle_active",
        "Max. Issued Slots Busy": "sm__inst_issued.max.pct_of_peak_sustained_elapsed",
    },
    MEMORY_WORKLOAD: {
        "Memory Throughput": "dram__bytes.sum.per_second",
        "Mem Busy": "gpu__compute_memory_access_throughput.avg.pct_of_peak_sustained_elapsed",
        "L1/TEX Hit Rate": "l1tex__t_sector_hit_rate.pct",
        "L1 Hit Rate": "l1tex__t_sector_hit_rate.pct",  # the label up to 2020.1
        "Max Bandwidth": "gpu__compute_memory_request_throughput.avg.pct_of_peak_sustained_elapsed",
        "L2 Hit Rate": "lts__t_sector_hit_rate.pct",
        "Mem Pipes Busy": "sm__memory_throughput.avg.pct_of_peak_sustained_elapsed",
        "L2 Compression Input Sectors": "lts__gcomp_input_sectors.sum",
        "L2 Compression Ratio": "lts__average_gcomp_output_sector_compression_achieved_rate.ratio",
        "L2 Compression Success Rate": "lts__average_gcomp_input_sector_success_rate.pct",
        "Local Memory Spilling Requests": "derived__local_spilling_requests",
        "Local Memory Spilling Request Overhead": "derived__local_spilling_requests_pct",
        "L2 Persisting Size": "launch__persisting_l2_cache_size",
    },
    SCHEDULER_STATISTICS: {
        "Active Warps Per Scheduler": "smsp__warps_active.avg.per_cycle_active",
        "Eligible Warps Per Scheduler": "smsp__warps_eligible.avg.per_cycle_active",
        "No Eligible": "smsp__issue_inst0.avg.pct_of_peak_sustained_active",
        "One or More Eligible": "smsp__issue_active.avg.pct_of_peak_sustained_active",
        "Issued Warp Per Scheduler": "smsp__issue_active.avg.per_cycle_active",
        "GPU Maximum Warps Per Scheduler": "smsp__warps_active.avg.peak_sustained",
        "Theoretical Warps Per Scheduler": "smsp__maximum_warps_avg_per_active_cycle",
    },
    WARP_STATE_STATISTICS: {
        "Warp Cycles Per Issued Instruction": "smsp__average_warp_latency_per_inst_issued.ratio",
        "Warp Cycles Per Executed Instruction": "smsp__average_warps_active_per_inst_executed.ratio",
        "Warp Cycles Per Issue Active": "smsp__average_warps_active_per_issue_active.ratio",  # up to 2020.x
        "Avg. Active Threads Per Warp": "smsp__thread_inst_executed_per_inst_executed.ratio",
        "Avg. Not Predicated Off Threads Per Warp": "smsp__thread_inst_executed_pred_on_per_inst_executed.ratio",
        "Issued Warp Per Scheduler": "smsp__issue_active.avg.per_cycle_active",
        # The stall reasons (body chart; printed with --print-details all): cycles per issued instruction.
        **{
            label: f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio"
            for label, reason in {
                "Stall Barrier": "barrier",
                "Stall Branch Resolving": "branch_resolving",
                "Stall Dispatch Stall": "dispatch_stall",
                "Stall Drain": "drain",
                "Stall GMMA": "gmma",
                "Stall IMC Miss": "imc_miss",
                "Stall LG Throttle": "lg_throttle",
                "Stall Long Scoreboard": "long_scoreboard",
                "Stall Math Pipe Throttle": "math_pipe_throttle",
                "Stall Membar": "membar",
                "Stall MIO Throttle": "mio_throttle",
                "Stall Misc": "misc",
                "Stall No Instruction": "no_instruction",
                "Stall Not Selected": "not_selected",
                "Selected": "selected",
                "Stall Short Scoreboard": "short_scoreboard",
                "Stall Sleeping": "sleeping",
                "Stall Tex Throttle": "tex_throttle",
                "Stall Wait": "wait",
            }.items()
        },
    },
    SOURCE_COUNTERS: {
        "Branch Instructions": "smsp__inst_executed_op_branch.sum",
        "Branch Efficiency": "smsp__sass_average_branch_targets_threads_uniform.pct",
        "Branch Instructions Ratio": "derived__smsp__inst_executed_op_branch_pct",
        "Avg. Divergent Branches": "smsp__sass_branch_targets_threads_divergent.avg",
        "Executed Instructions": "smsp__inst_executed.sum",
        "Elapsed Cycles": "gpc__cycles_elapsed.max",
        "L2 Theoretical Sectors Global Excessive": "derived__memory_l2_theoretical_sectors_global_excessive",
        "L1 Wavefronts Shared Excessive": "derived__memory_l1_wavefronts_shared_excessive",
    },
    INSTRUCTION_STATISTICS: {
        "Executed Instructions": "smsp__inst_executed.sum",
        "Avg. Executed Instructions Per Scheduler": "smsp__inst_executed.avg",
        "Issued Instructions": "smsp__inst_issued.sum",
        "Avg. Issued Instructions Per Scheduler": "smsp__inst_issued.avg",
    },
    WORKLOAD_DISTRIBUTION: {
        "Average SM Active Cycles": "sm__cycles_active.avg",
        "Average L1 Active Cycles": "l1tex__cycles_active.avg",
        "Average L2 Active Cycles": "lts__cycles_active.avg",
        "Average SMSP Active Cycles": "smsp__cycles_active.avg",
        "Average DRAM Active Cycles": "dram__cycles_active.avg",
        "Average MC Channel Active Cycles": "mcc__cycles_active.avg",
        "Total SM Elapsed Cycles": "sm__cycles_elapsed.sum",
        "Total L1 Elapsed Cycles": "l1tex__cycles_elapsed.sum",
        "Total L2 Elapsed Cycles": "lts__cycles_elapsed.sum",
        "Total SMSP Elapsed Cycles": "smsp__cycles_elapsed.sum",
        "Total DRAM Elapsed Cycles": "dram__cycles_elapsed.sum",
        "Total MC Channel Elapsed Cycles": "mcc__cycles_elapsed.sum",
    },
}

# The old section name shows the old labels and the new ones; the new name keeps the "[%]" labels of 2021-2022.
_BY_SECTION[OLD_SPEED_OF_LIGHT] = {**_BY_SECTION[SPEED_OF_LIGHT], **_OLD_SPEED_OF_LIGHT}
_BY_SECTION[SPEED_OF_LIGHT] = {**_OLD_SPEED_OF_LIGHT, **_BY_SECTION[SPEED_OF_LIGHT]}

# (section display name, metric label) -> metric id.
DISPLAY_TO_METRIC_ID: dict[tuple[str, str], str] = {
    (section, label): metric_id for section, labels in _BY_SECTION.items() for label, metric_id in labels.items()
}


def metric_id(section: str | None, label: str) -> str | None:
    """The metric id a details-page row shows as `label` in `section`, or None when it is not a standard label."""
    if section is None:
        return None
    return DISPLAY_TO_METRIC_ID.get((section, label))
