"""Formulas users already have (issue 25): custom_mapping inside compiled
code, and torch.utils.flop_counter.register_flop_formula's registry.

Every count is checked against FlopCounterMode (with the same custom_mapping,
or the same registry) on the eager workload, or against a hand computation
written here. A custom operator (torchscan_test_formulas::scaled_sum) stands
for a library's operator that only the registry knows how to count.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable

import pytest
import torch
import torch._dynamo
from torch import nn
from torch.utils import flop_counter
from torch.utils.flop_counter import FlopCounterMode

import torchscan_dispatch


def sin_formula(x_shape, out_shape=None):
    """custom_mapping's contract: shapes in, FLOPs out (3 per element)."""
    return 3 * math.prod(x_shape)


SIN_MAPPING = {torch.ops.aten.sin: sin_formula}


def mm(m: int, k: int, n: int) -> int:
    return 2 * m * k * n


def fcm_total(workload: Callable[[], object], **options) -> int:
    with FlopCounterMode(display=False, **options) as mode:
        workload()
    return mode.get_total_flops()


def fcm_by_module(workload: Callable[[], object], **options) -> dict[str, int]:
    with FlopCounterMode(display=False, **options) as mode:
        workload()
    return {label: sum(ops.values()) for label, ops in mode.get_flop_counts().items() if label != "Global"}


def known(report: dict) -> int:
    total = report["total"]
    return total["value"] if total["status"] == "complete" else total["known_value"]


def measure_without_recompiling(workload: Callable[[], object], **options) -> dict:
    with torch._dynamo.config.patch(error_on_recompile=True):
        return torchscan_dispatch.measure_flops(workload, **options)


@pytest.fixture
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


class Sine(nn.Module):
    def forward(self, x):
        return torch.sin(x)


class Net(nn.Module):
    """fc, then a child module whose only operator is aten.sin."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 6)
        self.act = Sine()

    def forward(self, x):
        return self.act(self.fc(x))


def _net() -> Net:
    torch.manual_seed(0)
    return Net()


# --- custom_mapping inside compiled code


def test_custom_mapping_counts_inside_a_compiled_function(fresh_dynamo):
    x, w = torch.randn(4, 8), torch.randn(8, 5)
    f = lambda x: torch.sin(x) @ w  # noqa: E731
    compiled = torch.compile(f)
    compiled(x)
    report = measure_without_recompiling(lambda: compiled(x), custom_mapping=SIN_MAPPING)
    truth = 3 * 4 * 8 + mm(4, 8, 5)
    assert fcm_total(lambda: f(x), custom_mapping=SIN_MAPPING) == truth
    assert report["by_operator"] == {"aten.mm": mm(4, 8, 5), "aten.sin": 3 * 4 * 8}
    assert report["total"] == torchscan_dispatch.measure_flops(lambda: f(x), custom_mapping=SIN_MAPPING)["total"]
    assert report["total"]["status"] == "complete" and report["total"]["value"] == truth


def test_custom_mapping_counts_a_compiled_modules_forward_and_backward(fresh_dynamo):
    model, x = _net(), torch.randn(5, 8, requires_grad=True)
    compiled = torch.compile(model)
    step = lambda m: m(x).sum().backward()  # noqa: E731
    step(compiled)
    report = measure_without_recompiling(lambda: step(compiled), custom_mapping=SIN_MAPPING)
    eager = torchscan_dispatch.measure_flops(lambda: step(model), custom_mapping=SIN_MAPPING)
    truth = fcm_total(lambda: step(model), custom_mapping=SIN_MAPPING)
    # Forward addmm, backward mm for the weight's and the input's gradients,
    # and the custom formula's sin; the backward's cos and mul have no formula.
    assert truth == 3 * mm(5, 8, 6) + 3 * 5 * 6
    assert known(report) == known(eager) == truth
    assert report["by_operator"]["aten.sin"] == 3 * 5 * 6


def test_custom_mapping_counts_each_size_of_a_dynamic_compiled_module(fresh_dynamo):
    model = _net()
    compiled = torch.compile(model, dynamic=True)
    compiled(torch.randn(4, 8))
    compiled(torch.randn(7, 8))
    for rows in (5, 11):
        x = torch.randn(rows, 8)
        report = measure_without_recompiling(lambda: compiled(x), custom_mapping=SIN_MAPPING)
        truth = fcm_total(lambda: model(x), custom_mapping=SIN_MAPPING)
        assert truth == mm(rows, 8, 6) + 3 * rows * 6
        assert report["total"] == {**report["total"], "status": "complete", "value": truth}
        assert report["by_operator"]["aten.sin"] == 3 * rows * 6


def test_a_custom_mapped_operator_is_attributed_to_its_module_inside_a_compiled_module(fresh_dynamo):
    model, x = _net(), torch.randn(5, 8)
    compiled = torch.compile(model)
    compiled(x)
    report = measure_without_recompiling(lambda: compiled(x), custom_mapping=SIN_MAPPING)
    # FlopCounterMode makes Dynamo run the compiled module eagerly: its
    # by_module on the compiled module is the truth, labels included.
    truth = fcm_by_module(lambda: compiled(x), custom_mapping=SIN_MAPPING)
    root = "OptimizedModule._orig_mod"
    assert truth == {
        "OptimizedModule": mm(5, 8, 6) + 3 * 5 * 6,
        root: mm(5, 8, 6) + 3 * 5 * 6,
        f"{root}.fc": mm(5, 8, 6),
        f"{root}.act": 3 * 5 * 6,
    }
    assert report["by_module"] == truth


def test_a_raw_custom_formula_gets_meta_tensors_of_the_compiled_graphs_dtype(fresh_dynamo):
    x = torch.randn(4, 3, dtype=torch.float64)
    received = []

    def raw(x_arg, out_val=None, **kwargs):
        received.append((x_arg.device.type, tuple(x_arg.shape), x_arg.dtype, out_val.dtype, tuple(out_val.shape)))
        return 5

    raw._get_raw = True
    compiled = torch.compile(lambda x: torch.sin(x) * 2)
    compiled(x)
    report = measure_without_recompiling(lambda: compiled(x), custom_mapping={torch.ops.aten.sin: raw})
    assert report["by_operator"] == {"aten.sin": 5}
    assert received == [("meta", (4, 3), torch.float64, torch.float64, (4, 3))]


def test_a_raising_custom_formula_propagates_after_the_compiled_workload_ran(fresh_dynamo):
    # As in eager code (and FlopCounterMode): the caller's own formula's
    # exception reaches the caller; the compiled code itself never raises.
    error = ArithmeticError("formula failed")
    ran = []

    def formula(*args, **kwargs):
        raise error

    compiled = torch.compile(lambda x: torch.sin(x) + 1)
    x = torch.randn(3)
    compiled(x)
    with pytest.raises(ArithmeticError) as raised:
        torchscan_dispatch.measure_flops(lambda: ran.append(compiled(x)), custom_mapping={torch.ops.aten.sin: formula})
    assert raised.value is error
    assert len(ran) == 1


def test_the_report_names_the_custom_mapped_operators():
    report = torchscan_dispatch.measure_flops(
        lambda: torch.sin(torch.randn(2, 3)) @ torch.randn(3, 2), custom_mapping=SIN_MAPPING
    )
    assert report["formulas"] == {"aten.sin": "custom_mapping"}


def test_a_report_without_custom_or_registered_formulas_has_no_formulas_member():
    report = torchscan_dispatch.measure_flops(lambda: torch.randn(2, 3) @ torch.randn(3, 2))
    assert "formulas" not in report


def _all_dtypes() -> list[torch.dtype]:
    return sorted({value for value in vars(torch).values() if isinstance(value, torch.dtype)}, key=str)


def test_the_reader_knows_every_dtype_the_pass_can_write():
    # The pass writes str(dtype) without "torch."; the C++ reader maps those
    # names to c10's scalar types. A name it did not know would make the
    # whole graph unseen work.
    from torchscan_dispatch import _graph_spec

    torchscan_dispatch.load_library()
    for dtype in _all_dtypes():
        tensor = {"tensor": [2], "dtype": _graph_spec.dtype_name(dtype)}
        spec = json.dumps({
            "version": _graph_spec.SPEC_VERSION,
            "calls": [{"op": "aten::sin", "overload": "default", "arguments": [tensor], "results": [tensor]}],
        })
        report = torchscan_dispatch.measure_flops(
            lambda spec=spec: torch.ops.torchscan.compiled_graph_flops(hash(spec), spec, [], None)
        )
        assert [d["code"] for d in report["diagnostics"]] == ["uncounted_operator"], (dtype, report)


# --- register_flop_formula


@torch.library.custom_op("torchscan_test_formulas::scaled_sum", mutates_args=())
def scaled_sum(x: torch.Tensor, scale: float) -> torch.Tensor:
    return (x * scale).sum(0)


@scaled_sum.register_fake
def _(x, scale):
    return x.new_empty(x.shape[1:])


SCALED_SUM = torch.ops.torchscan_test_formulas.scaled_sum


def scaled_sum_flops(x_shape, scale, out_shape=None):
    """One multiply and one add per element of x."""
    return 2 * math.prod(x_shape)


@pytest.fixture
def registered(request):
    """Registers formulas with register_flop_formula for one test, and
    removes them from torch's registry afterwards."""
    packets = []

    def register(packet, formula, get_raw=False):
        flop_counter.register_flop_formula(packet, get_raw=get_raw)(formula)
        packets.append(packet)

    yield register
    for packet in packets:
        flop_counter.flop_registry.pop(packet, None)


def test_a_registered_formula_counts_a_custom_operator_eagerly(registered):
    registered(SCALED_SUM, scaled_sum_flops)
    x = torch.randn(6, 4)
    report = torchscan_dispatch.measure_flops(lambda: scaled_sum(x, 0.5))
    truth = fcm_total(lambda: scaled_sum(x, 0.5))
    assert truth == 2 * 6 * 4
    assert report["by_operator"] == {"torchscan_test_formulas.scaled_sum": truth}
    assert report["total"] == {**report["total"], "status": "complete", "value": truth}


def test_a_registered_formula_counts_a_custom_operator_compiled(registered, fresh_dynamo):
    registered(SCALED_SUM, scaled_sum_flops)
    w = torch.randn(4, 3)
    f = lambda x: scaled_sum(x, 2.0) @ w  # noqa: E731
    compiled = torch.compile(f)
    compiled(torch.randn(6, 4))
    x = torch.randn(6, 4)
    report = measure_without_recompiling(lambda: compiled(x))
    truth = fcm_total(lambda: f(x))
    assert truth == 2 * 6 * 4 + mm(1, 4, 3)
    assert report["by_operator"]["torchscan_test_formulas.scaled_sum"] == 2 * 6 * 4
    assert report["total"] == {**report["total"], "status": "complete", "value": truth}


def test_the_report_names_operators_counted_by_a_registered_formula(registered):
    registered(SCALED_SUM, scaled_sum_flops)
    report = torchscan_dispatch.measure_flops(
        lambda: torch.sin(scaled_sum(torch.randn(6, 4), 0.5)), custom_mapping=SIN_MAPPING
    )
    assert report["formulas"] == {
        "aten.sin": "custom_mapping",
        "torchscan_test_formulas.scaled_sum": "register_flop_formula",
    }


def test_a_registered_raw_formula_gets_meta_tensors(registered):
    received = []

    def raw(x, scale, out_val=None):
        received.append((x.device.type, tuple(x.shape), x.dtype, scale, tuple(out_val.shape)))
        return 11

    registered(SCALED_SUM, raw, get_raw=True)
    report = torchscan_dispatch.measure_flops(lambda: scaled_sum(torch.randn(6, 4, dtype=torch.float64), 0.5))
    assert report["by_operator"] == {"torchscan_test_formulas.scaled_sum": 11}
    assert received == [("meta", (6, 4), torch.float64, 0.5, (4,))]


def test_custom_mapping_wins_over_a_registered_formula(registered):
    registered(SCALED_SUM, scaled_sum_flops)
    mapping = {SCALED_SUM: lambda x_shape, scale, out_shape=None: 1}
    x = torch.randn(6, 4)
    report = torchscan_dispatch.measure_flops(lambda: scaled_sum(x, 0.5), custom_mapping=mapping)
    assert fcm_total(lambda: scaled_sum(x, 0.5), custom_mapping=mapping) == 1
    assert report["by_operator"] == {"torchscan_test_formulas.scaled_sum": 1}
    assert report["formulas"] == {"torchscan_test_formulas.scaled_sum": "custom_mapping"}


def test_the_built_in_formula_wins_over_a_registered_one(registered):
    # aten.mv has a built-in formula (2*m*n) and no entry in torch's registry.
    registered(torch.ops.aten.mv, lambda *args, **kwargs: 1)
    a, v = torch.randn(5, 7), torch.randn(7)
    report = torchscan_dispatch.measure_flops(lambda: torch.mv(a, v))
    assert report["by_operator"] == {"aten.mv": 2 * 5 * 7}
    assert "formulas" not in report


def test_a_registered_formula_that_raises_is_a_named_failure_not_an_exception(registered):
    def broken(x_shape, scale, out_shape=None):
        raise ValueError("no count for you")

    registered(SCALED_SUM, broken)
    x, w = torch.randn(6, 4), torch.randn(4, 4)
    report = torchscan_dispatch.measure_flops(lambda: scaled_sum(x @ w, 0.5))
    assert report["total"]["status"] == "partial"
    assert report["total"]["known_value"] == mm(6, 4, 4)
    [diagnostic] = report["diagnostics"]
    assert diagnostic["code"] == "operator_formula_error"
    assert diagnostic["operator"] == "torchscan_test_formulas.scaled_sum"
    assert "ValueError: no count for you" in diagnostic["message"]


def test_torchs_own_registry_changes_nothing():
    # Every operator of torch's registry has a built-in formula: none is
    # counted by the registry's.
    x, w = torch.randn(2, 3, 8, 8), torch.randn(4, 3, 3, 3)
    report = torchscan_dispatch.measure_flops(lambda: torch.nn.functional.conv2d(x, w))
    assert "formulas" not in report
    assert report["by_operator"] == {"aten.convolution": fcm_total(lambda: torch.nn.functional.conv2d(x, w))}
