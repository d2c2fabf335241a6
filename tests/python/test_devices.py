"""The device table (torchscan_dispatch.devices): exact names after
normalisation, per-precision peaks, and a reason whenever there is no peak."""

from __future__ import annotations

import pytest
import torch

from torchscan_dispatch import devices, mfu


@pytest.fixture
def highest_float32_precision():
    saved = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")
    yield
    torch.set_float32_matmul_precision(saved)


@pytest.mark.parametrize(
    ("name", "dtype", "expected"),
    [
        ("NVIDIA H100 80GB HBM3", torch.bfloat16, 989.5e12),
        ("NVIDIA H100 PCIe", torch.bfloat16, 756.5e12),
        ("NVIDIA H100 NVL", torch.bfloat16, 835.5e12),
        ("NVIDIA H200", torch.float8_e4m3fn, 1979e12),
        ("NVIDIA H200 NVL", torch.float8_e5m2, 1670.5e12),
        ("NVIDIA B200", torch.bfloat16, 2250e12),
        ("NVIDIA A100-SXM4-80GB", torch.float16, 312e12),
        ("NVIDIA A100-PCIE-40GB", torch.float64, 19.5e12),
        ("AMD Instinct MI300X", torch.bfloat16, 1307.4e12),
        ("NVIDIA L4", torch.bfloat16, 121e12),
        ("NVIDIA L40S", torch.bfloat16, 362.05e12),
        ("H100 SXM", torch.bfloat16, 989.5e12),  # the canonical name
    ],
)
def test_reported_and_canonical_names_find_their_row(name, dtype, expected):
    assert devices.peak_flops_per_second(name, dtype) == expected


@pytest.mark.parametrize(
    "name",
    [
        "NVIDIA L40",  # a prefix of L40S, and L4 is a prefix of it
        "NVIDIA H100",  # which H100?
        "H100",
        "NVIDIA H100 80GB HBM3 (MIG 1g.10gb)",
        "NVIDIA GeForce RTX 4090",
        "Intel(R) Xeon(R) Platinum 8480+",
    ],
)
def test_names_that_only_resemble_a_row_have_no_peak(name):
    assert devices.peak_flops_per_second(name, torch.bfloat16) is None
    assert devices.peak_unknown_reason(name, torch.bfloat16) == (
        f"{name!r} is not in the device table (exact names only: torchscan_dispatch.devices.DEVICES)"
    )


def test_normalisation_ignores_case_and_runs_of_whitespace_only():
    assert devices.normalize_device_name("  NVIDIA\tH100   80GB hbm3 ") == "nvidia h100 80gb hbm3"
    assert devices.device_spec("nvidia  h100 80gb HBM3").name == "H100 SXM"
    assert devices.device_spec("NVIDIA-H100-80GB-HBM3") is None


def test_float32_follows_the_matmul_precision_setting(highest_float32_precision):
    assert devices.precision_of(torch.float32) == "fp32"
    assert devices.peak_flops_per_second("NVIDIA L4", torch.float32) == 30.3e12
    torch.set_float32_matmul_precision("high")
    assert devices.precision_of(torch.float32) == "tf32"
    assert devices.peak_flops_per_second("NVIDIA L4", torch.float32) == 60e12


def test_a_precision_the_row_lacks_has_no_peak_and_says_so():
    assert devices.peak_flops_per_second("NVIDIA A100-SXM4-80GB", torch.float8_e4m3fn) is None
    assert devices.peak_unknown_reason("NVIDIA A100-SXM4-80GB", torch.float8_e4m3fn) == (
        "the device table gives A100 SXM 80GB no peak for torch.float8_e4m3fn (fp8)"
    )
    assert devices.peak_unknown_reason("NVIDIA A100-SXM4-80GB", torch.float16) is None


def test_every_row_is_sourced_and_uses_known_precisions():
    names = set()
    for spec in devices.DEVICES:
        assert spec.source and spec.memory_bandwidth > 0
        assert set(spec.peak_flops) <= set(devices.PRECISIONS) and spec.peak_flops
        assert all(value > 0 for value in spec.peak_flops.values())
        # 2:4 sparsity doubles a datasheet's figure; dense fp16 never exceeds dense fp8.
        if "fp8" in spec.peak_flops and "fp16" in spec.peak_flops:
            assert spec.peak_flops["fp8"] == pytest.approx(2 * spec.peak_flops["fp16"], rel=0.02)
        for name in spec.names():
            key = devices.normalize_device_name(name)
            assert key not in names
            names.add(key)


def test_mfu_module_keeps_its_lookup():
    assert mfu.peak_flops_per_second("NVIDIA L40S", torch.bfloat16) == 362.05e12


def test_step_meter_with_a_device_name_it_cannot_find_has_no_mfu_and_says_why():
    meter = mfu.StepMeter(device="cpu", dtype=torch.bfloat16)
    with meter.step() as step:
        torch.ones(2, 2) @ torch.ones(2, 2)
    assert step.flops == 16
    assert step.mfu is None
    assert step.mfu_unavailable == "the device table has no peak for cpu; pass peak_flops_per_second"
