"""Achieved FLOP/s: the per-call record joined with torch.profiler events.

On a profiled CPU training step (a small CNN: convolution, pooling, linear,
cross entropy, backward, SGD step) every recorded call must attach to
exactly one profiler event, the event of its own operator; the attached
FLOPs must equal the report's total and FlopCounterMode's, the attached
bytes the report's; composite operators (aten::linear) are never attached,
their decomposition's addmm is. Expectations come from FlopCounterMode, the
profiler's own trace, and hand arithmetic here."""

import base64
import importlib.util
import json
import os
import tempfile
import time
from pathlib import Path

import pytest
import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile

import torchscan_dispatch
from conftest import flop_counter_mode_counts
from torchscan_dispatch import achieved
from torchscan_dispatch.flops import FlopCounter


class SmallCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc1 = nn.Linear(8 * 8 * 8, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.conv(x)))
        return self.fc2(torch.relu(self.fc1(x.flatten(1))))


def training_step():
    torch.manual_seed(0)
    model = SmallCnn()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x, target = torch.randn(4, 3, 16, 16), torch.randint(0, 10, (4,))

    def step():
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), target)
        loss.backward()
        optimizer.step()

    return step


@pytest.fixture(scope="module")
def result():
    step = training_step()
    step()  # the optimizer's state exists: every step runs the same operators
    return achieved.measure_achieved(step)


def cpu_ops(events):
    return [event for event in events if event.get("ph") == "X" and event.get("cat") == "cpu_op"]


def test_every_call_attaches_to_exactly_one_event_of_its_operator(result):
    assert result["status"] == "complete", result["diagnostics"]
    assert result["diagnostics"] == []
    calls = result["calls"]
    assert calls, "the step recorded no call"
    # Optimizer.step's record_function range enters through an operator the
    # dispatcher does not observe: no event, and nothing to attach.
    assert set(result["unattached"]) == {
        "profiler._record_function_enter_new", "profiler._record_function_exit"}
    calls = [call for call in calls if call["operator"] not in result["unattached"]]
    for call in result["calls"]:
        if call["event"] is None:
            assert call["flops"] == call["bytes_read"] == call["bytes_written"] == 0
    attached = [call["event"] for call in calls]
    assert None not in attached
    assert len(set(attached)) == len(attached), "an event was attached twice"
    for call in calls:
        event = result["events"][call["event"]]
        assert event["name"] == call["operator"].replace(".", "::", 1)
        assert event["args"]["Record function id"] == call["record_function"]
        assert call["time_us"] == event["dur"]


def test_attached_sums_equal_the_report_and_flop_counter_mode():
    step = training_step()
    step()
    expected_total, expected_by_operator = flop_counter_mode_counts(step)
    result = achieved.measure_achieved(step)
    assert result["status"] == "complete", result["diagnostics"]
    attached = [call for call in result["calls"] if call["event"] is not None]
    flops = sum(call["flops"] for call in attached)
    # The report is partial (elementwise operators have no formula, as in
    # FlopCounterMode); its known value is FlopCounterMode's total.
    assert flops == int(result["report"]["total"]["known_value"]) == expected_total > 0
    assert result["total"]["flops"] == flops
    read = sum(call["bytes_read"] for call in attached)
    written = sum(call["bytes_written"] for call in attached)
    assert (read, written) == (int(result["report"]["bytes"]["read"]),
                               int(result["report"]["bytes"]["written"]))
    for operator, count in expected_by_operator.items():
        assert result["by_operator"][operator.replace("::", ".", 1)]["flops"] == count


def test_by_module_matches_the_report_and_rates_are_flops_over_time(result):
    reported = result["report"]["by_module"]
    assert {"SmallCnn", "SmallCnn.conv", "SmallCnn.fc1", "SmallCnn.fc2"} <= set(reported)
    for module, flops in reported.items():
        assert result["by_module"][module]["flops"] == int(flops)
    assert {m for m, row in result["by_module"].items() if row["flops"]} == set(reported)
    for name, row in result["by_operator"].items():
        calls = [call for call in result["calls"] if call["operator"] == name]
        assert row["calls"] == len(calls)
        assert row["time_us"] == pytest.approx(sum(call["time_us"] for call in calls))
        if row["time_us"] > 0:
            assert row["flops_per_s"] == pytest.approx(row["flops"] / (row["time_us"] * 1e-6))
            moved = row["bytes_read"] + row["bytes_written"]
            assert row["bytes_per_s"] == pytest.approx(moved / (row["time_us"] * 1e-6))


def test_composite_linear_is_never_attached_its_addmm_once(result):
    events = result["events"]
    attached = {call["event"] for call in result["calls"] if call["event"] is not None}
    linears = [i for i, event in enumerate(events) if event.get("cat") == "cpu_op"
               and event["name"] == "aten::linear"]
    assert len(linears) == 2  # fc1 and fc2, forward
    for index in linears:
        assert index not in attached
        linear = events[index]
        inside = [
            i for i in attached
            if events[i]["tid"] == linear["tid"]
            and linear["ts"] <= events[i]["ts"] <= linear["ts"] + linear["dur"]
        ]
        # linear = t (a view, recorded, no FLOPs) + addmm, each attached once.
        assert sorted(events[i]["name"] for i in inside) == ["aten::addmm", "aten::t"]
        with_flops = [call for call in result["calls"] if call["event"] in inside and call["flops"]]
        assert [call["operator"] for call in with_flops] == ["aten.addmm"]
    addmm_flops = result["by_operator"]["aten.addmm"]["flops"]
    # fc1: 4 x 512 x 32, fc2: 4 x 32 x 10 multiply-adds, two FLOPs each.
    assert addmm_flops == 2 * 4 * 512 * 32 + 2 * 4 * 32 * 10


def test_roofline_hook_gives_bound_over_measured_time():
    step = training_step()
    step()
    result = achieved.measure_achieved(step, lower_bound=lambda name, flops, read, written: 1e-9 * flops)
    row = result["by_operator"]["aten.mm"]
    assert row["roofline_fraction"] == pytest.approx(1e-9 * row["flops"] / (row["time_us"] * 1e-6))


def test_device_hook_is_the_roofline_of_that_device():
    # A device written here: fp32 at 1e12 FLOP/s, 1e11 bytes/s.
    from torchscan_dispatch.devices import DeviceSpec

    device = DeviceSpec("test device", (), {"fp32": 1e12}, 1e11, None, "written in the test")
    step = training_step()
    step()
    result = achieved.measure_achieved(step, device=device)
    for name, row in result["by_operator"].items():
        moved = row["bytes_read"] + row["bytes_written"]
        bound = max(row["flops"] / 1e12, moved / 1e11)
        assert row["roofline_fraction"] == pytest.approx(bound / (row["time_us"] * 1e-6)), name
    total = result["total"]
    bound = max(total["flops"] / 1e12, (total["bytes_read"] + total["bytes_written"]) / 1e11)
    assert total["roofline_fraction"] == pytest.approx(bound / (total["time_us"] * 1e-6))


def test_device_hook_without_a_peak_for_the_precision_is_none():
    from torchscan_dispatch.devices import DeviceSpec

    device = DeviceSpec("bf16 only", (), {"bf16": 1e12}, 1e11, None, "written in the test")
    step = training_step()
    step()
    result = achieved.measure_achieved(step, device=device)
    assert result["by_operator"]["aten.mm"]["roofline_fraction"] is None


def test_an_unknown_device_name_fails_before_the_workload_runs():
    ran = []
    with pytest.raises(ValueError, match="no such GPU"):
        achieved.measure_achieved(lambda: ran.append(1), device="no such GPU")
    assert ran == []


class Boom(Exception):
    pass


def test_a_raising_workload_propagates_and_restores_the_profiler_and_counter():
    raised = Boom("inside")

    def workload():
        torch.mm(torch.ones(2, 2), torch.ones(2, 2))
        raise raised

    with pytest.raises(Boom) as caught:
        achieved.measure_achieved(workload)
    assert caught.value is raised
    assert not torch.autograd.profiler._is_profiler_enabled
    # The counter is off: a new measurement counts from zero.
    report = torchscan_dispatch.measure_flops(lambda: torch.mm(torch.ones(2, 3), torch.ones(3, 4)))
    assert int(report["total"]["value"]) == 2 * 2 * 3 * 4
    assert_no_record_function_ids()


def assert_no_record_function_ids():
    """With no per-call record alive, nothing asks RecordFunction for ids:
    the profiler's events carry record function id 0 (our callback is gone)."""
    with profile(activities=[ProfilerActivity.CPU]) as profiler:
        torch.mm(torch.ones(2, 3), torch.ones(3, 4))
    handle, path = tempfile.mkstemp(suffix=".json")
    os.close(handle)
    try:
        profiler.export_chrome_trace(path)
        with open(path) as file:
            events = cpu_ops(json.load(file)["traceEvents"])
    finally:
        os.unlink(path)
    assert events and all(event["args"]["Record function id"] == 0 for event in events)


def test_record_off_changes_nothing():
    step = training_step()
    step()
    with FlopCounter() as plain:
        step()
    with FlopCounter(record_calls=True) as recording:
        step()
    assert plain.report() == recording.report()
    with pytest.raises(RuntimeError, match="record_calls=False"):
        plain.calls()
    assert len(recording.calls()["calls"]) > 0
    assert_no_record_function_ids()


def test_a_call_outside_its_record_function_makes_the_join_partial(result):
    log = {"calls": [[0, 1, "aten.mm", "counted", 8, 0, 0, True, 0, "aten::linear"]],
           "module_scopes": {"0": []}}
    joined = achieved.join_calls(log, result["events"], {"total": {"value": 8, "status": "complete"}})
    assert joined["status"] == "partial"
    assert any("aten.mm" in line and "aten::linear" in line for line in joined["diagnostics"])


def test_a_failed_formula_makes_the_join_partial_and_names_it(result):
    log = {"calls": [[0, 1, "aten.mm", "failed", 0, 0, 0, True, 0, "aten::mm"]], "module_scopes": {"0": []}}
    joined = achieved.join_calls(log, result["events"], {"total": {"known_value": 0, "status": "partial"}})
    assert joined["status"] == "partial"
    assert any("aten.mm" in line and "formula failed" in line for line in joined["diagnostics"])
    assert joined["report_status"] == {"flops": "partial", "bytes": "unavailable"}


def test_rates_use_device_kernel_time_where_kernels_ran():
    # Synthetic trace: one counted mm whose CPU event (the launch) took 10 us
    # and whose kernel, linked by External id, took 2 us.
    log = {"calls": [[7, 1, "aten.mm", "counted", 4000, 100, 50, True, 0, ""]], "module_scopes": {"0": []}}
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0.0, "dur": 10.0, "pid": 1, "tid": 1,
         "args": {"Record function id": 7, "External id": 5}},
        {"ph": "X", "cat": "kernel", "name": "gemm", "ts": 3.0, "dur": 2.0, "pid": 0, "tid": 9,
         "args": {"External id": 5}},
    ]
    report = {"total": {"value": 4000, "status": "complete"},
              "bytes": {"read": 100, "written": 50, "status": "complete"}}
    joined = achieved.join_calls(log, events, report)
    assert joined["status"] == "complete", joined["diagnostics"]
    row = joined["by_operator"]["aten.mm"]
    assert (row["time_basis"], row["device_time_us"], row["time_us"]) == ("device", 2.0, 10.0)
    assert row["flops_per_s"] == pytest.approx(4000 / 2e-6)
    assert row["bytes_per_s"] == pytest.approx(150 / 2e-6)


def test_device_time_sums_the_kernels_of_the_event_and_the_events_inside_it_on_its_thread():
    # The matched mm (ts 0..10) launches a 1 us kernel itself and a 2 us one
    # from an event nested in it; a 4 us kernel launched on another thread
    # in the same interval and an 8 us one after the mm on its own thread
    # are not its: 1 + 2 = 3 us.
    log = {"calls": [[7, 1, "aten.mm", "counted", 6000, 0, 0, True, 0, ""]], "module_scopes": {"0": []}}

    def cpu_op(name, ts, dur, tid, external, record_function=None):
        args = {"External id": external}
        if record_function is not None:
            args["Record function id"] = record_function
        return {"ph": "X", "cat": "cpu_op", "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": tid, "args": args}

    def kernel(external, dur):
        return {"ph": "X", "cat": "kernel", "name": "k", "ts": 50.0, "dur": dur, "pid": 0, "tid": 9,
                "args": {"External id": external}}

    events = [
        cpu_op("aten::later", 12.0, 3.0, 1, 8),
        cpu_op("aten::inner", 2.0, 5.0, 1, 6),
        cpu_op("aten::mm", 0.0, 10.0, 1, 5, record_function=7),
        cpu_op("aten::elsewhere", 3.0, 2.0, 2, 9),
        kernel(5, 1.0), kernel(6, 2.0), kernel(9, 4.0), kernel(8, 8.0),
    ]
    joined = achieved.join_calls(log, events, {"total": {"value": 6000, "status": "complete"}})
    row = joined["by_operator"]["aten.mm"]
    assert (3.0, "device") == (row["device_time_us"], row["time_basis"])
    assert row["flops_per_s"] == pytest.approx(6000 / 3e-6)


class Wrapped(torch.Tensor):
    """A wrapper subclass: its aten::mm event encloses the dense aten::mm."""

    @staticmethod
    def __new__(cls, inner):
        return torch.Tensor._make_wrapper_subclass(cls, inner.shape, dtype=inner.dtype)

    def __init__(self, inner):
        self.inner = inner

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        unwrap = lambda value: value.inner if isinstance(value, Wrapped) else value  # noqa: E731
        out = func(*[unwrap(a) for a in args], **{k: unwrap(v) for k, v in (kwargs or {}).items()})
        return Wrapped(out) if isinstance(out, torch.Tensor) else out


def test_a_subclass_call_joins_its_own_dense_event_not_the_wrapper():
    a, b = Wrapped(torch.randn(8, 16)), Wrapped(torch.randn(16, 4))
    joined = achieved.measure_achieved(lambda: torch.mm(a, b), track_modules=False)
    assert joined["status"] == "complete", joined["diagnostics"]
    mm_events = [e for e in joined["events"] if e.get("name") == "aten::mm" and e.get("cat") == "cpu_op"]
    attached = [c for c in joined["calls"] if c["operator"] == "aten.mm"]
    assert len(attached) == 1 and 2 * 8 * 16 * 4 == attached[0]["flops"]
    event = joined["events"][attached[0]["event"]]
    # The attached event is the innermost aten::mm: no other mm event inside it.
    inside = [e for e in mm_events if e is not event and event["ts"] <= e["ts"]
              and e["ts"] + e["dur"] <= event["ts"] + event["dur"]]
    assert inside == []
    assert len(mm_events) == 2


# The trace-event format's documented fields (Trace Event Format, Google):
# every event has name, ph, ts, pid, tid; complete events ("X") a dur;
# counter events ("C") numeric args; args, where present, an object.
def validate_trace_event(event):
    assert isinstance(event["name"], str)
    assert isinstance(event["ph"], str) and len(event["ph"]) == 1
    if event["ph"] != "M":
        assert isinstance(event["ts"], (int, float))
    assert "pid" in event and "tid" in event
    if event["ph"] == "X":
        assert isinstance(event["dur"], (int, float)) and event["dur"] >= 0
    if "args" in event:
        assert isinstance(event["args"], dict)
    if event["ph"] == "C":
        assert event["args"] and all(isinstance(v, (int, float)) for v in event["args"].values())


def test_chrome_trace_has_the_documented_fields_flops_and_counter_tracks(result, tmp_path):
    path = tmp_path / "trace.json"
    achieved.write_chrome_trace(result, path)
    document = json.loads(path.read_text())
    events = document["traceEvents"]
    for event in events:
        validate_trace_event(event)
    with_flops = [event for event in events if event.get("cat") == "cpu_op" and "flops" in event["args"]]
    assert len(with_flops) == len([call for call in result["calls"] if call["event"] is not None])
    assert sum(event["args"]["flops"] for event in with_flops) == result["total"]["flops"]
    counters = [event for event in events if event["ph"] == "C"]
    assert {event["name"] for event in counters} == {"FLOP/s", "bytes/s"}
    # The counter's value at the start of the longest counted call is at least its own rate.
    longest = max((call for call in result["calls"] if call["flops"] > 0), key=lambda c: c["time_us"])
    start = result["events"][longest["event"]]["ts"]
    at_start = [e for e in counters if e["name"] == "FLOP/s" and e["ts"] == start]
    assert at_start[0]["args"]["FLOP/s"] >= longest["flops"] / (longest["time_us"] * 1e-6) * (1 - 1e-9)
    # The last sample is after every call: nothing runs, the rate is 0.
    assert counters[-1]["args"][counters[-1]["name"]] == pytest.approx(0, abs=1e-3)


def test_speedscope_file_follows_its_schema(result, tmp_path):
    path = tmp_path / "profile.speedscope.json"
    achieved.write_speedscope(result, path)
    document = json.loads(path.read_text())
    assert document["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    frames = document["shared"]["frames"]
    evented = [p for p in document["profiles"] if p["type"] == "evented"]
    assert evented
    for profile_ in evented:
        stack = []
        last = profile_["startValue"]
        for event in profile_["events"]:
            assert 0 <= event["frame"] < len(frames)
            assert event["at"] >= last
            last = event["at"]
            if event["type"] == "O":
                stack.append(event["frame"])
            else:
                assert event["type"] == "C" and stack.pop() == event["frame"]
        assert stack == [] and last <= profile_["endValue"]
    sampled = [p for p in document["profiles"] if p["type"] == "sampled"]
    assert len(sampled) == 1
    assert sum(sampled[0]["weights"]) == result["total"]["flops"]
    assert len(sampled[0]["samples"]) == len(sampled[0]["weights"])
    for stack in sampled[0]["samples"]:
        assert all(0 <= frame < len(frames) for frame in stack)


SPEEDSCOPE = Path(os.environ.get(
    "TORCHSCAN_SPEEDSCOPE_DIR",
    Path.home() / ".cache" / "torchscan" / "speedscope-1.25.0" / "package",
))


def load_html_screenshot():
    script = Path(__file__).resolve().parents[2] / "tools" / "html_screenshot.py"
    spec = importlib.util.spec_from_file_location("html_screenshot", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_speedscope_file_loads_in_speedscope(result, tmp_path):
    """speedscope's own page (its npm package) opens the file as its command
    line does (a script calling speedscope.loadFileFromBase64, named by
    #localProfilePath): it shows the file's name and its profiles."""
    html_screenshot = load_html_screenshot()
    index = SPEEDSCOPE / "dist" / "release" / "index.html"
    if html_screenshot.find_chromium() is None:
        pytest.skip("Chromium is not installed (tools/setup installs Debian's chromium)")
    if not index.is_file():
        pytest.skip(f"speedscope's npm package is not unpacked at {SPEEDSCOPE} (tools/setup does it; "
                    "or set TORCHSCAN_SPEEDSCOPE_DIR)")
    path = tmp_path / "step.speedscope.json"
    achieved.write_speedscope(result, path)
    profiles = json.loads(path.read_text())["profiles"]
    loader = tmp_path / "load.js"
    loader.write_text(
        f"speedscope.loadFileFromBase64({json.dumps(path.name)}, "
        f"{json.dumps(base64.b64encode(path.read_bytes()).decode())})"
    )
    with html_screenshot.Chromium() as chromium:
        chromium.send("Page.navigate", {"url": f"{index.resolve().as_uri()}#localProfilePath={loader}"},
                      session=True)
        chromium.wait_for("Page.loadEventFired")
        deadline = time.monotonic() + 30
        title = ""
        while time.monotonic() < deadline:
            title = chromium.evaluate("document.title")
            if title.startswith("torchscan_dispatch achieved"):
                break
            time.sleep(0.1)
        assert title == "torchscan_dispatch achieved - speedscope"
        text = chromium.evaluate("document.body.innerText")
        assert f"{profiles[0]['name']} (1/{len(profiles)})" in text
        exceptions = [e for e in chromium.events if e.get("method") == "Runtime.exceptionThrown"]
        assert exceptions == []


class CountsItsOwnProduct(nn.Module):
    """A module whose forward runs its own (nested) FlopCounter."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(8, 8))

    def forward(self, x):
        with FlopCounter(track_modules=False) as inner:
            y = x @ self.weight
        self.inner_report = inner.report()
        return y


def test_calls_of_a_nested_counter_join_the_enclosing_record_in_its_module():
    model = nn.Sequential(CountsItsOwnProduct())
    x = torch.ones(4, 8)
    result = achieved.measure_achieved(lambda: model(x) @ torch.ones(8, 2))
    # By hand: the nested product 2*4*8*8, the outer one 2*4*8*2.
    assert result["status"] == "complete", result["diagnostics"]
    assert (2, 2 * 4 * 8 * 8 + 2 * 4 * 8 * 2) == (
        result["by_operator"]["aten.mm"]["calls"], result["by_operator"]["aten.mm"]["flops"])
    # In the module it ran in, as the report has it.
    assert {"Sequential": 2 * 4 * 8 * 8, "Sequential.0": 2 * 4 * 8 * 8} == {
        path: row["flops"] for path, row in result["by_module"].items()}
    assert result["report"]["by_module"] == {path: row["flops"] for path, row in result["by_module"].items()}
    assert 2 * 4 * 8 * 8 == model[0].inner_report["total"]["value"]
