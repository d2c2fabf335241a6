"""The roofline (torchscan_dispatch.roofline) and the report's split of each
operator's FLOPs by precision (by_operator_precision).

Every expectation is computed here by hand from the formulas of
docs/methodology.md ("Roofline") and a device written in this file (SPEC):
compute seconds = sum over precisions of FLOPs / peak, memory seconds =
bytes / bandwidth, the lower bound their maximum; FLOP counts of real
workloads come from FlopCounterMode or 2mkn by hand, bytes from the bytes
rule by hand."""

import json
import math

import pytest
import torch
from torch import nn

import torchscan_dispatch
from conftest import flop_counter_mode_counts
from torchscan_dispatch.devices import DeviceSpec, device_spec
from torchscan_dispatch.roofline import measure_host_peak, roofline, roofline_point

# A device made up for the tests: ridge points 10 (fp32) and 40 (bf16)
# FLOPs per byte.
FP32_PEAK, BF16_PEAK, BANDWIDTH = 1e12, 4e12, 1e11
SPEC = DeviceSpec("test device", (), {"fp32": FP32_PEAK, "bf16": BF16_PEAK}, BANDWIDTH, None, "this test")


def complete(value, unit="FLOPs"):
    return {"status": "complete", "value": value, "known_value": value, "unit": unit,
            "scope": "workload", "method": "m"}


def hand_report(by_operator, byte_ops, split, diagnostics=(), byte_diagnostics=(), by_module=None):
    """A FlopReport dict as measure_flops writes one, from its parts."""
    known = sum(by_operator.values())
    by_precision = {}
    for precisions in split.values():
        for precision, flops in precisions.items():
            by_precision[precision] = by_precision.get(precision, 0) + flops
    read = sum(entry["read"] for entry in byte_ops.values())
    written = sum(entry["written"] for entry in byte_ops.values())
    total = complete(known)
    if diagnostics:
        total = {**total, "status": "partial", "value": None}
    moved = {**complete(read + written, "bytes"), "read": read, "written": written, "by_operator": byte_ops,
             "by_module": {}, "diagnostics": list(byte_diagnostics)}
    if byte_diagnostics:
        moved = {**moved, "status": "partial", "value": None}
    return {"schema_version": 1, "total": total, "by_module": by_module or {}, "by_operator": by_operator,
            "by_precision": by_precision, "by_operator_precision": split, "ignored_operators": {},
            "diagnostics": list(diagnostics), "bytes": moved}


def uncounted(operator):
    return {"code": "uncounted_operator", "severity": "warning", "metric": "flops", "operator": operator,
            "message": f"{operator} was observed 1 time(s), but no FLOP formula is registered."}


# --- hand examples ------------------------------------------------------------


def test_an_elementwise_add_is_memory_bound():
    n = 1000
    # n FLOPs; two float32 inputs read, one written.
    report = hand_report({"aten.add": n}, {"aten.add": {"read": 8 * n, "written": 4 * n}},
                         {"aten.add": {"fp32": n}})
    point = roofline(report, SPEC).by_operator["aten.add"]
    assert point.status == "complete" and point.partial == ()
    assert point.intensity == pytest.approx(1 / 12)
    assert point.ridge_point == pytest.approx(FP32_PEAK / BANDWIDTH) == pytest.approx(10)
    assert point.bound == "memory"
    assert point.memory_seconds == pytest.approx(12 * n / BANDWIDTH)
    assert point.compute_seconds == pytest.approx(n / FP32_PEAK)
    assert point.seconds == pytest.approx(12 * n / BANDWIDTH)


def test_a_large_mm_is_compute_bound():
    n = 1024
    flops, moved = 2 * n**3, 3 * n * n * 4
    report = hand_report({"aten.mm": flops}, {"aten.mm": {"read": 2 * n * n * 4, "written": n * n * 4}},
                         {"aten.mm": {"fp32": flops}})
    point = roofline(report, SPEC).by_operator["aten.mm"]
    assert point.intensity == pytest.approx(2 * n / 12)  # 170.7 > 10
    assert point.bound == "compute"
    assert point.seconds == pytest.approx(flops / FP32_PEAK)
    assert point.memory_seconds == pytest.approx(moved / BANDWIDTH)


def test_mixed_precision_sums_each_precision_against_its_peak():
    f32, b16 = 3_000_000, 8_000_000
    report = hand_report(
        {"aten.mm": f32 + b16, "aten.bmm": b16},
        {"aten.mm": {"read": 40_000, "written": 10_000}, "aten.bmm": {"read": 1000, "written": 1000}},
        {"aten.mm": {"fp32": f32, "bf16": b16}, "aten.bmm": {"bf16": b16}},
    )
    result = roofline(report, SPEC)
    mm = result.by_operator["aten.mm"]
    compute = f32 / FP32_PEAK + b16 / BF16_PEAK
    assert mm.compute_seconds == pytest.approx(compute)
    assert mm.flops_by_precision == {"fp32": f32, "bf16": b16} and mm.peak_precision is None
    # The ridge point of the mix: its average peak over the bandwidth.
    assert mm.ridge_point == pytest.approx((f32 + b16) / compute / BANDWIDTH)
    assert mm.seconds == pytest.approx(max(compute, 50_000 / BANDWIDTH))
    bmm = result.by_operator["aten.bmm"]
    assert bmm.ridge_point == pytest.approx(BF16_PEAK / BANDWIDTH)
    # The total is split by the report's by_precision.
    total = result.total
    assert total.flops_by_precision == {"fp32": f32, "bf16": 2 * b16}
    assert total.compute_seconds == pytest.approx(f32 / FP32_PEAK + 2 * b16 / BF16_PEAK)
    assert total.memory_seconds == pytest.approx(52_000 / BANDWIDTH)
    assert total.status == "complete"


def test_zero_bytes_has_no_intensity_and_is_compute_bound():
    report = hand_report({"aten.mm": 500}, {}, {"aten.mm": {"fp32": 500}})
    point = roofline(report, SPEC).by_operator["aten.mm"]
    assert point.bytes == 0 and point.intensity is None
    assert point.bound == "compute" and point.memory_seconds == 0
    assert point.seconds == pytest.approx(500 / FP32_PEAK)


def test_partial_flops_name_what_is_missing():
    report = hand_report({"aten.mm": 2000}, {"aten.mm": {"read": 100, "written": 100},
                                             "aten.sin": {"read": 40, "written": 40}},
                         {"aten.mm": {"fp32": 2000}}, diagnostics=[uncounted("aten.sin")])
    result = roofline(report, SPEC)
    sin = result.by_operator["aten.sin"]
    assert sin.status == "partial" and sin.partial == ("uncounted_operator: aten.sin",)
    # Its known FLOPs are 0: the time is still a lower bound (the bytes').
    assert sin.flops == 0 and sin.seconds == pytest.approx(80 / BANDWIDTH)
    # aten.mm's own calls are all counted.
    assert result.by_operator["aten.mm"].status == "complete"
    assert result.total.status == "partial"
    assert result.total.partial == ("uncounted_operator: aten.sin",)
    assert result.total.seconds == pytest.approx(max(2000 / FP32_PEAK, 280 / BANDWIDTH))


def test_partial_bytes_name_what_is_missing():
    diagnostic = {"code": "bytes_not_known", "severity": "warning", "metric": "bytes", "operator": "aten.mm",
                  "message": "aten.mm ran 1 time(s) with bytes that are not known (a sparse tensor)"}
    report = hand_report({"aten.mm": 2000}, {}, {"aten.mm": {"fp32": 2000}}, byte_diagnostics=[diagnostic])
    result = roofline(report, SPEC)
    assert result.by_operator["aten.mm"].partial == ("bytes bytes_not_known: aten.mm",)
    assert result.total.status == "partial"


def test_a_compiled_graph_makes_every_counted_operator_partial():
    # Its calls' FLOPs are under their operators, their bytes only the
    # graph's bounds: aten.mm's row cannot claim all its bytes.
    diagnostic = {"code": "compiled_region_bytes", "severity": "warning", "metric": "bytes",
                  "operator": "inductor.compiled_graph",
                  "message": "compiled graph 0/0 (inference) ran 1 time(s): ..."}
    report = hand_report({"aten.mm": 2000}, {"inductor.compiled_graph": {"read": 200, "written": 80}},
                         {"aten.mm": {"fp32": 2000}}, byte_diagnostics=[diagnostic])
    result = roofline(report, SPEC)
    assert result.by_operator["aten.mm"].partial == ("bytes compiled_region_bytes: inductor.compiled_graph",)
    assert result.by_operator["inductor.compiled_graph"].status == "partial"
    assert result.total.status == "partial"


def test_a_precision_without_a_peak_is_unavailable_with_the_reason():
    report = hand_report({"aten._scaled_mm": 700, "aten.mm": 100},
                         {"aten._scaled_mm": {"read": 10, "written": 10}},
                         {"aten._scaled_mm": {"fp8": 700}, "aten.mm": {"fp32": 100}})
    result = roofline(report, SPEC)
    scaled = result.by_operator["aten._scaled_mm"]
    assert scaled.status == "unavailable"
    assert scaled.unavailable == "test device has no peak for fp8 (700 FLOPs)"
    assert scaled.compute_seconds is None and scaled.seconds is None and scaled.bound is None
    assert scaled.memory_seconds == pytest.approx(20 / BANDWIDTH)  # still known
    assert result.by_operator["aten.mm"].status == "complete"
    assert result.total.status == "unavailable" and "fp8 (700 FLOPs)" in result.total.unavailable


def test_unsplit_modules_use_the_fastest_peak_present():
    f32, b16 = 1000, 4000
    report = hand_report({"aten.mm": f32 + b16}, {"aten.mm": {"read": 50, "written": 50}},
                         {"aten.mm": {"fp32": f32, "bf16": b16}}, by_module={"Net": f32 + b16})
    report["bytes"]["by_module"] = {"Net": 100}
    net = roofline(report, SPEC).by_module["Net"]
    assert net.flops_by_precision is None and net.peak_precision == "bf16"
    assert net.compute_seconds == pytest.approx((f32 + b16) / BF16_PEAK)
    # Never more than the split time of the same FLOPs: a lower bound still.
    assert net.compute_seconds <= f32 / FP32_PEAK + b16 / BF16_PEAK
    # A report without any split: the FLOP term is unavailable, named.
    old = {key: value for key, value in report.items() if key not in ("by_precision", "by_operator_precision")}
    assert roofline(old, SPEC).by_module["Net"].unavailable == (
        "the report does not split its FLOPs by precision (no by_precision)")


def test_a_report_without_bytes_is_partial_everywhere():
    report = hand_report({"aten.mm": 2000}, {}, {"aten.mm": {"fp32": 2000}})
    del report["bytes"]  # written before bytes existed
    result = roofline(report, SPEC)
    missing = ("bytes: the report has no bytes (written before they existed)",)
    assert result.by_operator["aten.mm"].partial == missing and result.total.partial == missing
    # The FLOP term is still known, and so the lower bound.
    assert result.total.seconds == pytest.approx(2000 / FP32_PEAK)


def test_unknown_device_name_is_one_line_error_naming_the_known_ones():
    report = hand_report({}, {}, {})
    with pytest.raises(ValueError) as error:
        roofline(report, "H100")  # only like "H100 SXM": exact names only
    message = str(error.value)
    assert "\n" not in message and "'H100'" in message and "H100 SXM" in message and "MI300X" in message
    with pytest.raises(TypeError):
        roofline(report, 3.0)


def test_reports_that_are_not_one_flop_report_are_refused():
    with pytest.raises(ValueError, match="not a FlopReport"):
        roofline({"schema_version": 1, "layers": []}, SPEC)
    with pytest.raises(ValueError, match="one rank's FlopReport"):
        roofline({"kind": "job_report", "total": {}, "by_operator": {}}, SPEC)


def test_table_names_follow_the_exact_name_rules():
    report = hand_report({"aten.mm": 10**12}, {"aten.mm": {"read": 10**9, "written": 0}},
                         {"aten.mm": {"bf16": 10**12}})
    h100 = device_spec("H100 SXM")
    for name in ("H100 SXM", "nvidia  h100 80gb hbm3"):
        point = roofline(report, name).by_operator["aten.mm"]
        assert point.compute_seconds == pytest.approx(10**12 / h100.peak_flops["bf16"])
        assert point.memory_seconds == pytest.approx(10**9 / h100.memory_bandwidth)


def test_roofline_point_alone_and_to_json():
    point = roofline_point(SPEC, {"fp32": 100}, 20, name="one call")
    assert point.seconds == pytest.approx(max(100 / FP32_PEAK, 20 / BANDWIDTH))
    assert json.loads(json.dumps(point.to_json()))["seconds"] == pytest.approx(point.seconds)
    result = roofline(hand_report({"aten.mm": 100}, {"aten.mm": {"read": 10, "written": 10}},
                                  {"aten.mm": {"fp32": 100}}), SPEC)
    document = json.loads(json.dumps(result.to_json()))
    assert document["device"]["name"] == "test device"
    assert document["by_operator"]["aten.mm"]["intensity"] == pytest.approx(5)
    assert document["total"]["status"] == "complete"


# --- the report's per-operator precision ----------------------------------------


def test_the_report_splits_each_operators_flops_by_precision():
    torch.manual_seed(0)
    a, b = torch.randn(16, 32), torch.randn(32, 8)
    a16, b16 = a.bfloat16(), b.bfloat16()
    x, y = torch.randn(2, 16, 32, dtype=torch.float64), torch.randn(2, 32, 4, dtype=torch.float64)
    report = torchscan_dispatch.measure_flops(lambda: (a @ b, a16 @ b16, torch.bmm(x, y)))
    product = 2 * 16 * 32 * 8
    assert report["by_operator_precision"] == {
        "aten.mm": {"fp32": product, "bf16": product},
        "aten.bmm": {"fp64": 2 * 2 * 16 * 32 * 4},
    }
    # Each split sums to the operator's FLOPs (FlopCounterMode's), and over
    # the operators to by_precision.
    _, expected = flop_counter_mode_counts(lambda: (a @ b, a16 @ b16, torch.bmm(x, y)))
    for operator, split in report["by_operator_precision"].items():
        assert sum(split.values()) == report["by_operator"][operator] == expected[operator]
    assert report["by_precision"] == {"fp32": product, "bf16": product, "fp64": 2 * 2 * 16 * 32 * 4}


# --- end to end -------------------------------------------------------------------


def test_a_measured_mlp_step_matches_hand_computation():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 16))
    x = torch.randn(8, 32)
    workload = lambda: model(x).sum().backward()  # noqa: E731
    report = torchscan_dispatch.measure_flops(workload)
    _, expected = flop_counter_mode_counts(workload)
    result = roofline(report, SPEC)
    moved = report["bytes"]
    for operator, point in result.by_operator.items():
        flops = report["by_operator"].get(operator, 0)
        entry = moved["by_operator"].get(operator, {"read": 0, "written": 0})
        op_bytes = entry["read"] + entry["written"]
        assert point.flops == flops == expected.get(operator, 0)
        assert point.bytes == op_bytes
        if flops:  # float32 on the CPU: all fp32
            assert report["by_operator_precision"][operator] == {"fp32": flops}
        assert point.compute_seconds == pytest.approx(flops / FP32_PEAK)
        assert point.memory_seconds == pytest.approx(op_bytes / BANDWIDTH)
        assert point.seconds == pytest.approx(max(flops / FP32_PEAK, op_bytes / BANDWIDTH))
        assert point.intensity == (pytest.approx(flops / op_bytes) if op_bytes else None)
        named = {d["operator"] for d in report["diagnostics"]}
        assert point.status == ("partial" if operator in named else "complete")
    # The activations (relu, its backward) have no FLOP formula: named.
    assert result.by_operator["aten.relu"].partial == ("uncounted_operator: aten.relu",)
    # Total: the sums of the operators' terms (the FLOP term is linear in
    # FLOPs, the memory term in bytes); the maximum is no larger than the
    # operators' bounds summed.
    total = result.total
    assert total.compute_seconds == pytest.approx(sum(p.compute_seconds for p in result.by_operator.values()))
    assert total.memory_seconds == pytest.approx(sum(p.memory_seconds for p in result.by_operator.values()))
    assert total.seconds <= sum(p.seconds for p in result.by_operator.values()) * (1 + 1e-12)
    assert total.status == "partial" and "uncounted_operator: aten.relu" in total.partial
    # Modules: the root holds everything; each layer's FLOPs and bytes are
    # the report's by_module, against the fp32 peak (the only one present).
    # (The ReLU has bytes but no FLOPs: it is only in bytes' by_module.)
    assert set(result.by_module) == set(report["by_module"]) | set(moved["by_module"])
    assert "Sequential.1" in moved["by_module"] and "Sequential.1" not in report["by_module"]
    for label, point in result.by_module.items():
        assert point.flops == report["by_module"].get(label, 0)
        assert point.bytes == moved["by_module"][label]
        assert point.peak_precision == ("fp32" if point.flops else None)
        assert point.seconds == pytest.approx(max(point.flops / FP32_PEAK, point.bytes / BANDWIDTH))
        assert point.status == "partial"
    assert result.by_module["Sequential"].flops == total.flops
    assert result.by_module["Sequential.0"].flops == 2 * 8 * 32 * 64 + 2 * 32 * 64 * 8  # forward + weight grad


def test_step_meter_roofline_for_a_device_model():
    torch.manual_seed(0)
    a, b = torch.randn(64, 128).bfloat16(), torch.randn(128, 32).bfloat16()
    meter = torchscan_dispatch.StepMeter(peak_flops_per_second=1e12, device="cpu")
    with meter.step() as step:
        with pytest.raises(RuntimeError):
            step.roofline("H100 SXM")
        a @ b
    h100 = device_spec("H100 SXM")
    point = step.roofline("H100 SXM").total
    flops, moved = 2 * 64 * 128 * 32, (64 * 128 + 128 * 32 + 64 * 32) * 2
    assert (point.flops, point.bytes, point.status) == (flops, moved, "complete")
    assert point.seconds == pytest.approx(max(flops / h100.peak_flops["bf16"], moved / h100.memory_bandwidth))
    # A B200 row lists no fp32 peak: float32 work on it is unavailable, named.
    with meter.step() as step:
        a.float() @ b.float()
    assert step.roofline("B200").by_operator["aten.mm"].unavailable.startswith("B200 has no peak for fp32")


# --- the host's measured peak -------------------------------------------------------


def test_measure_host_peak_is_positive_finite_and_says_how():
    spec = measure_host_peak(matrix_size=128, repeats=2, copy_bytes=4 << 20)
    assert set(spec.peak_flops) == {"fp32"}
    assert math.isfinite(spec.peak_flops["fp32"]) and spec.peak_flops["fp32"] > 0
    assert math.isfinite(spec.memory_bandwidth) and spec.memory_bandwidth > 0
    assert spec.source.startswith("measured on this host")
    assert f"{torch.get_num_threads()} intra-op thread(s)" in spec.source
    assert "best of 2 torch.mm of 128x128 float32 (4,194,304 FLOPs each" in spec.source
    assert "4 MiB float32 buffer" in spec.source
    # Self-consistent: a roofline on it uses exactly its figures.
    report = hand_report({"aten.mm": 10**9}, {"aten.mm": {"read": 10**8, "written": 0}}, {"aten.mm": {"fp32": 10**9}})
    point = roofline(report, spec).by_operator["aten.mm"]
    assert point.compute_seconds == pytest.approx(10**9 / spec.peak_flops["fp32"])
    assert point.memory_seconds == pytest.approx(10**8 / spec.memory_bandwidth)
    assert point.ridge_point == pytest.approx(spec.peak_flops["fp32"] / spec.memory_bandwidth)
    # Other precisions have no measured peak: unavailable, never guessed.
    bf16 = hand_report({"aten.mm": 10}, {}, {"aten.mm": {"bf16": 10}})
    assert roofline(bf16, spec).total.unavailable == "measured host has no peak for bf16 (10 FLOPs)"


def test_measure_host_peak_defaults_and_bad_arguments():
    spec = measure_host_peak()
    assert spec.peak_flops["fp32"] > 0 and spec.memory_bandwidth > 0
    assert "1024x1024" in spec.source and "best of 3" in spec.source
    with pytest.raises(ValueError):
        measure_host_peak(repeats=0)
