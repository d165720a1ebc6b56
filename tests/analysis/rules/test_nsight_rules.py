"""Nsight Compute's rule results as evidence, each cross-checked with the verdict's flags."""

from __future__ import annotations

from tests.analysis.rules.ctx import context, ids, texts
from tracekit.analysis.rules import nsight_rules
from tracekit.analysis.rules.base import VerdictState

SECTORS, REQUESTS = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
RULES = {
    "rule:UncoalescedGlobalAccess": ("[OPT] This kernel has uncoalesced global accesses. More text.", 40.0),
    "rule:SOLBottleneck": ("[INF] Compute is more heavily utilized.", None),
}


def test_an_opt_rule_agrees_with_the_raised_flag() -> None:
    ctx = context(texts=RULES, state=VerdictState(flags=("uncoalesced-access",)))
    (rule,) = nsight_rules.results(ctx)
    assert (rule.name, rule.flag, rule.agrees, rule.estimated_speedup_pct) == (
        "UncoalescedGlobalAccess",
        "uncoalesced-access",
        True,
        40.0,
    )
    found = nsight_rules.apply(ctx)
    assert ids(found) == ["nsight-cross-check.UncoalescedGlobalAccess"]
    assert texts(found).endswith("uncoalesced global accesses. Agrees with the flag uncoalesced-access.")


def test_without_the_counters_the_rule_is_the_evidence() -> None:
    found = nsight_rules.apply(context(texts=RULES))
    assert found[0].get("check") == "no-counters"
    measured = nsight_rules.apply(context({SECTORS: 4000, REQUESTS: 1000}, texts=RULES))
    assert measured[0].get("check") == "below-threshold"


def test_no_rule_rows_no_findings() -> None:
    assert nsight_rules.apply(context({SECTORS: 1.0})) == []
