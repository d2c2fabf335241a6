"""Per-rank context, job reports and their merge for torch.distributed jobs.

A FlopReport made inside a process group (``measure_flops``,
``FlopCounter``) carries a ``distributed`` context: the job id, this rank,
the world size, the backend and the process groups this rank knows. Reports
of one job merge into one job report, offline (``merge_rank_reports``,
``torchscan merge rank*.json``) or in process (``gather_job_report``, which
gathers every rank's report to one rank over the job's own process group).
docs/distributed.md has the details.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from torchscan_dispatch._native import _ops


def _initialized() -> bool:
    return torch.distributed.is_available() and torch.distributed.is_initialized()


def job_id() -> str:
    """The id every rank of this job computes alike, without communicating.

    ``TORCHSCAN_JOB_ID`` if set; else torchrun's ``TORCHELASTIC_RUN_ID``
    (unless it is torchrun's placeholder ``none``); else a hash of the
    rendezvous address (``MASTER_ADDR``/``MASTER_PORT``), the world size and
    the backend.
    """
    explicit = os.environ.get("TORCHSCAN_JOB_ID")
    if explicit:
        return explicit
    run_id = os.environ.get("TORCHELASTIC_RUN_ID")
    if run_id and run_id != "none":
        return f"torchelastic:{run_id}"
    dist = torch.distributed
    parts = [
        os.environ.get("MASTER_ADDR", ""),
        os.environ.get("MASTER_PORT", ""),
        str(dist.get_world_size()),
        str(dist.get_backend()),
    ]
    digest = hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]
    return f"rendezvous:{digest}"


def rank_context() -> dict[str, Any] | None:
    """This rank's ``distributed`` context, or None outside a process group."""
    if not _initialized():
        return None
    dist = torch.distributed
    groups = []
    world = dist.distributed_c10d._world
    for group, ranks in world.pg_group_ranks.items():
        ordered = sorted(ranks, key=lambda global_rank: ranks[global_rank])
        groups.append({"name": str(group.group_name), "size": len(ordered), "ranks": ordered})
    groups.sort(key=lambda entry: (entry["name"]))
    return {
        "job_id": job_id(),
        "rank": dist.get_rank(),
        "world_size": dist.get_world_size(),
        "backend": str(dist.get_backend()),
        "groups": groups,
    }


def merge_rank_reports(
    reports: Sequence[Mapping[str, Any]], names: Sequence[str] | None = None
) -> dict[str, Any]:
    """Merges per-rank FlopReports (dicts) into one job report.

    Raises ValueError, naming the reports, when they come from different
    jobs, world sizes, schema or torch versions, when a rank appears twice or
    a report has no ``distributed`` context. Missing ranks are listed in
    ``missing_ranks`` and make the total partial.
    """
    if names is None:
        names = [f"report {index}" for index in range(len(reports))]
    if len(names) != len(reports):
        raise ValueError(f"{len(reports)} reports but {len(names)} names")
    texts = [json.dumps(report) for report in reports]
    return json.loads(_ops()._merge_rank_reports(texts, list(names)))


def gather_job_report(
    report: Mapping[str, Any] | None, *, dst: int = 0, group: Any = None
) -> dict[str, Any] | None:
    """Gathers every rank's report to rank ``dst`` and merges them there.

    Every rank of ``group`` must call it (a collective). A rank that has no
    report (its step failed) passes None: the job report then lists it in
    ``missing_ranks``. Returns the job report on ``dst``, None elsewhere.
    The gather itself runs outside any measurement.
    """
    dist = torch.distributed
    if not _initialized():
        raise RuntimeError("gather_job_report needs an initialized process group")
    rank = dist.get_rank()
    payload = None if report is None else json.dumps(report)
    gathered: list[Any] | None = [None] * dist.get_world_size(group) if rank == dst else None
    dist.gather_object(payload, gathered, dst=dst, group=group)
    if rank != dst:
        return None
    assert gathered is not None
    present = [(index, text) for index, text in enumerate(gathered) if text is not None]
    if not present:
        raise ValueError("no rank had a report to gather")
    return merge_rank_reports(
        [json.loads(text) for _, text in present], [f"rank {index}" for index, _ in present]
    )
