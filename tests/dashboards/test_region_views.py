"""How the launch page's region timeline reads a zoom (plotly's relayout event) back into a time window and warp
rows, for bars (y = warp row) and for binned rows (y = a row gathering several warps)."""

from __future__ import annotations

from tracekit.dashboards.region_views import view_from_relayout


def test_zoom_on_bars_gives_the_window_and_the_rows_touched():
    event = {"xaxis.range[0]": 0.1, "xaxis.range[1]": 0.25, "yaxis.range[0]": 7.2, "yaxis.range[1]": 2.6}
    # µs on the axis, ns in the analysis; the y axis is reversed (top row first), rows 3 to 7 are touched.
    assert view_from_relayout(event, 1000.0, None) == ((100, 250), (3, 7))
    assert view_from_relayout({"xaxis.range": [1500, 2500]}, 1.0, None) == ((1500, 2500), None)  # cycles


def test_zoom_on_binned_rows_gives_the_warps_they_gather():
    rows = [[0, 13], [1, 14], [2, 16], [3, 17], [4, 19]]  # each binned row's first and last warp row
    event = {"yaxis.range[0]": 3.4, "yaxis.range[1]": 0.8}
    assert view_from_relayout(event, 1000.0, rows) == (None, (1, 17))


def test_other_events_keep_or_reset_the_view():
    assert view_from_relayout(None, 1000.0, None) is None
    assert view_from_relayout({"autosize": True}, 1000.0, None) is None  # a redraw, not a zoom
    assert view_from_relayout({"dragmode": "pan"}, 1000.0, None) is None
    assert view_from_relayout({"xaxis.autorange": True, "yaxis.autorange": True}, 1000.0, None) == (None, None)
