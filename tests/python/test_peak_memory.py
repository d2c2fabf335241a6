"""measure_peak_memory with exact expectations (the CPU allocator reports the
requested bytes exactly) and its error and fault behaviour."""

import threading

import pytest
import torch

from torchscan_dispatch._library import hooks
from torchscan_dispatch.process import measure_peak_memory

FLOAT = 4  # bytes per float32 element


def test_cpu_reports_the_exact_peak_and_calls_the_workload_once():
    calls = []

    def workload():
        calls.append(1)
        a = torch.empty(1000)  # 4000 bytes
        b = torch.empty(500)  # 2000
        del a  # 2000 alive
        c = torch.empty(750)  # 5000 alive
        return b, c

    memory = measure_peak_memory(workload, device="cpu:0")
    assert calls == [1]
    assert memory == {
        "device": "cpu",
        "metric": "pytorch_tensor_bytes",
        "baseline_bytes": 0,
        "peak_bytes": 1500 * FLOAT,
        "delta_bytes": 1500 * FLOAT,
    }


def test_freeing_before_allocating_shows_the_peak_not_the_sum():
    all_alive = measure_peak_memory(lambda: [torch.empty(256) for _ in range(9)], device="cpu")
    assert all_alive["peak_bytes"] == 9 * 256 * FLOAT

    def one_at_a_time():
        for _ in range(10):
            torch.empty(256)

    assert measure_peak_memory(one_at_a_time, device="cpu")["peak_bytes"] == 256 * FLOAT


def test_training_step_allocates_activations_and_gradients():
    model = torch.nn.Linear(64, 32)
    x = torch.randn(16, 64)

    def step():
        model.zero_grad(set_to_none=True)
        model(x).sum().backward()

    memory = measure_peak_memory(step, device="cpu")
    # Both parameter gradients (32x64 + 32) stay alive after the step.
    assert memory["peak_bytes"] >= (32 * 64 + 32) * FLOAT
    assert memory["delta_bytes"] == memory["peak_bytes"] - memory["baseline_bytes"]


def test_workload_exception_propagates_and_the_observer_is_gone():
    error = RuntimeError("boom")
    calls = []

    def workload():
        calls.append(1)
        torch.empty(10)
        raise error

    with pytest.raises(RuntimeError) as raised:
        measure_peak_memory(workload, device="cpu")
    assert raised.value is error and calls == [1]
    # A clean state: the next measurement sees only its own allocation.
    assert measure_peak_memory(lambda: torch.empty(3), device="cpu")["peak_bytes"] == 3 * FLOAT


def test_nested_measurements_work():
    inner = {}

    def outer():
        a = torch.empty(100)
        inner.update(measure_peak_memory(lambda: torch.empty(300), device="cpu"))
        return a

    assert measure_peak_memory(outer, device="cpu")["peak_bytes"] == 400 * FLOAT
    assert inner["peak_bytes"] == 300 * FLOAT


def test_cuda_on_a_cpu_build_is_a_clear_error_and_the_workload_does_not_run():
    calls = []
    with pytest.raises(RuntimeError, match="Requested CUDA device 'cuda:0' is unavailable in PyTorch 2.13.0"):
        measure_peak_memory(lambda: calls.append(1), device="cuda:0")
    with pytest.raises(RuntimeError, match="Requested CUDA device 'cuda' is unavailable"):
        measure_peak_memory(lambda: calls.append(1), device="cuda")
    assert calls == []


def test_unsupported_devices_raise_not_implemented():
    calls = []
    with pytest.raises(NotImplementedError, match="Peak memory measurement is not implemented for 'meta' in PyTorch"):
        measure_peak_memory(lambda: calls.append(1), device="meta")
    with pytest.raises(RuntimeError):
        measure_peak_memory(lambda: calls.append(1), device="not-a-device")
    assert calls == []


def test_refuses_to_hide_a_running_profilers_memory_events():
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as profiler:
        with pytest.raises(RuntimeError, match="profiler is active"):
            measure_peak_memory(lambda: torch.empty(10), device="cpu")
        torch.empty(123)
    # The profiler still saw its own allocation.
    assert any(event.cpu_memory_usage == 123 * FLOAT for event in profiler.events())


# The extension module's functions behind measure_peak_memory
# (python/operators/memory_functions.h), called directly.


def test_begin_and_end_report_the_exact_peak_as_a_dict():
    library = hooks()
    handle = library.begin_peak_memory("cpu")
    kept = torch.empty(250)  # 1000 bytes
    torch.empty(100)  # 400 more, freed at once
    memory = library.end_peak_memory(handle)
    assert memory == {
        "device": "cpu",
        "metric": "pytorch_tensor_bytes",
        "baseline_bytes": 0,
        "peak_bytes": 350 * FLOAT,
        "delta_bytes": 350 * FLOAT,
    }
    del kept


def test_ending_an_unknown_measurement_is_a_runtime_error():
    with pytest.raises(RuntimeError) as raised:
        hooks().end_peak_memory(10**9)
    assert str(raised.value) == "torchscan: no open memory measurement 1000000000"


def test_only_the_thread_that_began_a_measurement_ends_it():
    library = hooks()
    handle = library.begin_peak_memory("cpu")
    errors = []

    def end_elsewhere():
        try:
            library.end_peak_memory(handle)
        except RuntimeError as error:
            errors.append(str(error))

    thread = threading.Thread(target=end_elsewhere)
    thread.start()
    thread.join()
    assert errors == [f"torchscan: memory measurement {handle} must be ended on the thread that began it"]
    assert library.end_peak_memory(handle)["peak_bytes"] == 0  # still open here


def test_bad_devices_and_arguments_are_one_line_errors():
    library = hooks()
    with pytest.raises(RuntimeError) as raised:
        library.begin_peak_memory("not-a-device")
    assert str(raised.value) == "Invalid device string: 'not-a-device'"
    with pytest.raises(NotImplementedError) as raised:
        library.begin_peak_memory("meta")
    assert str(raised.value) == f"Peak memory measurement is not implemented for 'meta' in PyTorch {torch.__version__}."
    with pytest.raises(TypeError) as raised:
        library.begin_peak_memory(torch.device("cpu"))
    assert str(raised.value) == "begin_peak_memory: device must be a str"
    with pytest.raises(TypeError, match="^'str' object cannot be interpreted as an integer$"):
        library.end_peak_memory("1")
