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
