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

import gc
import hashlib
import json
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from torchscan_dispatch._library import hooks


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


# NOTE [Which process groups a rank has]
# _world.pg_group_ranks maps each group to its global-to-group rank map, but
# not only groups: new_group() on a rank outside the new group returns the
# placeholder GroupMember.NON_GROUP_MEMBER (an int) and still records a rank
# map under it, so after new_group([0, 2]), or any DeviceMesh of two or more
# dimensions, ranks 1 and 3 have an int key there. Only ProcessGroup keys
# this rank is a member of are its groups.
def _member_groups() -> list[tuple[Any, list[int]]]:
    """This rank's process groups, each with its global ranks in group-rank
    order."""
    dist = torch.distributed
    rank = dist.get_rank()
    groups = []
    for group, ranks in list(dist.distributed_c10d._world.pg_group_ranks.items()):
        if not isinstance(group, dist.ProcessGroup) or rank not in ranks:
            continue
        groups.append((group, sorted(ranks, key=lambda global_rank: ranks[global_rank])))
    return groups


# torch's DeviceMesh describes each group it creates for a mesh dimension as
# "mesh_<dimension name>" (torch/distributed/device_mesh.py,
# _init_one_process_group; "dim_<i>" names the dimensions of a mesh made
# without mesh_dim_names).
_MESH_DESCRIPTION_PREFIX = "mesh_"
_UNNAMED_DIMENSION_PREFIX = "dim_"

# (group name, description, ranks) -> the mesh dimension found for it.
_mesh_dimensions: dict[tuple[str, str, tuple[int, ...]], dict[str, Any]] = {}


def _root_mesh_dimensions() -> dict[str, tuple[str, int]]:
    """Group name -> (dimension name, index) for every dimension, on this
    rank, of the root DeviceMeshes alive in this process."""
    module = sys.modules.get("torch.distributed.device_mesh")
    mesh_class = getattr(module, "DeviceMesh", None)
    if mesh_class is None:  # never imported: no mesh exists
        return {}
    # NOTE [Finding meshes]
    # torch keeps no registry of DeviceMeshes, and a group's description
    # names its dimension but not the dimension's index, so the meshes are
    # found among the live objects. This costs about 0.1 s per 200,000
    # objects; rank_context runs it only for a mesh group it has not seen
    # (once per mesh, not once per measurement). Root meshes only: a sliced
    # mesh (mesh["tp"]) reuses its root's groups with other indices, and a
    # flattened one adds a group that is no dimension of the root.
    found: dict[str, tuple[str, int]] = {}
    for candidate in gc.get_objects():
        if mesh_class not in type(candidate).__mro__:
            continue
        if getattr(candidate, "_root_mesh", None) is not None:
            continue
        group_names = getattr(candidate, "_dim_group_names", None) or []
        dimension_names = getattr(candidate, "mesh_dim_names", None)
        for index, group_name in enumerate(group_names):
            name = dimension_names[index] if dimension_names else f"{_UNNAMED_DIMENSION_PREFIX}{index}"
            found.setdefault(str(group_name), (name, index))
    return found


def _find_mesh_dimension(name: str, description: str,
                         live: dict[str, tuple[str, int]]) -> dict[str, Any]:
    """The ``mesh_dim`` of a group whose description is ``mesh_<name>``."""
    if name in live:
        return {"name": live[name][0], "index": live[name][1]}
    dimension_name = description[len(_MESH_DESCRIPTION_PREFIX):]
    index = None
    if dimension_name.startswith(_UNNAMED_DIMENSION_PREFIX):
        suffix = dimension_name[len(_UNNAMED_DIMENSION_PREFIX):]
        index = int(suffix) if suffix.isdigit() else None
    return {"name": dimension_name, "index": index}


def _mesh_dimensions_of(members: list[tuple[str, str, list[int]]]) -> list[dict[str, Any] | None]:
    """Each group's ``mesh_dim`` (None for a group no DeviceMesh made)."""
    keys = [
        (name, description, tuple(ranks)) if description.startswith(_MESH_DESCRIPTION_PREFIX) else None
        for name, description, ranks in members
    ]
    if any(key is not None and key not in _mesh_dimensions for key in keys):
        live = _root_mesh_dimensions()
        for key in keys:
            if key is not None and key not in _mesh_dimensions:
                _mesh_dimensions[key] = _find_mesh_dimension(key[0], key[1], live)
    return [None if key is None else dict(_mesh_dimensions[key]) for key in keys]


def rank_context() -> dict[str, Any] | None:
    """This rank's ``distributed`` context, or None outside a process group.

    ``groups`` lists every process group this rank is a member of: its name
    (what ``communication.by_group`` is keyed by), size and global ranks in
    group-rank order, and, for a group torch's DeviceMesh made for one of its
    dimensions, ``mesh_dim``: ``{"name", "index"}``. docs/distributed.md
    ("Process groups and mesh dimensions") has the rule.
    """
    if not _initialized():
        return None
    dist = torch.distributed
    members = [
        (str(group.group_name), str(getattr(group, "group_desc", "") or ""), ranks)
        for group, ranks in _member_groups()
    ]
    groups = []
    for (name, _, ranks), mesh_dim in zip(members, _mesh_dimensions_of(members)):
        entry: dict[str, Any] = {"name": name, "size": len(ranks), "ranks": ranks}
        if mesh_dim is not None:
            entry["mesh_dim"] = mesh_dim
        groups.append(entry)
    groups.sort(key=lambda entry: entry["name"])
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
    ``missing_ranks`` and make the total partial. ``bytes`` sums the ranks'
    bytes moved and, when a rank ran a compiled graph, their upper bounds
    (``bytes["upper_bound"]``: a rank that ran none adds its bytes, which
    are its upper bound; docs/report-schema.md says when it is partial).
    """
    if names is None:
        names = [f"report {index}" for index in range(len(reports))]
    if len(names) != len(reports):
        raise ValueError(f"{len(reports)} reports but {len(names)} names")
    return hooks().merge_rank_reports(list(reports), list(names))


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
