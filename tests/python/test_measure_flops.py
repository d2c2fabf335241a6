"""measure_flops against PyTorch's own FlopCounterMode on the same workloads."""

import threading

import pytest
import torch
from torch import nn

import torchscan_dispatch
from conftest import flop_counter_mode_counts


def assert_matches_flop_counter_mode(workload):
    ours = torchscan_dispatch.measure_flops(workload)
    total, per_operator = flop_counter_mode_counts(workload)
    assert ours["total"]["known_value"] == total
    assert ours["by_operator"] == per_operator
    return ours


def test_linear_forward_and_backward_matches_flop_counter_mode():
    torch.manual_seed(0)
    linear = nn.Linear(16, 8)
    x = torch.randn(4, 16, requires_grad=True)
    report = assert_matches_flop_counter_mode(lambda: linear(x).sum().backward())
    # addmm forward; the engine's backward mm for grad_input and grad_weight.
    assert report["by_operator"] == {"aten.addmm": 2 * 4 * 8 * 16, "aten.mm": 2 * (2 * 4 * 16 * 8)}


def test_mlp_forward_and_backward_matches_flop_counter_mode():
    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 10))
    x = torch.randn(8, 32)
    report = assert_matches_flop_counter_mode(lambda: mlp(x).square().mean().backward())
    # relu/tanh/square/mean have no formula: the total is an honest lower bound.
    assert report["total"]["status"] == "partial"
    assert report["total"]["value"] is None
    uncounted = {d["operator"] for d in report["diagnostics"]}
    assert {"aten.relu", "aten.tanh"} <= uncounted


def test_bmm_matches_flop_counter_mode():
    a = torch.randn(3, 5, 7)
    b = torch.randn(3, 7, 2)
    report = assert_matches_flop_counter_mode(lambda: torch.bmm(a, b))
    assert report["total"] == {
        "status": "complete",
        "value": 2 * 3 * 5 * 2 * 7,
        "known_value": 2 * 3 * 5 * 2 * 7,
        "unit": "FLOPs",
        "scope": "workload",
        "method": "torch.utils.flop_counter.FlopCounterMode",
    }


def test_matmul_decomposes_like_flop_counter_mode():
    a = torch.randn(2, 4, 5, 6)
    b = torch.randn(6, 3)
    c = torch.randn(2, 4, 6, 3)
    assert_matches_flop_counter_mode(lambda: (a @ b, a @ c, torch.einsum("bhij,bhjk->bhik", a, c)))


def test_uncounted_operator_is_partial_with_its_name():
    # TorchScan 0.2's measure_flops golden: torch.sin(left @ right).
    left, right = torch.randn(2, 3), torch.randn(3, 4)
    report = torchscan_dispatch.measure_flops(lambda: torch.sin(left @ right))
    assert report["total"]["status"] == "partial"
    assert report["total"]["known_value"] == 48
    assert report["by_operator"] == {"aten.mm": 48}
    assert report["diagnostics"] == [
        {
            "code": "uncounted_operator",
            "severity": "warning",
            "metric": "flops",
            "operator": "aten.sin",
            "message": "aten.sin was observed 1 time(s), but no FLOP formula is registered.",
        }
    ]


def test_view_is_an_ignored_operator():
    x = torch.randn(6)
    report = torchscan_dispatch.measure_flops(lambda: x.view(3, 2))
    assert report["total"]["status"] == "complete"
    assert report["total"]["value"] == 0
    assert report["ignored_operators"] == {"aten.view": {"calls": 1, "reason": "Metadata-only tensor view."}}


def test_workload_exception_propagates_unchanged_and_counting_stops():
    error = ValueError("boom")
    a = torch.randn(2, 2)

    def workload():
        torch.mm(a, a)
        raise error

    with pytest.raises(ValueError) as raised:
        torchscan_dispatch.measure_flops(workload)
    assert raised.value is error
    # Counting is off again: a later measurement sees only its own work.
    report = torchscan_dispatch.measure_flops(lambda: torch.bmm(a[None], a[None]))
    assert report["by_operator"] == {"aten.bmm": 16}


def test_workload_is_called_exactly_once():
    calls = []
    report = torchscan_dispatch.measure_flops(lambda: calls.append(1))
    assert calls == [1]
    assert report["total"]["status"] == "complete" and report["total"]["value"] == 0


def test_other_threads_are_not_counted():
    a = torch.randn(4, 4)

    def workload():
        other = threading.Thread(target=lambda: torch.mm(a, a))
        other.start()
        other.join()
        torch.bmm(a[None], a[None])

    report = torchscan_dispatch.measure_flops(workload)
    assert report["by_operator"] == {"aten.bmm": 2 * 4 * 4 * 4}


def test_nested_measurements_both_count_the_inner_work():
    a = torch.randn(3, 3)
    inner_reports = []

    def outer():
        torch.mm(a, a)
        inner_reports.append(torchscan_dispatch.measure_flops(lambda: torch.mm(a, a)))

    outer_report = torchscan_dispatch.measure_flops(outer)
    assert inner_reports[0]["by_operator"] == {"aten.mm": 54}
    assert outer_report["by_operator"] == {"aten.mm": 108}


# --- module names kept per model (NOTE [Names kept per model])


def _by_module_of_flop_counter_mode(workload) -> dict:
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as mode:
        workload()
    return {label: sum(counts.values()) for label, counts in mode.get_flop_counts().items() if label != "Global"}


class _Blocks(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(*(nn.Sequential(nn.Linear(8, 8), nn.ReLU()) for _ in range(3)))
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        return self.head(self.blocks(x))


def test_second_measurement_of_a_model_reuses_its_names_without_walking_it(monkeypatch):
    from torchscan_dispatch import _module_scopes

    model, x = _Blocks(), torch.randn(4, 8)
    walked = []
    named_children = nn.Module.named_children

    def spy(self):
        walked.append(self)
        return named_children(self)

    monkeypatch.setattr(nn.Module, "named_children", spy)
    first = torchscan_dispatch.measure_flops(lambda: model(x))["by_module"]
    assert len(walked) == len(list(model.modules()))  # 9: every module once
    walks = _module_scopes.walks
    walked.clear()
    second = torchscan_dispatch.measure_flops(lambda: model(x))["by_module"]
    assert walked == [] and _module_scopes.walks == walks
    monkeypatch.undo()
    assert second == first == _by_module_of_flop_counter_mode(lambda: model(x))
    # By hand: each Linear(8, 8) on 4 rows is 2*4*8*8 FLOPs, the head 2*4*8*2.
    assert first["_Blocks.blocks.1.0"] == 512 and first["_Blocks.head"] == 128
    assert first["_Blocks"] == 3 * 512 + 128


def test_later_measurements_of_a_model_use_its_kept_scopes():
    from torchscan_dispatch import _module_scopes

    model, x = _Blocks(), torch.randn(4, 8)
    expected = _by_module_of_flop_counter_mode(lambda: model(x))
    adoptions = _module_scopes.adoptions
    first = torchscan_dispatch.measure_flops(lambda: model(x))["by_module"]
    cache = _module_scopes._named_trees[id(model)][1].cache
    second = torchscan_dispatch.measure_flops(lambda: model(x))["by_module"]
    # Both measurements took the tree's labels and scopes (the first made
    # them), the same object each time.
    assert _module_scopes.adoptions == adoptions + 2
    assert _module_scopes._named_trees[id(model)][1].cache is cache
    assert first == second == expected

    # A measurement that names a submodule first (its own root, with
    # ModuleTracker's type name) and then the model, and a training step whose
    # backward moves the scope through gradient watches: the kept scopes stay
    # right for both and for the forward measured after them.
    def sub_then_root():
        model.head(x)
        model(x)

    def training_step():
        model(x).sum().backward()

    for workload in (sub_then_root, training_step, lambda: model(x)):
        assert torchscan_dispatch.measure_flops(workload)["by_module"] == _by_module_of_flop_counter_mode(workload)


def test_kept_names_follow_a_changed_model():
    model, x = _Blocks(), torch.randn(4, 8)
    torchscan_dispatch.measure_flops(lambda: model(x))
    # A replaced child, a new grandchild and a removed one: named again.
    model.blocks[1] = nn.Sequential(nn.Linear(8, 8), nn.Tanh())
    model.blocks[2].add_module("extra", nn.Identity())
    del model.blocks[0][1]
    after = torchscan_dispatch.measure_flops(lambda: model(x))["by_module"]
    assert after == _by_module_of_flop_counter_mode(lambda: model(x))
    # A submodule measured before its root in the same measurement keeps
    # ModuleTracker's names (the kept names are for a root named first).
    def sub_then_root():
        model.head(x)
        model(x)

    assert torchscan_dispatch.measure_flops(sub_then_root)["by_module"] == _by_module_of_flop_counter_mode(
        sub_then_root
    )


def test_the_report_read_through_the_extension_module_is_the_measurements():
    from torchscan_dispatch._library import hooks
    from torchscan_dispatch._native import Measurement

    a, b = torch.ones(4, 5), torch.ones(5, 6)
    measurement = Measurement()  # counting from here
    try:
        a @ b
        measurement.stop()
        report = hooks().flop_report(measurement.handle)
    finally:
        measurement.finish()
    # By hand: 2 * 4 * 5 * 6.
    assert (240, {"aten.mm": 240}) == (report["total"]["value"], report["by_operator"])


def test_reading_a_measurement_that_is_not_open_is_a_runtime_error():
    from torchscan_dispatch._library import hooks

    with pytest.raises(RuntimeError, match="torchscan: no open measurement 123456789"):
        hooks().flop_report(123456789)
    with pytest.raises(RuntimeError, match="torchscan: no open measurement 123456789"):
        hooks().call_log(123456789)
    with pytest.raises(TypeError):
        hooks().flop_report("1")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"record_calls": "yes"}, "torchscan: options.record_calls: expected a boolean, got string"),
        ({"colour": "red"}, "torchscan: options.colour: unknown field"),
        ({"deferred_packets": ["aten.sin", 3]}, "torchscan: options.deferred_packets[1]: expected a string, got integer"),
        ({"record_calls": float("nan")}, "torchscan: options.record_calls: nan is not a JSON number"),
        ([], "torchscan: options: expected an object, got array"),
    ],
)
def test_a_bad_counting_option_is_a_one_line_value_error_naming_it(options, message):
    from torchscan_dispatch._library import hooks

    with pytest.raises(ValueError) as raised:
        hooks().begin_counting(options)
    assert message == str(raised.value)
    # Nothing was begun: the thread measures as before.
    assert 240 == torchscan_dispatch.measure_flops(lambda: torch.ones(4, 5) @ torch.ones(5, 6))["total"]["value"]


def test_deferred_results_given_by_hand_are_the_reports():
    from torchscan_dispatch._native import Measurement

    x = torch.ones(3, 4)
    measurement = Measurement(["aten.sin"])
    try:
        torch.sin(x)
        measurement.stop()
        calls = measurement.take_deferred_calls()
        measurement.resolve_deferred([{"flops": 7}])
        report = measurement.flop_report()
    finally:
        measurement.finish()
    assert [("aten::sin", "")] == [(name, overload) for name, overload, _, _ in calls]
    assert (7, {"aten.sin": 7}) == (report["total"]["value"], report["by_operator"])


@pytest.mark.parametrize(
    ("results", "message"),
    [
        ([{"flops": "many"}], 'torchscan: results[0].flops: expected an integer, got string "many"'),
        ([{"flops": 1, "note": "x"}], "torchscan: results[0].note: unknown field"),
        ([], "torchscan: results: expected 1 results, got 0"),
    ],
)
def test_a_bad_deferred_result_is_a_one_line_value_error_naming_it(results, message):
    from torchscan_dispatch._native import Measurement

    measurement = Measurement(["aten.sin"])
    try:
        torch.sin(torch.ones(2))
        measurement.stop()
        measurement.take_deferred_calls()
        with pytest.raises(ValueError) as raised:
            measurement.resolve_deferred(results)
    finally:
        measurement.finish()
    assert message == str(raised.value)


def test_controlling_a_measurement_that_is_not_open_is_a_runtime_error():
    from torchscan_dispatch._library import hooks

    for control in (hooks().stop_counting, hooks().finish_counting, hooks().join_counting):
        with pytest.raises(RuntimeError, match="torchscan: no open measurement 123456789"):
            control(123456789)
    with pytest.raises(RuntimeError, match="torchscan: no open measurement 123456789"):
        hooks().change_scope_label(123456789, 0, "phase:x", True)
