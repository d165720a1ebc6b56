"""A trace's host timeline (`tracekit.host_events.HostEvents`) in the store: each frame as Arrow IPC chunks
(zstd) in `host_event_chunks`, written inside the import's own transaction and read straight back into polars."""

from __future__ import annotations

import io

import polars as pl
from sqlalchemy import Connection, insert, select

from tracekit.host_events import CALL_SCHEMA, COUNTER_SCHEMA, GPU_OP_SCHEMA, RANGE_SCHEMA, RECORDERS, HostEvents
from tracekit.store import schema

ENCODING = "arrow-ipc-zstd"
CHUNK_ROWS = 1_000_000
# `counters`: the CUPTI range profiler's kernel counters; an import stored before them reads as having none
FRAMES = {"gpu": GPU_OP_SCHEMA, "calls": CALL_SCHEMA, "ranges": RANGE_SCHEMA, "counters": COUNTER_SCHEMA}
COUNTERS = "counters"
# What the profiler recorded beyond the timeline (record_shapes, ...), kept as a one-column chunk of its own so that
# a stored step warns as the file does; stores written before it simply have none.
OPTIONS = "profiler_options"


def save(connection: Connection, import_id: int, events: HostEvents) -> None:
    """Write the events of one import on `connection`'s transaction."""
    table = schema.host_event_chunks
    for frame_name in FRAMES:
        frame: pl.DataFrame = getattr(events, frame_name)
        if frame_name == COUNTERS and frame.height == 0:  # only a range-profiled trace has any
            continue
        # an empty frame is still written, as one empty chunk: it marks the import as having a host timeline
        for index, chunk in enumerate(list(frame.iter_slices(CHUNK_ROWS)) or [frame]):
            buffer = io.BytesIO()
            chunk.write_ipc(buffer, compression="zstd")
            connection.execute(
                insert(table).values(
                    import_id=import_id,
                    frame=frame_name,
                    chunk_index=index,
                    row_count=chunk.height,
                    rank=events.rank,
                    encoding=ENCODING,
                    data=buffer.getvalue(),
                )
            )
    if events.profiler_options:
        buffer = io.BytesIO()
        pl.DataFrame({"option": list(events.profiler_options)}).write_ipc(buffer, compression="zstd")
        connection.execute(
            insert(table).values(
                import_id=import_id,
                frame=OPTIONS,
                chunk_index=0,
                row_count=len(events.profiler_options),
                rank=events.rank,
                encoding=ENCODING,
                data=buffer.getvalue(),
            )
        )


def load(connection: Connection, import_id: int) -> HostEvents | None:
    """The stored events of one import, or None when it has none (a format without a host timeline)."""
    rows = connection.execute(
        select(schema.host_event_chunks.c.frame, schema.host_event_chunks.c.rank, schema.host_event_chunks.c.data)
        .where(schema.host_event_chunks.c.import_id == import_id)
        .order_by(schema.host_event_chunks.c.frame, schema.host_event_chunks.c.chunk_index)
    ).all()
    if not rows:
        return None
    parts: dict[str, list[pl.DataFrame]] = {name: [] for name in FRAMES}
    rank, options = None, ()
    for frame_name, row_rank, data in rows:
        if frame_name == OPTIONS:
            options = tuple(pl.read_ipc(io.BytesIO(data))["option"].to_list())
            continue
        parts[frame_name].append(pl.read_ipc(io.BytesIO(data)))
        rank = row_rank
    frames = {name: pl.concat(found) if found else pl.DataFrame(schema=FRAMES[name]) for name, found in parts.items()}
    found_import = connection.execute(
        select(schema.imports.c.device_name, schema.imports.c.source_path, schema.imports.c.format).where(
            schema.imports.c.id == import_id
        )
    ).first()
    device, source, fmt = (found_import[0], found_import[1], found_import[2]) if found_import else (None, None, None)
    return HostEvents(
        gpu=frames["gpu"],
        calls=frames["calls"],
        ranges=frames["ranges"],
        counters=frames["counters"],
        rank=rank,
        device_name=device,
        profiler_options=options,
        recorded_by=RECORDERS.get(fmt or ""),
        source=f"import {import_id} ({source})" if source else f"import {import_id}",
    )


def imports_with_events(connection: Connection) -> list[tuple[int, str]]:
    """The imports that hold a host timeline (id, name), in id order."""
    holding = select(schema.host_event_chunks.c.import_id).distinct()
    rows = connection.execute(
        select(schema.imports.c.id, schema.imports.c.name)
        .where(schema.imports.c.id.in_(holding))
        .order_by(schema.imports.c.id)
    ).all()
    return [(int(i), str(name)) for i, name in rows]
