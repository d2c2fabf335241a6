#!/usr/bin/env python3
"""Side-by-side benchmarks: uninstrumented execution, TorchScan Dispatch,
PyTorch's FlopCounterMode, the released torchscan==0.2.0, and (where
installed) fvcore, ptflops and thop, on the same workloads in one run.

Every tool runs in its own process, interleaved with an uninstrumented
baseline there. Prints tables of medians over repeats as ratios to that run,
plus the nanoseconds each tool adds per operator call. Run with
`tools/bench/run` (it installs the peers and builds the library first).

Workloads:
  1. a Python loop of tiny operators (per-operator overhead dominates);
  2. the same loop issued from C++ (tools/bench/cpp_loop_bench, the floor);
  3. a ResNet-style CNN forward, a BERT-base-sized encoder forward, a small
     GPT training step (forward, backward, optimizer step); a small CNN
     forward and a small encoder training step under StepMeter, with minor
     page faults per call;
  4. crawl_module of those models on CPU and on meta (analysis overhead =
     crawl time minus plain forward time);
  5. FLOPs of a 7-billion-parameter decoder-only configuration on meta
     (time and peak RSS, each tool in its own process);
  6. the small GPT training step under torch.compile: uninstrumented
     compiled code against our counter (which counts the compiled graphs)
     and FlopCounterMode (which makes Dynamo run the step eagerly);
  7. a 2-rank DDP training step on gloo (two processes): uninstrumented
     against a StepMeter step (FLOPs, communication, MFU), interleaved in
     the same processes;
  8. the reference LLM step (examples/llm_step.py: GQA, rotary, SwiGLU,
     AdamW), eager and compiled, at two sizes: the unmeasured step against
     the same step under StepMeter with its phases, interleaved in one
     process;
  9. the host's measured peak (roofline.measure_host_peak: float32 GEMM
     FLOP/s and stream-copy bandwidth), run repeatedly: its spread;
 10. the library loaded but idle, against a process that never loads it:
     a call of a torch._dynamo.disable'd function and calls of two
     torch.compile'd models (a small one, and a deep one whose graph spec
     is a few hundred kilobytes), fresh processes alternating.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

import torchscan_dispatch  # noqa: E402

try:
    import torchscan
except ImportError:  # pragma: no cover - reported in the table
    torchscan = None


def progress(message: str) -> None:
    print(f"  ... {message}", file=sys.stderr, flush=True)


# --- tools: each returns a callable running the workload under the tool


def plain(workload, model=None, inputs=None):
    return workload


def ours(workload, model=None, inputs=None):
    return lambda: torchscan_dispatch.measure_flops(workload)


def ours_untracked(workload, model=None, inputs=None):
    return lambda: torchscan_dispatch.measure_flops(workload, track_modules=False)


def flop_counter_mode(workload, model=None, inputs=None):
    def run():
        with FlopCounterMode(display=False):
            workload()

    return run


def torchscan_released(workload, model=None, inputs=None):
    if torchscan is None:
        return None
    return lambda: torchscan.measure_flops(workload)


def fvcore_tool(workload, model=None, inputs=None):
    try:
        from fvcore.nn import FlopCountAnalysis
    except ImportError:
        return None
    if model is None:
        return None

    def run():
        analysis = FlopCountAnalysis(model, inputs)
        analysis.unsupported_ops_warnings(False)
        analysis.uncalled_modules_warnings(False)
        analysis.total()

    return run


def ptflops_tool(workload, model=None, inputs=None):
    try:
        from ptflops import get_model_complexity_info
    except ImportError:
        return None
    if model is None:
        return None

    def run():
        get_model_complexity_info(
            model, (1,), input_constructor=lambda _: inputs[0],
            as_strings=False, print_per_layer_stat=False, backend="aten", verbose=False,
        )

    return run


def thop_tool(workload, model=None, inputs=None):
    try:
        from thop import profile
    except ImportError:
        return None
    if model is None:
        return None
    return lambda: profile(model, inputs=inputs, verbose=False)


def step_meter(workload, model=None, inputs=None):
    # A training loop's meter: one StepMeter, one step() per call, its steps
    # kept as a loop keeps them.
    meter = torchscan_dispatch.StepMeter(peak_flops_per_second=1e12)

    def run():
        with meter.step():
            workload()

    return run


TOOLS = {
    "uninstrumented": plain,
    "torchscan_dispatch": ours,
    "torchscan_dispatch, track_modules=False": ours_untracked,
    "FlopCounterMode": flop_counter_mode,
    "torchscan 0.2.0": torchscan_released,
    "fvcore": fvcore_tool,
    "ptflops (aten)": ptflops_tool,
    "thop": thop_tool,
    "StepMeter": step_meter,
}


# --- workloads


class TinyOps(nn.Module):
    def __init__(self, ops: int):
        super().__init__()
        self.ops = ops

    def forward(self, x):
        y = x
        for _ in range(self.ops):
            y = torch.add(x, y)
        return y


def count_ops(workload) -> int:
    report = torchscan_dispatch.measure_flops(workload)
    calls = sum(entry["calls"] for entry in report["ignored_operators"].values())
    calls += sum(int(d["message"].split(" was observed ")[1].split(" ")[0]) for d in report["diagnostics"] if d["code"] == "uncounted_operator")
    # Counted operators are not listed with call counts; the loop has none.
    return calls


def resnet_like():
    from model_zoo_bench import resnet18_like

    model = resnet18_like().eval()
    x = torch.randn(1, 3, 224, 224)
    return model, (x,)


def bert_base_like():
    layer = nn.TransformerEncoderLayer(768, 12, 3072, dropout=0.0, batch_first=True, activation="gelu")
    model = nn.TransformerEncoder(layer, 12, enable_nested_tensor=False).eval()
    x = torch.randn(1, 128, 768)
    return model, (x,)


class SmallGPT(nn.Module):
    def __init__(self, vocab=2048, width=256, layers=4, heads=4, seq=128):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.position = nn.Parameter(torch.zeros(seq, width))
        layer = nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.0, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(width, vocab, bias=False)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(seq))

    def forward(self, x):
        h = self.embed(x) + self.position[: x.shape[1]]
        return self.head(self.blocks(h, mask=self.mask, is_causal=True))


def gpt_training_step():
    torch.manual_seed(0)
    model = SmallGPT()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, 2048, (4, 128))

    def step():
        optimizer.zero_grad(set_to_none=True)
        logits = model(ids)
        nn.functional.cross_entropy(logits.flatten(0, 1), ids.flatten()).backward()
        optimizer.step()

    return model, step


class SmallCNN(nn.Module):
    """12 blocks of 32-channel Conv-BN-ReLU: kernels of ~20 us, where any
    per-module or per-measurement cost of ours shows (issue 30)."""

    def __init__(self, blocks=12, channels=32):
        super().__init__()
        self.blocks = nn.Sequential(*(
            nn.Sequential(nn.Conv2d(channels, channels, 3, padding=1), nn.BatchNorm2d(channels), nn.ReLU())
            for _ in range(blocks)
        ))

    def forward(self, x):
        return self.blocks(x)


def small_cnn():
    torch.manual_seed(0)
    return SmallCNN().eval(), (torch.randn(2, 32, 32, 32),)


def encoder_training_step():
    """A 2-layer TransformerEncoderLayer stack (width 128) trained with
    AdamW: the step StepMeter is meant to stay on for."""
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(128, 4, 512, dropout=0.0, batch_first=True)
    model = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(8, 64, 128)

    def step():
        model(x).sum().backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step, None, None


# --- tables


def print_table(title: str, header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    print(f"\n{title}")
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)))


def minor_faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def timed_rounds(runs: dict, repeats: int, alternate: bool = False) -> dict:
    """Per callable, the wall-clock seconds, the calling thread's CPU seconds
    and the minor page faults (getrusage, read outside the timed region) of
    each round, after one warm-up call each. Every callable runs once per
    round, so that drift in the machine's speed hits all alike; with
    ``alternate``, every other round runs them in reverse order."""
    for run in runs.values():
        run()  # warm up
    samples = {name: {"wall": [], "cpu": [], "faults": []} for name in runs}
    order = list(runs.items())
    for round_index in range(repeats):
        for name, run in reversed(order) if alternate and round_index % 2 else order:
            gc.collect()
            before = minor_faults()
            start_wall, start_cpu = time.perf_counter(), time.thread_time()
            run()
            samples[name]["wall"].append(time.perf_counter() - start_wall)
            samples[name]["cpu"].append(time.thread_time() - start_cpu)
            samples[name]["faults"].append(minor_faults() - before)
    return samples


def interleaved_medians(runs: dict, repeats: int, faults: dict | None = None) -> dict:
    """Median seconds of each callable over timed_rounds. With ``faults``,
    also the median minor page faults of one call of each."""
    samples = timed_rounds(runs, repeats)
    if faults is not None:
        faults.update({name: statistics.median(s["faults"]) for name, s in samples.items()})
    return {name: statistics.median(s["wall"]) for name, s in samples.items()}


def paired_overhead(base, tool, repeats: int) -> dict:
    """The seconds TOOL adds to BASE, as the median over rounds of the
    difference within a round, in wall-clock and in the calling thread's CPU
    time, with the medians of each side.

    NOTE [Overheads from paired rounds]: a crawl adds a few milliseconds to a
    forward that takes tens to hundreds, and the forward's own time drifts by
    more than that between rounds (other processes on a small machine, clock
    changes, the allocator). The difference of two medians carries all of
    that drift; the difference within a round, taken back to back, carries
    only the drift inside that round. The order inside a round alternates
    (base first, then tool first) so that a trend inside a round cancels over
    pairs of rounds. CPU time of the calling thread leaves out time spent
    descheduled; with one intra-op thread the forward runs on that thread."""
    samples = timed_rounds({"base": base, "tool": tool}, repeats, alternate=True)
    base_s, tool_s = samples["base"], samples["tool"]

    def difference(kind):
        return statistics.median(t - b for t, b in zip(tool_s[kind], base_s[kind]))

    return {
        "base": statistics.median(base_s["wall"]),
        "tool": statistics.median(tool_s["wall"]),
        "overhead": difference("wall"),
        "cpu_overhead": difference("cpu"),
        "base_faults": statistics.median(base_s["faults"]),
        "tool_faults": statistics.median(tool_s["faults"]),
    }


# --- workloads by name, so that a child process can rebuild one


def tiny_loop_workload():
    model, a = TinyOps(20000), torch.ones(16)
    return (lambda: model(a)), model, (a,)


def no_grad_forward(build):
    def make():
        model, inputs = build()

        def workload():
            with torch.no_grad():
                model(*inputs)

        return workload, model, inputs

    return make


def gpt_workload():
    _, step = gpt_training_step()
    return step, None, None


def compiled_gpt_workload():
    torch.manual_seed(0)
    model = torch.compile(SmallGPT())
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, 2048, (4, 128))

    def step():
        optimizer.zero_grad(set_to_none=True)
        logits = model(ids)
        nn.functional.cross_entropy(logits.flatten(0, 1), ids.flatten()).backward()
        optimizer.step()

    step()  # compile (forward and backward) before anything is timed
    return step, None, None


# Operators with a formula, on tiny shapes, beside add (no formula): what a
# counted call adds, not only the cheapest path (section 1, second table).
COUNTED_OPERATORS = {
    "add": lambda: (torch.add, (torch.ones(16), torch.ones(16))),
    "mm": lambda: (torch.mm, (torch.ones(8, 8), torch.ones(8, 8))),
    "addmm": lambda: (torch.addmm, (torch.ones(8), torch.ones(8, 8), torch.ones(8, 8))),
    "bmm": lambda: (torch.bmm, (torch.ones(2, 8, 8), torch.ones(2, 8, 8))),
    "conv2d": lambda: (nn.functional.conv2d, (torch.ones(1, 2, 8, 8), torch.ones(2, 2, 3, 3))),
    "sdpa": lambda: (nn.functional.scaled_dot_product_attention, (torch.ones(1, 1, 8, 8),) * 3),
}
COUNTED_OPERATOR_CALLS = 4000


def counted_operator_workload(name):
    def make():
        operator, inputs = COUNTED_OPERATORS[name]()

        def workload():
            for _ in range(COUNTED_OPERATOR_CALLS):
                operator(*inputs)

        return workload, None, None

    return make


WORKLOADS = {
    "tiny_loop": tiny_loop_workload,
    **{f"op_{name}": counted_operator_workload(name) for name in COUNTED_OPERATORS},
    "resnet": no_grad_forward(lambda: resnet_like()),
    "bert": no_grad_forward(lambda: bert_base_like()),
    "small_cnn": no_grad_forward(small_cnn),
    "encoder_step": encoder_training_step,
    "gpt": gpt_workload,
    "gpt_compiled": compiled_gpt_workload,
}


def crawl_runs(model_name: str, device: str, tool: str):
    model, inputs = {"resnet": resnet_like, "bert": bert_base_like}[model_name]()
    model = model.to(device)
    inputs = tuple(x.to(device) for x in inputs)

    def forward():
        with torch.no_grad():
            model(*inputs)

    crawl = {"torchscan_dispatch": torchscan_dispatch.crawl_module,
             "torchscan 0.2.0": getattr(torchscan, "crawl_module", None)}[tool]
    if crawl is None:
        return None
    return {"uninstrumented": forward, tool: lambda: crawl(model, args=inputs)}


# --- one tool per child process
#
# Every tool runs in a fresh process, interleaved with an uninstrumented
# baseline in that same process. Peers leave state behind (fvcore's tracing
# leaves a large fragmented heap that slows every later allocation-heavy run
# by up to 40%), so sharing one process would charge one tool for another.


def child_main(kind: str, target: str, tool: str, repeats: int) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    if kind == "workload":
        workload, model, inputs = WORKLOADS[target]()
        run = TOOLS[tool](workload, model, inputs)
        runs = None if run is None else {"uninstrumented": workload, tool: run}
    else:
        model_name, device = target.split(":")
        runs = crawl_runs(model_name, device, tool)
    if runs is None:
        print(json.dumps({"status": "not installed / not applicable"}))
        return
    try:
        runs[tool]()
    except Exception as error:  # noqa: BLE001 - a peer failing is a result
        print(json.dumps({"status": f"failed: {type(error).__name__}"}))
        return
    if kind == "crawl":
        print(json.dumps({"status": "ok", **paired_overhead(runs["uninstrumented"], runs[tool], repeats)}))
        return
    faults = {}
    medians = interleaved_medians(runs, repeats, faults)
    print(json.dumps({"status": "ok", "base": medians["uninstrumented"], "tool": medians[tool],
                      "base_faults": faults["uninstrumented"], "tool_faults": faults[tool]}))


def run_child(kind: str, target: str, tool: str, repeats: int, threads: int) -> dict:
    progress(f"{target}: {tool}")
    command = [sys.executable, str(Path(__file__).resolve()), "--child", kind, target, tool,
               "--repeats", str(repeats), "--threads", str(threads)]
    out = subprocess.run(command, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["no output"])[-1]
        return {"status": f"failed: {last[:60]}"}
    return json.loads(out.stdout.strip().splitlines()[-1])


# How many fresh processes measure each (workload, tool) pair (--processes).
# One process's ratio also depends on where its allocator happened to place
# the large activation buffers (docs/performance.md, section 3), which no
# number of rounds inside that process averages out.
PROCESSES = 1


def run_children(kind: str, target: str, tool: str, repeats: int, threads: int) -> dict:
    """run_child in PROCESSES fresh processes: the medians over processes of
    the baseline, the tool, their ratio and their difference (a child's
    paired overhead where it gives one, with its CPU-time form), the
    ratios' range and the sorted overheads."""
    results = [run_child(kind, target, tool, repeats, threads) for _ in range(PROCESSES)]
    failed = [r for r in results if r["status"] != "ok"]
    if failed:
        return failed[0]
    ratios = sorted(r["tool"] / r["base"] for r in results)
    overheads = sorted(r.get("overhead", r["tool"] - r["base"]) for r in results)
    return {
        "status": "ok",
        "base": statistics.median(r["base"] for r in results),
        "tool": statistics.median(r["tool"] for r in results),
        "ratio": statistics.median(ratios),
        "overhead": statistics.median(overheads),
        "cpu_overhead": statistics.median(r.get("cpu_overhead", float("nan")) for r in results),
        "overheads": overheads,
        "range": f" ({ratios[0]:.3f}-{ratios[-1]:.3f})" if len(ratios) > 1 else "",
        "base_faults": statistics.median(r["base_faults"] for r in results),
        "tool_faults": statistics.median(r["tool_faults"] for r in results),
    }


# The tools of the comparison tables (StepMeter measures training steps only).
COMPARED_TOOLS = [name for name in TOOLS if name != "StepMeter"]


def tool_rows(workload_name, repeats, threads, ops=None, tools=COMPARED_TOOLS):
    rows, results = [], {}
    for name in tools:
        if name == "uninstrumented":
            continue
        result = run_children("workload", workload_name, name, repeats, threads)
        if result["status"] != "ok":
            rows.append([name, result["status"], "", "", ""])
            continue
        base, seconds, ratio = result["base"], result["tool"], result["ratio"]
        results[name] = ratio
        added = f"{result['overhead'] / ops * 1e9:,.0f}" if ops else ""
        rows.append([name, f"{ratio:.3f}x{result['range']}", added, f"{seconds * 1e3:.1f}", f"{base * 1e3:.1f}"])
    return rows, results


def benchmark_python_loop(repeats, threads):
    workload, _, _ = tiny_loop_workload()
    calls = count_ops(workload)
    rows, results = tool_rows("tiny_loop", repeats, threads, ops=calls)
    print_table(
        f"1. Python loop of {calls} tiny operators (torch.add on 16 elements), median of {repeats}",
        ["tool", "time vs uninstrumented", "ns added per operator call", "tool ms", "uninstrumented ms"],
        rows,
    )
    tool = "torchscan_dispatch, track_modules=False"
    op_rows = []
    for name in COUNTED_OPERATORS:
        result = run_children("workload", f"op_{name}", tool, repeats, threads)
        if result["status"] != "ok":
            op_rows.append([name, result["status"], "", ""])
            continue
        op_rows.append([name, f"{result['base'] / COUNTED_OPERATOR_CALLS * 1e9:,.0f}",
                        f"{result['overhead'] / COUNTED_OPERATOR_CALLS * 1e9:,.0f}", f"{result['ratio']:.3f}x"])
    print_table(
        f"1b. Python loop of {COUNTED_OPERATOR_CALLS} calls per operator ({tool}), tiny shapes, median of {repeats}",
        ["operator", "plain ns per call", "ns added per call", "time vs uninstrumented"],
        op_rows,
    )
    return results, calls


def benchmark_cpp_loop():
    binary = ROOT / "bazel-bin" / "tools" / "bench" / "cpp_loop_bench"
    if not binary.exists():
        print("\n2. C++ loop: build //tools/bench:cpp_loop_bench first")
        return None
    result = json.loads(subprocess.run([str(binary)], check=True, capture_output=True, text=True).stdout)
    print_table(
        "2. The same loop issued from C++ (at::add, 16 elements), median of 15",
        ["run", "ns per operator call", "time vs uninstrumented"],
        [
            ["uninstrumented", f"{result['uninstrumented_ns_per_op']:.0f}", "1.000x"],
            ["torchscan_dispatch guard", f"{result['counted_ns_per_op']:.0f}", f"{result['ratio']:.3f}x"],
            [
                "guard, RecordFunction off on its thread (no unseen-thread watch)",
                f"{result['counted_without_watch_ns_per_op']:.0f}",
                f"{result['counted_without_watch_ns_per_op'] / result['uninstrumented_ns_per_op']:.3f}x",
            ],
            [
                "unmeasured thread while another thread measures",
                f"{result['unmeasured_while_another_thread_measures_ns_per_op']:.0f}",
                f"{result['unmeasured_while_another_thread_measures_ns_per_op'] / result['uninstrumented_ns_per_op']:.3f}x",
            ],
            [
                "no measurement, a global RecordFunction callback that does nothing (PyTorch's floor)",
                f"{result['uninstrumented_with_empty_global_callback_ns_per_op']:.0f}",
                f"{result['uninstrumented_with_empty_global_callback_ns_per_op'] / result['uninstrumented_ns_per_op']:.3f}x",
            ],
        ],
    )
    return result


def benchmark_models(repeats, threads):
    results = {}
    header = ["tool", "time vs uninstrumented", "", "tool ms", "uninstrumented ms"]
    for key, title in (("resnet", "ResNet-18-like CNN forward (1x3x224x224)"),
                       ("bert", "BERT-base-sized encoder forward (1x128, 12 layers)")):
        rows, results[key] = tool_rows(key, repeats, threads)
        print_table(f"3. {title}, median of {repeats}", header, rows)
    # fvcore, ptflops and thop analyse a model's forward; they have no
    # notion of a training step.
    tools = [k for k in TOOLS if k.startswith("torchscan") or k in ("uninstrumented", "FlopCounterMode")]
    rows, results["gpt"] = tool_rows("gpt", repeats, threads, tools=tools)
    print_table(f"3. Small GPT training step (4x128 tokens, 4 layers, AdamW), median of {repeats}", header, rows)
    results.update(benchmark_small_models(repeats, threads))
    return results


def fault_rows(workload_name, repeats, threads, tools):
    """Ratio, times and minor page faults per call (plain and measured) of
    each tool on one workload."""
    rows, results = [], {}
    for name in tools:
        result = run_children("workload", workload_name, name, repeats, threads)
        if result["status"] != "ok":
            rows.append([name, result["status"], "", "", "", ""])
            continue
        results[name] = result["ratio"]
        rows.append([name, f"{result['ratio']:.3f}x{result['range']}", f"{result['tool'] * 1e3:.2f}",
                     f"{result['base'] * 1e3:.2f}", f"{result['tool_faults']:.0f}", f"{result['base_faults']:.0f}"])
    return rows, results


def benchmark_small_models(repeats, threads):
    """Section 3's small workloads (issue 30): a CNN whose kernels are short
    enough for any per-module or per-measurement cost to show, and the
    per-step StepMeter loop, with minor page faults per call beside the
    times (memory we cause to be returned to the system and faulted in
    again)."""
    header = ["tool", "time vs uninstrumented", "tool ms", "uninstrumented ms", "tool page faults",
              "uninstrumented page faults"]
    results = {}
    rows, results["small_cnn"] = fault_rows(
        "small_cnn", repeats, threads, ["torchscan_dispatch, track_modules=False", "torchscan_dispatch"])
    print_table(f"3. Small CNN forward (12 x Conv-BN-ReLU, 32 channels, 2x32x32x32, no grad), median of {repeats}",
                header, rows)
    rows, results["encoder_step"] = fault_rows(
        "encoder_step", repeats, threads, ["StepMeter", "torchscan_dispatch, track_modules=False", "torchscan_dispatch"])
    print_table(f"3. Encoder training step (2 layers, width 128, 8x64 tokens, AdamW), per step, median of {repeats}",
                header, rows)
    return results


def share(ours: float, theirs: float) -> float:
    """ours / theirs, or NaN where TorchScan 0.2's overhead is not positive
    (a ratio to it would say nothing)."""
    return ours / theirs if theirs > 0 else float("nan")


def benchmark_crawls(repeats, threads):
    """Section 4: each crawl's overhead from paired rounds (NOTE [Overheads
    from paired rounds]), medians over processes, in wall-clock and in CPU
    time; the range of the processes' wall-clock overheads in parentheses."""
    rows = []
    for key, title in (("resnet", "ResNet-18-like"), ("bert", "BERT-base-sized encoder")):
        for device in ("cpu", "meta"):
            results, forward_ms = {}, float("nan")
            for tool in ("torchscan_dispatch", "torchscan 0.2.0"):
                result = run_children("crawl", f"{key}:{device}", tool, repeats, threads)
                if result["status"] == "ok":
                    results[tool] = result
                    forward_ms = result["base"] * 1e3
            nan = {"overhead": float("nan"), "cpu_overhead": float("nan"), "overheads": []}
            if threads != 1:  # the thread's CPU time leaves out the other intra-op threads
                for result in results.values():
                    result["cpu_overhead"] = float("nan")
            ours, theirs = results.get("torchscan_dispatch", nan), results.get("torchscan 0.2.0", nan)

            def spread(result):
                values = result["overheads"]
                return f" ({values[0] * 1e3:.1f}-{values[-1] * 1e3:.1f})" if len(values) > 1 else ""

            rows.append([f"{title} ({device})", f"{forward_ms:.1f}", f"{ours['overhead'] * 1e3:.2f}{spread(ours)}",
                         f"{theirs['overhead'] * 1e3:.2f}{spread(theirs)}",
                         f"{share(ours['overhead'], theirs['overhead']):.3f}",
                         f"{share(ours['cpu_overhead'], theirs['cpu_overhead']):.3f}"])
    processes = f"{PROCESSES} process" + ("es" if PROCESSES > 1 else "")
    print_table(
        f"4. crawl_module analysis overhead (crawl minus plain forward in the same round), median of {repeats} "
        f"rounds, then of {processes}",
        ["model", "forward ms", "torchscan_dispatch overhead ms", "torchscan 0.2.0 overhead ms", "ours / theirs",
         f"ours / theirs ({'calling thread CPU time' if threads == 1 else 'CPU time: n/a with several threads'})"],
        rows,
    )
    return rows


def benchmark_compiled(repeats, threads):
    tools = ["uninstrumented", "torchscan_dispatch, track_modules=False", "torchscan_dispatch", "FlopCounterMode"]
    header = ["tool", "time vs uninstrumented compiled", "", "tool ms", "uninstrumented ms"]
    rows, results = tool_rows("gpt_compiled", repeats, threads, tools=tools)
    print_table(
        f"6. Small GPT training step under torch.compile (4x128 tokens, 4 layers, AdamW), median of {repeats}",
        header, rows,
    )
    return results


SEVEN_B = r"""
import resource, sys, time, torch
from torch import nn
sys.path.insert(0, sys.argv[2])
tool = sys.argv[1]
width, layers, heads, ffn, vocab, seq = 4096, 32, 32, 11008, 32000, 2048

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1 = nn.RMSNorm(width); self.norm2 = nn.RMSNorm(width)
        self.qkv = nn.Linear(width, 3 * width, bias=False); self.out = nn.Linear(width, width, bias=False)
        self.gate = nn.Linear(width, ffn, bias=False); self.up = nn.Linear(width, ffn, bias=False); self.down = nn.Linear(ffn, width, bias=False)
    def forward(self, x):
        b, s, _ = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, s, 3, heads, width // heads).permute(2, 0, 3, 1, 4)
        a = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.out(a.transpose(1, 2).reshape(b, s, width))
        h = self.norm2(x)
        return x + self.down(nn.functional.silu(self.gate(h)) * self.up(h))

with torch.device("meta"):
    embed = nn.Embedding(vocab, width); blocks = nn.ModuleList(Block() for _ in range(layers)); head = nn.Linear(width, vocab, bias=False)
params = sum(p.numel() for m in (embed, blocks, head) for p in m.parameters())
ids = torch.zeros(1, seq, dtype=torch.long, device="meta")
def forward():
    x = embed(ids)
    for block in blocks: x = block(x)
    return head(x)
start = time.perf_counter()
if tool == "torchscan_dispatch":
    import torchscan_dispatch
    total = torchscan_dispatch.measure_flops(forward)["total"]["known_value"]
elif tool == "FlopCounterMode":
    from torch.utils.flop_counter import FlopCounterMode
    with FlopCounterMode(display=False) as mode: forward()
    total = mode.get_total_flops()
elif tool == "torchscan 0.2.0":
    import torchscan
    total = torchscan.measure_flops(forward)["total"]["known_value"]
else:
    forward(); total = 0
elapsed = time.perf_counter() - start
print(params, total, elapsed, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def benchmark_seven_billion():
    rows = []
    for tool in ("uninstrumented", "torchscan_dispatch", "FlopCounterMode", "torchscan 0.2.0"):
        progress(f"7B on meta: {tool}")
        out = subprocess.run([sys.executable, "-c", SEVEN_B, tool, str(ROOT / "python")], capture_output=True, text=True, check=False)
        if out.returncode != 0:
            rows.append([tool, "failed", out.stderr.strip().splitlines()[-1][:60], "", ""])
            continue
        params, total, elapsed, rss_kb = out.stdout.split()
        rows.append([tool, f"{int(params) / 1e9:.2f}", f"{int(total):.4e}", f"{float(elapsed):.2f}", f"{int(rss_kb) / 1024:.0f}"])
    print_table(
        "5. FLOPs of a 7B decoder-only configuration on meta (seq 2048), one process per tool",
        ["tool", "parameters (B)", "FLOPs counted", "seconds", "peak RSS (MiB)"],
        rows,
    )
    return rows


DDP_STEP = r"""
import json, os, statistics, sys, time, torch, torch.distributed as dist
from torch import nn
sys.path.insert(0, sys.argv[1])
import torchscan_dispatch
torch.set_num_threads(1)
repeats = int(sys.argv[2])
dist.init_process_group("gloo")
torch.manual_seed(0)
width, layers, batch, seq = 256, 4, 4, 128
blocks = [nn.TransformerEncoderLayer(width, 4, 4 * width, batch_first=True, dropout=0.0) for _ in range(layers)]
model = nn.parallel.DistributedDataParallel(nn.Sequential(*blocks))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
x = torch.randn(batch, seq, width)
def step():
    model(x).sum().backward()
    optimizer.step()
    optimizer.zero_grad()
meter = torchscan_dispatch.StepMeter(peak_flops_per_second=1e12)
def measured():
    with meter.step():
        step()
for run in (step, measured, step, measured):
    run()
times = {"plain": [], "ours": []}
for _ in range(repeats):
    for name, run in (("plain", step), ("ours", measured)):
        dist.barrier()
        start = time.perf_counter()
        run()
        times[name].append(time.perf_counter() - start)
last = meter.steps[-1]
result = {name: statistics.median(values) for name, values in times.items()}
result["spread"] = {name: (min(v), max(v)) for name, v in times.items()}
result["flops"] = last.flops
result["bus_bytes"] = last.communication_bus_bytes
result["all_reduce_calls"] = last.report["communication"]["by_kind"]["all_reduce"]["calls"]
if dist.get_rank() == 0:
    print(json.dumps(result))
dist.destroy_process_group()
"""


def benchmark_ddp(repeats):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    python_dir = str(Path(__file__).resolve().parents[2] / "python")
    processes = []
    for rank in range(2):
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                   WORLD_SIZE="2", OMP_NUM_THREADS="1")
        processes.append(subprocess.Popen([sys.executable, "-c", DDP_STEP, python_dir, str(repeats)],
                                          env=env, stdout=subprocess.PIPE, text=True))
    outputs = [process.communicate(timeout=1800)[0] for process in processes]
    result = json.loads(outputs[0].strip().splitlines()[-1])
    plain, ours = result["plain"], result["ours"]
    print_table(
        f"7. 2-rank DDP training step on gloo (4 encoder layers, width 256, 4x128 tokens, AdamW), median of {repeats}",
        ["", "plain ms", "StepMeter ms", "ratio", "plain min..max ms", "StepMeter min..max ms"],
        [["rank 0", f"{plain * 1e3:.1f}", f"{ours * 1e3:.1f}", f"{ours / plain:.3f}",
          "{:.1f}..{:.1f}".format(*(t * 1e3 for t in result["spread"]["plain"])),
          "{:.1f}..{:.1f}".format(*(t * 1e3 for t in result["spread"]["ours"]))]],
    )
    print(f"  per step on rank 0: {result['flops']} FLOPs, {result['all_reduce_calls']} all-reduces, "
          f"{result['bus_bytes']} bus bytes")
    return result


# (label, llm_step.Config fields, batch): the example's default size, and
# one with longer kernels.
LLM_SIZES = (
    ("default (2 layers, width 64, 4x64 tokens)", {}, 4),
    ("larger (4 layers, width 256, 8x256 tokens)", {"layers": 4, "width": 256, "heads": 8, "kv_heads": 4,
                                                    "hidden": 512, "length": 256, "vocab": 1024}, 8),
)


def load_llm_step():
    import importlib.util

    spec = importlib.util.spec_from_file_location("llm_step", ROOT / "examples" / "llm_step.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["llm_step"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def benchmark_llm_step(repeats):
    """StepMeter's overhead on the reference step: one step function, called
    bare and inside a meter step with the example's phases, alternately."""
    llm_step = load_llm_step()
    rows = []
    for label, fields, batch in LLM_SIZES:
        for compiled in (False, True):
            progress(f"llm_step {label}, {'compiled' if compiled else 'eager'}")
            torch._dynamo.reset()
            torch.manual_seed(0)
            config = llm_step.Config(**fields)
            model = llm_step.Llama(config)
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
            run = llm_step.make_step(model, optimizer, compiled)
            tokens = torch.randint(config.vocab, (batch, config.length + 1))
            meter = torchscan_dispatch.StepMeter(peak_flops_per_second=1e12, device="cpu")

            def measured(run=run, tokens=tokens, meter=meter):
                with meter.step() as step:
                    run(tokens, step)

            for _ in range(2):  # compile (forward and backward) before anything is timed
                run(tokens)
                measured()
            # Wall clock and this thread's CPU time (which leaves out the
            # time other processes held the cores) of the same calls.
            wall, cpu = {"plain": [], "StepMeter": []}, {"plain": [], "StepMeter": []}
            for _ in range(repeats):
                for name, call in (("plain", lambda: run(tokens)), ("StepMeter", measured)):
                    gc.collect()
                    start_wall, start_cpu = time.perf_counter(), time.thread_time()
                    call()
                    cpu[name].append(time.thread_time() - start_cpu)
                    wall[name].append(time.perf_counter() - start_wall)
            plain, ours = (statistics.median(wall[name]) for name in ("plain", "StepMeter"))
            plain_cpu, ours_cpu = (statistics.median(cpu[name]) for name in ("plain", "StepMeter"))
            rows.append([label, "compiled" if compiled else "eager", f"{plain * 1e3:.2f}", f"{ours * 1e3:.2f}",
                         f"{ours / plain:.3f}", f"{plain_cpu * 1e3:.2f}", f"{ours_cpu * 1e3:.2f}",
                         f"{ours_cpu / plain_cpu:.3f}", f"{meter.steps[-1].flops:,}"])
    torch._dynamo.reset()
    print_table(
        f"8. Reference LLM step (examples/llm_step.py, SDPA, AdamW) under StepMeter, median of {repeats}",
        ["size", "mode", "plain ms", "StepMeter ms", "ratio", "plain CPU ms", "StepMeter CPU ms", "CPU ratio",
         "FLOPs counted (lower bound)"],
        rows,
    )
    return rows


def benchmark_host_peak(repeats):
    """measure_host_peak run `repeats` times in this process: the spread of
    its two figures and of its own run time (docs/performance.md, 9)."""
    from torchscan_dispatch.roofline import measure_host_peak

    progress(f"measure_host_peak x {repeats}")
    flops, bandwidth, seconds = [], [], []
    for _ in range(repeats):
        start = time.perf_counter()
        spec = measure_host_peak()
        seconds.append(time.perf_counter() - start)
        flops.append(spec.peak_flops["fp32"] / 1e9)
        bandwidth.append(spec.memory_bandwidth / 1e9)
    print(f"\n{spec.source}")

    def row(name, values, digits):
        spread = (max(values) - min(values)) / statistics.median(values)
        return [name, f"{statistics.median(values):.{digits}f}", f"{min(values):.{digits}f}",
                f"{max(values):.{digits}f}", f"{spread:.1%}"]

    print_table(
        f"9. measure_host_peak, {repeats} runs, {torch.get_num_threads()} intra-op thread(s)",
        ["figure", "median", "min", "max", "(max - min) / median"],
        [row("fp32 GFLOP/s (torch.mm 1024x1024)", flops, 1),
         row("memory GB/s (copy, read + written)", bandwidth, 2),
         row("seconds per measure_host_peak()", seconds, 3)],
    )


IDLE_LIBRARY = r"""
import json, statistics, sys, time, torch, torch._dynamo
from torch import nn
sys.path.insert(0, sys.argv[2])
loaded = sys.argv[1] == "idle"
spec_sizes = []
if loaded:
    import torchscan_dispatch
    from torchscan_dispatch import _tally_pass
    torchscan_dispatch.load_library()
    text = _tally_pass.spec_text
    def recorded(description):
        spec = text(description)
        spec_sizes.append(len(spec))
        return spec
    _tally_pass.spec_text = recorded
torch.set_num_threads(1)
torch.manual_seed(0)
repeats = int(sys.argv[3])

@torch._dynamo.disable
def disabled(x):
    return x

def mlp(layers):
    return nn.Sequential(*(m for _ in range(layers) for m in (nn.Linear(32, 32), nn.ReLU()))).eval()

x = torch.randn(4, 32)
small, deep = torch.compile(mlp(2)), torch.compile(mlp(400))
def per_call(fn, calls):
    start = time.perf_counter()
    for _ in range(calls):
        fn(x)
    return (time.perf_counter() - start) / calls
cases = {"disabled": (disabled, 20000), "compiled small": (small, 2000), "compiled deep": (deep, 200)}
with torch.no_grad():
    small(x); deep(x)
    times = {name: [] for name in cases}
    for _ in range(repeats):
        for name, (fn, calls) in cases.items():
            times[name].append(per_call(fn, calls))
print(json.dumps({"times": {name: statistics.median(v) for name, v in times.items()},
                  "spec_kb": max(spec_sizes, default=0) / 1024}))
"""


def benchmark_idle_library(repeats, processes):
    """Section 10: per-call times in fresh processes, plain and idle
    alternating; medians over processes."""
    results = {"plain": [], "idle": []}
    for index in range(max(processes, 3)):
        for kind in ("plain", "idle"):
            progress(f"idle library: {kind} process {index + 1}")
            out = subprocess.run([sys.executable, "-c", IDLE_LIBRARY, kind, str(ROOT / "python"), str(repeats)],
                                 capture_output=True, text=True, check=False)
            if out.returncode != 0:
                print(f"{kind} process failed: {(out.stderr.strip().splitlines() or ['no output'])[-1]}")
                return None
            results[kind].append(json.loads(out.stdout.strip().splitlines()[-1]))
    spec_kb = max(r["spec_kb"] for r in results["idle"])
    rows = []
    for name in results["plain"][0]["times"]:
        plain = [r["times"][name] for r in results["plain"]]
        idle = [r["times"][name] for r in results["idle"]]
        ratios = sorted(i / p for i, p in zip(idle, plain))
        rows.append([name, f"{statistics.median(plain) * 1e6:.2f}", f"{statistics.median(idle) * 1e6:.2f}",
                     f"{statistics.median(ratios):.3f}x ({ratios[0]:.3f}-{ratios[-1]:.3f})"])
    print_table(
        f"10. The library loaded but idle: us per call, medians of {repeats} rounds in each of "
        f"{len(results['plain'])} fresh processes per side (the deep model's largest graph spec: {spec_kb:.0f} KiB)",
        ["call", "never loaded", "loaded, idle", "idle / never loaded (range over process pairs)"],
        rows,
    )
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--only", choices=["1", "2", "3", "3s", "4", "5", "6", "7", "8", "9", "10"], action="append",
                        help="sections to run (3s: only section 3's small CNN and StepMeter tables)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--processes", type=int, default=1,
                        help="fresh processes per workload and tool (sections 1, 3, 4, 6): medians over them")
    parser.add_argument("--child", nargs=3, metavar=("KIND", "TARGET", "TOOL"), help=argparse.SUPPRESS)
    options = parser.parse_args()
    # One intra-op thread: on a small machine, thread-pool scheduling noise
    # would swamp differences of a few percent.
    torch.set_num_threads(options.threads)
    if options.child:
        child_main(*options.child, options.repeats)
        return
    global PROCESSES
    PROCESSES = max(1, options.processes)
    only = set(options.only or ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10"])
    print(f"torch {torch.__version__}, {os.cpu_count()} CPU cores, {torch.get_num_threads()} intra-op threads; "
          "each tool in its own process, interleaved with an uninstrumented baseline; medians over rounds"
          + (f", then over {PROCESSES} processes (ratio range in parentheses)" if PROCESSES > 1 else ""))
    if "1" in only:
        benchmark_python_loop(options.repeats, options.threads)
    if "2" in only:
        benchmark_cpp_loop()
    if "3" in only:
        benchmark_models(options.repeats, options.threads)
    elif "3s" in only:
        benchmark_small_models(options.repeats, options.threads)
    if "4" in only:
        benchmark_crawls(options.repeats, options.threads)
    if "5" in only:
        benchmark_seven_billion()
    if "6" in only:
        benchmark_compiled(options.repeats, options.threads)
    if "7" in only:
        benchmark_ddp(max(options.repeats, 15))
    if "8" in only:
        benchmark_llm_step(max(options.repeats, 21))
    if "9" in only:
        benchmark_host_peak(max(options.repeats, 11))
    if "10" in only:
        benchmark_idle_library(options.repeats, options.processes)


if __name__ == "__main__":
    main()
