"""Read back an offline W&B run file (wandb >= 0.2x dropped its Python reader).

The .wandb file is a LevelDB-style log: a 7-byte header, then 32 KiB blocks of records, each with
a 7-byte header (crc32, length, type) and a chunk of one serialized protobuf Record.
"""

from __future__ import annotations

import json
import struct
import time
from pathlib import Path

BLOCK = 32 * 1024
HEADER = 7
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


def _records(data: bytes):
    position, pending = HEADER, b""
    while position + HEADER <= len(data):
        space = BLOCK - (position % BLOCK)
        if space < HEADER:
            position += space
            continue
        _, length, kind = struct.unpack("<IHB", data[position : position + HEADER])
        chunk = data[position + HEADER : position + HEADER + length]
        position += HEADER + length
        if kind == FULL:
            yield chunk
        elif kind in (FIRST, MIDDLE):
            pending += chunk
        elif kind == LAST:
            yield pending + chunk
            pending = b""
        elif kind == 0:
            break


def _parsed(run_file: Path, wait_s: float = 30.0) -> list:
    """The run file's records, once its exit record is written: wandb's finish() can return before its
    service has written the rows (a 4-step run read 0 rows at once and 4 a moment later)."""
    from wandb.proto import wandb_internal_pb2

    deadline = time.monotonic() + wait_s
    while True:
        records = []
        for raw in _records(run_file.read_bytes()):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(raw)
            records.append(record)
        if any(r.WhichOneof("record_type") == "exit" for r in records) or time.monotonic() > deadline:
            return records
        time.sleep(0.1)


def history(run_file: Path) -> list[dict]:
    """Every history row logged to the run, as {key: value}."""
    rows = []
    for record in _parsed(run_file):
        if record.WhichOneof("record_type") == "history":
            rows.append({i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in record.history.item})
    return rows


def config(run_file: Path) -> dict:
    """The run's config as logged (the last config record wins per key)."""
    values: dict = {}
    for record in _parsed(run_file):
        kind = record.WhichOneof("record_type")
        # The config given to wandb.init travels in the run record; later updates in config records.
        updates = record.run.config.update if kind == "run" else record.config.update if kind == "config" else []
        for item in updates:
            values[item.key or "/".join(item.nested_key)] = json.loads(item.value_json)
    return values


def run_record(run_file: Path) -> dict:
    """The run's identity as logged: project, entity, group, job_type, display name and tags."""
    for record in _parsed(run_file):
        if record.WhichOneof("record_type") == "run":
            run = record.run
            return {
                "project": run.project,
                "entity": run.entity,
                "group": run.run_group,
                "job_type": run.job_type,
                "name": run.display_name,
                "tags": list(run.tags),
            }
    return {}


def artifacts(run_file: Path) -> list[dict]:
    """Every artifact the run logged: name, type, aliases and the paths in its manifest."""
    found = []
    for record in _parsed(run_file):
        if record.WhichOneof("record_type") == "artifact":
            artifact = record.artifact
            found.append(
                {
                    "name": artifact.name,
                    "type": artifact.type,
                    "aliases": list(artifact.aliases),
                    "files": sorted(entry.path for entry in artifact.manifest.contents),
                }
            )
    return found
