"""Exact per-step FLOPs, MFU and one job report for a small GPT trained with
DDP or FSDP2, on PyTorch's own distributed engine.

    torchrun --nproc-per-node 2 examples/distributed_gpt.py --steps 3
    torchrun --nproc-per-node 2 examples/distributed_gpt.py --fsdp

Each rank measures every step with a StepMeter (exact operator FLOPs split
into forward / backward / optimizer, achieved FLOP/s, MFU against the
device's dense peak, communication bytes); the last step's per-rank reports
are gathered to rank 0 and merged into one job report. On CPU (gloo) there
is no peak in the table: pass --peak-tflops to get an MFU.
"""

from __future__ import annotations

import argparse
import gc
import json
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

import torchscan_dispatch


class Block(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.norm2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, width = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(width, dim=-1)
        shape = (batch, length, self.heads, width // self.heads)
        q, k, v = (t.reshape(shape).transpose(1, 2) for t in (q, k, v))
        attention = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(attention.transpose(1, 2).reshape(batch, length, width))
        return x + self.mlp(self.norm2(x))


class Gpt(nn.Module):
    def __init__(self, vocab: int, width: int, layers: int, heads: int, length: int) -> None:
        super().__init__()
        self.tokens = nn.Embedding(vocab, width)
        self.positions = nn.Embedding(length, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.tokens(tokens) + self.positions(torch.arange(tokens.shape[1], device=tokens.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--length", type=int, default=32)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--vocab", type=int, default=256)
    parser.add_argument("--fsdp", action="store_true", help="FSDP2 fully_shard instead of DDP")
    parser.add_argument("--peak-tflops", type=float, default=None, help="peak TFLOP/s override")
    parser.add_argument("--report", default=None, help="write the job report (JSON) here")
    args = parser.parse_args()

    cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if cuda else "gloo")
    rank = dist.get_rank()
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0))) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    torch.manual_seed(0)
    model = Gpt(args.vocab, args.width, args.layers, 4, args.length).to(device)
    if args.fsdp:
        from torch.distributed.fsdp import fully_shard

        for block in model.blocks:
            fully_shard(block)
        fully_shard(model)
    else:
        model = nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(rank)

    meter = torchscan_dispatch.StepMeter(
        peak_flops_per_second=args.peak_tflops * 1e12 if args.peak_tflops else None,
        device=device,
        dtype=torch.float32,
    )
    for _ in range(args.steps):
        tokens = torch.randint(args.vocab, (args.batch, args.length + 1), generator=generator).to(device)
        with meter.step() as step:
            with step.phase("forward"):
                logits = model(tokens[:, :-1])
                loss = F.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten())
            with step.phase("backward"):
                loss.backward()
            with step.phase("optimizer"):
                optimizer.step()
                optimizer.zero_grad()
        mfu = f"{step.mfu:.2%}" if step.mfu is not None else "n/a (no peak for this device)"
        print(
            f"rank {rank} step {step.index}: {step.flops} FLOPs {step.flops_by_phase}, "
            f"{step.achieved_flops_per_second / 1e9:.2f} GFLOP/s, MFU {mfu}, "
            f"communication {step.communication_payload_bytes} payload / "
            f"{step.communication_bus_bytes} bus bytes",
            flush=True,
        )

    job = torchscan_dispatch.gather_job_report(meter.steps[-1].report)
    if job is not None:
        total = job["total"]
        # A partial total is a lower bound: its known part, and what is missing.
        flops = str(total["value"]) if total["status"] == "complete" else f"at least {total['known_value']}"
        uncounted = sorted(
            {d["operator"] for d in meter.steps[-1].report["diagnostics"] if d["code"] == "uncounted_operator"}
        )
        print(
            f"job {job['job_id']}: {flops} FLOPs over ranks {job['ranks']} (imbalance {job['imbalance']:.3f}); "
            + (f"no formula for {', '.join(uncounted)}; " if uncounted else "")
            + (f"no report from ranks {job['missing_ranks']}; " if job["missing_ranks"] else "")
            + "communication "
            + json.dumps({kind: entry["calls"] for kind, entry in job["communication"]["by_kind"].items()}),
            flush=True,
        )
        if args.report:
            with open(args.report, "w") as file:
                json.dump(job, file, indent=2)
    # DDP's reducer and FSDP's state hold the process group: drop them first,
    # so that destroy_process_group() really destroys it now. A Gloo group
    # left for interpreter shutdown can abort the process ("terminate called
    # without an active exception") while its worker threads still run.
    del model, optimizer
    gc.collect()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
