"""Counting semantics: grad modes, autocast, in-place and out= overloads,
views, meta tensors, threads, nesting, custom formulas and module
attribution. Expected values come from FlopCounterMode or from hand
computations written here."""

import threading

import pytest
import torch
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
    # The hooks' C functions return -1 on error; the Python side repeats the
    # call through the operator, which names the problem.
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
