"""Named counters and their aliases, on hand-built frames and on the real RTX 2080 Ti sgemm report."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import ncu_rep_action, ncu_rep_metrics
from tracekit import counters as c
from tracekit.counters import metric, metric_row, metric_text, pipe_family, pipe_utilization_pct

SGEMM_REPORT = "ncu_rep_RTX2080Ti_sgemm_tanvisharma.ncu-rep"
COLUMNS = ["launch_id", "section", "name", "unit", "value", "text_value", "kind"]


def frame(rows: dict[str, float | str]) -> pl.DataFrame:
    """A metrics frame of one launch (the shape Store.metrics returns) from {name: value or text}."""
    return pl.DataFrame(
        [
            (
                1,
                None,
                name,
                None,
                None if isinstance(value, str) else float(value),
                value if isinstance(value, str) else None,
                "text" if isinstance(value, str) else "float",
            )
            for name, value in rows.items()
        ],
        schema=COLUMNS,
        orient="row",
    )


def test_metric_takes_the_first_alias_in_the_callers_order_not_the_frames():
    metrics = frame({"DRAM Throughput": 61.84, "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed": 12.5})
    assert metric(metrics, *c.DRAM_THROUGHPUT_PCT) == 12.5
    assert metric_row(metrics, *c.DRAM_THROUGHPUT_PCT) == (
        "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
        12.5,
    )
    assert metric(frame({"DRAM Throughput": 61.84}), *c.DRAM_THROUGHPUT_PCT) == 61.84


def test_metric_is_none_when_absent_empty_or_text():
    assert metric(frame({"lts__throughput.avg.pct_of_peak_sustained_elapsed": 3.0}), *c.DRAM_THROUGHPUT_PCT) is None
    assert metric(pl.DataFrame(schema=COLUMNS), *c.DRAM_THROUGHPUT_PCT) is None
    assert metric(pl.DataFrame(), "anything") is None
    assert metric(frame({"launch__func_cache_config": "CachePreferNone"}), "launch__func_cache_config") is None


def test_metric_text_gives_text_or_the_number_as_written():
    metrics = frame({"launch__func_cache_config": "CachePreferNone", "launch__grid_size": 50})
    assert metric_text(metrics, "missing", "launch__func_cache_config") == "CachePreferNone"
    assert metric_text(metrics, "launch__grid_size") == "50"
    assert metric_text(metrics, "missing") is None


@pytest.mark.parametrize(
    ("pipe", "family"),
    [
        ("fma", "fma"),
        ("fmaheavy", "fma"),
        ("fmalite", "fma"),
        ("fma_type_fp16", "fp16"),
        ("fp16", "fp16"),
        ("alu", "alu"),
        ("fp64", "fp64"),
        ("tensor_op_hmma", "tensor"),
        ("tensor_subpipe_imma", "tensor"),
        ("tc", "tensor"),
        ("xu", "xu"),
        ("lsu", "lsu"),
        ("cbu_pred_on_any", "cbu"),
        ("shared", "shared pipe"),
    ],
)
def test_pipe_family(pipe, family):
    assert pipe_family(pipe) == family


def test_pipe_utilization_prefers_active_forms_and_the_busiest_metric_of_a_family():
    metrics = frame(
        {
            "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active": 40.0,
            "sm__pipe_fmaheavy_cycles_active.avg.pct_of_peak_sustained_active": 55.0,
            "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed": 90.0,  # elapsed: ignored, active exists
            "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_elapsed": 7.0,  # only an elapsed form: used
        }
    )
    assert pipe_utilization_pct(metrics) == {
        "fma": ("sm__pipe_fmaheavy_cycles_active.avg.pct_of_peak_sustained_active", 55.0),
        "xu": ("sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_elapsed", 7.0),
    }


def test_real_report_needs_the_dram_alias_and_values_match_ncu_report(real_export):
    action = ncu_rep_action(real_export(SGEMM_REPORT))
    metrics = ncu_rep_metrics(action)
    names = set(metrics.get_column("name"))
    # This 2022/2023-era report names DRAM utilization only as gpu__dram_throughput: the alias is what finds it.
    assert "dram__throughput.avg.pct_of_peak_sustained_elapsed" not in names
    expected = action["gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"].value()
    assert metric(metrics, *c.DRAM_THROUGHPUT_PCT) == pytest.approx(expected)
    assert metric(metrics, *c.L1_THROUGHPUT_PCT) == pytest.approx(
        action["l1tex__throughput.avg.pct_of_peak_sustained_active"].value()
    )
    assert metric(metrics, *c.GRID_BLOCKS) == 50  # 2 x 25 blocks: launch__grid_dim_x * launch__grid_dim_y
    assert metric(metrics, *c.GRID_BLOCKS) == (
        action["launch__grid_dim_x"].value() * action["launch__grid_dim_y"].value()
    )
    assert metric(metrics, *c.WARP_CYCLES_PER_ISSUE) == pytest.approx(
        action["smsp__average_warp_latency_per_inst_issued.ratio"].value()
    )


def test_real_report_pipes_are_the_busiest_active_form_per_family(real_export):
    action = ncu_rep_action(real_export(SGEMM_REPORT))
    pipes = pipe_utilization_pct(ncu_rep_metrics(action))
    fma_forms = [
        "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active",
        "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    ]
    assert pipes["fma"][1] == pytest.approx(max(action[name].value() for name in fma_forms))
    assert pipes["lsu"] == (
        "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",
        pytest.approx(action["sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active"].value()),
    )
    # Turing's tensor pipe appears as tensor, tensor_op_hmma and tensor_op_imma: one family, all zero in an sgemm.
    assert pipes["tensor"][1] == 0.0


NAMES = [
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "dram__bytes.sum",
    "Duration",
    "sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active",
]


@settings(max_examples=200, deadline=None)
@given(
    layout=st.lists(st.sampled_from(NAMES), min_size=1, max_size=8),
    launches=st.lists(
        st.lists(st.one_of(st.none(), st.floats(0, 1e6, allow_nan=False)), min_size=8, max_size=8),
        min_size=1,
        max_size=4,
    ),
)
def test_launches_sharing_a_name_column_each_read_their_own_values(layout, launches):
    """Launches with the same name column share one layout (names repeated, values missing): each still gets the
    first numeric value of each name in its own frame, and its own pipe rows."""
    frames = [
        pl.DataFrame(
            {
                "launch_id": [i] * len(layout),
                "section": [None] * len(layout),
                "name": layout,
                "unit": [None] * len(layout),
                "value": values[: len(layout)],
                "text_value": [None] * len(layout),
                "kind": ["float"] * len(layout),
            },
            schema={
                "launch_id": pl.Int64,
                "section": pl.String,
                "name": pl.String,
                "unit": pl.String,
                "value": pl.Float64,
                "text_value": pl.String,
                "kind": pl.String,
            },
        )
        for i, values in enumerate(launches)
    ]
    for frame_ in frames:
        rows = list(zip(frame_["name"].to_list(), frame_["value"].to_list(), strict=True))
        for name in NAMES:
            expected = next((value for n, value in rows if n == name and value is not None), None)
            assert metric(frame_, name) == expected
            assert metric_row(frame_, "absent", name) == (None if expected is None else (name, expected))
        pipes = [(n, v) for n, v in rows if v is not None and n.startswith(("sm__pipe_", "sm__inst_executed_pipe_"))]
        assert c.candidate_rows(frame_, *c._PIPE_PATTERNS) == pipes


def _same(a: object, b: object) -> bool:
    """Equal, NaN equal to NaN (a NaN value is a value: only a null is none)."""
    return a == b or (isinstance(a, float) and isinstance(b, float) and a != a and b != b)


@settings(max_examples=200, deadline=None)
@given(
    layout=st.lists(st.sampled_from(NAMES), min_size=1, max_size=8),
    launches=st.lists(
        st.lists(
            st.one_of(st.none(), st.just(float("nan")), st.floats(0, 1e6, allow_nan=False)), min_size=8, max_size=8
        ),
        min_size=1,
        max_size=4,
    ),
)
def test_slices_of_one_frame_read_values_nulls_and_nans_as_stored(layout, launches):
    """Each launch a slice of one frame (as load_inputs hands them out): a null is no value, a NaN is a value, and
    every reader gives what the launch's own rows hold."""
    whole = pl.DataFrame(
        {
            "launch_id": [i for i in range(len(launches)) for _ in layout],
            "section": None,
            "name": layout * len(launches),
            "unit": None,
            "value": [v for values in launches for v in values[: len(layout)]],
            "text_value": [f"t{i}" for i in range(len(layout) * len(launches))],
            "kind": "float",
        },
        schema={c_: pl.String for c_ in COLUMNS} | {"launch_id": pl.Int64, "value": pl.Float64},
    )
    for i in range(len(launches)):
        frame_ = whole.slice(i * len(layout), len(layout))
        rows = list(zip(frame_["name"].to_list(), frame_["value"].to_list(), strict=True))
        for name in NAMES:
            expected = next((value for n, value in rows if n == name and value is not None), None)
            assert _same(metric(frame_, name), expected)
        pipes = [(n, v) for n, v in rows if v is not None and n.startswith(("sm__pipe_", "sm__inst_executed_pipe_"))]
        found = c.candidate_rows(frame_, *c._PIPE_PATTERNS)
        assert len(found) == len(pipes) and all(
            f[0] == p[0] and _same(f[1], p[1]) for f, p in zip(found, pipes, strict=True)
        )
        texts = frame_["text_value"].to_list()
        with_prefix = [(n, t, v) for (n, v), t in zip(rows, texts, strict=True) if n.startswith("sm__")]
        got = c.rows_with_prefix(frame_, "sm__")
        assert [g[:2] for g in got] == [w[:2] for w in with_prefix]
        assert all(_same(g[2], w[2]) for g, w in zip(got, with_prefix, strict=True))
        assert all(type(v) is float for _, v in found)  # Python floats, not numpy scalars
