"""The Nsight Systems SQLite importer on real exports of nsys 2021 to 2025.5.

Expected values come from the shared exports' README and, independently of the importer, from plain sqlite3
queries on the same files (the importer uses polars joins; the tests use SQL subqueries).
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import time
from pathlib import Path

import polars as pl
import pytest

from tracekit.errors import InputError
from tracekit.importers import nsys_sqlite
from tracekit.store import Store

MORDRED = "nsys_2021_QuadroRTX6000_Mordred_report1.sqlite"
MEMFUSION = "nsys_2023.1.2_RTX3090_nvtx_memfusion_report1.sqlite"
CUTLASS = "nsys_2023.2.3_A40_cutlassbench_report1.sqlite"
NO_KERNELS = "nsys_2025.1.3_RTX5060_nokerneltable_minigemm_report1.sqlite"
T4 = "nsys_2025.3.1_T4_nsightful_power_iteration_baseline.sqlite"
RTX3060 = "nsys_2025.5.2_RTX3060_perfsandbox_report1.sqlite"


def query(path: Path, sql: str, params: tuple = ()) -> list[tuple]:
    connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return connection.execute(sql, params).fetchall()
    finally:
        connection.close()


# kernel count, copies and sets (the 2021 file's 48 copies and 12 sets), kernel-table columns (README: 26 in 2021,
# 38 in 2025.5)
COUNTS = {
    MORDRED: (12, 48 + 12, 26),
    MEMFUSION: (36, 4, 27),
    CUTLASS: (6, 4, 27),
    T4: (3689, 89, 28),
    RTX3060: (1, 3, 38),
}


@pytest.mark.parametrize("name", list(COUNTS))
def test_kernel_and_memcpy_counts_across_schema_versions(real_export, name: str) -> None:
    path = real_export(name)
    kernels, memcpys, kernel_columns = COUNTS[name]
    assert len(query(path, "PRAGMA table_info(CUPTI_ACTIVITY_KIND_KERNEL)")) == kernel_columns
    parsed = nsys_sqlite.read(path)
    assert parsed.format == "nsys-sqlite" and parsed.tool == "Nsight Systems"
    assert parsed.launches.height == kernels
    assert parsed.memcpys.height == memcpys
    assert parsed.launches["launch_key"].to_list() == list(range(kernels))
    assert parsed.warnings == []


@pytest.mark.parametrize("name", list(COUNTS))
def test_every_launch_matches_the_kernel_table(real_export, name: str) -> None:
    """Times, dims, registers, shared memory, ids and names, row by row against a plain SQL read."""
    path = real_export(name)
    has_mangled = any(row[1] == "mangledName" for row in query(path, "PRAGMA table_info(CUPTI_ACTIVITY_KIND_KERNEL)"))
    mangled = "(SELECT value FROM StringIds WHERE id = k.mangledName)" if has_mangled else "NULL"
    expected = query(
        path,
        f"""
        SELECT k.start, k."end", k."end" - k.start, k.gridX, k.gridY, k.gridZ, k.blockX, k.blockY, k.blockZ,
               k.registersPerThread, k.staticSharedMemory, k.dynamicSharedMemory, k.streamId, k.deviceId,
               k.contextId, k.correlationId, (k.globalPid >> 24) & 16777215,
               (SELECT value FROM StringIds WHERE id = k.demangledName), {mangled}
        FROM CUPTI_ACTIVITY_KIND_KERNEL AS k ORDER BY k.start, k.correlationId""",
    )
    launches = nsys_sqlite.read(path).launches
    got = launches.select(
        "start_ns",
        "end_ns",
        pl.col("duration_ns").cast(pl.Int64),
        "grid_x",
        "grid_y",
        "grid_z",
        "block_x",
        "block_y",
        "block_z",
        "registers_per_thread",
        "static_smem_bytes",
        "dynamic_smem_bytes",
        "stream_id",
        "device_id",
        "context_id",
        "correlation_id",
        "process_id",
        "kernel_name",
        "mangled_name",
    ).rows()
    assert got == expected
    assert launches["source_launch_id"].to_list() == [str(row[15]) for row in expected]


def test_one_kernel_by_hand(real_export) -> None:
    """The RTX 3060 file's only kernel, values read off the file with the sqlite3 shell."""
    launch = nsys_sqlite.read(real_export(RTX3060)).launches.row(0, named=True)
    assert launch["kernel_name"] == "kernVectorAdd(const float *, const float *, float *, int)"
    assert launch["mangled_name"] == "_Z13kernVectorAddPKfS0_Pfi"
    assert (launch["start_ns"], launch["end_ns"], launch["duration_ns"]) == (1143927944, 1143966856, 38912.0)
    assert (launch["grid_x"], launch["grid_y"], launch["grid_z"]) == (4096, 1, 1)
    assert (launch["block_x"], launch["block_y"], launch["block_z"]) == (256, 1, 1)
    assert (launch["registers_per_thread"], launch["stream_id"], launch["process_id"]) == (16, 7, 1246)


def test_2021_schema_without_mangled_names(real_export) -> None:
    parsed = nsys_sqlite.read(real_export(MORDRED))
    first = parsed.launches.row(0, named=True)
    assert first["kernel_name"].startswith("void build_GPU2<128, 4>(int*, int*, int*")
    assert first["mangled_name"] is None
    assert (first["duration_ns"], first["grid_x"], first["block_x"]) == (4768.0, 40, 128)
    assert parsed.tool_version is None  # the 2021 export has no metadata table
    assert parsed.nvtx_ranges.height == 0 and parsed.launches["nvtx_path"].null_count() == 12


@pytest.mark.parametrize(
    ("name", "device_name", "sm_count", "cc", "warps", "clock_hz", "version"),
    [
        (MORDRED, "Quadro RTX 6000", 72, "7.5", 32, 1.77e9, None),
        (MEMFUSION, "NVIDIA GeForce RTX 3090", 82, "8.6", 48, 1.695e9, "2023.1.2.43"),
        (T4, "Tesla T4", 40, "7.5", 32, 1.59e9, "2025.3.1.90"),
        (RTX3060, "NVIDIA GeForce RTX 3060", 28, "8.6", 48, 1.792e9, "2025.5.2.266"),
    ],
)
def test_device_and_tool_version(real_export, name, device_name, sm_count, cc, warps, clock_hz, version) -> None:
    parsed = nsys_sqlite.read(real_export(name))
    device = parsed.device
    assert (device.name, device.sm_count, device.compute_capability, device.max_warps_per_sm) == (
        device_name,
        sm_count,
        cc,
        warps,
    )
    assert device.sm_clock_hz == pytest.approx(clock_hz)
    assert device.extra["max_registers_per_sm"] == 65536
    assert device.extra["warp_size_threads"] == 32
    assert parsed.tool_version == version


def test_device_is_the_gpu_the_kernels_ran_on_in_a_multi_gpu_box(real_export) -> None:
    """TARGET_INFO_GPU lists every GPU of the box; the kernels' deviceId is the CUDA ordinal (cuDevice).

    The cutlass box has 2 A100s and 2 A40s. CUDA numbers the A100s 0 and 1 (fastest first, then PCI order:
    81:00.0, c1:00.0) and the A40s 2 and 3, which is what cuDevice says; the kernels ran on CUDA device 0,
    so the device is the A100 at 81:00.0, not the A40 the README's file name suggests.
    """
    path = real_export(CUTLASS)
    assert query(path, "SELECT DISTINCT deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL") == [(0,)]
    assert query(path, "SELECT count(*) FROM TARGET_INFO_GPU") == [(4,)]
    [(name, sms, bus)] = query(path, "SELECT name, smCount, busLocation FROM TARGET_INFO_GPU WHERE cuDevice = 0")
    device = nsys_sqlite.read(path).device
    assert (device.name, device.sm_count, device.extra["bus_location"]) == (name, sms, bus)
    assert (name, sms, bus) == ("NVIDIA A100-PCIE-40GB", 108, "0000:81:00.0")
    assert device.compute_capability == "8.0" and device.max_warps_per_sm == 64

    memfusion = real_export(MEMFUSION)  # 4 identical RTX 3090s: the kernels' one is at 02:00.0
    assert query(memfusion, "SELECT count(*) FROM TARGET_INFO_GPU") == [(4,)]
    assert nsys_sqlite.read(memfusion).device.extra["bus_location"] == "0000:02:00.0"


def test_memcpy_kinds_and_sizes(real_export) -> None:
    # CUpti_ActivityMemcpyKind: 1 HtoD, 2 DtoH, 8 DtoD; the 2021 file has no ENUM table (built-in map).
    for name, expected in [
        (MORDRED, {"HtoD": 45, "DtoH": 3, "Memset": 12}),
        (MEMFUSION, {"DtoD": 4}),
        (T4, {"DtoH": 89}),
        (RTX3060, {"HtoD": 2, "DtoH": 1}),
    ]:
        path = real_export(name)
        by_kind = dict(query(path, "SELECT copyKind, count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY GROUP BY copyKind"))
        [[sets]] = query(path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMSET") if name == MORDRED else [[0]]
        copies = {kind: n for kind, n in expected.items() if kind != "Memset"}
        assert by_kind == {{"HtoD": 1, "DtoH": 2, "DtoD": 8}[kind]: n for kind, n in copies.items()}
        assert sets == expected.get("Memset", 0)
        memcpys = nsys_sqlite.read(path).memcpys
        assert dict(memcpys["kind"].value_counts().rows()) == expected
        memcpys = memcpys.filter(pl.col("kind") != "Memset")
        [(total_bytes, first_start)] = query(path, "SELECT sum(bytes), min(start) FROM CUPTI_ACTIVITY_KIND_MEMCPY")
        assert memcpys["size_bytes"].sum() == total_bytes
        assert memcpys["start_ns"].to_list()[0] == first_start


def test_memcpy_kind_names_from_the_enum_table() -> None:
    assert nsys_sqlite._short_memcpy_kind("CUDA_MEMCPY_KIND_HTOD") == "HtoD"
    assert nsys_sqlite._short_memcpy_kind("CUDA_MEMCPY_KIND_PTOP") == "PtoP"
    assert nsys_sqlite._short_memcpy_kind("CUDA_MEMCPY_KIND_UVM_DTOH") == "UVM DtoH"
    assert nsys_sqlite._short_memcpy_kind("CUDA_MEMCPY_KIND_UNKNOWN") == "Unknown"


def test_nvtx_ranges_and_domains(real_export) -> None:
    """NVTX_EVENTS holds the ranges plus one domain-registration row (eventType 75, no end) per named domain."""
    path = real_export(MEMFUSION)
    assert query(path, "SELECT count(*) FROM NVTX_EVENTS") == [(60,)]  # README: 60 NVTX
    assert query(path, 'SELECT eventType, text FROM NVTX_EVENTS WHERE "end" IS NULL') == [(75, "TensorRT")]
    ranges = nsys_sqlite.read(path).nvtx_ranges
    assert ranges.height == 59
    assert ranges["domain"].unique().to_list() == ["TensorRT"]
    assert ranges.row(0, named=True) == {
        "name": "ExecutionContext::execute",
        "domain": "TensorRT",
        "start_ns": 18992108,
        "end_ns": 25834711,
        "thread_id": 24129,
    }

    path = real_export(T4)
    assert query(path, "SELECT count(*) FROM NVTX_EVENTS") == [(787,)]  # README: 787 NVTX
    ranges = nsys_sqlite.read(path).nvtx_ranges
    assert ranges.height == 786
    # domain 1 was registered as "CCCL"; domain 0 is NVTX's default domain, which has no name
    by_domain = dict(query(path, 'SELECT domainId, count(*) FROM NVTX_EVENTS WHERE "end" IS NOT NULL GROUP BY 1'))
    assert dict(ranges["domain"].value_counts().rows()) == {None: by_domain[0], "CCCL": by_domain[1]}
    assert ranges["name"].null_count() == 0


EXPECTED_PATHS_SQL = """
    SELECT (SELECT group_concat(v, ' > ') FROM (
                SELECT COALESCE(n.text, s.value) AS v FROM NVTX_EVENTS AS n
                LEFT JOIN StringIds AS s ON s.id = n.textId
                WHERE n.eventType = 59 AND n.globalTid = r.globalTid AND n.start <= r.start AND n."end" > r.start
                ORDER BY n.start, n."end" DESC))
    FROM CUPTI_ACTIVITY_KIND_KERNEL AS k
    LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME AS r ON r.correlationId = k.correlationId
    ORDER BY k.start, k.correlationId
"""


@pytest.mark.parametrize(
    ("name", "first_path", "without_path"),
    [
        (
            MEMFUSION,
            "ExecutionContext::execute > Reformatting CopyNode for Input Tensor 0 to /conv1/Conv + /relu/Relu",
            0,
        ),
        (T4, "Setup", 7),
    ],
)
def test_nvtx_path_of_every_kernel(real_export, name: str, first_path: str, without_path: int) -> None:
    """Each kernel's path is the push/pop ranges open on its launch call's thread when the call began."""
    path = real_export(name)
    expected = [row[0] for row in query(path, EXPECTED_PATHS_SQL)]
    paths = nsys_sqlite.read(path).launches["nvtx_path"].to_list()
    assert paths == expected
    assert paths[0] == first_path
    assert sum(p is None for p in paths) == without_path


def test_t4_nested_path_and_parse_time(real_export) -> None:
    path = real_export(T4)
    started = time.perf_counter()
    launches = nsys_sqlite.read(path).launches
    assert time.perf_counter() - started < 5  # a loose bound: a per-row Python linking would be far slower
    assert launches.filter(pl.col("nvtx_path") == "Loop > Step 0 to 10 > Compute & Residual 0").height > 0


def test_no_kernel_table(real_export) -> None:
    """One cuLaunchKernel in the API trace, no GPU activity table: the refusal says so, with nsys's error
    diagnostic (tests/importers/test_refusal_hints.py covers each kind of empty export)."""
    path = real_export(NO_KERNELS)
    with pytest.raises(InputError) as caught:
        nsys_sqlite.read(path)
    assert str(caught.value).startswith(
        f"{path}: no GPU activity recorded: the CUDA API trace holds 1 kernel launch call but no kernel"
    )


def test_sqlite_file_that_is_not_an_nsys_export(tmp_path: Path) -> None:
    path = tmp_path / "inventory.sqlite"
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE parts (id INTEGER PRIMARY KEY, name TEXT)")
    connection.execute("INSERT INTO parts VALUES (1, 'bolt')")
    connection.commit()
    connection.close()
    assert nsys_sqlite.sniff(path.read_bytes()[:100])
    with pytest.raises(InputError, match="not an Nsight Systems export") as caught:
        nsys_sqlite.read(path)
    assert str(caught.value).startswith(f"{path}: ")
    assert "\n" not in str(caught.value)


def test_a_tracekit_store_is_not_an_nsys_export(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    Store.open(f"sqlite:///{path}")
    with pytest.raises(InputError, match="not an Nsight Systems export"):
        nsys_sqlite.read(path)


def test_truncated_export(real_export, tmp_path: Path) -> None:
    data = real_export(T4).read_bytes()
    path = tmp_path / "cut.sqlite"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError) as caught:
        nsys_sqlite.read(path)
    assert str(caught.value).startswith(f"{path}: ")


def test_not_sqlite_at_all(tmp_path: Path) -> None:
    path = tmp_path / "fake.sqlite"
    path.write_bytes(b"SQLite format 3\x00" + b"\x00" * 50)
    with pytest.raises(InputError, match=str(path)):
        nsys_sqlite.read(path)


def test_sniff(real_export) -> None:
    assert nsys_sqlite.sniff(real_export(MORDRED).read_bytes()[:64])
    assert not nsys_sqlite.sniff(b"NVR\x00\x02\x00")
    assert not nsys_sqlite.sniff(b'"ID","Process ID","Process Name"')


def test_input_is_left_untouched(real_export, tmp_path: Path) -> None:
    path = tmp_path / MEMFUSION
    shutil.copyfile(real_export(MEMFUSION), path)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    nsys_sqlite.read(path)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [MEMFUSION]  # no -journal/-wal/-shm left behind


def make_two_gpu_export(path: Path) -> None:
    """A minimal nsys-shaped export: two GPUs, one kernel on each (the first on CUDA device 1)."""
    connection = sqlite3.connect(path)
    connection.executescript("""
        CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO StringIds VALUES (1, 'k_on_b'), (2, 'k_on_a');
        CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT, smCount INTEGER, cuDevice INTEGER,
                                      computeMajor INTEGER, computeMinor INTEGER, maxWarpsPerSm INTEGER,
                                      clockRate INTEGER, maxShmemPerSm INTEGER);
        INSERT INTO TARGET_INFO_GPU VALUES (0, 'GPU A', 132, 0, 9, 0, 64, 1980000000, 233472),
                                           (1, 'GPU B', 108, 1, 8, 0, 64, 1410000000, 167936);
        CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, "end" INTEGER, deviceId INTEGER,
                                                 correlationId INTEGER, shortName INTEGER);
        INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (100, 250, 1, 7, 1), (300, 330, 0, 8, 2);
    """)
    connection.commit()
    connection.close()


def test_kernels_on_several_devices_keep_the_first_and_warn(tmp_path: Path) -> None:
    path = tmp_path / "two_gpus.sqlite"
    make_two_gpu_export(path)
    parsed = nsys_sqlite.read(path)
    assert parsed.launches["kernel_name"].to_list() == ["k_on_b", "k_on_a"]
    assert parsed.launches["duration_ns"].to_list() == [150.0, 30.0]
    assert parsed.launches["device_id"].to_list() == [1, 0]
    assert (parsed.device.name, parsed.device.sm_count, parsed.device.compute_capability) == ("GPU B", 108, "8.0")
    assert parsed.device.extra == {"max_shared_memory_per_sm_bytes": 167936}
    [warning] = parsed.warnings
    assert "2 devices" in warning and "device 1" in warning
    assert parsed.memcpys.height == 0 and parsed.nvtx_ranges.height == 0


def test_store_round_trip(store: Store, real_export) -> None:
    path = real_export(MEMFUSION)
    parsed = nsys_sqlite.read(path)
    result = store.add_import(parsed, path)
    assert result.created and result.launch_count == 36

    info = store.get_import(result.import_id)
    assert (info["format"], info["tool"], info["tool_version"]) == ("nsys-sqlite", "Nsight Systems", "2023.1.2.43")
    assert (info["device_name"], info["sm_count"], info["compute_capability"]) == ("NVIDIA GeForce RTX 3090", 82, "8.6")
    assert info["device_extra"]["max_shared_memory_per_sm_bytes"] == 102400

    launches = store.launches(import_id=result.import_id)
    assert launches["kernel_name"].to_list() == parsed.launches["kernel_name"].to_list()
    assert launches["nvtx_path"].to_list() == parsed.launches["nvtx_path"].to_list()
    assert launches["start_ns"].to_list() == parsed.launches["start_ns"].to_list()
    assert launches["duration_ns"].sum() == pytest.approx(parsed.launches["duration_ns"].sum())

    nvtx = store.nvtx_ranges(result.import_id)
    assert nvtx.height == 59 and set(nvtx["domain"].to_list()) == {"TensorRT"}
    memcpys = store.memcpys(result.import_id)
    assert memcpys["kind"].to_list() == ["DtoD"] * 4
    assert memcpys["size_bytes"].sum() == parsed.memcpys["size_bytes"].sum()


def test_enclosing_range_paths_by_hand() -> None:
    """Nesting, a child starting with its parent, a closed sibling, another thread, a point at an end time."""
    ranges = pl.DataFrame(
        [
            (1, 0, 100, "outer"),
            (1, 0, 50, "first"),
            (1, 10, 20, "leaf"),
            (1, 60, 90, "second"),
            (2, 0, 1000, "other thread"),
        ],
        schema={"thread": pl.Int64, "start_ns": pl.Int64, "end_ns": pl.Int64, "name": pl.Utf8},
        orient="row",
    )
    points = pl.DataFrame(
        {"launch_key": [0, 1, 2, 3, 4, 5, 6], "thread": [1, 1, 1, 1, 1, 2, 3], "time_ns": [0, 15, 30, 55, 60, 500, 5]}
    )
    paths = dict(nsys_sqlite.enclosing_range_paths(ranges.reverse(), points).rows())
    assert paths == {
        0: "outer > first",  # both start at 0: the longer one is the outer
        1: "outer > first > leaf",
        2: "outer > first",  # leaf closed at 20
        3: "outer",  # first closed at 50
        4: "outer > second",  # ranges are [start, end): second is open at 60
        5: "other thread",
    }  # 6: thread 3 has no ranges, so no path


@pytest.mark.gpu_samples
def test_h100_sample(sample_trace) -> None:
    """The team's own H100 recording: every kernel under the NVTX range the sample program opened for it."""
    path = sample_trace("h100/samples.sqlite")
    parsed = nsys_sqlite.read(path)
    [(kernels,)] = query(path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")
    [(name, sms, major, minor)] = query(path, "SELECT name, smCount, computeMajor, computeMinor FROM TARGET_INFO_GPU")
    assert parsed.launches.height == kernels > 0
    assert (parsed.device.name, parsed.device.sm_count, parsed.device.compute_capability) == (
        name,
        sms,
        f"{major}.{minor}",
    )
    assert name == "NVIDIA H100 80GB HBM3" and sms == 132
    assert parsed.launches["nvtx_path"].to_list() == [row[0] for row in query(path, EXPECTED_PATHS_SQL)]
    assert parsed.launches["nvtx_path"].null_count() == 0
    assert (
        parsed.tool_version
        == query(path, "SELECT value FROM META_DATA_EXPORT WHERE name = 'EXPORT_PRODUCT_VERSION'")[0][0]
    )


def test_dlprof_nvtx_payloads_are_named_by_their_op(real_export) -> None:
    """DLProf's PyTorch plugin writes each NVTX message as a whole Python dict: the ranges and the kernels' paths
    carry the op it names (`torch.nn.functional.conv2d`), never the payload."""
    path = real_export("nsys_2022.1_RTX2070S_dlprof_training.sqlite")
    messages = [
        row[0] for row in query(path, 'SELECT text FROM NVTX_EVENTS WHERE "end" IS NOT NULL AND text IS NOT NULL')
    ]
    payloads = [m for m in messages if m.startswith("{")]
    assert payloads and max(len(m) for m in payloads) > 200
    parsed = nsys_sqlite.read(path)
    names = parsed.nvtx_ranges["name"].drop_nulls().to_list()
    assert len(names) == len(messages)
    assert max(map(len, names)) < 60  # DLProf's short `{"model_config": ...}` marker, no op's, kept as written
    ops = sum("'op': " in m for m in payloads)
    assert ops and sum(name.startswith(("Tensor.", "torch.")) for name in names) == ops
    assert "torch.nn.functional.conv2d" in names
    paths = parsed.launches["nvtx_path"].drop_nulls().to_list()
    assert paths and not any("{" in p for p in paths)
