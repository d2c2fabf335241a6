"""Achieved FLOP/s and bytes/s: our per-call counts joined with torch.profiler.

``measure_achieved(workload)`` runs the workload once under a ``FlopCounter``
that keeps its per-call record and a ``torch.profiler.profile``, joins each
recorded call with the profiler event of that call, and gives per operator
and per module: calls, FLOPs, bytes, measured time, and what they achieved.
``write_chrome_trace`` and ``write_speedscope`` write the joined run as
trace files (docs/methodology.md, "Achieved FLOP/s").

NOTE [The join is by RecordFunction id]
The dispatcher opens a RecordFunction for each operator call before our
dispatch key sees it; while the record is on, the library asks RecordFunction
for ids and logs, with each call it records, the id of the innermost open
function-scope RecordFunction, which is the call's own (call_log.h). The
profiler writes the same id into each CPU operator event ("Record function
id" in its Chrome trace). So the join is one to one by id, never by position
or time: a call whose id is 0 (recorded outside its own operator's
RecordFunction), or names no event, or an event two calls claim, makes the
result ``partial`` with a diagnostic naming the operator.

NOTE [Which time]
An operator's time is its matched event's total (inclusive) duration, not
its self time: a counted call runs its kernel with our key excluded, so the
operators the kernel calls internally (addmm's copy_, convolution's
im2col) are part of the work its FLOPs and bytes describe, and their events
are children of its event. Counted calls never nest in each other on one
thread, so a row's time is the sum of its calls' times: CPU time spent in
counted operators, not wall time (calls on several threads overlap in wall
time), and a module's time is not the module's wall time. On CUDA the CPU
event's time is the launch; where the profiler recorded device kernels,
``device_time_us`` sums the kernels that the event or the events inside it
launched (linked by the profiler's "External id"), and a row's rates and
roofline fraction are of that time (``time_basis`` "device", else "cpu").
Only the join's arithmetic of that path is tested here (synthetic kernel
events): the project's test machine has no GPU.
"""

from __future__ import annotations

import bisect

import json
import os
import tempfile
from collections.abc import Callable
from typing import Any

import torch

from torchscan_dispatch.flops import FlopCounter
from torchscan_dispatch.roofline import resolve_device, roofline_point

__all__ = ["measure_achieved", "join_calls", "roofline_lower_bound", "write_chrome_trace", "write_speedscope"]

# The hook for the roofline (NOTE [The roofline hook]): (operator, flops,
# bytes_read, bytes_written) -> the lower bound on its time in seconds, or
# None where unknown.
LowerBound = Callable[[str, int, int, int], "float | None"]

# NOTE [The roofline hook]
# ``measure_achieved(..., lower_bound=f)`` adds ``roofline_fraction`` (the
# lower bound on the time over the measured time; 1.0 is at the roofline) to
# each operator and module row. ``measure_achieved(..., device=D)`` makes
# ``f`` from the roofline of device D (``roofline_lower_bound``): an operator
# against the peaks of the precisions the report says its FLOPs ran in, a
# module or the total against the fastest peak among the report's
# precisions, as torchscan_dispatch.roofline does for its own rows.

_CALL_FIELDS = (
    "record_function", "thread", "operator", "kind", "flops", "bytes_read", "bytes_written",
    "bytes_known", "module_scope", "seen_instead",
)


def _profiler_trace(profile: Any) -> dict[str, Any]:
    """The profiler's Chrome trace (its own exporter's output)."""
    handle, path = tempfile.mkstemp(prefix="torchscan_achieved_", suffix=".json")
    os.close(handle)
    try:
        profile.export_chrome_trace(path)
        with open(path, encoding="utf-8") as file:
            document = json.load(file)
    finally:
        os.unlink(path)
    if isinstance(document, list):
        document = {"traceEvents": document}
    return document


def _is_cpu_op(event: dict[str, Any]) -> bool:
    return event.get("ph") == "X" and event.get("cat") == "cpu_op"


def _device_times(events: list[dict[str, Any]], matched: dict[int, dict[str, Any]]) -> dict[int, float]:
    """Kernel time (us) per matched record function id: the device kernels
    whose External id is the matched event's or one of the events inside it
    on the same thread."""
    kernels: dict[int, float] = {}
    for event in events:
        if event.get("ph") == "X" and event.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            external = event.get("args", {}).get("External id")
            if external is not None:
                kernels[external] = kernels.get(external, 0.0) + float(event.get("dur", 0.0))
    if not kernels:
        return {}
    # NOTE [Kernels inside an event]: CPU operator events on one thread nest,
    # so those inside a matched event are among the ones starting within it:
    # per thread, the events sorted by start and a bisection find them, and
    # the cost is the events inside each matched one, not all of the thread's.
    by_thread: dict[Any, list[tuple[float, float, float]]] = {}
    for event in events:
        if _is_cpu_op(event):
            start = float(event["ts"])
            kernel_us = kernels.get(event.get("args", {}).get("External id"), 0.0)
            by_thread.setdefault((event.get("pid"), event.get("tid")), []).append(
                (start, start + float(event["dur"]), kernel_us))
    starts: dict[Any, list[float]] = {}
    for thread, spans in by_thread.items():
        spans.sort(key=lambda span: span[0])
        starts[thread] = [span[0] for span in spans]
    times = {}
    for record_function, event in matched.items():
        thread = (event.get("pid"), event.get("tid"))
        start, end = float(event["ts"]), float(event["ts"]) + float(event["dur"])
        spans, span_starts = by_thread.get(thread, []), starts.get(thread, [])
        first = bisect.bisect_left(span_starts, start)
        last = bisect.bisect_right(span_starts, end)
        times[record_function] = sum(kernel_us for _, stop, kernel_us in spans[first:last] if stop <= end)
    return times


def _rate(amount: int, seconds: float) -> float | None:
    return amount / seconds if seconds > 0 else None


def _row(totals: dict[str, Any], lower_bound: LowerBound | None, name: str) -> dict[str, Any]:
    # NOTE [Which time]: where device kernels ran, the CPU event is only the
    # launch; the rates are then of the kernels' time.
    device_us = totals.get("device_time_us")
    seconds = (device_us if device_us else totals["time_us"]) * 1e-6
    moved = totals["bytes_read"] + totals["bytes_written"]
    row = dict(totals)
    row["time_basis"] = "device" if device_us else "cpu"
    row["flops_per_s"] = _rate(totals["flops"], seconds)
    row["bytes_per_s"] = _rate(moved, seconds)
    if lower_bound is not None:
        bound = lower_bound(name, totals["flops"], totals["bytes_read"], totals["bytes_written"])
        row["roofline_fraction"] = None if bound is None or seconds <= 0 else bound / seconds
    return row


def _empty_totals() -> dict[str, Any]:
    return {"calls": 0, "flops": 0, "bytes_read": 0, "bytes_written": 0, "time_us": 0.0}


def _add(totals: dict[str, Any], call: dict[str, Any]) -> None:
    totals["calls"] += 1
    totals["flops"] += call["flops"]
    totals["bytes_read"] += call["bytes_read"]
    totals["bytes_written"] += call["bytes_written"]
    totals["time_us"] += call["time_us"]
    if "device_time_us" in call:
        totals["device_time_us"] = totals.get("device_time_us", 0.0) + call["device_time_us"]


def join_calls(
    call_log: dict[str, Any],
    events: list[dict[str, Any]],
    report: dict[str, Any],
    *,
    lower_bound: LowerBound | None = None,
) -> dict[str, Any]:
    """Joins a FlopCounter's per-call record (``FlopCounter.calls()``) with
    the profiler's Chrome trace events of the same run and checks the result
    against the counter's ``report``.

    NOTE [Calls that carry nothing]
    The dispatcher opens no RecordFunction for the operators it does not
    observe (c10's ObservedOperators: profiler::_record_function_enter_new,
    which every record_function range and Optimizer.step calls, aten::size).
    Such a call that carries no FLOPs and no bytes has nothing to attach: it
    is listed in ``unattached`` with its reason and leaves the join
    complete; any other call that joins no event makes it partial.

    Returns {"status": "complete" | "partial" (the join: every call that
    carries FLOPs or bytes found its own event, and a formula failed for
    none), "diagnostics": [...], "report_status": {"flops": ..., "bytes":
    ...} (the counts' own statuses), "unattached": {operator: reason},
    "calls": [one dict per recorded call, with "event" (the matched
    event's index in ``events``, or None) and "time_us"], "by_operator",
    "by_module", "total"}: each row has calls, flops, bytes_read,
    bytes_written, time_us, time_basis, flops_per_s, bytes_per_s (and
    roofline_fraction with ``lower_bound``; device_time_us where device
    kernels ran)."""
    diagnostics: list[str] = []
    by_id: dict[int, int] = {}
    duplicated: set[int] = set()
    for index, event in enumerate(events):
        if not _is_cpu_op(event):
            continue
        record_function = event.get("args", {}).get("Record function id")
        if not record_function:
            continue
        if record_function in by_id:
            duplicated.add(record_function)
        by_id[record_function] = index
    scopes = call_log.get("module_scopes", {})
    calls: list[dict[str, Any]] = []
    claimed: dict[int, str] = {}
    matched: dict[int, dict[str, Any]] = {}
    unmatched: dict[str, int] = {}
    carrying: set[str] = set()
    first_reason: dict[str, str] = {}
    for row in call_log["calls"]:
        call = dict(zip(_CALL_FIELDS, row, strict=True))
        call["flops"] = int(call["flops"])
        call["modules"] = list(scopes.get(str(call["module_scope"]), []))
        operator, record_function = call["operator"], call["record_function"]
        packet = operator.replace(".", "::", 1)
        reason = None
        if record_function == 0:
            seen = call.pop("seen_instead") or "no open RecordFunction"
            reason = f"recorded outside its own operator's RecordFunction (innermost: {seen})"
        elif record_function not in by_id:
            reason = f"no profiler CPU operator event has its record function id {record_function}"
        elif record_function in duplicated:
            reason = f"two profiler events carry its record function id {record_function}"
        elif record_function in claimed:
            reason = f"its profiler event (record function id {record_function}) is claimed by another call"
        elif events[by_id[record_function]].get("name") != packet:
            reason = (f"its record function id names a {events[by_id[record_function]].get('name')} "
                      f"event")
        call.pop("seen_instead", None)
        if reason is None:
            event = events[by_id[record_function]]
            claimed[record_function] = operator
            matched[record_function] = event
            call["event"] = by_id[record_function]
            call["time_us"] = float(event.get("dur", 0.0))
        else:
            call["event"] = None
            call["time_us"] = 0.0
            unmatched[operator] = unmatched.get(operator, 0) + 1
            first_reason.setdefault(operator, reason)
            if call["flops"] != 0 or call["bytes_read"] != 0 or call["bytes_written"] != 0:
                carrying.add(operator)
        calls.append(call)
    unattached = {}
    for operator, count in sorted(unmatched.items()):
        line = f"{count} call(s) of {operator} joined no profiler event: {first_reason[operator]}"
        if operator in carrying:
            diagnostics.append(line)
        else:
            unattached[operator] = line
    device = _device_times(events, matched)
    if device:
        for call in calls:
            if call["event"] is not None:
                call["device_time_us"] = device.get(call["record_function"], 0.0)
    failed: dict[str, int] = {}
    for call in calls:
        if call["kind"] == "failed":
            failed[call["operator"]] = failed.get(call["operator"], 0) + 1
    for operator, count in sorted(failed.items()):
        diagnostics.append(
            f"{count} call(s) of {operator}: its formula failed, so their FLOPs are missing from the record "
            "and from its rates")
    for call in calls:
        if call["kind"] == "deferred":
            diagnostics.append(
                f"{call['operator']} is counted by a custom or registered formula after the "
                "workload: its per-call FLOPs are not in the record")
            break
    for call in calls:
        if not call["bytes_known"]:
            diagnostics.append(f"the bytes of {call['operator']} are not known")
            break

    total, by_operator, by_module = _empty_totals(), {}, {}
    for call in calls:
        if call["event"] is None:
            continue
        _add(total, call)
        _add(by_operator.setdefault(call["operator"], _empty_totals()), call)
        for module in call["modules"]:
            _add(by_module.setdefault(module, _empty_totals()), call)

    _check_totals(calls, report, diagnostics)
    # Work the report saw but the record holds no call of (a compiled graph's
    # calls, recorded per graph; unseen work): its bytes diagnostics name it.
    logged = {call["operator"] for call in calls}
    for diagnostic in (report.get("bytes") or {}).get("diagnostics", []):
        operator = diagnostic.get("operator")
        if operator and operator not in logged:
            diagnostics.append(f"{operator} ran but the per-call record holds none of its calls: "
                               f"{diagnostic.get('message', '')}")
    return {
        "status": "partial" if diagnostics else "complete",
        "diagnostics": diagnostics,
        # The join's status says every counted call found its event; the
        # counts themselves are as complete as the report says.
        "report_status": {
            "flops": report.get("total", {}).get("status"),
            "bytes": (report.get("bytes") or {}).get("status", "unavailable"),
        },
        "unattached": unattached,
        "calls": calls,
        "total": _row(total, lower_bound, "total"),
        "by_operator": {name: _row(row, lower_bound, name) for name, row in sorted(by_operator.items())},
        "by_module": {name: _row(row, lower_bound, name) for name, row in sorted(by_module.items())},
    }


def _check_totals(calls: list[dict[str, Any]], report: dict[str, Any], diagnostics: list[str]) -> None:
    """The record must hold what the report counted: the same FLOPs and bytes."""
    flops = sum(call["flops"] for call in calls)
    reported = report.get("total", {})
    reported_flops = reported.get("value")
    if reported_flops is None:
        reported_flops = reported.get("known_value")
    if reported_flops is None or int(reported_flops) != flops:
        diagnostics.append(
            f"the per-call record holds {flops} FLOPs, the report {reported_flops}")
    moved = report.get("bytes")
    if moved is not None:
        read = sum(call["bytes_read"] for call in calls)
        written = sum(call["bytes_written"] for call in calls)
        if (int(moved["read"]), int(moved["written"])) != (read, written):
            diagnostics.append(
                f"the per-call record holds {read} bytes read and {written} written, the report "
                f"{moved['read']} and {moved['written']}")


def roofline_lower_bound(report: dict[str, Any], device: Any) -> LowerBound:
    """The roofline hook of ``device`` (a device table name, a DeviceSpec or
    ``roofline.measure_host_peak()``) for rows of ``report``'s workload:
    ``roofline_point(...).seconds``, None where the device has no peak for a
    precision the row's FLOPs may have run in."""
    spec = resolve_device(device)
    by_operator = report.get("by_operator_precision") or {}
    everywhere = tuple(report.get("by_precision") or {}) or ("unknown",)

    def bound(name: str, flops: int, bytes_read: int, bytes_written: int) -> float | None:
        precisions = tuple(by_operator.get(name, {})) or everywhere
        return roofline_point(spec, flops, bytes_read + bytes_written, precisions=precisions).seconds

    return bound


def measure_achieved(
    workload: Callable[[], Any],
    *,
    track_modules: bool = True,
    threads: str = "report",
    activities: list[Any] | None = None,
    lower_bound: LowerBound | None = None,
    device: Any = None,
) -> dict[str, Any]:
    """Calls ``workload()`` once under a per-call-recording FlopCounter and a
    ``torch.profiler.profile`` (CPU activity, and CUDA where available unless
    ``activities`` says otherwise) and returns ``join_calls``'s result with
    the counter's ``report``, the profiler's ``events`` (its Chrome trace
    events) and ``trace_metadata`` (the rest of that trace) added.
    Exceptions from the workload propagate unchanged; the profiler and the
    counter are stopped either way. ``device`` adds each
    row's ``roofline_fraction`` on that device's roofline
    (``roofline_lower_bound``); ``lower_bound`` gives your own."""
    if not callable(workload):
        raise TypeError(f"workload must be callable, got {type(workload).__name__}.")
    if device is not None:
        if lower_bound is not None:
            raise ValueError("measure_achieved: give device= or lower_bound=, not both")
        resolve_device(device)  # a bad name fails before the workload runs
    from torch.profiler import ProfilerActivity, profile

    if activities is None:
        activities = [ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(ProfilerActivity.CUDA)
    counter = FlopCounter(track_modules=track_modules, threads=threads, record_calls=True)
    with profile(activities=activities) as profiler:
        with counter:
            workload()
    report = counter.report()
    trace = _profiler_trace(profiler)
    events = list(trace.pop("traceEvents"))
    if device is not None:
        lower_bound = roofline_lower_bound(report, device)
    result = join_calls(counter.calls(), events, report, lower_bound=lower_bound)
    result["report"] = report
    result["events"] = events
    result["trace_metadata"] = trace
    return result


def _rate_counters(result: dict[str, Any], pid: Any) -> list[dict[str, Any]]:
    """Counter events ("ph": "C") of FLOP/s and bytes/s over time: the sum
    over the matched calls running at each moment of their own rates."""
    steps: list[tuple[float, float, float]] = []
    for call in result["calls"]:
        if call["event"] is None or call["time_us"] <= 0:
            continue
        event = result["events"][call["event"]]
        seconds = call["time_us"] * 1e-6
        flop_rate = call["flops"] / seconds
        byte_rate = (call["bytes_read"] + call["bytes_written"]) / seconds
        start = float(event["ts"])
        steps.append((start, flop_rate, byte_rate))
        steps.append((start + call["time_us"], -flop_rate, -byte_rate))
    steps.sort(key=lambda step: step[0])
    counters, flops, moved = [], 0.0, 0.0
    for index, (ts, flop_change, byte_change) in enumerate(steps):
        flops, moved = flops + flop_change, moved + byte_change
        if index + 1 < len(steps) and steps[index + 1][0] == ts:
            continue
        flops, moved = max(flops, 0.0), max(moved, 0.0)
        counters.append({"name": "FLOP/s", "ph": "C", "ts": ts, "pid": pid, "tid": 0,
                         "args": {"FLOP/s": flops}})
        counters.append({"name": "bytes/s", "ph": "C", "ts": ts, "pid": pid, "tid": 0,
                         "args": {"bytes/s": moved}})
    return counters


def write_chrome_trace(result: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """Writes ``measure_achieved``'s run as a Chrome/Perfetto trace-event
    JSON file: the profiler's events, each matched operator event's
    ``args`` holding its call's ``flops``, ``bytes_read`` and
    ``bytes_written`` (and ``flops_per_s``, ``bytes_per_s``), plus counter
    tracks "FLOP/s" and "bytes/s"."""
    events = [dict(event) for event in result["events"]]
    pid = None
    for call in result["calls"]:
        if call["event"] is None:
            continue
        event = events[call["event"]] = dict(events[call["event"]])
        args = dict(event.get("args", {}))
        seconds = call["time_us"] * 1e-6
        args.update({
            "flops": call["flops"],
            "bytes_read": call["bytes_read"],
            "bytes_written": call["bytes_written"],
            "flops_per_s": _rate(call["flops"], seconds),
            "bytes_per_s": _rate(call["bytes_read"] + call["bytes_written"], seconds),
        })
        event["args"] = args
        pid = event.get("pid") if pid is None else pid
    events.extend(_rate_counters(result, pid if pid is not None else 0))
    document = dict(result.get("trace_metadata", {}))
    document["traceEvents"] = events
    document.setdefault("displayTimeUnit", "ms")
    with open(path, "w", encoding="utf-8") as file:
        json.dump(document, file)


def write_speedscope(result: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """Writes ``measure_achieved``'s run as a speedscope file (its JSON
    file format, https://www.speedscope.app/file-format-schema.json): per
    profiled thread, an "evented" profile of its CPU operator events in
    microseconds, and one "sampled" profile "FLOPs" whose samples are the
    counted calls (the stack of events enclosing each), weighted by FLOPs."""
    frames: list[dict[str, str]] = []
    frame_of: dict[str, int] = {}

    def frame(name: str) -> int:
        if name not in frame_of:
            frame_of[name] = len(frames)
            frames.append({"name": name})
        return frame_of[name]

    by_thread: dict[Any, list[int]] = {}
    for index, event in enumerate(result["events"]):
        if _is_cpu_op(event):
            by_thread.setdefault(event.get("tid"), []).append(index)
    stacks: dict[int, list[int]] = {}
    profiles = []
    for tid, indices in sorted(by_thread.items(), key=lambda item: str(item[0])):
        events = result["events"]
        indices.sort(key=lambda i: (float(events[i]["ts"]), -float(events[i]["dur"])))
        out: list[dict[str, Any]] = []
        open_stack: list[tuple[int, float]] = []  # (frame, end)

        def close_until(ts: float) -> None:
            while open_stack and open_stack[-1][1] <= ts:
                frame_index, end = open_stack.pop()
                out.append({"type": "C", "frame": frame_index, "at": end})

        open_events: list[int] = []
        for i in indices:
            start = float(events[i]["ts"])
            end = start + float(events[i]["dur"])
            close_until(start)
            del open_events[len(open_stack):]
            if open_stack and end > open_stack[-1][1]:
                end = open_stack[-1][1]  # clipped to its parent: evented profiles nest
            frame_index = frame(events[i]["name"])
            out.append({"type": "O", "frame": frame_index, "at": start})
            open_stack.append((frame_index, end))
            open_events.append(frame_index)
            stacks[i] = list(open_events)
        close_until(float("inf"))
        if not out:
            continue
        profiles.append({
            "type": "evented", "name": f"thread {tid}", "unit": "microseconds",
            "startValue": out[0]["at"], "endValue": max(event["at"] for event in out),
            "events": out,
        })
    samples, weights = [], []
    for call in result["calls"]:
        if call["event"] is not None and call["flops"] > 0:
            samples.append(stacks.get(call["event"], [frame(call["operator"])]))
            weights.append(call["flops"])
    if samples:
        profiles.append({
            "type": "sampled", "name": "FLOPs", "unit": "none", "startValue": 0,
            "endValue": sum(weights), "samples": samples, "weights": weights,
        })
    document = {
        "$schema": "https://www.speedscope.app/file-format-schema.json",
        "shared": {"frames": frames},
        "profiles": profiles,
        "name": "torchscan_dispatch achieved",
        "activeProfileIndex": 0,
        "exporter": "torchscan_dispatch.achieved",
    }
    with open(path, "w", encoding="utf-8") as file:
        json.dump(document, file)
