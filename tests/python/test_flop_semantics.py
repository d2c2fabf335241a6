"""Counting semantics: grad modes, autocast, in-place and out= overloads,
views, meta tensors, threads, nesting, custom formulas and module
attribution. Expected values come from FlopCounterMode or from hand
computations written here."""

import gc
import threading
import weakref

import pytest
import torch
import torch.utils.checkpoint
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

import torchscan_dispatch


def mm_flops(m, k, n):
    return 2 * m * k * n


def flop_counter_mode(workload):
    with FlopCounterMode(display=False) as mode:
        workload()
    return {str(op): n for op, n in mode.get_flop_counts().get("Global", {}).items()}


# --- TorchScan 0.2's measure_flops goldens


def test_matmul_and_module_hierarchy_golden():
    left, right = torch.randn(2, 3), torch.randn(3, 4)
    linear = nn.Linear(4, 2)
    report = torchscan_dispatch.measure_flops(lambda: linear(left @ right), modules=linear)
    assert report["total"] == {
        "status": "complete",
        "value": 80,
        "known_value": 80,
        "unit": "FLOPs",
        "scope": "workload",
        "method": "torch.utils.flop_counter.FlopCounterMode",
    }
    assert report["by_operator"] == {"aten.addmm": 32, "aten.mm": 48}
    assert report["by_module"]["Linear"] == 32
    assert report["diagnostics"] == []


def test_custom_mapping_counts_from_shapes():
    x = torch.randn(5)
    mapping = {torch.ops.aten.sin: lambda x_shape, out_shape=None, **kwargs: out_shape.numel()}
    report = torchscan_dispatch.measure_flops(lambda: torch.sin(x), custom_mapping=mapping)
    assert report["total"]["status"] == "complete"
    assert report["total"]["value"] == 5
    assert report["by_operator"] == {"aten.sin": 5}
    assert list(mapping) == [torch.ops.aten.sin]  # the caller's mapping is untouched


def test_custom_formula_returning_zero_is_a_complete_zero():
    x = torch.randn(5)
    report = torchscan_dispatch.measure_flops(
        lambda: torch.sin(x), custom_mapping={torch.ops.aten.sin: lambda *a, **k: 0}
    )
    assert report["total"] == {**report["total"], "status": "complete", "value": 0}
    assert report["by_operator"] == {"aten.sin": 0}


def test_overload_keys_are_rejected_before_the_workload_runs():
    calls = []
    with pytest.raises(TypeError, match="operator packets"):
        torchscan_dispatch.measure_flops(
            lambda: calls.append(1), custom_mapping={torch.ops.aten.sin.default: lambda *a, **k: 1}
        )
    assert calls == []


def test_tensor_operators_inside_custom_formulas_are_not_counted():
    x = torch.randn(3, 3)

    def formula(*args, out_shape=None, **kwargs):
        torch.mm(torch.ones(2, 2), torch.ones(2, 2))  # not workload work
        return 7

    report = torchscan_dispatch.measure_flops(lambda: torch.sin(x), custom_mapping={torch.ops.aten.sin: formula})
    assert report["by_operator"] == {"aten.sin": 7}
    assert report["ignored_operators"] == {} and report["diagnostics"] == []


def test_custom_formula_overrides_the_builtin_and_sees_arguments_like_flop_counter_mode():
    a, b = torch.randn(4, 5), torch.randn(5, 6)
    seen = []

    def formula(*args, out_shape=None, **kwargs):
        seen.append((args, kwargs, out_shape))
        return 1

    workload = lambda: torch.addmm(torch.zeros(6), a, b, beta=2)  # noqa: E731
    ours = torchscan_dispatch.measure_flops(workload, custom_mapping={torch.ops.aten.addmm: formula})
    assert ours["by_operator"] == {"aten.addmm": 1}
    with FlopCounterMode(display=False, custom_mapping={torch.ops.aten.addmm: formula}):
        workload()
    assert seen[0] == seen[1] == ((torch.Size([6]), torch.Size([4, 5]), torch.Size([5, 6])), {"beta": 2}, torch.Size([4, 6]))


def test_raw_custom_formulas_get_meta_tensors_of_the_same_shape():
    x = torch.randn(2, 3)
    received = []

    def raw(x_arg, out_val=None, **kwargs):
        received.append((x_arg.device.type, tuple(x_arg.shape), x_arg.dtype, tuple(out_val.shape)))
        return 3

    raw._get_raw = True
    report = torchscan_dispatch.measure_flops(lambda: torch.sin(x), custom_mapping={torch.ops.aten.sin: raw})
    assert report["by_operator"] == {"aten.sin": 3}
    assert received == [("meta", (2, 3), torch.float32, (2, 3))]


def test_custom_formula_exception_propagates_and_state_is_clean():
    error = ArithmeticError("bad formula")

    def formula(*args, **kwargs):
        raise error

    with pytest.raises(ArithmeticError) as raised:
        torchscan_dispatch.measure_flops(lambda: torch.sin(torch.ones(2)), custom_mapping={torch.ops.aten.sin: formula})
    assert raised.value is error
    assert torchscan_dispatch.measure_flops(lambda: torch.mm(torch.ones(2, 2), torch.ones(2, 2)))["by_operator"] == {
        "aten.mm": 16
    }


# --- grad modes, autocast, overloads, views


def test_no_grad_and_inference_mode_count_the_same():
    linear = nn.Linear(8, 4)
    x = torch.randn(3, 8)
    expected = {"aten.addmm": mm_flops(3, 8, 4)}
    with torch.no_grad():
        assert torchscan_dispatch.measure_flops(lambda: linear(x))["by_operator"] == expected
    with torch.inference_mode():
        x_inference = torch.randn(3, 8)
        assert torchscan_dispatch.measure_flops(lambda: linear(x_inference))["by_operator"] == expected


def test_autocast_counts_the_same_products():
    linear = nn.Linear(8, 4)
    x = torch.randn(3, 8)

    def workload():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            linear(x)

    ours = torchscan_dispatch.measure_flops(workload)
    assert ours["by_operator"] == flop_counter_mode(workload) == {"aten.addmm": mm_flops(3, 8, 4)}
    assert "aten._to_copy" in ours["ignored_operators"]  # the casts are seen


def test_out_overloads_count_and_in_place_packets_do_not():
    a, b = torch.randn(4, 5), torch.randn(5, 6)
    out = torch.empty(4, 6)
    c = torch.zeros(4, 6)

    def workload():
        torch.mm(a, b, out=out)
        c.addmm_(a, b)

    ours = torchscan_dispatch.measure_flops(workload)
    assert ours["by_operator"] == flop_counter_mode(workload) == {"aten.mm": mm_flops(4, 5, 6)}
    assert [d["operator"] for d in ours["diagnostics"]] == ["aten.addmm_"]


def test_views_are_ignored_with_their_reason():
    x = torch.randn(6)
    report = torchscan_dispatch.measure_flops(lambda: (x.view(3, 2).t(), x[1:4], x.unsqueeze(0)))
    assert report["total"]["status"] == "complete" and report["total"]["value"] == 0
    assert report["ignored_operators"] == {
        "aten.slice": {"calls": 1, "reason": "Metadata-only tensor view."},
        "aten.t": {"calls": 1, "reason": "Metadata-only tensor view."},
        "aten.unsqueeze": {"calls": 1, "reason": "Metadata-only tensor view."},
        "aten.view": {"calls": 1, "reason": "Metadata-only tensor view."},
    }


def test_profiler_ranges_keep_a_count_complete():
    # record_function (every Optimizer.step opens one) runs range-marker
    # operators that do no arithmetic: the count stays complete.
    a, b, c = torch.randn(4, 5), torch.randn(5, 6), torch.randn(6, 3)

    def workload():
        with torch.profiler.record_function("outer"):
            with torch.profiler.record_function("inner"):
                return (a @ b) @ c

    report = torchscan_dispatch.measure_flops(workload)
    expected = flop_counter_mode(workload)
    assert expected == {"aten.mm": mm_flops(4, 5, 6) + mm_flops(4, 6, 3)}
    assert report["by_operator"] == expected
    assert report["total"]["status"] == "complete"
    assert report["total"]["value"] == mm_flops(4, 5, 6) + mm_flops(4, 6, 3)
    marker = "Profiler range marker; runs no tensor arithmetic."
    assert report["ignored_operators"]["profiler._record_function_enter_new"] == {"calls": 2, "reason": marker}
    assert report["ignored_operators"]["profiler._record_function_exit"] == {"calls": 2, "reason": marker}
    assert report["diagnostics"] == []


# --- meta tensors


def _decoder_only(width, heads, layers, vocab, device):
    with torch.device(device):
        layer = nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.0, batch_first=True, norm_first=True)
        return nn.ModuleDict(
            {
                "embed": nn.Embedding(vocab, width),
                "blocks": nn.TransformerEncoder(layer, layers, enable_nested_tensor=False),
                "head": nn.Linear(width, vocab, bias=False),
            }
        )


def _run_decoder(model, ids, seq):
    mask = nn.Transformer.generate_square_subsequent_mask(seq, device=ids.device)
    return model["head"](model["blocks"](model["embed"](ids), mask=mask, is_causal=True))


def test_meta_transformer_counts_exactly_as_on_cpu():
    seq = 16
    cpu = _decoder_only(64, 4, 2, 100, "cpu")
    meta = _decoder_only(64, 4, 2, 100, "meta")
    ids_cpu = torch.zeros(2, seq, dtype=torch.long)
    ids_meta = torch.zeros(2, seq, dtype=torch.long, device="meta")
    ours_cpu = torchscan_dispatch.measure_flops(lambda: _run_decoder(cpu, ids_cpu, seq))
    ours_meta = torchscan_dispatch.measure_flops(lambda: _run_decoder(meta, ids_meta, seq))
    # On CPU the attention runs the fused CPU kernel, on meta its math
    # decomposition: the same products, under different operator names.
    cpu_total = ours_cpu["total"]["known_value"]
    assert cpu_total == ours_meta["total"]["known_value"]
    assert ours_meta["by_operator"] == flop_counter_mode(lambda: _run_decoder(meta, ids_meta, seq))


def test_large_meta_transformer_counts_without_allocating():
    # 24 layers of width 2048: about 1.3 billion parameters, never allocated.
    width, layers, seq, vocab = 2048, 24, 512, 32000
    model = _decoder_only(width, 16, layers, vocab, "meta")
    ids = torch.zeros(1, seq, dtype=torch.long, device="meta")
    report = torchscan_dispatch.measure_flops(lambda: _run_decoder(model, ids, seq))
    per_layer = (
        mm_flops(seq, width, 3 * width)  # fused q/k/v projection
        + 2 * 2 * seq * seq * width  # scores and weighted values
        + mm_flops(seq, width, width)  # output projection
        + mm_flops(seq, width, 4 * width)
        + mm_flops(seq, 4 * width, width)  # feed-forward
    )
    assert report["total"]["known_value"] == layers * per_layer + mm_flops(seq, width, vocab)


# --- threads and nesting


def test_two_threads_with_their_own_measurements_get_independent_exact_counts():
    results = {}
    barrier = threading.Barrier(2)

    def run(name, m):
        a = torch.randn(m, m)

        def workload():
            barrier.wait()
            for _ in range(50):
                torch.mm(a, a)

        results[name] = torchscan_dispatch.measure_flops(workload)

    threads = [threading.Thread(target=run, args=("small", 4)), threading.Thread(target=run, args=("large", 8))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results["small"]["by_operator"] == {"aten.mm": 50 * mm_flops(4, 4, 4)}
    assert results["large"]["by_operator"] == {"aten.mm": 50 * mm_flops(8, 8, 8)}


@pytest.mark.parametrize("threads", [1, 4])
def test_intra_op_parallel_kernels_are_counted_once(threads):
    # Fixed thread counts, not the machine's core count: kernels split the
    # same work over 1 or 4 intra-op threads on any machine. The
    # process-wide setting is restored for the tests that follow.
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        a = torch.randn(64, 128, 128)
        conv = nn.Conv2d(16, 32, 3)
        x = torch.randn(8, 16, 64, 64)

        def workload():
            torch.bmm(a, a)
            conv(x)

        ours = torchscan_dispatch.measure_flops(workload)
        assert torch.get_num_threads() == threads
    finally:
        torch.set_num_threads(previous)
    assert ours["by_operator"]["aten.bmm"] == 64 * mm_flops(128, 128, 128)
    assert ours["by_operator"] == flop_counter_mode(workload)


def test_backward_counts_only_when_the_measurement_spans_backward_call():
    linear = nn.Linear(4, 4)
    x = torch.randn(2, 4)
    holder = {}
    forward_only = torchscan_dispatch.measure_flops(lambda: holder.setdefault("y", linear(x)))
    assert forward_only["by_operator"] == {"aten.addmm": mm_flops(2, 4, 4)}
    backward_only = torchscan_dispatch.measure_flops(lambda: holder["y"].sum().backward())
    assert backward_only["by_operator"] == {"aten.mm": mm_flops(4, 2, 4)}  # grad weight


def test_by_module_attributes_forward_and_backward_like_flop_counter_mode():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 2)))
    x = torch.randn(3, 4, requires_grad=True)

    def workload():
        model(x).sum().backward()

    ours = torchscan_dispatch.measure_flops(workload)
    with FlopCounterMode(display=False) as mode:
        workload()
    expected = {label: sum(ops.values()) for label, ops in mode.get_flop_counts().items() if label != "Global"}
    assert ours["by_module"] == expected
    assert ours["by_module"]["Sequential.2.1"] == mm_flops(3, 8, 2) + mm_flops(3, 2, 8) + mm_flops(2, 3, 8)


def _fcm_by_module(workload):
    with FlopCounterMode(display=False) as mode:
        workload()
    return {label: sum(ops.values()) for label, ops in mode.get_flop_counts().items() if label != "Global"}


def test_by_module_names_follow_module_tracker_when_a_submodule_runs_first():
    # ModuleTracker names a module by its type when it is first seen alone,
    # and renames it (not its already named children) when its parent runs.
    torch.manual_seed(0)
    inner = nn.Sequential(nn.Linear(4, 4), nn.Sequential(nn.Linear(4, 4)))
    outer = nn.Sequential(nn.Linear(4, 4), inner)
    x = torch.randn(2, 4)

    def workload():
        inner(x)
        outer(x)
        inner[1](x)

    ours = torchscan_dispatch.measure_flops(workload)["by_module"]
    assert ours == _fcm_by_module(workload)
    assert "Sequential.1" in ours and "Sequential.1.0" in ours


def test_by_module_labels_a_new_module_at_a_dead_modules_address_by_its_own_name():
    # The native hooks cache each module's label by address; a module built
    # where a dead one lived must be named afresh, as ModuleTracker's weak
    # dictionary does.
    torch.manual_seed(0)
    x = torch.randn(2, 4)
    addresses = []

    def workload():
        for step in range(8):
            layer = nn.Linear(4, 4) if step % 2 == 0 else nn.Sequential(nn.Linear(4, 4))
            addresses.append(id(layer))
            layer(x)
            del layer

    ours = torchscan_dispatch.measure_flops(workload)["by_module"]
    assert len(set(addresses)) < len(addresses), "no address was reused: the test proves nothing"
    addresses.clear()
    assert ours == _fcm_by_module(workload)
    assert ours == {"Linear": 4 * mm_flops(2, 4, 4), "Sequential": 4 * mm_flops(2, 4, 4),
                    "Sequential.0": 4 * mm_flops(2, 4, 4)}


def test_module_hooks_leave_no_tracker_behind():
    # The tracker and the Python object that names modules refer to each
    # other; the garbage collector must see through the native half.
    import gc

    model = nn.Sequential(nn.Linear(4, 4))
    x = torch.randn(2, 4, requires_grad=True)
    for _ in range(3):
        torchscan_dispatch.measure_flops(lambda: model(x).sum().backward())
    gc.collect()
    left = [type(o).__name__ for o in gc.get_objects() if type(o).__name__ in ("ModuleScopes", "ModuleScopeTracker")]
    assert left == []


def test_by_module_with_a_module_called_twice_and_a_tuple_of_inputs():
    torch.manual_seed(0)

    class Pair(nn.Module):
        def __init__(self):
            super().__init__()
            self.left, self.right = nn.Linear(4, 4), nn.Linear(4, 4)

        def forward(self, a, b):
            return self.left(a) + self.right(b)

    model = nn.Sequential()
    pair = Pair()
    a, b = torch.randn(3, 4, requires_grad=True), torch.randn(3, 4)

    def workload():
        (pair(a, b) + pair(b, a)).sum().backward()

    assert torchscan_dispatch.measure_flops(workload)["by_module"] == _fcm_by_module(workload)
    del model


class _SharedInputAttention(nn.Module):
    """Query, key and value projections of one hidden state: siblings sharing
    an input, where ModuleTracker keeps the first sibling's backward open
    while the others run (FlopCounterMode attributes their FLOPs to it)."""

    def __init__(self, width=8):
        super().__init__()
        self.embed = nn.Linear(width, width)
        self.query, self.key, self.value = (nn.Linear(width, width) for _ in range(3))
        self.out = nn.Linear(width, width)

    def forward(self, x):
        h = self.embed(x)
        scores = (self.query(h) @ self.key(h).transpose(-1, -2)).softmax(-1)
        return self.out(scores @ self.value(h))


class _TupleOutputs(nn.Module):
    def __init__(self, width=8):
        super().__init__()
        self.left, self.right = nn.Linear(width, width), nn.Linear(width, width)

    def forward(self, x):
        return self.left(x), self.right(x)


class _UsesOneOutput(nn.Module):
    def __init__(self, width=8):
        super().__init__()
        self.pair, self.head = _TupleOutputs(width), nn.Linear(width, width)

    def forward(self, x):
        a, b = self.pair(x)
        return self.head(a).sum() + b.sum()


class _FiveInputs(nn.Module):
    # One gradient watch over five tensors.
    def __init__(self, width=8):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(width, width) for _ in range(5))

    def forward(self, *inputs):
        return sum(layer(x) for layer, x in zip(self.layers, inputs))


def _backward_workloads():
    torch.manual_seed(0)
    attention, pair, five = _SharedInputAttention(), _UsesOneOutput(), _FiveInputs()
    inputs = [torch.randn(2, 8, requires_grad=True) for _ in range(5)]
    mlp = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8))
    checkpointed = nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 8))
    x = torch.randn(2, 8, requires_grad=True)
    tokens = torch.randn(2, 4, 8)

    def retain_graph_twice():
        loss = attention(tokens).sum()
        loss.backward(retain_graph=True)
        loss.backward()

    return {
        "shared_input": lambda: attention(tokens).sum().backward(),
        "shared_input_requiring_grad": lambda: attention(x.unsqueeze(0)).sum().backward(),
        "tuple_output_partly_used": lambda: pair(torch.randn(2, 8)).backward(),
        "checkpoint": lambda: torch.utils.checkpoint.checkpoint(checkpointed, x, use_reentrant=False).sum().backward(),
        "autograd_grad_of_one_weight": lambda: torch.autograd.grad(mlp(x).sum(), [mlp[2].weight]),
        "retain_graph_twice": retain_graph_twice,
        "two_steps": lambda: [mlp(x).sum().backward() for _ in range(2)],
        "five_inputs_requiring_grad": lambda: five(*inputs).sum().backward(),
        "in_place_on_an_output": lambda: mlp(x).mul_(2).sum().backward(),
    }


@pytest.mark.parametrize("name", sorted(_backward_workloads()))
def test_by_module_in_backward_equals_flop_counter_mode(name):
    workload = _backward_workloads()[name]
    expected = _fcm_by_module(workload)
    assert torchscan_dispatch.measure_flops(workload)["by_module"] == expected


def test_by_module_keeps_flop_counter_modes_attribution_to_a_sibling_sharing_the_input():
    # The value projection's backward runs first and stays open until the
    # gradient of the shared hidden state is in: FlopCounterMode attributes
    # the key and query projections' gradients to it as well.
    workload = _backward_workloads()["shared_input"]
    ours = torchscan_dispatch.measure_flops(workload)["by_module"]
    linear = mm_flops(8, 8, 8)  # one projection's forward on 2 x 4 tokens
    assert ours["_SharedInputAttention.query"] == 3 * linear
    assert ours["_SharedInputAttention.value"] > 3 * linear
    assert ours == _fcm_by_module(workload)


def test_backward_module_scopes_use_no_python_gradient_hooks(monkeypatch):
    from torchscan_dispatch import _module_scopes

    def fail(*_args, **_kwargs):
        raise AssertionError("register_multi_grad_hook called for plain tensors")

    monkeypatch.setattr(_module_scopes, "register_multi_grad_hook", fail)
    workload = _backward_workloads()["shared_input_requiring_grad"]
    monkeypatch.undo()
    expected = _fcm_by_module(workload)
    monkeypatch.setattr(_module_scopes, "register_multi_grad_hook", fail)
    assert torchscan_dispatch.measure_flops(workload)["by_module"] == expected


def test_gradient_watches_end_with_the_measurement_even_when_the_workload_raises():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4))
    x = torch.randn(2, 4, requires_grad=True)
    kept = {}

    def workload():
        kept["y"] = model(x)
        raise ValueError("workload failed")

    with pytest.raises(ValueError, match="workload failed"):
        torchscan_dispatch.measure_flops(workload)
    # The hooks on the tensors still alive are gone: a backward after the
    # measurement changes no scope and leaves FlopCounterMode's view intact.
    backward = torchscan_dispatch.measure_flops(lambda: kept["y"].sum().backward(retain_graph=True))
    assert backward["total"]["known_value"] > 0
    assert backward["by_module"] == _fcm_by_module(lambda: kept["y"].sum().backward()) == {}
    assert torchscan_dispatch.measure_flops(lambda: model(x).sum().backward())["by_module"] == _fcm_by_module(
        lambda: model(x).sum().backward()
    )


def test_gradient_watches_keep_no_graph_alive_between_forwards():
    # Forwards measured with grad enabled and never backpropagated (an
    # evaluation loop without no_grad) free each graph, and the tensors it
    # saved, as plain PyTorch does: the watches own no autograd nodes.
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 8))
    x = torch.randn(4, 8, requires_grad=True)
    saved = []

    def forward():
        hidden = model[0](x)
        # The product's gradient function saves `hidden` itself, and the
        # second layer's input watch is on the product.
        product = hidden * hidden
        saved.append(weakref.ref(hidden))
        model[1](product)

    def workload():
        forward()
        gc.collect()
        assert saved[0]() is None, "the first forward's graph is still alive"
        forward()

    torchscan_dispatch.measure_flops(workload)


def test_gradient_watches_leave_another_threads_backward_alone():
    # The other thread is not measured: its modules' calls and its backward
    # (on its own model and input) run while the measurement is open.
    torch.manual_seed(0)
    model, other_model = (nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 8)) for _ in range(2))
    x, other_x = (torch.randn(4, 8, requires_grad=True) for _ in range(2))
    results = {}

    def other_thread():
        for _ in range(20):
            other_model(other_x).sum().backward()
        results["other"] = True

    def workload():
        thread = threading.Thread(target=other_thread)
        thread.start()
        for _ in range(5):
            model(x).sum().backward()
        thread.join(timeout=60)

    ours = torchscan_dispatch.measure_flops(workload)
    assert results == {"other": True}
    expected = _fcm_by_module(lambda: [model(x).sum().backward() for _ in range(5)])
    assert ours["by_module"] == expected


def test_track_modules_false_keeps_totals_and_leaves_by_module_empty():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    x = torch.randn(3, 4, requires_grad=True)

    def workload():
        model(x).sum().backward()

    tracked = torchscan_dispatch.measure_flops(workload)
    untracked = torchscan_dispatch.measure_flops(workload, track_modules=False)
    assert untracked["by_module"] == {}
    assert untracked["total"] == tracked["total"]
    assert untracked["by_operator"] == tracked["by_operator"]
    # Forward addmm of each layer, then each layer's input and weight grads.
    forward = mm_flops(3, 4, 8) + mm_flops(3, 8, 2)
    backward = mm_flops(3, 2, 8) + mm_flops(2, 3, 8) + mm_flops(3, 8, 4) + mm_flops(8, 3, 4)
    assert untracked["total"]["known_value"] == forward + backward
    # No global module hooks are left behind either way.
    assert not torch.nn.modules.module._global_forward_pre_hooks
    assert not torch.nn.modules.module._global_forward_hooks


def test_track_modules_must_be_a_bool():
    with pytest.raises(TypeError, match="track_modules must be a bool"):
        torchscan_dispatch.measure_flops(lambda: None, track_modules="no")


def test_module_scope_calls_raise_clear_errors():
    # The hooks' native tracker raises the session's own error, which names
    # the problem.
    from torchscan_dispatch._module_scopes import ModuleScopes
    from torchscan_dispatch._native import Measurement

    measurement = Measurement()
    scopes = ModuleScopes(measurement)
    with pytest.raises(RuntimeError, match="scope id 99 was never handed out"):
        scopes._set_scope_id(99)
    measurement.stop()
    measurement.finish()
    with pytest.raises(RuntimeError, match=f"no open measurement {measurement.handle}"):
        scopes._change("Linear", True)
    with pytest.raises(RuntimeError, match=f"no open measurement {measurement.handle}"):
        scopes._set_scope_id(0)
    with pytest.raises(RuntimeError, match=f"no open measurement {measurement.handle}"):
        scopes._watch([torch.randn(2, requires_grad=True)], "Linear", True)
