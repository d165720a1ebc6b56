"""Branch divergence: active threads per instruction first, branch efficiency with its caveats."""

from __future__ import annotations

from tests.analysis.rules.ctx import context, flags, ids, texts
from tracekit.analysis.rules import divergence

THREADS = "smsp__thread_inst_executed_per_inst_executed.ratio"
EFFICIENCY = "smsp__sass_average_branch_targets_threads_uniform.pct"
BRANCHES = "smsp__inst_executed_op_branch.sum"


def test_half_the_lanes_active_fires() -> None:
    found = divergence.apply(context({THREADS: 16.0}))
    assert flags(found) == ["branch-divergence"] and found[0].get("threads") == 16.0
    assert "Only 16 of 32 threads" in texts(found)


def test_full_warps_do_not_fire_even_with_low_branch_efficiency() -> None:
    found = divergence.apply(context({THREADS: 31.5, EFFICIENCY: 50.0}))
    assert ids(found) == ["divergence.cheap"] and flags(found) == []


def test_zero_branch_efficiency_of_a_kernel_without_branches_does_not_fire() -> None:
    assert ids(divergence.apply(context({EFFICIENCY: 0.0, BRANCHES: 0}))) == ["divergence.no-branches"]
    assert ids(divergence.apply(context({EFFICIENCY: 0.0}))) == ["divergence.no-branch-count"]
    assert flags(divergence.apply(context({EFFICIENCY: 60.0, BRANCHES: 100}))) == ["branch-divergence"]
