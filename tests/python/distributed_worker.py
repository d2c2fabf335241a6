"""One rank of the distributed tests (test_distributed.py launches them).

Every check runs here, on a real gloo process group, and records both what
TorchScan Dispatch reports and an independent record of the same work
(CommDebugMode's collective counts, the collectives' own tensor sizes,
FlopCounterMode, hand computations); test_distributed.py compares them.
Usage: distributed_worker.py RESULT_DIR CHECKS (comma-separated groups).
"""

from __future__ import annotations

import json
import os
import sys
import traceback

import torch
import torch.distributed as dist
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

import torchscan_dispatch


def comm_debug_counts(workload) -> dict[str, int]:
    from torch.distributed.tensor.debug import CommDebugMode

    with CommDebugMode() as mode:
        workload()
    return {str(op): count for op, count in mode.get_comm_counts().items()}


def flop_counter_total(workload) -> int:
    with FlopCounterMode(display=False) as mode:
        workload()
    return mode.get_total_flops()


def plain_collectives(rank: int, world: int) -> dict:
    import torch.distributed._functional_collectives as funcol

    def workload():
        dist.all_reduce(torch.ones(10))  # float32: 40 bytes
        out = torch.empty(6 * world)
        dist.all_gather_into_tensor(out, torch.ones(6))  # 24 per rank
        dist.all_gather([torch.empty(3) for _ in range(world)], torch.ones(3))
        dist.reduce_scatter_tensor(torch.empty(4), torch.ones(4 * world))
        dist.broadcast(torch.ones(5, dtype=torch.float64), src=0)
        if rank == 0:
            dist.send(torch.ones(3, dtype=torch.int64), dst=1)
        elif rank == 1:
            dist.recv(torch.empty(3, dtype=torch.int64), src=0)
        # A functional collective calls c10d::allreduce_ in its kernel:
        # counted once, as itself; wait_tensor is not communication.
        funcol.all_reduce(torch.ones(7), "sum", dist.group.WORLD).wait()

    with torchscan_dispatch.FlopCounter() as counter:
        workload()
    return {"report": counter.report(), "comm_debug": comm_debug_counts(workload)}


class Mlp(nn.Module):
    def __init__(self, dims=(16, 32, 4)):
        super().__init__()
        self.up = nn.Linear(dims[0], dims[1])
        self.down = nn.Linear(dims[1], dims[2])

    def forward(self, x):
        return self.down(torch.relu(self.up(x)))


def ddp_step(rank: int, world: int) -> dict:
    from torch.nn.parallel import DistributedDataParallel

    torch.manual_seed(0)
    model = DistributedDataParallel(Mlp(), bucket_cap_mb=0.001)
    batch = torch.randn(8, 16, generator=torch.Generator().manual_seed(rank))

    def step():
        model(batch).sum().backward()

    step()  # the first step builds DDP's buckets,
    step()  # the second rebuilds them (broadcasting their layout)
    with torchscan_dispatch.FlopCounter(track_modules=False) as counter:
        step()
    parameters = [p for p in model.parameters()]
    return {
        "report": counter.report(),
        "comm_debug": comm_debug_counts(step),
        "flop_counter_mode": flop_counter_total(step),
        "parameter_bytes": sum(p.numel() * p.element_size() for p in parameters),
    }


def fsdp_step(rank: int, world: int) -> dict:
    from torch.distributed.fsdp import fully_shard

    torch.manual_seed(0)
    model = Mlp()
    sizes = [p.numel() * p.element_size() for p in model.parameters()]
    fully_shard(model)
    batch = torch.randn(8, 16, generator=torch.Generator().manual_seed(rank))

    def step():
        model(batch).sum().backward()

    step()
    with torchscan_dispatch.FlopCounter(track_modules=False) as counter:
        step()
    return {
        "report": counter.report(),
        "comm_debug": comm_debug_counts(step),
        "parameter_bytes": sum(sizes),
    }


def tensor_parallel_mlp(rank: int, world: int) -> dict:
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        RowwiseParallel,
        parallelize_module,
    )

    mesh = init_device_mesh("cpu", (world,))
    torch.manual_seed(0)
    model = parallelize_module(
        Mlp((16, 32, 16)), mesh, {"up": ColwiseParallel(), "down": RowwiseParallel()}
    )
    x = torch.randn(8, 16)

    def forward():
        model(x)

    with torchscan_dispatch.FlopCounter(track_modules=False) as counter:
        forward()
    return {"report": counter.report(), "comm_debug": comm_debug_counts(forward)}


def outside_a_subgroup(rank: int, world: int) -> dict:
    # Ranks 1 and 3 are outside the group: new_group gives them a
    # placeholder (docs/distributed.md), and their measurement must work.
    group = dist.new_group([0, 2])
    x, w = torch.randn(4, 8), torch.randn(8, 8)
    with torchscan_dispatch.FlopCounter(track_modules=False) as counter:
        y = x @ w  # 2*4*8*8 = 512 FLOPs
        if rank in (0, 2):
            dist.all_reduce(y, group=group)  # 4*8 float32 = 128 bytes
        dist.all_reduce(y)
    member = rank in (0, 2)
    return {"report": counter.report(), "group_name": str(group.group_name) if member else None}


def parallel_mesh_step(rank: int, shape: tuple[int, ...], names: tuple[str, ...],
                       shard: str | tuple[str, ...], tensor_parallel: str | None) -> dict:
    """One measured training step of Mlp((16, 32, 16)) under FSDP2 on mesh
    dimension(s) `shard` (two names: HSDP, replicate then shard) and, when
    given, tensor parallelism on dimension `tensor_parallel`."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor import DTensor
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        RowwiseParallel,
        parallelize_module,
    )

    mesh = init_device_mesh("cpu", shape, mesh_dim_names=names)
    torch.manual_seed(0)
    model = Mlp((16, 32, 16))
    if tensor_parallel is not None:
        model = parallelize_module(
            model, mesh[tensor_parallel], {"up": ColwiseParallel(), "down": RowwiseParallel()}
        )
    # The bytes FSDP2 shards: each parameter's tensor-parallel local shard.
    local_bytes = sum(
        (p.to_local() if isinstance(p, DTensor) else p).numel() * p.element_size()
        for p in model.parameters()
    )
    fully_shard(model, mesh=mesh[shard])
    # Ranks of one tensor-parallel group see the same batch.
    data_rank = mesh[shard].get_rank() if isinstance(shard, tuple) else mesh[shard].get_local_rank()
    batch = torch.randn(8, 16, generator=torch.Generator().manual_seed(data_rank))

    def step():
        model(batch).sum().backward()

    step()
    with torchscan_dispatch.FlopCounter(track_modules=False) as counter:
        step()
    dimension_groups = {name: str(mesh[name].get_group().group_name) for name in names}
    return {
        "report": counter.report(),
        "comm_debug": comm_debug_counts(step),
        "flop_counter_mode": flop_counter_total(step),
        "local_parameter_bytes": local_bytes,
        "dimension_groups": dimension_groups,
        "job": torchscan_dispatch.gather_job_report(counter.report()),
    }


def fsdp_tensor_parallel(rank: int, world: int) -> dict:
    return parallel_mesh_step(rank, (2, 2), ("dp", "tp"), "dp", "tp")


def mesh_3d(rank: int, world: int) -> dict:
    # Names other than fsdp_tp's: DTensor takes a mesh equal to an earlier
    # one (same ranks, layout and names) for that one, and runs its
    # collectives on the earlier mesh's groups.
    return parallel_mesh_step(rank, (1, 2, 2), ("pp", "fsdp", "mp"), "fsdp", "mp")


def hsdp(rank: int, world: int) -> dict:
    return parallel_mesh_step(rank, (2, 2), ("replicate", "shard"), ("replicate", "shard"), None)


def job_gather(rank: int, world: int) -> dict:
    x = torch.randn(4, 8)
    w = torch.randn(8, 8 * (rank + 1))
    with torchscan_dispatch.FlopCounter() as counter:
        dist.all_reduce(x @ w @ w.T)
    job = torchscan_dispatch.gather_job_report(counter.report())
    return {"report": counter.report(), "job": job}


def failing_rank(rank: int, world: int) -> dict:
    report = None
    error = None
    try:
        with torchscan_dispatch.FlopCounter() as counter:
            torch.randn(4, 4) @ torch.randn(4, 4)
            if rank == world - 1:
                raise RuntimeError("this rank fails")
        report = counter.report()
    except RuntimeError as exc:
        error = str(exc)
    job = torchscan_dispatch.gather_job_report(report)
    # The process group is still usable afterwards.
    after = torch.tensor([float(rank)])
    dist.all_reduce(after)
    return {"error": error, "job": job, "after": after.item()}


def mfu_steps(rank: int, world: int) -> dict:
    torch.manual_seed(0)
    model = Mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    batch = torch.randn(8, 16)

    def step():
        model(batch).sum().backward()
        optimizer.step()
        optimizer.zero_grad()

    meter = torchscan_dispatch.StepMeter(peak_flops_per_second=1e12)
    for _ in range(2):
        with meter.step() as stats:
            with stats.phase("forward"):
                loss = model(batch).sum()
            with stats.phase("backward"):
                loss.backward()
            with stats.phase("optimizer"):
                optimizer.step()
                optimizer.zero_grad()
    last = meter.steps[-1]
    return {
        "flops": last.flops,
        "by_phase": last.flops_by_phase,
        "seconds": last.seconds,
        "mfu": last.mfu,
        "achieved": last.achieved_flops_per_second,
        "flop_counter_mode": flop_counter_total(step),
    }


def compiled_collective(rank: int, world: int) -> dict:
    import torch.distributed._functional_collectives as funcol

    w = torch.randn(16, 8)

    def step(x):
        reduced = funcol.all_reduce(x @ w, "sum", dist.group.WORLD)
        return funcol.all_gather_tensor(reduced, 0, dist.group.WORLD) * 2

    compiled = torch.compile(step)
    x = torch.randn(4, 16)
    compiled(x)  # compile outside the measurement
    with torchscan_dispatch.FlopCounter(track_modules=False) as compiled_counter:
        compiled(x)
    with torchscan_dispatch.FlopCounter(track_modules=False) as eager_counter:
        step(x)
    return {"compiled": compiled_counter.report(), "eager": eager_counter.report()}


CHECKS = {
    "plain": plain_collectives,
    "ddp": ddp_step,
    "tp": tensor_parallel_mlp,
    "fsdp": fsdp_step,
    "gather": job_gather,
    "subgroup": outside_a_subgroup,
    "fsdp_tp": fsdp_tensor_parallel,
    "mesh3d": mesh_3d,
    "hsdp": hsdp,
    "failing": failing_rank,
    "mfu": mfu_steps,
    "compiled": compiled_collective,
}


def main() -> None:
    result_dir, checks = sys.argv[1], sys.argv[2].split(",")
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", rank=rank, world_size=world)
    results = {"rank": rank, "world": world}
    try:
        for name in checks:
            try:
                results[name] = CHECKS[name](rank, world)
            except Exception:
                results[name] = {"exception": traceback.format_exc()}
            dist.barrier()
    finally:
        with open(os.path.join(result_dir, f"rank{rank}.json"), "w") as file:
            json.dump(results, file)
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
