"""The job on real Dask: a LocalCluster of 2 worker processes (through the CLI, --json), and a `dask scheduler` +
`dask worker` started as processes on 127.0.0.1 given by address (--scheduler and DASK_SCHEDULER_ADDRESS), on a
small SYNTHETIC job (tracekit.job.synthetic) with a loader straggler."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from tracekit import api
from tracekit.job.synthetic import SyntheticJob, load_template, offsets, write_job

JOB = SyntheticJob(ranks=4, steps=4, cause="loader", straggler=2, delay_ns=2_000_000, seed=9)


@pytest.fixture(scope="module")
def job_folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("job")
    write_job(JOB, folder, load_template(kernels_per_group=3))
    return folder


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tracekit.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


def test_local_cluster_of_two_workers_through_the_cli(job_folder, tmp_path):
    parquet = tmp_path / "parquet"
    done = run_cli("job", str(job_folder), "--workers", "2", "--parquet", str(parquet), "--json")
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["schema"] == "tracekit.job/1"
    assert found["ranks"] == 4
    assert found["straggler"]["rank"] == 2
    assert found["straggler"]["cause"] == "data loading"
    injected = offsets(JOB)
    assert all(abs(c["offset_ns"] - int(injected[c["rank"]])) <= 10_000 for c in found["clocks"])
    # the map's Parquet, partitioned by rank and step
    for table in ("steps", "collectives", "kernels"):
        assert sorted(p.name for p in (parquet / table).iterdir()) == [f"rank={r}" for r in range(4)]
        assert sorted(p.name for p in (parquet / table / "rank=2").iterdir()) == [f"step={s}" for s in range(4)]
    kernels = pl.read_parquet(parquet / "kernels" / "rank=2" / "step=1" / "*.parquet")
    assert kernels.height > 0 and (kernels["end_ns"] > kernels["start_ns"]).all()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def scheduler_address(tmp_path):
    dask = shutil.which("dask", path=str(Path(sys.executable).parent))
    assert dask, "the dask command ships with dask[distributed]"
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    log = open(tmp_path / "dask.log", "w")  # noqa: SIM115 - closed below
    scheduler = subprocess.Popen(
        [dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"], stdout=log, stderr=log
    )
    worker = subprocess.Popen(
        [dask, "worker", address, "--nworkers", "1", "--nthreads", "1", "--no-dashboard"], stdout=log, stderr=log
    )
    try:
        from dask.distributed import Client

        deadline = time.monotonic() + 120
        while True:
            try:
                with Client(address, timeout="5s") as client:
                    client.wait_for_workers(1, timeout=60)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)
        yield address
    finally:
        for process in (worker, scheduler):
            process.terminate()
            process.wait(timeout=30)
        log.close()


def test_the_same_job_on_a_scheduler_given_by_address(job_folder, scheduler_address):
    result = api.job([job_folder], scheduler=scheduler_address)
    assert result.straggler.rank == 2 and result.straggler.cause == "data loading"
    done = run_cli("job", str(job_folder), "--json", env={"DASK_SCHEDULER_ADDRESS": scheduler_address})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["straggler"] == {
        **json.loads(done.stdout)["straggler"],
        "rank": 2,
        "cause": "data loading",
    }


def test_a_broken_rank_file_is_one_line_and_exit_2(job_folder, tmp_path):
    for path in job_folder.iterdir():
        shutil.copy(path, tmp_path / path.name)
    (tmp_path / "rank3.pt.trace.json.gz").write_bytes(b"\x1b[31m{not json")
    done = run_cli("job", str(tmp_path), "--workers", "1")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "rank3.pt.trace.json.gz" in lines[0], done.stderr
    assert "\x1b" not in done.stderr


def _worker_settings() -> tuple[str | None, str | None, int]:
    import polars

    return os.environ.get("_RJEM_MALLOC_CONF"), os.environ.get("POLARS_MAX_THREADS"), polars.thread_pool_size()


def test_local_workers_start_with_the_allocator_returning_pages_and_a_share_of_the_cores():
    """Set before the workers load polars (its allocator reads the setting once): the last setting wins, and each
    worker's polars has the cores over the workers, not all of them; this process's own are left as they were."""
    from tracekit.allocator import RETURN_FREED_PAGES
    from tracekit.job.run import dask_client

    ours = ("_RJEM_MALLOC_CONF", "POLARS_MAX_THREADS")
    before = {key: os.environ.get(key) for key in ours}
    with dask_client(workers=2) as client:
        found = client.run(_worker_settings)
    assert {key: os.environ.get(key) for key in ours} == before
    share = max(1, (os.cpu_count() or 1) // 2)
    for malloc_conf, threads, pool in found.values():
        assert malloc_conf is not None and malloc_conf.endswith(RETURN_FREED_PAGES)
        assert threads == str(share) and pool == share
