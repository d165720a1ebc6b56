"""Property-based tests (Hypothesis) for the parsers: whatever the bytes, a reader either returns an import whose
values are possible or raises one `InputError`; valid warp traces round-trip exactly."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.hostile.cases import WARP_COLUMNS, kernel_row, ncu_details, nsys_sqlite
from tracekit.cli.common import UNSAFE_CHARACTERS, escape_control
from tracekit.dashboards.security import Settings, _host_name, _is_ip_literal
from tracekit.errors import InputError
from tracekit.importers.units import normalize_unit
from tracekit.importers.warp_trace import reader as warp_trace
from tracekit.ingest import read_checked
from tracekit.validate import LAUNCH_BOUNDS

SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)

cells = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["", " ", "nan", "-", "1e400", "0x10", "1_000", '"3"', "١٢"]),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters=",\n\r"), max_size=12),
)


def write(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.write_bytes(data)
    return path


@SETTINGS
@given(rows=st.lists(st.lists(cells, min_size=6, max_size=6), min_size=1, max_size=12), header=st.booleans())
def test_warp_trace_any_cells_give_an_import_or_one_input_error(tmp_path, rows, header):
    text = ("# tracekit-warp-trace v1\n" if header else "") + WARP_COLUMNS
    text += "".join(",".join(row) + "\n" for row in rows)
    path = write(tmp_path, "t.csv", text.encode("utf-8", "surrogatepass"))
    try:
        parsed = warp_trace.read(path)
    except InputError as exc:
        assert str(exc).startswith(str(path)) and "\n" not in str(exc)
        return
    warps = parsed.warps
    assert warps.height == len(rows)
    assert (warps["end_ns"] >= warps["start_ns"]).all() and (warps["start_ns"] >= 0).all()
    assert (warps["sm_id"] >= 0).all() and (warps["block_id"] >= 0).all()


@SETTINGS
@given(
    data=st.binary(max_size=3000), prefix=st.sampled_from([b"", b"# tracekit-warp-trace v1\n", b"\x1f\x8b", b"PAR1"])
)
def test_warp_trace_any_bytes_give_an_import_or_one_input_error(tmp_path, data, prefix):
    path = write(tmp_path, "t.bin", prefix + data)
    try:
        warp_trace.read(path, max_inflated_bytes=1 << 20)
    except InputError as exc:
        assert "\n" not in str(exc)


warps_strategy = st.lists(
    st.tuples(
        st.integers(0, 131),  # sm
        st.integers(0, 2**31),  # start
        st.integers(0, 2**31),  # duration
    ),
    min_size=1,
    max_size=40,
)


@SETTINGS
@given(warps=warps_strategy, launch_duration=st.one_of(st.none(), st.integers(0, 2**40)))
def test_valid_warp_traces_round_trip(tmp_path, warps, launch_duration):
    """Every warp comes back as written (block b, warp 0), and the launch spans first start to last end."""
    origin = 1_700_000_000_000_000_000
    lines = ["# tracekit-warp-trace v1", "# kernel: k"]
    if launch_duration is not None:
        lines.append(f"# launch_duration_ns: {launch_duration}")
    lines.append(WARP_COLUMNS.strip())
    lines += [
        f"0,{sm},{block},0,{origin + start},{origin + start + length}"
        for block, (sm, start, length) in enumerate(warps)
    ]
    parsed = warp_trace.read(write(tmp_path, "t.csv", ("\n".join(lines) + "\n").encode()))
    got = parsed.warps.select("sm_id", "block_id", "start_ns", "end_ns").rows()
    expected = [(sm, block, origin + start, origin + start + length) for block, (sm, start, length) in enumerate(warps)]
    assert got == expected
    launch = parsed.launches.row(0, named=True)
    assert launch["start_ns"] == min(row[2] for row in expected)
    assert launch["end_ns"] == max(row[3] for row in expected)
    span = launch["end_ns"] - launch["start_ns"]
    assert launch["duration_ns"] == (float(launch_duration) if launch_duration is not None else float(span))


integer_values = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True),
    st.text(max_size=5),
    st.binary(max_size=4),
    st.none(),
)


@SETTINGS
@given(
    changes=st.dictionaries(
        st.sampled_from(
            [
                "start",
                "end",
                "gridX",
                "gridY",
                "blockX",
                "blockZ",
                "registersPerThread",
                "dynamicSharedMemory",
                "correlationId",
            ]
        ),
        integer_values,
        max_size=4,
    )
)
def test_nsys_any_kernel_values_give_possible_launches_or_one_input_error(tmp_path, changes):
    if changes.get("start", 0) is None or changes.get("end", 0) is None:
        changes = {k: v for k, v in changes.items() if k not in ("start", "end")}  # NOT NULL columns
    try:
        data = nsys_sqlite([kernel_row(**changes)])
    except sqlite3.Error:
        return  # a value SQLite itself refuses to store
    path = write(tmp_path, "r.sqlite", data)
    try:
        parsed = read_checked(path)
    except InputError as exc:
        assert str(exc).startswith(str(path)) and "\n" not in str(exc)
        return
    launch = parsed.launches.row(0, named=True)
    for column, (low, high) in LAUNCH_BOUNDS.items():
        if launch.get(column) is not None:
            assert low <= launch[column] <= high
    assert launch["end_ns"] >= launch["start_ns"]
    assert path.read_bytes() == data  # read-only, immutable: the input is untouched


@SETTINGS
@given(cut=st.integers(0, 7372), junk=st.binary(max_size=200))
def test_ncu_csv_cut_or_spliced_gives_an_import_or_one_input_error(tmp_path, cut, junk):
    data = ncu_details()
    path = write(tmp_path, "n.csv", data[:cut] + junk + data[cut + len(junk) :])
    try:
        parsed = read_checked(path)
    except InputError as exc:
        assert "\n" not in str(exc)
        return
    values = parsed.metrics["value"].drop_nulls()
    assert values.is_finite().all()


@SETTINGS
@given(unit=st.text(max_size=20))
def test_units_give_a_finite_positive_factor(unit):
    base, factor = normalize_unit(unit)
    assert math.isfinite(factor) and factor > 0
    assert base is None or isinstance(base, str)


@SETTINGS
@given(text=st.text())
def test_escaped_text_has_no_control_characters_and_keeps_the_rest(text):
    shown = escape_control(text)
    assert not UNSAFE_CHARACTERS.search(shown)
    if not UNSAFE_CHARACTERS.search(text):
        assert shown == text


@SETTINGS
@given(host=st.text(max_size=40))
def test_host_check_never_raises_and_refuses_names_it_does_not_know(host):
    name = _host_name(host)
    if Settings().host_allowed(host):
        assert name in Settings()._names or name.endswith(".localhost") or _is_ip_literal(name)


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8050", "localhost.evil.example", "127.0.0.1.evil"])
def test_rebinding_names_are_refused(host):
    assert not Settings().host_allowed(host)


@SETTINGS
@given(
    metadata=st.dictionaries(st.sampled_from(warp_trace.KNOWN_METADATA), cells, max_size=6),
    cycles=st.lists(st.tuples(st.integers(0, 2**63 - 1), st.integers(0, 2**63 - 1)), min_size=1, max_size=8),
    use_cycles=st.booleans(),
)
def test_warp_trace_any_metadata_and_clock_give_possible_values_or_one_input_error(
    tmp_path, metadata, cycles, use_cycles
):
    lines = ["# tracekit-warp-trace v1", *(f"# {key}: {value}" for key, value in metadata.items())]
    if use_cycles:
        lines.append("launch,sm_id,block_id,warp_in_block,start_cycles,end_cycles")
        lines += [f"0,0,{block},0,{start},{end}" for block, (start, end) in enumerate(cycles)]
    else:
        lines.append(WARP_COLUMNS.strip())
        lines += [f"0,0,{block},0,{min(a, b)},{max(a, b)}" for block, (a, b) in enumerate(cycles)]
    path = write(tmp_path, "t.csv", ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass"))
    try:
        parsed = read_checked(path)
    except InputError as exc:
        assert str(exc).startswith(str(path)) and "\n" not in str(exc)
        return
    launch = parsed.launches.row(0, named=True)
    for column, (low, high) in LAUNCH_BOUNDS.items():
        if launch.get(column) is not None:
            assert low <= launch[column] <= high, column
    assert launch["duration_ns"] is None or (math.isfinite(launch["duration_ns"]) and launch["duration_ns"] >= 0)
    assert (parsed.warps["end_ns"] >= parsed.warps["start_ns"]).all()
