"""Fuzz test of the compiled-graph spec: random graphs full of unusual
constants, described by the Inductor pass (_tally_pass.tally) and read
by the C++ reader (the torchscan::compiled_graph_flops operator, in a real
measurement).

Each seed builds a random program from steps that put constants JSON cannot
hold as numbers, or that no formula reads, into the graph (infinities, NaN,
-0.0, integers near 2**63, complex scalars, dtypes, devices, rounding-mode
strings, booleans), traces it with make_fx (static or symbolic shapes), runs
the pass on the graph and records the spec it wrote. The property: the
reader reads every spec (no unseen_work from a spec it could not read or a
graph the pass could not describe), and the matrix products the graph holds
are counted exactly: 2*m*k*n each, by hand from the shapes. Each seed also
marks random nodes as a backward graph's recomputed forward work (the two
tags of AOTAutograd's partitioner, NOTE [Recomputed nodes of a compiled
backward]), and random others with only one of the tags: the products
marked with both, and only they, are the report's recomputed FLOPs.
"""

from __future__ import annotations

import random

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

import torchscan_dispatch
from torchscan_dispatch import _graph_spec, _tally_pass

SEEDS = range(40)
_NON_FINITE = [float("inf"), float("-inf"), float("nan"), -0.0, 3.4e38, -1e-45]


def _steps(rng: random.Random):
    """(name, function of x) pairs; x is always a [n, 8] float tensor."""
    big = rng.choice([2**62, -(2**62), 2**63 - 1])
    fill = rng.choice(_NON_FINITE)
    low, high = sorted(rng.sample(_NON_FINITE[:2] + [-1.0, 1.0], 2))
    return [
        ("masked_fill", lambda x: x.masked_fill(x > 0, fill).nan_to_num(0.0, 1.0, -1.0)),
        ("clamp", lambda x: torch.clamp(x, min=low, max=high).nan_to_num(0.0, 1.0, -1.0)),
        ("nan_to_num", lambda x: torch.nan_to_num(x / 0.0, nan=0.0, posinf=float("inf"), neginf=-3.4e38).clamp(-1, 1)),
        ("complex", lambda x: (x * complex(1.0, rng.choice([2.0, float("inf")]))).real.nan_to_num(0.0, 1.0, -1.0)),
        ("big int", lambda x: (x.to(torch.int64) + big).to(torch.float32).clamp(-1, 1)),
        ("dtype", lambda x: x.to(torch.float64).to(torch.bfloat16).to(torch.float32)),
        ("device", lambda x: x.to("cpu", copy=True)),
        ("rounding mode", lambda x: torch.div(x, 3.0, rounding_mode=rng.choice(["floor", "trunc"]))),
        ("bool", lambda x: torch.where(x > 0, x, torch.zeros_like(x)).logical_not().to(torch.float32) + x),
        ("sum keepdim", lambda x: x - x.sum(dim=[1], keepdim=True) / 8),
    ]


def _program(seed: int):
    """A random program and the FLOPs of its matrix products, by hand."""
    rng = random.Random(seed)
    steps = rng.sample(_steps(rng), k=rng.randint(3, 7))
    weights = [torch.randn(8, 8) for _ in range(rng.randint(1, 3))]

    def program(x, *weights):
        for index, (_, step) in enumerate(steps):
            x = step(x)
            if index < len(weights):
                x = x @ weights[index]
        return x

    def flops(rows: int) -> int:
        return len(weights) * 2 * rows * 8 * 8

    return program, weights, flops, [name for name, _ in steps]


_TAGS = [
    {"autograd_backward": True, "partitioner_tag": "is_forward"},  # recomputed
    {"autograd_backward": True, "partitioner_tag": "is_backward"},  # the backward's own
    {"partitioner_tag": "is_forward"},  # a forward graph's
    {},
]


def _mark(graph: torch.fx.Graph, rng: random.Random | None) -> int:
    """Tags each node as one of _TAGS at random; returns how many matrix
    products got the recomputed tags."""
    recomputed = 0
    for node in graph.nodes:
        if rng is None or node.op != "call_function":
            continue
        tags = rng.choice(_TAGS)
        node.meta.update(tags)
        if tags is _TAGS[0] and node.target is torch.ops.aten.mm.default:
            recomputed += 1
    return recomputed


def _described(program, inputs: list[torch.Tensor], tracing_mode: str, rng: random.Random | None = None):
    """Runs the pass on the traced graph (its nodes tagged at random when
    `rng` is given); returns the tally call's spec, its symbols evaluated
    for `inputs` and the number of products tagged recomputed."""
    graph_module = make_fx(program, tracing_mode=tracing_mode)(*inputs)
    recomputed = _mark(graph_module.graph, rng)
    _tally_pass.tally(graph_module.graph)
    graph_module.recompile()
    tally = next(node for node in graph_module.graph.nodes if _tally_pass.is_tally(node))
    key, spec, symbol_nodes, _ = tally.args
    captured = {}

    class Capture(torch.fx.Interpreter):
        def run_node(self, node):
            if node is tally:
                captured["symbols"] = [int(value) for value in self.map_nodes_to_values(symbol_nodes, node)]
                return None
            return super().run_node(node)

    Capture(graph_module).run(*inputs)
    return key, spec, captured["symbols"], recomputed


@pytest.mark.parametrize("seed", SEEDS)
def test_the_reader_reads_every_spec_the_pass_writes(seed):
    program, weights, flops, names = _program(seed)
    tracing_mode = "symbolic" if seed % 2 else "fake"
    rows = 3 + seed % 5
    key, spec, symbols, recomputed = _described(
        program, [torch.randn(rows, 8), *weights], tracing_mode, random.Random(seed)
    )
    assert "Infinity" not in spec and "NaN" not in spec, spec  # standard JSON only

    with torchscan_dispatch.FlopCounter(track_modules=False) as counter:
        torch.ops.torchscan.compiled_graph_flops(key, spec, symbols, None)
    report = counter.report()

    unseen = [d["message"] for d in report["diagnostics"] if d["code"] == "unseen_work"]
    assert not unseen, (names, unseen, spec)
    assert report["by_operator"].get("aten.mm") == flops(rows), (names, report)
    product = 2 * rows * 8 * 8
    assert report.get("recomputed", {}).get("flops", 0) == recomputed * product, (names, report)


def test_a_graph_with_symbolic_sizes_binds_them_at_run_time():
    program, weights, flops, _ = _program(1)
    key, spec, symbols, _ = _described(program, [torch.randn(5, 8), *weights], "symbolic")
    assert symbols  # the row count is a run-time value
    assert '"symbol"' in spec
    with torchscan_dispatch.FlopCounter(track_modules=False) as counter:
        torch.ops.torchscan.compiled_graph_flops(key, spec, [9 if s == 5 else s for s in symbols], None)
    assert counter.report()["by_operator"]["aten.mm"] == flops(9)


def test_non_finite_floats_are_written_as_strings():
    description = _graph_spec.GraphDescription(torch.fx.Graph())
    assert description.value(float("inf")) == {"float": "inf"}
    assert description.value(float("-inf")) == {"float": "-inf"}
    assert description.value(float("nan")) == {"float": "nan"}
    assert description.value(-0.0) == {"float": -0.0}
    assert description.value(1.5) == {"float": 1.5}
    # Text is kept (a collective's group name); what no formula reads is "other".
    assert description.value("floor") == {"str": "floor"}
    for other in (1 + 2j, torch.float32, torch.device("cpu"), torch.strided, 2**64, object()):
        assert description.value(other) == {"other": None}, other
