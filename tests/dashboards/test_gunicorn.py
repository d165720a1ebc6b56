"""`tracekit serve --workers 2` over PostgreSQL: two uploads sent at the same moment both land in the store."""

from __future__ import annotations

import base64
import json
import threading
import urllib.request

import pytest

from tracekit.store import Store

pytestmark = pytest.mark.postgres

# Per the real exports' README: one kernel in the RTX 3060 export, six in the A40 CUTLASS one.
EXPORTS = {"nsys_2025.5.2_RTX3060_perfsandbox_report1.sqlite": 1, "nsys_2023.2.3_A40_cutlassbench_report1.sqlite": 6}


def upload_request(base_url: str, file_name: str, raw: bytes) -> urllib.request.Request:
    """The request the browser makes when a file is dropped on the upload component."""
    data_url = "data:application/octet-stream;base64," + base64.b64encode(raw).decode()
    payload = {
        "output": "..upload-status.children...upload.contents..",
        "outputs": [{"id": "upload-status", "property": "children"}, {"id": "upload", "property": "contents"}],
        "inputs": [{"id": "upload", "property": "contents", "value": [data_url]}],
        "changedPropIds": ["upload.contents"],
        "state": [{"id": "upload", "property": "filename", "value": [file_name]}],
    }
    return urllib.request.Request(
        f"{base_url}/_dash-update-component",
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )


def test_two_workers_import_two_uploads_sent_together(postgres_url, start_server, real_export):
    files = {name: real_export(name).read_bytes() for name in EXPORTS}
    server = start_server(postgres_url, workers=2)
    barrier = threading.Barrier(len(files))
    answers: dict[str, str] = {}

    def send(name: str, raw: bytes) -> None:
        request = upload_request(server.url, name, raw)
        barrier.wait()
        with urllib.request.urlopen(request, timeout=120) as response:
            answers[name] = json.dumps(json.load(response))

    threads = [threading.Thread(target=send, args=item) for item in files.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=150)
    for name, launches in EXPORTS.items():
        plural = "launch" if launches == 1 else "launches"
        assert f"{name} imported as import" in answers[name] and f"with {launches} {plural}" in answers[name]
    store = Store.open(postgres_url)
    try:
        imports = store.imports()
        assert dict(zip(imports["name"], imports["launch_count"], strict=True)) == EXPORTS
    finally:
        store.engine.dispose()
