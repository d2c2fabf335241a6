"""A reference LLM training step, measured: model and mask-aware FLOPs,
hardware FLOPs, HFU and MFU, and communication per mesh dimension.

    python examples/llm_step.py --peak-flops 1e12
    python examples/llm_step.py --attention flex --experts 4 --compile
    torchrun --nproc-per-node 4 examples/llm_step.py --tensor-parallel 2

A small Llama-style decoder (RMSNorm, rotary embeddings, grouped-query
causal attention through scaled_dot_product_attention or flex attention with
a causal BlockMask, SwiGLU MLPs, optionally a mixture-of-experts MLP whose
experts run on torch._grouped_mm) is trained with AdamW, eagerly or under
torch.compile, on one process or on a (data parallel x tensor parallel)
gloo device mesh: FSDP2 fully_shard on "dp", ColwiseParallel /
RowwiseParallel on "tp". Every step is measured by a StepMeter; docs/mfu.md
("The reference LLM step") walks through the output and compares it with
the analytic formulas trainers use.

A CPU has no row in the device table: MFU needs --peak-flops (one FLOP/s
for every precision) or --device-model (a row of
torchscan_dispatch.devices, as if the step had run there); without either
it prints "n/a" and why.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import math
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

import torchscan_dispatch
from torchscan_dispatch import devices


@dataclass(frozen=True)
class Config:
    vocab: int = 256
    width: int = 64
    layers: int = 2
    heads: int = 4
    kv_heads: int = 2
    hidden: int = 128  # SwiGLU's inner width
    length: int = 64
    experts: int = 0  # 0: every MLP dense; else the last layer's MLP is a mixture of experts
    attention: str = "sdpa"  # or "flex"

    @property
    def head_dim(self) -> int:
        return self.width // self.heads


def rotary_tables(length: int, head_dim: int, base: float = 10000.0) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of position * frequency, [length, head_dim / 2]."""
    frequencies = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
    angles = torch.outer(torch.arange(length, dtype=torch.float32), frequencies)
    return angles.cos(), angles.sin()


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding of x [batch, heads, length, head_dim], pairs split in halves."""
    first, second = x.chunk(2, dim=-1)
    return torch.cat((first * cos - second * sin, first * sin + second * cos), dim=-1)


def causal(batch: Any, head: Any, query: Any, key: Any) -> Any:
    return query >= key


class Attention(nn.Module):
    def __init__(self, config: Config) -> None:
        super().__init__()
        self.config = config
        dim = config.head_dim
        self.q = nn.Linear(config.width, config.heads * dim, bias=False)
        self.k = nn.Linear(config.width, config.kv_heads * dim, bias=False)
        self.v = nn.Linear(config.width, config.kv_heads * dim, bias=False)
        self.o = nn.Linear(config.heads * dim, config.width, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, block_mask: Any) -> torch.Tensor:
        batch, length, _ = x.shape
        dim = self.config.head_dim
        # -1 heads: under tensor parallelism each rank holds a share of them.
        q = self.q(x).view(batch, length, -1, dim).transpose(1, 2)
        k = self.k(x).view(batch, length, -1, dim).transpose(1, 2)
        v = self.v(x).view(batch, length, -1, dim).transpose(1, 2)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        if block_mask is None:
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        else:
            from torch.nn.attention.flex_attention import flex_attention

            out = flex_attention(q, k, v, block_mask=block_mask, enable_gqa=True)
        return self.o(out.transpose(1, 2).reshape(batch, length, -1))


class SwiGlu(nn.Module):
    def __init__(self, width: int, hidden: int) -> None:
        super().__init__()
        self.gate = nn.Linear(width, hidden, bias=False)
        self.up = nn.Linear(width, hidden, bias=False)
        self.down = nn.Linear(hidden, width, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.silu(self.gate(x)) * self.up(x))


class Experts(nn.Module):
    """SwiGLU experts on torch._grouped_mm: ``offs`` ends each expert's rows
    of the (expert-sorted) tokens. They hold and multiply in bfloat16:
    torch.compile's meta kernel of _grouped_mm takes nothing else (the eager
    CPU kernel would take float32)."""

    def __init__(self, width: int, hidden: int, experts: int) -> None:
        super().__init__()
        bf16 = torch.bfloat16
        # [experts, out, in], as nn.Linear stores a weight; transposed per call.
        self.gate = nn.Parameter((torch.randn(experts, hidden, width) / math.sqrt(width)).to(bf16))
        self.up = nn.Parameter((torch.randn(experts, hidden, width) / math.sqrt(width)).to(bf16))
        self.down = nn.Parameter((torch.randn(experts, width, hidden) / math.sqrt(hidden)).to(bf16))

    def forward(self, tokens: torch.Tensor, offs: torch.Tensor) -> torch.Tensor:
        tokens = tokens.to(torch.bfloat16)
        hidden = F.silu(torch._grouped_mm(tokens, self.gate.transpose(-2, -1), offs=offs))
        hidden = hidden * torch._grouped_mm(tokens, self.up.transpose(-2, -1), offs=offs)
        return torch._grouped_mm(hidden, self.down.transpose(-2, -1), offs=offs)


class MixtureOfExperts(nn.Module):
    """Top-1 routing (a float32 router) to bfloat16 Experts."""

    def __init__(self, width: int, hidden: int, experts: int) -> None:
        super().__init__()
        self.router = nn.Linear(width, experts, bias=False)
        self.experts = Experts(width, hidden, experts)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        tokens = x.reshape(-1, shape[-1])
        probabilities = self.router(tokens).softmax(dim=-1)
        weight, expert = probabilities.max(dim=-1)
        order = expert.argsort()
        counts = torch.bincount(expert, minlength=self.router.out_features)
        offs = counts.cumsum(0).to(torch.int32)
        out = self.experts(tokens[order], offs).to(x.dtype)
        return torch.empty_like(out).index_copy(0, order, out * weight[order, None]).reshape(shape)


class Block(nn.Module):
    def __init__(self, config: Config, experts: int) -> None:
        super().__init__()
        self.attention_norm = nn.RMSNorm(config.width)
        self.attention = Attention(config)
        self.mlp_norm = nn.RMSNorm(config.width)
        self.mlp = (
            MixtureOfExperts(config.width, config.hidden, experts) if experts else SwiGlu(config.width, config.hidden)
        )

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, block_mask: Any) -> torch.Tensor:
        x = x + self.attention(self.attention_norm(x), cos, sin, block_mask)
        return x + self.mlp(self.mlp_norm(x))


class Llama(nn.Module):
    def __init__(self, config: Config) -> None:
        super().__init__()
        self.config = config
        self.embedding = nn.Embedding(config.vocab, config.width)
        self.layers = nn.ModuleList(
            Block(config, config.experts if i == config.layers - 1 else 0) for i in range(config.layers)
        )
        self.norm = nn.RMSNorm(config.width)
        self.head = nn.Linear(config.width, config.vocab, bias=False)
        cos, sin = rotary_tables(config.length, config.head_dim)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)
        self.block_mask = None
        if config.attention == "flex":
            from torch.nn.attention.flex_attention import create_block_mask

            # One mask for every batch and head (B=H=None): causal only.
            self.block_mask = create_block_mask(causal, None, None, config.length, config.length, device="cpu")

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embedding(tokens)
        length = tokens.shape[1]
        cos, sin = self.cos[:length], self.sin[:length]
        for layer in self.layers:
            x = layer(x, cos, sin, self.block_mask)
        return self.head(self.norm(x))


def parallelize(model: Llama, mesh: Any) -> None:
    """Tensor parallel on mesh["tp"] (attention by heads, MLPs by hidden
    units; the mixture of experts, embedding and head replicated), then
    FSDP2 on mesh["dp"], one unit per layer and one for the rest."""
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    for layer in model.layers:
        plan = {
            "attention.q": ColwiseParallel(),
            "attention.k": ColwiseParallel(),
            "attention.v": ColwiseParallel(),
            "attention.o": RowwiseParallel(),
        }
        if isinstance(layer.mlp, SwiGlu):
            plan.update({"mlp.gate": ColwiseParallel(), "mlp.up": ColwiseParallel(), "mlp.down": RowwiseParallel()})
        parallelize_module(layer, mesh["tp"], plan)
        if isinstance(layer.mlp, MixtureOfExperts):
            # FSDP2 gathers one dtype per unit: the bfloat16 experts get their own.
            fully_shard(layer.mlp.experts, mesh=mesh["dp"])
        fully_shard(layer, mesh=mesh["dp"])
    fully_shard(model, mesh=mesh["dp"])


def make_step(
    model: nn.Module, optimizer: torch.optim.Optimizer, compiled: bool, forward_only: bool = False
) -> Callable[..., Any]:
    """One training step, phases marked when ``step`` (a StepStats) is given;
    with ``forward_only``, the forward pass and loss alone, without autograd."""
    forward = torch.compile(model) if compiled else model

    def loss_of(tokens: torch.Tensor) -> torch.Tensor:
        logits = forward(tokens[:, :-1])
        return F.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten())

    def run(tokens: torch.Tensor, step: Any = None) -> torch.Tensor:
        phase = step.phase if step is not None else lambda name: contextlib.nullcontext()
        if forward_only:
            with torch.no_grad(), phase("forward"):
                return loss_of(tokens)
        with phase("forward"):
            loss = loss_of(tokens)
        with phase("backward"):
            loss.backward()
        with phase("optimizer"):
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        return loss

    return run


def communication_by_dimension(report: dict[str, Any]) -> dict[str, dict[str, int]]:
    """Payload and bus bytes per mesh dimension ("default" for a group no
    mesh made), from the report's communication.by_group and the groups of
    its distributed context (docs/distributed.md)."""
    communication = report.get("communication")
    if communication is None:
        return {}
    groups = {group["name"]: group for group in report.get("distributed", {}).get("groups", [])}
    result: dict[str, dict[str, int]] = {}
    for name, entry in communication["by_group"].items():
        mesh_dim = groups.get(name, {}).get("mesh_dim")
        dimension = mesh_dim["name"] if mesh_dim else f"group {name}"
        totals = result.setdefault(dimension, {"calls": 0, "payload_bytes": 0, "bus_bytes": 0})
        for tally in entry["by_kind"].values():
            for key in totals:
                totals[key] += int(tally[key])
    return dict(sorted(result.items()))


def not_counted(diagnostics: list[dict[str, Any]]) -> list[str]:
    """Lines naming what a partial count lacks: the operators without a FLOP
    formula, and each operator whose formula could not run, with why."""
    without = sorted({d["operator"] for d in diagnostics if d["code"] == "uncounted_operator"})
    lines = [f"  not counted, no FLOP formula ({len(without)} operators): {', '.join(without)}"] if without else []
    for diagnostic in diagnostics:
        if diagnostic["code"] != "uncounted_operator" and diagnostic["severity"] != "info":
            lines.append(f"  not counted, {diagnostic['code']}: {diagnostic['message']}")
    return sorted(set(lines), key=lines.index)


def flops_text(value: int, complete: bool) -> str:
    """A count as a user reads it: exact, or a lower bound (the operators it
    lacks are named on the step's "not counted" line)."""
    return f"{value:,}" if complete else f">= {value:,} (lower bound)"


def bytes_lines(step: Any) -> list[str]:
    """Bytes moved, their upper bound when a compiled graph ran, and the
    arithmetic intensity, marked as the FLOPs are: a partial count is a
    lower bound, and an intensity of partial counts is of the known work."""
    lines = [f"  bytes moved         {flops_text(step.bytes_moved, step.bytes_complete)}"]
    if step.bytes_upper_bound is not None:
        upper = flops_text(step.bytes_upper_bound, step.bytes_upper_bound_complete)
        lines.append(f"  bytes upper bound   {upper} (compiled graphs unfused)")
    if step.arithmetic_intensity is not None:
        known = "" if step.intensity_complete else " (of the known work)"
        lines.append(f"  intensity           {step.arithmetic_intensity:.3f} FLOP/byte{known}")
    return lines


def percent(value: float | None, reason: str | None) -> str:
    return f"{value:.4%}" if value is not None else f"n/a ({reason})"


def describe(step: Any, rank: int | None) -> list[str]:
    report = step.report
    prefix = f"rank {rank} " if rank is not None else ""
    mask_aware = report.get("mask_aware", {})
    lines = [
        f"{prefix}step {step.index}: {step.seconds * 1e3:.1f} ms",
        f"  hardware FLOPs      {flops_text(step.hardware_flops, step.complete)}",
        f"  model FLOPs         {flops_text(step.model_flops, step.complete)}"
        f" (recomputed {step.recomputed_flops:,})",
        f"  mask-aware FLOPs    {flops_text(step.mask_aware_model_flops, step.mask_aware_complete)}",
        "  by phase            " + ", ".join(f"{name} {flops:,}" for name, flops in step.flops_by_phase.items()),
        *bytes_lines(step),
        f"  achieved            {step.achieved_flops_per_second / 1e9:.3f} GFLOP/s, "
        f"{step.achieved_bytes_per_second / 1e9:.3f} GB/s",
        f"  HFU {percent(step.hfu, step.mfu_unavailable)}, MFU {percent(step.mfu, step.mfu_unavailable)}, "
        f"mask-aware MFU {percent(step.mask_aware_mfu, step.mfu_unavailable or 'per-precision peaks')}",
    ]
    lines += not_counted(report["diagnostics"] + mask_aware.get("diagnostics", []))
    for dimension, totals in communication_by_dimension(report).items():
        lines.append(
            f"  communication {dimension}: {totals['calls']} calls, {totals['payload_bytes']:,} payload bytes, "
            f"{totals['bus_bytes']:,} bus bytes"
        )
    return lines


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:
        # One line naming the cause (--help has the usage).
        self.exit(2, f"{self.prog}: error: {message}\n")


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = _Parser(
        prog="llm_step.py",
        description=__doc__.split("\n\n")[0],
        epilog="Under torchrun (WORLD_SIZE > 1) the ranks form a gloo mesh of "
        "(WORLD_SIZE / --tensor-parallel) x --tensor-parallel, dimensions dp and tp.",
    )
    parser.add_argument("--steps", type=int, default=2, help="measured training steps (default 2)")
    parser.add_argument("--warmup", type=int, default=1,
                        help="unmeasured steps first; the compiled step compiles in them (default 1)")
    parser.add_argument("--batch", type=int, default=4,
                        help="sequences per step over the whole job; each dp rank takes batch / dp (default 4)")
    parser.add_argument("--length", type=int, default=Config.length, help="tokens per sequence (default 64)")
    parser.add_argument("--vocab", type=int, default=Config.vocab, help="vocabulary size (default 256)")
    parser.add_argument("--width", type=int, default=Config.width, help="model width (default 64)")
    parser.add_argument("--layers", type=int, default=Config.layers, help="decoder layers (default 2)")
    parser.add_argument("--heads", type=int, default=Config.heads, help="query heads (default 4)")
    parser.add_argument("--kv-heads", type=int, default=Config.kv_heads,
                        help="key/value heads, grouped-query attention; divides --heads (default 2)")
    parser.add_argument("--hidden", type=int, default=Config.hidden, help="SwiGLU inner width (default 128)")
    parser.add_argument("--experts", type=int, default=0,
                        help="experts of the last layer's mixture-of-experts MLP (top-1, torch._grouped_mm); "
                        "0: every MLP dense (default)")
    parser.add_argument("--attention", choices=("sdpa", "flex"), default="sdpa",
                        help="scaled_dot_product_attention(is_causal=True), or flex_attention with a causal "
                        "BlockMask (default sdpa)")
    parser.add_argument("--compile", action="store_true", help="run the model under torch.compile")
    parser.add_argument("--forward-only", action="store_true",
                        help="measure the forward pass and loss alone, under torch.no_grad (needed for flex "
                        "attention on a CPU, which has no flex attention backward)")
    parser.add_argument("--tensor-parallel", type=int, default=None,
                        help="size of the mesh's tp dimension under torchrun (default 2 when WORLD_SIZE > 1)")
    parser.add_argument("--peak-flops", type=float, default=None,
                        help="peak FLOP/s to measure every FLOP against (a CPU has no peak in the table)")
    parser.add_argument("--device-model", default=None,
                        help="a row of torchscan_dispatch.devices (e.g. 'H100 SXM'): each FLOP against that "
                        "device's peak for its precision, as if the step had run there")
    parser.add_argument("--seed", type=int, default=0, help="parameter and data seed (default 0)")
    args = parser.parse_args(argv)
    positive = ("steps", "batch", "length", "vocab", "width", "layers", "heads", "kv_heads", "hidden")
    for name in positive:
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    if args.warmup < 0 or args.experts < 0:
        parser.error("--warmup and --experts must not be negative")
    if args.width % args.heads or (args.width // args.heads) % 2:
        parser.error(f"--width {args.width} must be --heads {args.heads} times an even head size")
    if args.heads % args.kv_heads:
        parser.error(f"--kv-heads {args.kv_heads} must divide --heads {args.heads}")
    if args.peak_flops is not None and not args.peak_flops > 0:
        parser.error(f"--peak-flops must be positive, got {args.peak_flops}")
    if args.peak_flops is not None and args.device_model is not None:
        parser.error("give --peak-flops or --device-model, not both")
    if args.device_model is not None and devices.device_spec(args.device_model) is None:
        names = ", ".join(spec.name for spec in devices.DEVICES)
        parser.error(f"--device-model {args.device_model!r} is not in the device table (one of: {names})")
    if args.attention == "flex" and not args.forward_only:
        parser.error("--attention flex needs --forward-only here: flex attention has no backward on a CPU "
                     "(torch.nn.attention.flex_attention raises NotImplementedError for inputs that need grad)")
    if args.tensor_parallel is not None and args.tensor_parallel < 1:
        parser.error(f"--tensor-parallel must be at least 1, got {args.tensor_parallel}")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_arguments(argv)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world == 1 and args.tensor_parallel not in (None, 1):
        sys.exit("llm_step.py: error: --tensor-parallel needs several ranks (torchrun --nproc-per-node N)")
    mesh = None
    if world > 1:
        tp = args.tensor_parallel or 2
        if world % tp or args.heads % tp or args.kv_heads % tp or args.hidden % tp:
            sys.exit(f"llm_step.py: error: --tensor-parallel {tp} must divide WORLD_SIZE {world}, "
                     "--heads, --kv-heads and --hidden")
        if args.batch % (world // tp):
            sys.exit(f"llm_step.py: error: --batch {args.batch} must be a multiple of dp = {world // tp}")
        from torch.distributed.device_mesh import init_device_mesh

        dist.init_process_group("gloo")
        mesh = init_device_mesh("cpu", (world // tp, tp), mesh_dim_names=("dp", "tp"))
    config = Config(args.vocab, args.width, args.layers, args.heads, args.kv_heads, args.hidden, args.length,
                    args.experts, args.attention)
    torch.manual_seed(args.seed)
    model = Llama(config)
    if mesh is not None:
        parallelize(model, mesh)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    step_fn = make_step(model, optimizer, args.compile, args.forward_only)
    dp_rank, dp = (mesh["dp"].get_local_rank(), mesh["dp"].size()) if mesh is not None else (0, 1)
    rank = dist.get_rank() if mesh is not None else None
    generator = torch.Generator().manual_seed(args.seed)
    if args.device_model is not None:
        peak: Any = dict(devices.device_spec(args.device_model).peak_flops)
    else:
        peak = args.peak_flops
    meter = torchscan_dispatch.StepMeter(peak_flops_per_second=peak, device="cpu", dtype=torch.float32)

    def batch() -> torch.Tensor:
        # The whole job's batch, drawn alike on every rank; each dp rank takes its share.
        tokens = torch.randint(args.vocab, (args.batch, args.length + 1), generator=generator)
        return tokens.chunk(dp)[dp_rank]

    for _ in range(args.warmup):
        step_fn(batch())
    for _ in range(args.steps):
        tokens = batch()
        with meter.step() as step:
            loss = step_fn(tokens, step)
        for line in describe(step, rank):
            print(line, flush=True)
        print(f"  loss {loss.item():.4f}", flush=True)
    if mesh is not None:
        # FSDP's state holds the process groups: drop it first, so that
        # destroy_process_group() really destroys them now.
        del model, optimizer, step_fn
        gc.collect()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
