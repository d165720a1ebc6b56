"""Local memory: register spills or local arrays."""

from __future__ import annotations

from tests.analysis.rules.ctx import context, flags, texts
from tracekit.analysis.rules import spills

LOCAL_LD, LOCAL_ST = "smsp__sass_inst_executed_op_local_ld.sum", "smsp__sass_inst_executed_op_local_st.sum"


def test_local_loads_fire_and_cite_only_the_nonzero_counters() -> None:
    found = spills.apply(context({LOCAL_LD: 12, LOCAL_ST: 0}))
    assert flags(found) == ["register-spills"] and found[0].metrics == (LOCAL_LD,)
    assert f"{LOCAL_LD} = 12" in texts(found)


def test_zero_local_traffic_does_not_fire() -> None:
    assert spills.apply(context({LOCAL_LD: 0, LOCAL_ST: 0})) == []
