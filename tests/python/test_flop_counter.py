"""FlopCounter (the context-manager form) and StepMeter's peak table, in one
process (the distributed behaviour is test_distributed.py's)."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

import torchscan_dispatch
from torchscan_dispatch import mfu


def small_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)), torch.randn(8, 16)


def test_counter_equals_flop_counter_mode_and_measure_flops():
    model, x = small_model()
    with torchscan_dispatch.FlopCounter() as counter:
        model(x).sum().backward()
    with FlopCounterMode(display=False) as mode:
        model(x).sum().backward()
    measured = torchscan_dispatch.measure_flops(lambda: model(x).sum().backward())
    assert counter.get_total_flops() == mode.get_total_flops() == 22528
    for field in ("total", "by_operator", "by_module"):
        assert counter.report()[field] == measured[field]
    assert counter.report()["by_module"]["Sequential.0"] == mode.get_flop_counts()["Sequential.0"][
        torch.ops.aten.addmm] + mode.get_flop_counts()["Sequential.0"][torch.ops.aten.mm]


def test_exception_propagates_and_leaves_no_report():
    counter = torchscan_dispatch.FlopCounter()
    error = ValueError("from the workload")
    with pytest.raises(ValueError) as raised:
        with counter:
            torch.randn(4, 4) @ torch.randn(4, 4)
            raise error
    assert raised.value is error
    with pytest.raises(RuntimeError, match="has not finished"):
        counter.report()
    # Counting is off again: nothing leaks into a later counter.
    with torchscan_dispatch.FlopCounter() as later:
        pass
    assert later.get_total_flops() == 0


def test_counters_nest():
    a, b = torch.randn(8, 16), torch.randn(16, 4)
    with torchscan_dispatch.FlopCounter(track_modules=False) as outer:
        a @ b
        with torchscan_dispatch.FlopCounter(track_modules=False) as inner:
            a @ b
    assert inner.get_total_flops() == 1024
    assert outer.get_total_flops() == 2048


def test_counter_reports_no_distributed_context_outside_a_group():
    with torchscan_dispatch.FlopCounter() as counter:
        torch.randn(2, 2) @ torch.randn(2, 2)
    assert "distributed" not in counter.report()
    assert "communication" not in counter.report()


def test_step_meter_on_cpu_needs_a_peak():
    model, x = small_model()
    meter = torchscan_dispatch.StepMeter(device="cpu")
    with meter.step() as step:
        model(x).sum().backward()
    assert step.flops == 22528 and step.mfu is None and step.achieved_flops_per_second > 0
    assert step.mfu_unavailable == "the device table has no peak for cpu; pass peak_flops_per_second"
    with pytest.raises(ValueError, match="must be positive"):
        torchscan_dispatch.StepMeter(peak_flops_per_second=0)


def test_phase_outside_its_step_is_an_error():
    meter = torchscan_dispatch.StepMeter(peak_flops_per_second=1e12)
    with meter.step() as step:
        pass
    with pytest.raises(RuntimeError, match="only valid inside"):
        with step.phase("forward"):
            pass


def test_step_report_is_built_when_first_read_with_the_measurement_s_content():
    model, x = small_model()
    meter = torchscan_dispatch.StepMeter(peak_flops_per_second=1e12)
    with meter.step() as step:
        with step.phase("forward"):
            loss = model(x).sum()
        with step.phase("backward"):
            loss.backward()
    # Nothing built yet: the counter's report is held as it came, phases in.
    assert not step._report_built
    assert {"phase:forward", "phase:backward"} <= set(step._report["by_module"])
    # By hand: Linear(16, 32) and Linear(32, 4) on 8 rows; backward computes
    # both weight gradients and the first layer's input gradient only.
    forward = 2 * 8 * 16 * 32 + 2 * 8 * 32 * 4
    backward = 2 * 8 * 16 * 32 + 2 * (2 * 8 * 32 * 4)
    assert step.flops_by_phase == {"forward": forward, "backward": backward}
    report = step.report
    assert step._report_built and step.report is report
    model.zero_grad(set_to_none=True)  # the same gradient accumulation as in the step
    expected = torchscan_dispatch.measure_flops(lambda: model(x).sum().backward(), track_modules=False)
    # The same report a plain measurement of the step gives: the phases are
    # taken out of by_module (which track_modules=False leaves empty).
    assert report == expected
    assert report["total"]["known_value"] == step.flops == forward + backward


def attention_step(model, x):
    """A step with a causal attention call (mask-aware count), a checkpointed
    block (recomputed FLOPs) and a linear layer (bytes, by_operator)."""

    def block(rows):
        h = model(rows).view(2, 2, 4, 8)
        return torch.nn.functional.scaled_dot_product_attention(h, h, h, is_causal=True)

    torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False).sum().backward()


# The members of a FlopReport that Measurement.step_report leaves empty,
# by the member holding them (None: the report itself).
_NOT_SUMMARIZED = {
    None: {"by_operator", "by_operator_precision", "ignored_operators", "diagnostics"},
    "mask_aware": {"diagnostics"},
    "bytes": {"by_operator", "diagnostics"},
}


def test_step_report_summary_members_equal_the_full_report_s_and_the_held_report_equals_it():
    from torchscan_dispatch._native import Measurement

    torch.manual_seed(0)
    model, x = nn.Linear(16, 32), torch.randn(4, 16)
    measurement = Measurement()
    try:
        attention_step(model, x)
        measurement.stop()
        full = measurement.flop_report()
        summary, held = measurement.step_report()
    finally:
        measurement.finish()
    # Held beyond the measurement's end, and the same report flop_report gave.
    assert measurement.held_report(held) == full
    assert full["diagnostics"] and full["by_operator"] and "mask_aware" in full and "bytes" in full
    # (by_operator_precision is not written when empty.)
    assert [key for key in full if key != "by_operator_precision"] == list(summary)
    for key, value in full.items():
        if key in _NOT_SUMMARIZED[None]:
            assert summary.get(key, {}) in ({}, []), key
        elif key in _NOT_SUMMARIZED:
            assert list(summary[key]) == list(value)
            for member, member_value in value.items():
                if member in _NOT_SUMMARIZED[key]:
                    assert summary[key][member] in ({}, []), (key, member)
                else:
                    assert summary[key][member] == member_value, (key, member)
        else:
            assert summary[key] == value, key


def test_step_fields_from_the_summary_equal_the_report_built_later_field_for_field():
    torch.manual_seed(0)
    model, x = nn.Linear(16, 32), torch.randn(4, 16)
    meter = torchscan_dispatch.StepMeter(peak_flops_per_second=1e12)
    with meter.step() as step:
        with step.phase("forward"):
            attention_step(model, x)
    assert not step._report_built
    fields = dict(vars(step))
    report = step.report  # built now, from the held report
    assert step._report_built and step.report is report
    # Reading the report changes no field the step filled in from its summary.
    for name, value in fields.items():
        if not name.startswith("_"):
            assert getattr(step, name) == value, name
    # And each of them is what the full report says.
    assert step.flops == mfu._known(report["total"]) > 0
    assert step.recomputed_flops == report["recomputed"]["flops"] > 0
    assert step.flops_by_phase == {"forward": step.flops, "recompute": step.recomputed_flops}
    assert step.mask_aware_flops < step.flops
    assert step.mask_aware_flops == mfu._known(report["mask_aware"])
    assert (step.bytes_read, step.bytes_written) == (report["bytes"]["read"], report["bytes"]["written"])
    assert step.flops_by_precision == report["by_precision"]
    assert report["by_operator"] and report["diagnostics"] is not None
    assert not any(label.startswith("phase:") for label in report["by_module"])
    # The report equals the one a plain measurement of the same work gives.
    model.zero_grad(set_to_none=True)
    torch.manual_seed(0)
    expected = torchscan_dispatch.measure_flops(lambda: attention_step(model, x), track_modules=False)
    # (StepStats.report takes every "phase:" label out of the bytes'
    # by_module, the recomputation's too, as it did before it was built late.)
    expected["bytes"]["by_module"] = {
        label: value for label, value in expected["bytes"]["by_module"].items() if not label.startswith("phase:")
    }
    assert report == expected


def test_step_report_of_a_step_that_raised_is_empty_and_the_step_not_recorded():
    meter = torchscan_dispatch.StepMeter(peak_flops_per_second=1e12)
    with pytest.raises(ValueError, match="from the step"):
        with meter.step() as step:
            torch.ones(2, 2) @ torch.ones(2, 2)
            raise ValueError("from the step")
    assert step.report == {} and meter.steps == []
