"""Precision-aware MFU: every counted FLOP attributed to the precision it ran
in (the report's ``by_precision``), and StepMeter's MFU as the time those
FLOPs take at each precision's peak over the measured time (docs/mfu.md).

Expected splits are computed here, independently of the library: each
operator run by itself under FlopCounterMode (or by hand where FlopCounterMode
has no formula) and grouped by the dtype the test chose."""

import collections

import pytest
import torch
from torch.utils.checkpoint import checkpoint, set_checkpoint_early_stop
from torch.utils.flop_counter import FlopCounterMode

import torchscan_dispatch
from torchscan_dispatch import mfu


def fcm(workload) -> int:
    with FlopCounterMode(display=False) as mode:
        workload()
    return mode.get_total_flops()


def measured(workload) -> dict:
    return torchscan_dispatch.measure_flops(workload, track_modules=False)


def randn(*shape, dtype=torch.float32):
    return torch.randn(*shape).to(dtype)


def test_mixed_float_workload_splits_by_precision_as_flop_counter_mode_per_dtype():
    torch.manual_seed(0)
    f32, b16, f64, f16 = torch.float32, torch.bfloat16, torch.float64, torch.half
    x32, w32 = randn(8, 16), randn(16, 4)
    x16, w16 = randn(8, 16, dtype=b16), randn(16, 32, dtype=b16)
    p16, q16 = randn(2, 8, 16, dtype=b16), randn(2, 16, 8, dtype=b16)
    x64, w64 = randn(4, 8, dtype=f64), randn(8, 4, dtype=f64)
    image, kernel = randn(1, 3, 8, 8, dtype=f32), randn(4, 3, 3, 3, dtype=f32)
    bias, h, g = randn(4, dtype=f16), randn(4, 8, dtype=f16), randn(8, 4, dtype=f16)
    cases = [  # (precision the test knows, workload)
        ("fp32", lambda: torch.mm(x32, w32)),
        ("bf16", lambda: torch.mm(x16, w16)),
        ("bf16", lambda: torch.bmm(p16, q16)),
        ("fp64", lambda: torch.mm(x64, w64)),
        ("fp32", lambda: torch.nn.functional.conv2d(image, kernel)),
        ("fp16", lambda: torch.addmm(bias, h, g)),
    ]
    expected = collections.Counter()
    for precision, workload in cases:
        expected[precision] += fcm(workload)
    report = measured(lambda: [workload() for _, workload in cases])
    assert report["total"]["status"] == "complete"
    assert report["by_precision"] == dict(expected)
    assert sum(report["by_precision"].values()) == report["total"]["value"]


def test_int8_fp8_and_weight_only_products_by_hand():
    torch.manual_seed(0)
    m, k, n = 32, 64, 16
    x8 = torch.randint(-8, 8, (m, k), dtype=torch.int8)
    w8 = torch.randint(-8, 8, (k, n), dtype=torch.int8)
    a = randn(m, k).to(torch.float8_e4m3fn)
    b = randn(n, k).to(torch.float8_e4m3fn).t()
    scale = torch.tensor(1.0)
    activations = randn(m, k, dtype=torch.bfloat16)
    packed = torch.randint(-8, 8, (n, k), dtype=torch.int8)
    scales = randn(n, dtype=torch.bfloat16)
    x32, w32 = randn(m, k), randn(k, n)
    fp32_mm = lambda: torch.mm(x32, w32)  # noqa: E731

    def workload():
        torch._int_mm(x8, w8)  # int8 x int8
        torch._scaled_mm(a, b, scale, scale, out_dtype=torch.bfloat16)  # fp8, float32 scales
        torch._weight_int8pack_mm(activations, packed, scales)  # int8 weights widened to bf16
        fp32_mm()

    report = measured(workload)
    product = 2 * m * k * n  # FlopCounterMode counts none of the first three
    assert report["by_operator"]["aten._int_mm"] == product
    assert report["by_precision"] == {"int8": product, "fp8": product, "bf16": product, "fp32": fcm(fp32_mm)}


def test_autocast_products_are_attributed_to_the_dtype_they_ran_in():
    torch.manual_seed(0)
    model = torch.nn.Linear(32, 16)
    x = torch.randn(8, 32)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        bf16 = fcm(lambda: model(x))
        report = measured(lambda: model(x))
    fp32 = fcm(lambda: model(x))
    assert bf16 == fp32 == 2 * 8 * 32 * 16
    assert report["by_precision"] == {"bf16": bf16}
    assert measured(lambda: model(x))["by_precision"] == {"fp32": fp32}


def test_backward_is_attributed_by_its_own_dtypes():
    torch.manual_seed(0)
    w32 = torch.randn(16, 16, requires_grad=True)
    w64 = torch.randn(16, 16, dtype=torch.float64, requires_grad=True)
    x32, x64 = torch.randn(4, 16), torch.randn(4, 16, dtype=torch.float64)

    def step():
        (x32 @ w32).sum().backward()
        (x64 @ w64).sum().backward()

    report = measured(step)
    assert report["by_precision"] == {
        "fp32": fcm(lambda: (x32 @ w32).sum().backward()),
        "fp64": fcm(lambda: (x64 @ w64).sum().backward()),
    }


def test_custom_formulas_and_nested_counters_keep_the_precision():
    torch.manual_seed(0)
    x16, w16 = randn(4, 8, dtype=torch.bfloat16), randn(8, 2, dtype=torch.bfloat16)
    x64, w64 = randn(4, 8, dtype=torch.float64), randn(8, 2, dtype=torch.float64)
    # custom_mapping formulas are evaluated after the workload, on meta
    # copies: the precision is the original call's.
    report = torchscan_dispatch.measure_flops(
        lambda: (torch.mm(x16, w16), torch.mm(x64, w64)),
        custom_mapping={torch.ops.aten.mm: lambda a, b, out_shape=None, **_: 1000},
    )
    assert report["by_precision"] == {"bf16": 1000, "fp64": 1000}
    # An inner counter's work belongs to the enclosing one too.
    with torchscan_dispatch.FlopCounter() as outer:
        torch.mm(x64, w64)
        with torchscan_dispatch.FlopCounter() as inner:
            torch.mm(x16, w16)
    product = 2 * 4 * 8 * 2
    assert inner.report()["by_precision"] == {"bf16": product}
    assert outer.report()["by_precision"] == {"fp64": product, "bf16": product}


@pytest.mark.skipif(not torch.cuda.is_available(), reason="TF32 applies to CUDA matrix products only; this machine has no CUDA device")
def test_float32_products_on_cuda_follow_the_tf32_setting():
    a, b = torch.randn(64, 64, device="cuda"), torch.randn(64, 64, device="cuda")
    flops = 2 * 64 * 64 * 64
    saved = torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = True
        assert measured(lambda: a @ b)["by_precision"] == {"tf32": flops}
        torch.backends.cuda.matmul.allow_tf32 = False
        assert measured(lambda: a @ b)["by_precision"] == {"fp32": flops}
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved
    # mv is no cuBLAS GEMM: float32 whatever the setting.
    assert measured(lambda: torch.mv(a, b[0]))["by_precision"] == {"fp32": 2 * 64 * 64}


def test_compiled_graph_splits_as_eager():
    torch._dynamo.reset()
    torch.manual_seed(0)
    a32, b32 = torch.randn(64, 64), torch.randn(64, 48)
    a16, b16 = a32.to(torch.bfloat16), b32.to(torch.bfloat16)

    def f(a32, b32, a16, b16):
        return (a32 @ b32).sum() + (a16 @ b16).float().sum()

    compiled = torch.compile(f)
    compiled(a32, b32, a16, b16)  # compile outside the measurement
    eager = measured(lambda: f(a32, b32, a16, b16))
    report = measured(lambda: compiled(a32, b32, a16, b16))
    assert report["by_precision"] == eager["by_precision"] == {"fp32": 2 * 64 * 64 * 48, "bf16": 2 * 64 * 64 * 48}


# -- MFU arithmetic ---------------------------------------------------------


def test_precision_utilization_is_time_at_peak_over_measured_time():
    peaks = {"bf16": 1000e12, "fp8": 2000e12}
    # 500 TFLOP in bf16 take 0.5 s at peak, 500 TFLOP in fp8 0.25 s: 0.75 s
    # of peak time in a 1.5 s step.
    value, reason = mfu.precision_utilization({"bf16": 500e12, "fp8": 500e12}, 1.5, peaks)
    assert reason is None and value == pytest.approx(0.75 / 1.5)
    # One peak for both would have said 1000e12 / 1.5 / 1000e12 = 0.667.
    value, reason = mfu.precision_utilization({"bf16": 10, "fp32": 7, "unknown": 3}, 1.0, peaks)
    assert value is None
    assert reason == "no peak for fp32 (7 FLOPs), unknown (3 FLOPs)"
    assert mfu.precision_utilization({"bf16": 0, "fp8": 4e12}, 2.0, peaks) == (pytest.approx(1e-3), None)


def two_precision_step():
    torch.manual_seed(0)
    a32, b32 = torch.randn(64, 32), torch.randn(32, 16)
    a16, b16 = a32.to(torch.bfloat16), b32.to(torch.bfloat16)
    return lambda: (a32 @ b32, a16 @ b16), 2 * 64 * 32 * 16


def test_step_meter_with_per_precision_peaks_measures_each_flop_against_its_peak():
    step, product = two_precision_step()
    peaks = {"fp32": 2e9, "bf16": 8e9}
    meter = torchscan_dispatch.StepMeter(peak_flops_per_second=peaks, device="cpu")
    with meter.step() as stats:
        step()
    assert stats.flops_by_precision == {"fp32": product, "bf16": product}
    assert stats.peak_flops_by_precision == peaks
    seconds_at_peak = product / 2e9 + product / 8e9
    assert stats.mfu == pytest.approx(seconds_at_peak / stats.seconds)
    assert stats.hfu == stats.mfu and stats.mfu_unavailable is None
    assert stats.peak_flops_per_second is None  # no single peak
    assert stats.achieved_flops_per_second == pytest.approx(2 * product / stats.seconds)


def test_step_meter_names_the_precision_without_a_peak():
    step, product = two_precision_step()
    meter = torchscan_dispatch.StepMeter(peak_flops_per_second={"bf16": 8e9}, device="cpu")
    with meter.step() as stats:
        step()
    assert stats.mfu is None and stats.hfu is None
    assert stats.mfu_unavailable == (
        f"no peak for fp32 ({product:,} FLOPs) (pass peak_flops_per_second={{precision: FLOP/s}})"
    )


def test_step_meter_scalar_peak_keeps_one_peak_for_every_precision():
    step, product = two_precision_step()
    meter = torchscan_dispatch.StepMeter(peak_flops_per_second=1e10)
    with meter.step() as stats:
        step()
    assert stats.flops_by_precision == {"fp32": product, "bf16": product}
    assert stats.peak_flops_by_precision is None and stats.peak_flops_per_second == 1e10
    assert stats.mfu == pytest.approx(2 * product / stats.seconds / 1e10)


def test_step_meter_rejects_bad_per_precision_peaks():
    with pytest.raises(ValueError, match=r"unknown precision 'bfloat16' \(one of fp64, fp32, tf32, bf16, fp16, fp8, int8\)"):
        torchscan_dispatch.StepMeter(peak_flops_per_second={"bfloat16": 1e12})
    with pytest.raises(ValueError, match=r"peak_flops_per_second\['fp8'\] must be a positive number, got 0"):
        torchscan_dispatch.StepMeter(peak_flops_per_second={"fp8": 0})


def test_recomputation_in_one_precision_gives_a_precision_aware_mfu():
    torch.manual_seed(0)
    block = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 16))
    x = torch.randn(8, 16, requires_grad=True)
    meter = torchscan_dispatch.StepMeter(peak_flops_per_second={"fp32": 1e9}, device="cpu")
    with meter.step() as stats, set_checkpoint_early_stop(False):  # recompute the whole region
        checkpoint(block, x, use_reentrant=False).sum().backward()
    forward = fcm(lambda: block(x))
    assert stats.recomputed_flops == forward
    assert stats.flops_by_precision == {"fp32": stats.flops}
    assert stats.hfu == pytest.approx(stats.flops / 1e9 / stats.seconds)
    assert stats.mfu == pytest.approx(stats.model_flops / 1e9 / stats.seconds)


def test_recomputation_in_a_mixed_precision_step_leaves_mfu_unavailable_and_says_why():
    torch.manual_seed(0)
    block = torch.nn.Linear(16, 16)
    x = torch.randn(8, 16, requires_grad=True)
    a = torch.randn(8, 8, dtype=torch.bfloat16)
    meter = torchscan_dispatch.StepMeter(peak_flops_per_second={"fp32": 1e9, "bf16": 4e9}, device="cpu")
    with meter.step() as stats, set_checkpoint_early_stop(False):
        checkpoint(block, x, use_reentrant=False).sum().backward()
        a @ a
    assert stats.recomputed_flops > 0 and set(stats.flops_by_precision) == {"fp32", "bf16"}
    assert stats.hfu == pytest.approx(
        (stats.flops_by_precision["fp32"] / 1e9 + stats.flops_by_precision["bf16"] / 4e9) / stats.seconds
    )
    assert stats.mfu is None
    assert stats.mfu_unavailable == (
        f"{stats.recomputed_flops:,} recomputed FLOPs are not split by precision and the step ran "
        "in 2 precisions (bf16, fp32): only hfu is precision-aware"
    )
