"""Bytes moved beside FLOPs: every expectation is computed here, by hand,
from the documented rule (docs/methodology.md, "Bytes moved"): each distinct
input tensor read once, each output written once, a tensor's bytes its
itemsize times the product of the sizes of its dimensions with a nonzero
stride; views and metadata move nothing; an in-place or out= destination is
written once (an in-place one is also read)."""

import math
import os
import tempfile

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

import torchscan_dispatch
from torchscan_dispatch import StepMeter


def nbytes(t):
    """The rule's bytes of one strided tensor, by hand."""
    if any(s == 0 for s in t.shape):
        return 0
    elements = math.prod(s for s, st in zip(t.shape, t.stride()) if st != 0)
    return elements * t.element_size()


def measure(workload):
    return torchscan_dispatch.measure_flops(workload)["bytes"]


def op_bytes(moved, name):
    entry = moved["by_operator"][name]
    return entry["read"], entry["written"]


def assert_complete(moved):
    assert moved["status"] == "complete", moved["diagnostics"]
    assert moved["value"] == moved["read"] + moved["written"]


# --- matmul -----------------------------------------------------------------


def test_mm_reads_both_operands_and_writes_the_product():
    a, b = torch.randn(4, 8), torch.randn(8, 3)
    moved = measure(lambda: torch.mm(a, b))
    assert_complete(moved)
    # 32 + 24 float32 read, 12 written.
    assert op_bytes(moved, "aten.mm") == ((32 + 24) * 4, 12 * 4)
    assert moved["value"] == (32 + 24 + 12) * 4


def test_addmm_and_linear():
    bias, x, w = torch.randn(3), torch.randn(4, 8), torch.randn(3, 8)
    moved = measure(lambda: torch.addmm(bias, x, w.t()))
    assert op_bytes(moved, "aten.addmm") == ((3 + 32 + 24) * 4, 12 * 4)
    # linear decomposes into t (a view: nothing) and addmm, as
    # FlopCounterMode sees it.
    moved = measure(lambda: F.linear(x, w, bias))
    assert_complete(moved)
    assert "aten.t" not in moved["by_operator"]
    assert op_bytes(moved, "aten.addmm") == ((3 + 32 + 24) * 4, 12 * 4)
    assert moved["value"] == (3 + 32 + 24 + 12) * 4


def test_bmm_in_half_precision():
    a, b = torch.randn(2, 4, 8, dtype=torch.bfloat16), torch.randn(2, 8, 3, dtype=torch.bfloat16)
    moved = measure(lambda: torch.bmm(a, b))
    assert op_bytes(moved, "aten.bmm") == ((64 + 48) * 2, 24 * 2)


# --- convolution ------------------------------------------------------------


def test_convolution():
    x, w, b = torch.randn(1, 3, 8, 8), torch.randn(4, 3, 3, 3), torch.randn(4)
    moved = measure(lambda: F.conv2d(x, w, b))
    assert_complete(moved)
    # input 192, weight 108, bias 4 elements read; output 1x4x6x6 written.
    assert op_bytes(moved, "aten.convolution") == ((192 + 108 + 4) * 4, 144 * 4)


# --- pointwise, broadcasting, a tensor passed twice --------------------------


def test_pointwise_with_an_expanded_operand_reads_it_once():
    a, b = torch.randn(5, 3), torch.randn(3)
    expanded = b.expand(5, 3)
    assert expanded.stride() == (0, 1)
    moved = measure(lambda: a + expanded)
    assert_complete(moved)
    assert "aten.expand" not in moved["by_operator"]
    # a: 15 elements, the expanded b: 3 (stride 0 repeats one row).
    assert op_bytes(moved, "aten.add") == ((15 + 3) * 4, 15 * 4)


def test_a_tensor_passed_twice_is_read_once():
    x = torch.randn(6, 7)
    moved = measure(lambda: x * x)
    assert op_bytes(moved, "aten.mul") == (42 * 4, 42 * 4)


# --- reduction, copy --------------------------------------------------------


def test_reductions():
    x = torch.randn(6, 7)
    moved = measure(lambda: x.sum())
    assert op_bytes(moved, "aten.sum") == (42 * 4, 4)
    moved = measure(lambda: x.amax(dim=1))
    assert op_bytes(moved, "aten.amax") == (42 * 4, 6 * 4)


def test_copies():
    x = torch.randn(6, 7)
    moved = measure(lambda: x.to(torch.float64))
    assert_complete(moved)
    assert op_bytes(moved, "aten._to_copy") == (42 * 4, 42 * 8)
    # A non-contiguous source: its transpose still addresses 42 elements.
    moved = measure(lambda: x.t().contiguous())
    assert op_bytes(moved, "aten.clone") == (42 * 4, 42 * 4)
    y = torch.empty(6, 7)
    moved = measure(lambda: y.copy_(x))
    # In place: the destination is an input (read) and written once.
    assert op_bytes(moved, "aten.copy_") == (2 * 42 * 4, 42 * 4)


# --- views and metadata -----------------------------------------------------


def test_views_and_metadata_move_nothing():
    x = torch.randn(6, 8)

    def views():
        x.view(48)
        x.t()
        x[1:]
        x.transpose(0, 1).unsqueeze(0)
        x.split(2)
        x.size(0), x.stride(), x.is_contiguous()

    report = torchscan_dispatch.measure_flops(views)
    moved = report["bytes"]
    assert_complete(moved)
    assert moved["value"] == 0 and moved["by_operator"] == {}
    # The views were seen (counted as calls), they just move nothing.
    assert "aten.view" in report["ignored_operators"]


# --- in-place and out= ------------------------------------------------------


def test_in_place_reads_its_destination_and_writes_it_once():
    a, b = torch.randn(5, 4), torch.randn(5, 4)
    moved = measure(lambda: a.add_(b))
    assert op_bytes(moved, "aten.add_") == (2 * 20 * 4, 20 * 4)
    # a.add_(a): one tensor, read once, written once.
    moved = measure(lambda: a.add_(a))
    assert op_bytes(moved, "aten.add_") == (20 * 4, 20 * 4)


def test_out_destination_is_written_not_read():
    a, b = torch.randn(5, 4), torch.randn(5, 4)
    c = torch.empty(5, 4)
    moved = measure(lambda: torch.add(a, b, out=c))
    assert_complete(moved)
    assert op_bytes(moved, "aten.add") == (2 * 20 * 4, 20 * 4)
    # An empty destination the call resizes: written at its final size.
    d = torch.empty(0)
    moved = measure(lambda: torch.add(a, b, out=d))
    assert d.shape == (5, 4)
    assert op_bytes(moved, "aten.add") == (2 * 20 * 4, 20 * 4)


def test_written_arguments_no_result_returns():
    # _foreach_add_ returns nothing: each destination read and written once,
    # each addend read once.
    xs = [torch.randn(3), torch.randn(5)]
    ys = [torch.randn(3), torch.randn(5)]
    moved = measure(lambda: torch._foreach_add_(xs, ys))
    assert op_bytes(moved, "aten._foreach_add_") == (2 * 8 * 4, 8 * 4)


# --- TensorLists ------------------------------------------------------------


def test_cat_and_stack():
    a, b = torch.randn(3, 4), torch.randn(2, 4)
    # a appears twice in the list: read once.
    moved = measure(lambda: torch.cat([a, b, a]))
    assert op_bytes(moved, "aten.cat") == ((12 + 8) * 4, 32 * 4)
    c = torch.randn(3, 4)
    moved = measure(lambda: torch.stack([a, c]))
    assert_complete(moved)
    # However stack is dispatched (cat of unsqueezed views), it reads 24
    # elements and writes 24.
    assert moved["read"] == 24 * 4 and moved["written"] == 24 * 4


def test_a_long_tensor_list_is_deduplicated_too():
    # More tensors than the counter keeps in place (32): still read once each.
    xs = [torch.randn(2) for _ in range(40)]
    moved = measure(lambda: torch.cat(xs + xs))
    assert op_bytes(moved, "aten.cat") == (40 * 2 * 4, 80 * 2 * 4)


# --- meta, sparse -----------------------------------------------------------


def test_meta_tensors_are_counted():
    a, b = torch.empty(64, 32, device="meta"), torch.empty(32, 16, device="meta", dtype=torch.float16)
    moved = measure(lambda: torch.mm(a, b.float()))
    assert_complete(moved)
    assert op_bytes(moved, "aten.mm") == ((64 * 32 + 32 * 16) * 4, 64 * 16 * 4)
    assert op_bytes(moved, "aten._to_copy") == (32 * 16 * 2, 32 * 16 * 4)


def test_sparse_tensor_makes_bytes_partial_naming_the_operator():
    s = torch.randn(4, 4).to_sparse()
    d = torch.randn(4, 4)
    report = torchscan_dispatch.measure_flops(lambda: (s + s, d * 2))
    moved = report["bytes"]
    assert moved["status"] == "partial"
    assert moved["value"] is None
    named = {diag["operator"]: diag for diag in moved["diagnostics"]}
    assert "aten.add" in named
    assert named["aten.add"]["code"] == "bytes_not_known"
    assert "non-strided layout" in named["aten.add"]["message"]
    # What is known is still counted: the dense multiply (its Python 2, a
    # wrapped number, is no tensor in memory: as in a dispatch mode).
    assert op_bytes(moved, "aten.mul") == (16 * 4, 16 * 4)


# --- where bytes go: modules, steps ------------------------------------------


def test_by_module_sums():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    x = torch.randn(5, 8)
    moved = measure(lambda: model(x))
    assert_complete(moved)
    first = (16 + 5 * 8 + 16 * 8) * 4 + 5 * 16 * 4  # addmm: bias, x, weight; out
    relu = 5 * 16 * 4 * 2
    second = (4 + 5 * 16 + 4 * 16) * 4 + 5 * 4 * 4
    assert moved["by_module"]["Sequential.0"] == first
    assert moved["by_module"]["Sequential.1"] == relu
    assert moved["by_module"]["Sequential.2"] == second
    assert moved["by_module"]["Sequential"] == first + relu + second == moved["value"]


def test_step_meter_reports_each_steps_bytes():
    a, b = torch.randn(4, 8), torch.randn(8, 3)
    meter = StepMeter(peak_flops_per_second=1e12)
    for _ in range(2):
        with meter.step() as step:
            torch.mm(a, b)
        assert step.bytes_read == (32 + 24) * 4
        assert step.bytes_written == 12 * 4
        assert step.bytes_complete


def test_step_meter_phases_split_bytes():
    a, b = torch.randn(4, 8), torch.randn(8, 3)
    meter = StepMeter(peak_flops_per_second=1e12)
    with meter.step() as step:
        with step.phase("first"):
            torch.mm(a, b)
        with step.phase("second"):
            a * a
    assert step.bytes_by_phase == {"first": (32 + 24 + 12) * 4, "second": 2 * 32 * 4}
    # The phases are not modules: the step's report leaves them out.
    assert not any(label.startswith("phase:") for label in step.report["bytes"]["by_module"])


def test_step_meter_shows_intensity_and_no_upper_bound_without_compiled_graphs():
    a, b = torch.randn(4, 8), torch.randn(8, 3)
    meter = StepMeter(peak_flops_per_second=1e12)
    with meter.step() as step:
        torch.mm(a, b)
    # 2 * 4 * 8 * 3 FLOPs over (32 + 24 + 12) * 4 bytes.
    assert step.bytes_moved == 272
    assert step.arithmetic_intensity == 192 / 272
    assert step.intensity_complete
    assert step.bytes_upper_bound is None
    assert step.achieved_bytes_per_second == 272 / step.seconds


def test_step_meter_carries_a_compiled_steps_upper_bound():
    a, b = torch.randn(16, 16), torch.randn(16, 16)
    torch._dynamo.reset()
    try:
        compiled = torch.compile(lambda a, b: (a @ b).relu())
        compiled(a, b)
        meter = StepMeter(peak_flops_per_second=1e12)
        with meter.step() as step:
            compiled(a, b)
    finally:
        torch._dynamo.reset()
    # The graph's lower bound (a, b read, the output written: 1024 bytes
    # each) and its unfused sum (mm 3072, relu 2048), as measure_flops has
    # them (test_compiled_graph_bounds_are_its_inputs_and_outputs_...).
    assert (step.bytes_moved, step.bytes_complete) == (3072, False)
    assert (step.bytes_upper_bound, step.bytes_upper_bound_complete) == (5120, True)
    assert step.bytes_upper_bound == step.report["bytes"]["upper_bound"]["value"]
    assert step.arithmetic_intensity == 2 * 16**3 / 3072
    assert not step.intensity_complete


def test_flop_counter_total_bytes():
    a, b = torch.randn(4, 8), torch.randn(8, 3)
    with torchscan_dispatch.FlopCounter() as counter:
        torch.mm(a, b)
    assert counter.get_total_bytes() == (32 + 24 + 12) * 4


# --- a collective -------------------------------------------------------------


def test_collective_buffers_are_read_and_written():
    import torch.distributed as dist

    if not dist.is_available() or dist.is_initialized():
        pytest.skip("torch.distributed is unavailable or already initialized here")
    with tempfile.TemporaryDirectory() as directory:
        store = dist.FileStore(os.path.join(directory, "store"), 1)
        dist.init_process_group("gloo", store=store, rank=0, world_size=1)
        try:
            t = torch.randn(10)
            report = torchscan_dispatch.measure_flops(lambda: dist.all_reduce(t))
        finally:
            dist.destroy_process_group()
    moved = report["bytes"]
    assert_complete(moved)
    # The buffer is read and written in place, once each.
    assert op_bytes(moved, "c10d.allreduce_") == (40, 40)
    # Communication volume stays its own section.
    assert report["communication"]["total"]["payload_bytes"] == 40


# --- three models against a recorded operator trace -------------------------


class BytesTrace(TorchDispatchMode):
    """Applies the documented rule to every call a dispatch mode sees (the
    level FlopCounterMode counts at), from the operator's schema, written
    independently of the C++ counter."""

    ALLOCATIONS = {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "empty_permuted"}

    def __init__(self):
        super().__init__()
        self.read = 0
        self.written = 0

    @staticmethod
    def _tensors(value):
        return [v for v in tree_flatten(value)[0] if isinstance(v, torch.Tensor)]

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        schema = func._schema
        results = list(out) if isinstance(out, (tuple, list)) and len(schema.returns) > 1 else [out]
        tensor_returns = [r for r in schema.returns if "Tensor" in str(r.type)]
        written_args = [a for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write]
        if func._schema.name.split("::")[1] in self.ALLOCATIONS:
            return out
        if tensor_returns and all(r.alias_info is not None and not r.alias_info.is_write for r in tensor_returns):
            return out  # a view
        if not tensor_returns and not written_args and func._schema.name not in ("aten::equal", "aten::is_nonzero"):
            if not any(str(r.type) == "Scalar" for r in schema.returns):
                return out  # metadata
        values = dict(zip([a.name for a in schema.arguments], args))
        values.update(kwargs)
        seen = set()
        for argument in schema.arguments:
            value = values.get(argument.name)
            writes = argument.alias_info is not None and argument.alias_info.is_write
            is_out = writes and argument.kwarg_only
            returned = writes and any(
                r.alias_info is not None and r.alias_info.is_write and r.alias_info.before_set & argument.alias_info.before_set
                for r in schema.returns
            )
            for t in self._tensors(value):
                if not is_out and id(t) not in seen:
                    seen.add(id(t))
                    self.read += nbytes(t)
                if writes and not returned:
                    self.written += nbytes(t)
        for r, value in zip(schema.returns, results):
            if "Tensor" not in str(r.type):
                continue
            if r.alias_info is not None and not r.alias_info.is_write:
                continue
            for t in self._tensors(value):
                self.written += nbytes(t)
        return out


class Block(nn.Module):
    def __init__(self, d=16, heads=2):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


MODELS = {
    "mlp": (lambda: nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 5)), (6, 12)),
    "cnn": (
        lambda: nn.Sequential(
            nn.Conv2d(3, 6, 3, padding=1),
            nn.BatchNorm2d(6),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(6 * 4 * 4, 10),
        ),
        (2, 3, 8, 8),
    ),
    "transformer_block": (Block, (2, 5, 16)),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_total_equals_a_recorded_trace(name):
    make, shape = MODELS[name]
    torch.manual_seed(0)
    model = make()
    x = torch.randn(*shape)

    def step():
        model.zero_grad(set_to_none=True)
        model(x).sum().backward()

    step()  # warm up (lazy state, first-call paths)
    with BytesTrace() as trace:
        step()
    moved = measure(step)
    assert_complete(moved)
    assert moved["read"] > 0 and moved["written"] > 0
    assert (moved["read"], moved["written"]) == (trace.read, trace.written)


# --- compiled regions ---------------------------------------------------------


def compiled_report(function, *inputs, **compile_options):
    """measure_flops of one call of torch.compile(function), compiled first,
    unmeasured."""
    torch._dynamo.reset()
    try:
        compiled = torch.compile(function, **compile_options)
        compiled(*inputs)
        return torchscan_dispatch.measure_flops(lambda: compiled(*inputs))
    finally:
        torch._dynamo.reset()


def region_diagnostics(moved):
    return [d for d in moved["diagnostics"] if d["code"] == "compiled_region_bytes"]


def test_compiled_graph_bounds_are_its_inputs_and_outputs_and_its_unfused_sum():
    a, b = torch.randn(16, 16), torch.randn(16, 16)
    report = compiled_report(lambda a, b: (a @ b).relu(), a, b)
    moved = report["bytes"]
    # The graph's FLOPs are counted from its tally (relu has no formula).
    assert report["total"]["known_value"] == 2 * 16 * 16 * 16
    # Lower bound: a and b read (16 * 16 * 4 = 1024 bytes each), the output
    # written once; partial, since the fused kernels' bytes are not known.
    assert moved["status"] == "partial"
    assert moved["known_value"] == 1024 + 1024 + 1024
    assert moved["by_operator"] == {"inductor.compiled_graph": {"read": 2048, "written": 1024}}
    # Upper bound: mm reads 2048 and writes 1024, relu reads and writes 1024.
    assert moved["upper_bound"]["status"] == "complete"
    assert moved["upper_bound"]["value"] == (2048 + 1024) + (1024 + 1024)
    # It is what the eager (a @ b).relu() moves.
    eager = measure(lambda: (a @ b).relu())
    assert_complete(eager)
    assert moved["upper_bound"]["value"] == eager["value"] == 5120
    # One diagnostic for the graph, none per call.
    assert [d["code"] for d in moved["diagnostics"]] == ["compiled_region_bytes"]
    message = moved["diagnostics"][0]["message"]
    assert moved["diagnostics"][0]["operator"] == "inductor.compiled_graph"
    assert "(inference) ran 1 time(s)" in message
    assert "3072 bytes (the lower bound" in message and "5120 bytes (the upper bound" in message


def test_compiled_graph_with_a_symbolic_size_binds_it_at_run_time():
    b = torch.randn(16, 16)
    torch._dynamo.reset()
    try:
        compiled = torch.compile(lambda a, b: (a @ b).relu(), dynamic=True)
        compiled(torch.randn(8, 16), b)
        a = torch.randn(12, 16)
        report = torchscan_dispatch.measure_flops(lambda: compiled(a, b))
    finally:
        torch._dynamo.reset()
    moved = report["bytes"]
    # a is 12 * 16 * 4 = 768 bytes, b 1024, the product and output 768.
    assert moved["known_value"] == 768 + 1024 + 768
    assert moved["upper_bound"] == {**moved["upper_bound"], "status": "complete", "value": 4096}
    assert moved["upper_bound"]["value"] == measure(lambda: (a @ b).relu())["value"]


def test_compiled_training_step_bounds_each_graph():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 5))
    x = torch.randn(6, 12)
    torch._dynamo.reset()
    try:
        compiled = torch.compile(model)

        def step():
            model.zero_grad(set_to_none=True)
            compiled(x).sum().backward()

        step()
        report = torchscan_dispatch.measure_flops(step)
    finally:
        torch._dynamo.reset()
    moved = report["bytes"]
    regions = region_diagnostics(moved)
    # One diagnostic per graph: the forward and the backward, not per call.
    assert len(regions) == 2
    assert sorted("(forward)" in d["message"] for d in regions) == [False, True]
    assert sum("(backward)" in d["message"] for d in regions) == 1
    assert moved["status"] == "partial"
    lower = moved["by_operator"]["inductor.compiled_graph"]
    assert lower["read"] > 0 and lower["written"] > 0
    assert moved["upper_bound"]["status"] == "complete"
    assert moved["upper_bound"]["value"] >= moved["known_value"] > 0
    # The forward's lower bound reads at least the parameters and the input.
    parameters = sum(p.numel() * 4 for p in model.parameters())
    assert lower["read"] >= parameters + x.numel() * 4


def test_an_eager_report_has_no_upper_bound():
    a, b = torch.randn(4, 8), torch.randn(8, 3)
    moved = measure(lambda: torch.mm(a, b))
    assert "upper_bound" not in moved


def test_a_report_with_an_upper_bound_reads_back():
    a, b = torch.randn(16, 16), torch.randn(16, 16)
    report = compiled_report(lambda a, b: (a @ b).relu(), a, b)
    assert "<html" in torchscan_dispatch.to_html(report).lower()
    broken = {**report, "bytes": {**report["bytes"], "upper_bound": {**report["bytes"]["upper_bound"], "value": None}}}
    with pytest.raises(ValueError, match="bytes.upper_bound"):
        torchscan_dispatch.to_html(broken)


def as_rank(report, rank, world_size=2):
    """``report`` as rank ``rank``'s of one job (the context a process group
    would have given it)."""
    return {
        **report,
        "distributed": {"job_id": "j", "rank": rank, "world_size": world_size, "backend": "gloo", "groups": []},
    }


def test_a_job_upper_bound_sums_compiled_and_eager_ranks():
    a, b = torch.randn(16, 16), torch.randn(16, 16)
    compiled = compiled_report(lambda a, b: (a @ b).relu(), a, b)
    eager = torchscan_dispatch.measure_flops(lambda: (a @ b).relu())
    assert "upper_bound" not in eager["bytes"]
    job = torchscan_dispatch.merge_rank_reports([as_rank(compiled, 0), as_rank(eager, 1)])
    moved = job["bytes"]
    # Rank 0's lower bound (3072) plus rank 1's eager 5120; partial, since
    # rank 0 ran a compiled graph.
    assert moved["status"] == "partial"
    assert moved["known_value"] == 3072 + 5120
    # Rank 0's unfused sum (5120) plus rank 1's bytes, which ran no compiled
    # graph, so its upper bound is its bytes: complete.
    upper = moved["upper_bound"]
    assert upper["status"] == "complete"
    assert upper["value"] == compiled["bytes"]["upper_bound"]["value"] + eager["bytes"]["value"] == 10240
    assert {rank: part["value"] for rank, part in upper["per_rank"].items()} == {"0": 5120, "1": 5120}
    assert job["diagnostics"] == []


def test_a_job_upper_bound_with_a_missing_rank_is_partial():
    a, b = torch.randn(16, 16), torch.randn(16, 16)
    compiled = compiled_report(lambda a, b: (a @ b).relu(), a, b)
    job = torchscan_dispatch.merge_rank_reports([as_rank(compiled, 0)])
    assert job["bytes"]["upper_bound"]["status"] == "partial"
    assert job["bytes"]["upper_bound"]["known_value"] == 5120
    assert [d["code"] for d in job["diagnostics"]] == ["missing_rank"]


def test_the_merge_command_prints_bytes_their_upper_bound_and_intensity(tmp_path):
    cli = os.environ.get("TORCHSCAN_CLI")
    if not cli:
        pytest.skip("TORCHSCAN_CLI is not set (tools/test sets it to the built //tools:torchscan)")
    import json
    import subprocess

    a, b = torch.randn(16, 16), torch.randn(16, 16)
    compiled = compiled_report(lambda a, b: (a @ b).relu(), a, b)
    eager = torchscan_dispatch.measure_flops(lambda: (a @ b).relu())
    paths = []
    for rank, report in enumerate((compiled, eager)):
        paths.append(tmp_path / f"rank{rank}.json")
        paths[-1].write_text(json.dumps(as_rank(report, rank)))
    merged = subprocess.run([cli, "merge", *map(str, paths)], capture_output=True, text=True, timeout=60)
    assert merged.returncode == 0, merged.stderr
    # FLOPs: each rank's mm, 2 * 16**3 (relu has no formula: partial);
    # bytes: rank 0's lower bound 3072 and rank 1's 5120; the upper bound
    # 5120 + 5120 (test_a_job_upper_bound_sums_compiled_and_eager_ranks).
    assert "total FLOPs: 16384 (partial)\n" in merged.stdout
    assert "bytes moved: 8192 (partial)\n" in merged.stdout
    assert "bytes upper bound: 10240 (complete; compiled graphs unfused)\n" in merged.stdout
    assert "arithmetic intensity: 2.000 FLOPs per byte (of the known work)\n" in merged.stdout


def test_the_merge_command_prints_the_intensity_of_counts_beyond_64_bits(tmp_path):
    cli = os.environ.get("TORCHSCAN_CLI")
    if not cli:
        pytest.skip("TORCHSCAN_CLI is not set (tools/test sets it to the built //tools:torchscan)")
    import json
    import subprocess

    # A 2^22-square product on meta: 2 * 2^66 = 2^67 FLOPs per rank, a count
    # JSON holds as a big integer. Bytes: `a`, one distinct input, read once,
    # and the result written, 4 bytes per element.
    n = 2**22
    a = torch.empty(n, n, device="meta")
    report = torchscan_dispatch.measure_flops(lambda: a @ a)
    assert report["total"]["value"] == 2 * n**3 > 2**64
    paths = []
    for rank in range(2):
        paths.append(tmp_path / f"rank{rank}.json")
        paths[-1].write_text(json.dumps(as_rank(report, rank)))
    merged = subprocess.run([cli, "merge", *map(str, paths)], capture_output=True, text=True, timeout=60)
    assert merged.returncode == 0, merged.stderr
    assert f"total FLOPs: {4 * n**3} (complete)\n" in merged.stdout
    moved = 2 * (n * n * 4 + n * n * 4)  # two ranks
    assert f"bytes moved: {moved} (complete)\n" in merged.stdout
    assert f"arithmetic intensity: {4 * n**3 / moved:.3f} FLOPs per byte\n" in merged.stdout
