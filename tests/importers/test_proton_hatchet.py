"""The Triton Proton `.hatchet` reader on a real tritonbench profile (H100), counted by walking the JSON tree
with the json module, and on trees built here for what the real file lacks (FLOPs/bytes, aggregated nodes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tracekit.errors import InputError
from tracekit.format import demangle
from tracekit.importers import detect_format, proton_hatchet, read_file

HATCHET = "proton_hatchet_tritonbench_kernels.hatchet"


def kernel_nodes(node: dict, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], dict]]:
    """(scope names, node) of every node with a device, in document order."""
    if "device_id" in node.get("metrics", {}):
        return [(path, node)]
    inner = path if node["frame"]["name"] == "ROOT" else (*path, node["frame"]["name"])
    return [found for child in node.get("children", []) for found in kernel_nodes(child, inner)]


def test_real_tritonbench_profile(real_export) -> None:
    path = real_export(HATCHET)
    assert detect_format(path) == "proton-hatchet"
    parsed = read_file(path)
    tree, devices = json.loads(path.read_text(encoding="utf-8"))
    expected = kernel_nodes(tree)
    assert parsed.launches.height == len(expected) == 18  # the manifest: 18 kernel nodes
    rows = parsed.launches.to_dicts()
    for row, (scopes, node) in zip(rows, expected, strict=True):
        assert row["nvtx_path"] == " > ".join(scopes)
        assert row["duration_ns"] == node["metrics"]["time (ns)"] / node["metrics"]["count"]
        assert row["kernel_name"] == demangle(node["frame"]["name"])
        assert row["device_id"] == int(node["metrics"]["device_id"])
        assert row["grid_x"] is None and row["start_ns"] is None  # Proton records neither
    assert rows[0]["nvtx_path"] == "tritonbench_run_op_softmax > x_val_[4096, 256] > naive_softmax"
    assert rows[0]["kernel_name"].startswith("void at::native::reduce_kernel<512, 1,")
    assert rows[0]["mangled_name"].startswith("_ZN2at6native13reduce_kernel")
    assert rows[5]["kernel_name"] == "softmax_kernel" and rows[5]["mangled_name"] is None
    device = parsed.device
    cuda = devices["CUDA"]["0"]
    assert device is not None
    assert (device.compute_capability, device.sm_count, device.sm_clock_hz) == ("9.0", 132, cuda["clock_rate"] * 1e3)
    assert parsed.metrics.height == 0 and parsed.warnings == []  # every node is one launch, no FLOPs/bytes


def node(name: str, metrics: dict | None = None, children: list | None = None) -> dict:
    return {"frame": {"name": name, "type": "function"}, "metrics": metrics or {}, "children": children or []}


def kernel(name: str, time_ns: int, count: int = 1, **extra: float) -> dict:
    return node(name, {"count": count, "device_id": "0", "device_type": "CUDA", "time (ns)": time_ns, **extra})


def write(tmp_path: Path, tree: dict) -> Path:
    path = tmp_path / "p.hatchet"
    table = {"CUDA": {"0": {"arch": "80", "num_sms": 108, "clock_rate": 1410000}}}
    path.write_text(json.dumps([tree, table]), encoding="utf-8")
    return path


def test_flops_bytes_and_aggregated_nodes(tmp_path) -> None:
    tree = node(
        "ROOT",
        {"count": 0, "time (ns)": 0},
        [
            node("matmul", {"flops16": 2.0e9, "bytes": 6.0e6}, [kernel("matmul_kernel", 9_000, count=3)]),
            node("two", {"flops32": 1.0e6}, [kernel("a", 100), kernel("b", 200, bytes=512.0)]),
        ],
    )
    parsed = read_file(write(tmp_path, tree))
    assert parsed.launches["kernel_name"].to_list() == ["matmul_kernel", "a", "b"]
    assert parsed.launches["duration_ns"].to_list() == [3_000.0, 100.0, 200.0]
    metrics = {(r["launch_key"], r["name"]): (r["value"], r["unit"]) for r in parsed.metrics.to_dicts()}
    # the scope's FLOPs/bytes go to its only kernel; a scope of two kernels keeps its own
    assert metrics[(0, "flops16")] == (2.0e9, "flop") and metrics[(0, "bytes")] == (6.0e6, "byte")
    assert metrics[(0, "count")] == (3.0, "launch") and metrics[(0, "time (ns)")] == (9_000.0, "ns")
    assert (1, "flops32") not in metrics and metrics[(2, "bytes")] == (512.0, "byte")
    assert any("stand for several launches" in w for w in parsed.warnings)
    assert parsed.device is not None and parsed.device.compute_capability == "8.0"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('[{"frame": {"name": "ROOT"}, "metrics": {}, "children": [', "not valid JSON"),
        ('[{"frame": {"name": "ROOT"}, "metrics": {}, "children": [{"metrics": {}}]}]', "a node without a 'frame'"),
        (
            '[{"frame": {"name": "ROOT"}, "metrics": {}, "children": [{"frame": {"name": "k"}, '
            '"metrics": {"device_id": "0", "count": 1}}]}]',
            "kernel 'k' .* has no count or time",
        ),
    ],
)
def test_bad_profiles_are_refused_in_one_line(tmp_path, content: str, message: str) -> None:
    path = tmp_path / "bad.hatchet"
    path.write_text(content, encoding="utf-8")
    assert proton_hatchet.sniff(path.read_bytes())
    with pytest.raises(InputError, match=message):
        proton_hatchet.read(path)


def test_a_hatchet_literal_of_a_cpu_profile_is_refused_for_what_it_is(tmp_path):
    """Hatchet's literal format (GraphFrame.from_literal's documented example): a call tree whose metrics are
    times, without a kernel node or Proton's device table."""
    literal = [
        {
            "frame": {"name": "foo", "type": "function"},
            "metrics": {"time (inc)": 130.0, "time": 0.0},
            "children": [{"frame": {"name": "bar"}, "metrics": {"time (inc)": 20.0, "time": 5.0}, "children": []}],
        }
    ]
    path = tmp_path / "cpu.hatchet"
    path.write_text(json.dumps(literal), encoding="utf-8")
    with pytest.raises(InputError) as refused:
        read_file(path)
    message = str(refused.value)
    assert "a Hatchet call-tree literal with no GPU kernel node" in message and "\n" not in message
    assert str(path) in message
