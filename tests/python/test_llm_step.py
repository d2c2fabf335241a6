"""examples/llm_step.py, the reference LLM step: its counts against
FlopCounterMode and against hand computations written here (dense products
from the configuration, causal pairs by enumeration, the analytic formulas
trainers use), eager against compiled, one process against a 2 x 2 gloo
mesh (FSDP2 on dp, tensor parallel on tp), and its command line."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from gloo_ranks import run_ranks
import torch
import torch.nn.functional as F
from torch.utils import flop_counter
from torch.utils.flop_counter import FlopCounterMode

import torchscan_dispatch

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "llm_step.py"
WORKER = Path(__file__).with_name("llm_step_worker.py")
RANK_TIMEOUT_S = 300

spec = importlib.util.spec_from_file_location("llm_step", EXAMPLE)
llm_step = importlib.util.module_from_spec(spec)
sys.modules["llm_step"] = llm_step  # dataclasses look their module up
spec.loader.exec_module(llm_step)

# Small: B=2 sequences of T=32 tokens, width 64, 4 query heads and 2
# key/value heads of 16, SwiGLU hidden 128, vocabulary 256, 2 layers.
CONFIG = llm_step.Config(vocab=256, width=64, layers=2, heads=4, kv_heads=2, hidden=128, length=32)
BATCH = 2


def known(metric: dict) -> int:
    return metric["value"] if metric["value"] is not None else metric["known_value"]


def tokens_for(config, batch=BATCH, seed=1):
    return torch.randint(config.vocab, (batch, config.length + 1), generator=torch.Generator().manual_seed(seed))


def forward_backward(model, tokens):
    logits = model(tokens[:, :-1])
    F.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten()).backward()


def model_of(config):
    torch.manual_seed(0)
    return llm_step.Llama(config)


# --- hand computations (independent of the library and of FlopCounterMode)


def dense_matmul_parameters(config) -> int:
    """Parameters that multiply every token: each layer's projections and
    SwiGLU (or, for a mixture of experts, its router and one expert: top-1),
    and the output head. Not the embedding (a lookup) nor the norms."""
    d, w = config.head_dim, config.width
    attention = w * config.heads * d + 2 * w * config.kv_heads * d + config.heads * d * w
    mlp = 3 * w * config.hidden
    router = w * config.experts
    return config.layers * (attention + mlp) + router + w * config.vocab


def attention_flops(config, batch, pairs_per_head, backward=True) -> int:
    """FlopCounterMode's convention for attention: forward q @ k^T and
    scores @ v, 2*d each per (query, key) pair and query head; backward
    recomputes the scores (2d) and forms grad v, grad scores, grad q and
    grad k (2d each): 10d."""
    per_pair = 4 * config.head_dim + (10 * config.head_dim if backward else 0)
    return config.layers * batch * config.heads * pairs_per_head * per_pair


def causal_pairs(length: int) -> int:
    return sum(1 for query in range(length) for key in range(length) if key <= query)


# --- one process, eager


@pytest.fixture(scope="module")
def eager_sdpa():
    model, tokens = model_of(CONFIG), tokens_for(CONFIG)
    with torchscan_dispatch.FlopCounter() as counter:
        forward_backward(model, tokens)
    with FlopCounterMode(display=False) as mode:
        forward_backward(model, tokens)
    return counter.report(), mode.get_total_flops()


def test_forward_backward_equals_flop_counter_mode_and_the_hand_count(eager_sdpa):
    report, flop_counter_mode = eager_sdpa
    tokens = BATCH * CONFIG.length
    # Every product's input needs a gradient: backward is twice forward.
    dense = 6 * dense_matmul_parameters(CONFIG) * tokens
    attention = attention_flops(CONFIG, BATCH, CONFIG.length**2)
    assert report["by_operator"]["aten.mm"] == flop_counter_mode == dense
    # FlopCounterMode counts nothing for the CPU's flash attention: its
    # formulas for the CUDA kernels, applied to the same shapes (query heads
    # for key and value: grouped-query attention computes every query head).
    shape = (BATCH, CONFIG.heads, CONFIG.length, CONFIG.head_dim)
    flop_counter_mode_formulas = CONFIG.layers * (
        flop_counter.sdpa_flop_count(shape, shape, shape) + flop_counter.sdpa_backward_flop_count(shape, *[shape] * 3)
    )
    assert attention == flop_counter_mode_formulas
    assert known(report["total"]) == dense + attention
    # Partial, not wrong: the elementwise operators have no formula, and are named.
    assert report["total"]["status"] == "partial"
    named = {d["operator"] for d in report["diagnostics"] if d["code"] == "uncounted_operator"}
    assert {"aten.rsqrt", "aten.silu", "aten.embedding"} <= named


def test_mask_aware_attention_counts_the_enumerated_causal_pairs(eager_sdpa):
    report, _ = eager_sdpa
    allowed = causal_pairs(CONFIG.length)
    assert allowed == CONFIG.length * (CONFIG.length + 1) // 2
    excluded = attention_flops(CONFIG, BATCH, CONFIG.length**2) - attention_flops(CONFIG, BATCH, allowed)
    assert known(report["mask_aware"]) == known(report["total"]) - excluded
    assert report["mask_aware"]["diagnostics"] == []


def test_mixture_of_experts_counts_grouped_mm_where_flop_counter_mode_counts_zero():
    config = dataclasses.replace(CONFIG, experts=4)
    model, tokens = model_of(config), tokens_for(config)
    with torchscan_dispatch.FlopCounter(track_modules=False) as counter:
        forward_backward(model, tokens)
    with FlopCounterMode(display=False) as mode:
        forward_backward(model, tokens)
    report = counter.report()
    count = BATCH * config.length
    # Top-1: every token through one expert's three products, forward and
    # the two backward products (grad input, grad weight).
    grouped = 6 * 3 * config.width * config.hidden * count
    assert report["by_operator"]["aten._grouped_mm"] == grouped
    attention = attention_flops(config, BATCH, config.length**2)
    assert known(report["total"]) == mode.get_total_flops() + grouped + attention
    # The analytic 6N is exact for the active parameters of a top-1 MoE.
    assert known(report["total"]) == 6 * dense_matmul_parameters(config) * count + attention
    assert report["by_precision"]["bf16"] == grouped


def test_flex_attention_forward_counts_blocks_executed_and_pairs_allowed():
    config = dataclasses.replace(CONFIG, attention="flex")
    model, tokens = model_of(config), tokens_for(config)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # eager flex attention warns once
        with torch.no_grad(), torchscan_dispatch.FlopCounter(track_modules=False) as counter:
            model(tokens[:, :-1])
    report = counter.report()
    # One 128-token block holds all 32 x 32 pairs: the kernel computes it whole.
    executed = attention_flops(config, BATCH, config.length**2, backward=False)
    allowed = attention_flops(config, BATCH, causal_pairs(config.length), backward=False)
    assert report["by_operator"]["aten.bmm"] == executed
    assert known(report["total"]) - known(report["mask_aware"]) == executed - allowed


# --- the analytic formulas trainers use


def test_analytic_formula_is_exact_for_the_dense_part_and_differs_by_the_explained_amount(eager_sdpa):
    report, _ = eager_sdpa
    layers, heads, head_dim, length = CONFIG.layers, CONFIG.heads, CONFIG.head_dim, CONFIG.length
    tokens = BATCH * length
    # 6N per token is exact for the products when N counts what multiplies
    # each token; with N every parameter, it overcounts the embedding table
    # and the norms' weights (no products), 6 FLOPs per parameter and token.
    n = dense_matmul_parameters(CONFIG)
    assert report["by_operator"]["aten.mm"] == 6 * n * tokens
    every_parameter = sum(p.numel() for p in model_of(CONFIG).parameters())
    no_products = CONFIG.vocab * CONFIG.width + (2 * layers + 1) * CONFIG.width
    assert 6 * every_parameter * tokens - report["by_operator"]["aten.mm"] == 6 * no_products * tokens
    # 12*l*h*q*t per token: forward 4, backward 8 per pair; the executed
    # count adds the scores the backward kernel recomputes (2 per pair).
    analytic = 12 * layers * heads * head_dim * length * tokens
    executed = known(report["total"]) - report["by_operator"]["aten.mm"]
    recomputed_scores = 2 * layers * BATCH * heads * head_dim * length**2
    assert executed == analytic + recomputed_scores
    # The causal shortcut halves T^2; the mask allows T(T+1)/2 pairs: the
    # diagonal's T/2 pairs more, and their recomputed scores.
    causal = analytic // 2
    mask_aware = known(report["mask_aware"]) - report["by_operator"]["aten.mm"]
    pairs = length * (length + 1) // 2
    diagonal = 12 * layers * BATCH * heads * head_dim * (pairs - length**2 // 2)
    assert mask_aware == causal + diagonal + 2 * layers * BATCH * heads * head_dim * pairs
    assert mask_aware != causal


# --- eager and compiled


@pytest.fixture(scope="module")
def compiled_sdpa():
    torch._dynamo.reset()
    model, tokens = model_of(CONFIG), tokens_for(CONFIG)
    compiled = torch.compile(model)
    forward_backward(compiled, tokens)  # compile outside the measurement
    with torchscan_dispatch.FlopCounter(track_modules=False) as counter:
        forward_backward(compiled, tokens)
    torch._dynamo.reset()
    return counter.report()


def test_compiled_step_counts_what_the_eager_step_counts(eager_sdpa, compiled_sdpa):
    # Where they need not be equal (docs/mfu.md): with --experts, the
    # compiled graph's _grouped_mm offsets are not readable, so the compiled
    # total is a lower bound without it (the diagnostic test_grouped_mm.py
    # checks on meta tensors); and the elementwise operators each mode runs differ
    # (inductor fuses them), which no total counts.
    eager, _ = eager_sdpa
    # The products and attention are the same operators with the same
    # shapes; inductor fuses elementwise work, which has no formula either way.
    assert compiled_sdpa["by_operator"] == eager["by_operator"]
    assert known(compiled_sdpa["total"]) == known(eager["total"])
    assert known(compiled_sdpa["mask_aware"]) == known(eager["mask_aware"])


# --- one process against a 2 x 2 mesh


MESH_CONFIG = dataclasses.replace(CONFIG, experts=4)
MESH_BATCH = 4


@pytest.fixture(scope="module")
def four_ranks(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("llm_step_mesh")
    config = json.dumps(dataclasses.asdict(MESH_CONFIG))
    results = run_ranks(WORKER, [str(tmp_path), config, str(MESH_BATCH)], 4, tmp_path, timeout_s=RANK_TIMEOUT_S)
    for rank, result in enumerate(results):
        assert "exception" not in result, f"rank {rank}:\n{result['exception']}"
    return results


def _by_block(report: dict) -> dict[str, int]:
    """by_module without the root's own label (FSDP2 renames the root's class)."""
    return {label.split(".", 1)[1]: flops for label, flops in report["by_module"].items() if "." in label}


def test_sharded_products_sum_over_ranks_to_the_single_process_count(four_ranks):
    model, tokens = model_of(MESH_CONFIG), tokens_for(MESH_CONFIG, MESH_BATCH)
    with torchscan_dispatch.FlopCounter() as counter:
        forward_backward(model, tokens)
    single = _by_block(counter.report())
    ranks = [_by_block(result["report"]) for result in four_ranks]
    summed = {label: sum(rank[label] for rank in ranks) for label in single}
    # Attention (heads split on tp) and the dense SwiGLU (hidden units split
    # on tp), batch split on dp: the four shards sum to the whole.
    for label in ("layers.0.attention", "layers.0.mlp", "layers.1.attention"):
        assert summed[label] == single[label], label
    # Replicated on tp (the head, the mixture of experts): each tp rank
    # repeats its dp share, so the sum is twice the whole.
    for label in ("head", "layers.1.mlp"):
        assert summed[label] == 2 * single[label], label
    replicated = single["head"] + single["layers.1.mlp"]
    total = sum(known(result["report"]["total"]) for result in four_ranks)
    assert total == known(counter.report()["total"]) + replicated


def tensor_parallel(name: str) -> bool:
    """Whether llm_step.parallelize splits parameter ``name`` on tp: the
    attention projections, and the dense (layer 0) SwiGLU's."""
    return ".attention." in name or name.startswith("layers.0.mlp.")


@pytest.mark.parametrize("rank", [0, 3])
def test_communication_per_mesh_dimension_by_hand(four_ranks, rank):
    result = four_ranks[rank]
    report = result["report"]
    groups = {group["name"]: group for group in report["distributed"]["groups"]}
    dp, tp = result["dimension_groups"]["dp"], result["dimension_groups"]["tp"]
    assert groups[dp]["mesh_dim"]["name"] == "dp" and groups[tp]["mesh_dim"]["name"] == "tp"
    by_group = report["communication"]["by_group"]
    # FSDP2 reduce-scatters every gradient once, over dp (n = 2): the
    # parameters' tensor-parallel local shards, bus bytes (n-1)/n of them.
    reduce_scatter = by_group[dp]["by_kind"]["reduce_scatter"]
    local = sum(
        p.numel() * p.element_size() // (2 if tensor_parallel(name) else 1)
        for name, p in model_of(MESH_CONFIG).named_parameters()
    )
    assert (reduce_scatter["payload_bytes"], reduce_scatter["bus_bytes"]) == (local, local // 2)
    # Tensor parallel all-reduces one float32 activation [local batch, T, W]
    # per RowwiseParallel output (o, and down of the dense MLP) and per
    # ColwiseParallel input gradient (q, k, v, and gate, up of the dense MLP).
    activation = result["local_batch"] * MESH_CONFIG.length * MESH_CONFIG.width * 4
    calls = (2 + 5) + (1 + 3)  # layer 0 dense, layer 1 mixture of experts
    all_reduce = by_group[tp]["by_kind"]["all_reduce"]
    assert (all_reduce["calls"], all_reduce["payload_bytes"]) == (calls, calls * activation)
    assert all_reduce["bus_bytes"] == calls * activation  # 2(n-1)/n = 1 for n = 2
    assert llm_step.communication_by_dimension(report)["tp"]["payload_bytes"] == calls * activation


# --- the command line


def run_example(capsys, *args: str) -> tuple[int, str, str]:
    """The example's command line, in this process (a subprocess would
    import torch again): exit status, stdout, stderr."""
    with pytest.raises(SystemExit) as exit_info:
        llm_step.parse_arguments(list(args))
    captured = capsys.readouterr()
    return exit_info.value.code, captured.out, captured.err


def test_help_explains_every_option(capsys):
    status, out, _ = run_example(capsys, "--help")
    assert status == 0
    for option in ("--steps", "--warmup", "--batch", "--length", "--vocab", "--width", "--layers", "--heads",
                   "--kv-heads", "--hidden", "--experts", "--attention", "--compile", "--forward-only",
                   "--tensor-parallel", "--peak-flops", "--device-model", "--seed"):
        assert option in out, option
    assert out.count("(default") >= 9


def test_the_script_runs_as_a_program():
    result = subprocess.run([sys.executable, str(EXAMPLE), "--kv-heads", "3"], capture_output=True, text=True,
                            timeout=120, check=False)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == "llm_step.py: error: --kv-heads 3 must divide --heads 4\n"


@pytest.mark.parametrize(
    ("args", "cause"),
    [
        (["--bogus"], "unrecognized arguments: --bogus"),
        (["--steps", "x"], "invalid int value: 'x'"),
        (["--steps", "0"], "--steps must be at least 1, got 0"),
        (["--width", "60"], "--width 60 must be --heads 4 times an even head size"),
        (["--peak-flops", "-1"], "--peak-flops must be positive"),
        (["--peak-flops", "1e12", "--device-model", "H100 SXM"], "not both"),
        (["--device-model", "Abacus"], "--device-model 'Abacus' is not in the device table"),
        (["--attention", "flex"], "flex attention has no backward on a CPU"),
    ],
)
def test_a_bad_option_gives_one_line_naming_the_cause(capsys, args, cause):
    status, out, err = run_example(capsys, *args)
    assert (status, out) == (2, "")
    assert len(err.splitlines()) == 1 and err.startswith("llm_step.py: error: ")
    assert cause in err


def test_a_run_prints_lower_bounds_and_names_what_is_not_counted(capsys):
    llm_step.main(["--steps", "1", "--warmup", "0", "--length", "16", "--peak-flops", "1e12"])
    out = capsys.readouterr().out
    assert "None" not in out
    assert "hardware FLOPs      >= " in out and "(lower bound)" in out
    assert "not counted, no FLOP formula" in out and "aten.silu" in out
    assert "MFU " in out and "n/a" not in out
    llm_step.main(["--steps", "1", "--warmup", "0", "--length", "16"])
    assert "MFU n/a (the device table has no peak for cpu" in capsys.readouterr().out


def test_the_summary_shows_bytes_their_upper_bound_and_intensity():
    a, b = torch.randn(16, 16), torch.randn(16, 16)
    torch._dynamo.reset()
    try:
        compiled = torch.compile(lambda a, b: (a @ b).relu())
        compiled(a, b)
        meter = torchscan_dispatch.StepMeter(peak_flops_per_second=1e12)
        with meter.step() as step:
            compiled(a, b)
        with meter.step() as eager:
            torch.mm(a, b)
    finally:
        torch._dynamo.reset()
    # Compiled: the graph's inputs and output (3 x 1024 bytes) are a lower
    # bound, its unfused sum 5120 the upper; 8192 FLOPs / 3072 bytes.
    assert llm_step.bytes_lines(step) == [
        "  bytes moved         >= 3,072 (lower bound)",
        "  bytes upper bound   5,120 (compiled graphs unfused)",
        "  intensity           2.667 FLOP/byte (of the known work)",
    ]
    # Eager: mm reads 2048 and writes 1024 bytes, exactly.
    assert llm_step.bytes_lines(eager) == [
        "  bytes moved         3,072",
        "  intensity           2.667 FLOP/byte",
    ]
    assert any(line.startswith("  achieved ") and line.endswith(" GB/s") for line in llm_step.describe(eager, None))


def test_tensor_parallel_on_one_process_is_refused(monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    with pytest.raises(SystemExit) as exit_info:
        llm_step.main(["--tensor-parallel", "2"])
    assert exit_info.value.code == "llm_step.py: error: --tensor-parallel needs several ranks (torchrun --nproc-per-node N)"
