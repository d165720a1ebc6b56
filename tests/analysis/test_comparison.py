"""Side-by-side comparison and regression gates over analysis results."""

from __future__ import annotations

import pytest

from tracekit.analysis.comparison import GateOutcome, compare_results, evaluate_gate, parse_gate
from tracekit.errors import TracekitError
from tracekit.present.comparison import gate_message


def result(duration_ns: float, mean_latency_ns: float | None = None, mode: str = "latency-bound") -> dict:
    return {
        "kernel": {"name": "k"},
        "duration_ns": duration_ns,
        "warps": {"mean_latency_ns": mean_latency_ns},
        "classification": {"mode": mode},
    }


def test_means_changes_and_noise() -> None:
    comparison = compare_results([result(100.0, 10.0), result(110.0, 10.0)], [result(150.0, 9.0), result(152.0, 9.0)])
    duration = comparison.field("duration_ns")
    assert (duration.a, duration.b) == (105.0, 151.0)
    assert duration.absolute_change == pytest.approx(46.0)
    assert duration.relative_change == pytest.approx(46.0 / 105.0)
    assert (duration.spread_a, duration.spread_b) == (10.0, 2.0)
    assert duration.within_noise is False
    assert duration.improved is False  # lower is better and it went up
    latency = comparison.field("warps.mean_latency_ns")
    assert latency.absolute_change == pytest.approx(-1.0)
    assert latency.within_noise is False and latency.improved is True

    noisy = compare_results([result(100.0), result(120.0)], [result(110.0)]).field("duration_ns")
    assert noisy.within_noise is True and noisy.improved is None
    single = compare_results([result(100.0)], [result(101.0)]).field("duration_ns")
    assert single.within_noise is None


def test_missing_values_stay_null() -> None:
    comparison = compare_results([result(100.0)], [result(90.0)])
    assert comparison.field("mean_latency_ns").a is None
    assert comparison.field("mean_latency_ns").absolute_change is None
    assert comparison.to_dict()["text_fields"][0] == {
        "field": "verdict",
        "a": "latency-bound",
        "b": "latency-bound",
        "changed": False,
    }


def test_gates() -> None:
    """A gate's result is data (outcome, change, the gated field); `present.comparison.gate_message` words it, in
    the table's display units and labels whatever name the gate used for its field."""
    comparison = compare_results([result(100.0, 10.0)], [result(106.0, 10.5)])
    failing = evaluate_gate(comparison, parse_gate("duration_ns>+5%"))
    assert failing.failed and failing.change == pytest.approx(0.06) and failing.outcome is GateOutcome.FAILED
    assert gate_message(failing) == "duration_ns>+5%: FAILED: duration changed by +6% (100 ns -> 106 ns)"
    passing = evaluate_gate(comparison, parse_gate("mean_latency_ns>+10%"))
    assert passing.outcome is GateOutcome.PASSED and gate_message(passing).startswith("mean_latency_ns>+10%: passed: ")
    absolute = evaluate_gate(comparison, parse_gate("warps.mean_latency_ns>+0.4"))  # absolute: +0.5 ns
    assert absolute.failed and gate_message(absolute) == (
        "warps.mean_latency_ns>+0.4: FAILED: warp latency, mean changed by +0.5 ns (10 ns -> 10.5 ns)"
    )
    assert not evaluate_gate(comparison, parse_gate("duration_ns<-5%")).failed
    missing = evaluate_gate(comparison, parse_gate("tail_fraction>+1%"))
    assert not missing.failed and missing.outcome is GateOutcome.NOT_EVALUATED and missing.missing_sides == ("A", "B")
    # one wording with `tracekit compare`: a gate that cannot be evaluated fails there, and its message says so
    assert gate_message(missing).startswith("tail_fraction>+1%: FAILED: cannot be evaluated, tail_fraction is missing")
    one_side = compare_results([result(100.0, 10.0)], [result(106.0)])
    assert evaluate_gate(one_side, parse_gate("mean_latency_ns>+1%")).missing_sides == ("B",)


@pytest.mark.parametrize("text", ["duration_ns", "duration_ns>=5%", "nonsense>+5%", "duration_ns>five%"])
def test_bad_gates_are_one_clear_error(text: str) -> None:
    with pytest.raises(TracekitError, match="--fail-if"):
        parse_gate(text)
