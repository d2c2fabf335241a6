"""The C++ roofline (report/roofline.h, through the extension module) is
Python's torchscan_dispatch.roofline, field for field, on real reports:
measured here with measure_flops, each on several device table rows and a
device written in this file."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

import torchscan_dispatch
from torchscan_dispatch._library import hooks
from torchscan_dispatch.devices import DeviceSpec
from torchscan_dispatch.roofline import roofline

# Made up: a bf16 peak but no fp32 one, so float32 work is unavailable.
BF16_ONLY = DeviceSpec("bf16 only", (), {"bf16": 4e12}, 1e11, None, "this test")
DEVICE_NAMES = ("H100 SXM", "nvidia l4", "B200", "MI300X")


def same(cpp, python, where="roofline"):
    """Equal, floats to 1e-12 relative (an int and an equal float too)."""
    if isinstance(python, float) or isinstance(cpp, float):
        assert isinstance(cpp, (int, float)) and isinstance(python, (int, float)), where
        assert math.isclose(cpp, python, rel_tol=1e-12, abs_tol=0.0), (where, cpp, python)
    elif isinstance(python, dict):
        assert isinstance(cpp, dict) and set(cpp) == set(python), (where, sorted(cpp), sorted(python))
        for key in python:
            same(cpp[key], python[key], f"{where}.{key}")
    elif isinstance(python, (list, tuple)):
        assert isinstance(cpp, list) and len(cpp) == len(python), (where, cpp, python)
        for index, (a, b) in enumerate(zip(cpp, python)):
            same(a, b, f"{where}[{index}]")
    else:
        assert cpp == python, (where, cpp, python)


def cpp_roofline(report, device):
    if isinstance(device, DeviceSpec):
        device = {"name": device.name, "peak_flops": dict(device.peak_flops),
                  "memory_bandwidth": device.memory_bandwidth, "source": device.source}
    return hooks().roofline(report, device)


def check_everywhere(report):
    for device in (*DEVICE_NAMES, BF16_ONLY):
        same(cpp_roofline(report, device), roofline(report, device).to_json(), f"roofline on {device}")


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 16)), torch.randn(8, 32)


def test_an_fp32_training_step():
    model, x = mlp()
    report = torchscan_dispatch.measure_flops(lambda: model(x).sum().backward())
    assert report["total"]["status"] == "partial"  # aten.relu has no formula: partial rows too
    check_everywhere(report)


def test_a_bf16_autocast_step():
    model, x = mlp()

    def step():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = model(x).float().sum()
        loss.backward()

    report = torchscan_dispatch.measure_flops(step)
    assert set(report["by_precision"]) == {"bf16"}  # float32 on BF16_ONLY: unavailable
    check_everywhere(report)


def test_mixed_precisions_in_one_report():
    torch.manual_seed(0)
    a, b = torch.randn(16, 32), torch.randn(32, 8)
    report = torchscan_dispatch.measure_flops(lambda: (a @ b, a.bfloat16() @ b.bfloat16(), a.double() @ b.double()))
    assert set(report["by_precision"]) == {"bf16", "fp32", "fp64"}
    check_everywhere(report)


def test_a_report_with_partial_bytes():
    dense = torch.randn(16, 8)
    sparse = torch.eye(16).to_sparse()
    report = torchscan_dispatch.measure_flops(lambda: (torch.sparse.mm(sparse, dense) @ dense.T).relu())
    assert report["bytes"]["status"] == "partial", report["bytes"]
    check_everywhere(report)


def test_a_report_without_bytes_or_precisions():
    model, x = mlp()
    report = torchscan_dispatch.measure_flops(lambda: model(x))
    for key in ("bytes", "by_operator_precision", "by_precision"):  # as written before they existed
        report = {k: v for k, v in report.items() if k != key}
        check_everywhere(report)


def test_a_job_report_and_a_crawl_are_refused():
    job = {"kind": "job_report", "total": {}, "by_operator": {}}
    with pytest.raises(ValueError, match="a job report sums ranks that run side by side"):
        roofline(job, "H100 SXM")
    with pytest.raises(ValueError, match="a job report sums ranks that run side by side"):
        cpp_roofline(job, "H100 SXM")
    with pytest.raises(ValueError, match="a crawl report has no bytes moved"):
        cpp_roofline({"layers": []}, "H100 SXM")


def test_an_unknown_name_lists_the_table():
    with pytest.raises(ValueError) as raised:
        cpp_roofline({"total": {}, "by_operator": {}}, "H100")
    assert str(raised.value).startswith(
        "unknown device model 'H100': the device table (exact names only) has H100 SXM, H100 PCIe, H100 NVL,"
    )
