"""Python threads measuring at once: exact counts per thread, unmeasured
threads alongside measured ones (not counted, named in the report), backward passes run by the autograd engine,
crawl_module and measure_flops concurrently, and concurrent first import and
loading in a fresh process. Expected values are hand computations."""

import threading

import torch
from torch import nn

import torchscan_dispatch
from reliability_support import mm_flops, run_fresh_python, thread_state

THREADS = 8
OPS_PER_THREAD = 1000


def run_threads(target, count=THREADS):
    """Runs target(index) on `count` threads; re-raises the first failure."""
    errors = []

    def guarded(index):
        try:
            target(index)
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=guarded, args=(index,)) for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


def test_eight_threads_with_nested_measurements_count_exactly_per_thread():
    barrier = threading.Barrier(THREADS)
    results = {}

    def run(t):
        m, k, n = 1 + t, 2 + t % 3, 3 + t % 5
        a, b, bias = torch.randn(m, k), torch.randn(k, n), torch.randn(n)
        ba, bb = torch.randn(2, m, k), torch.randn(2, k, n)
        before = thread_state()

        def ops(begin, end):
            for i in range(begin, end):
                if i % 3 == 0:
                    torch.mm(a, b)
                elif i % 3 == 1:
                    torch.addmm(bias, a, b)
                else:
                    torch.bmm(ba, bb)

        inner = []

        def outer():
            barrier.wait()
            ops(0, OPS_PER_THREAD // 4)
            inner.append(torchscan_dispatch.measure_flops(lambda: ops(OPS_PER_THREAD // 4, 3 * OPS_PER_THREAD // 4)))
            ops(3 * OPS_PER_THREAD // 4, OPS_PER_THREAD)

        # Every thread's tensors exist before any measurement begins: a thread
        # making them while another one measures would be unseen work there.
        barrier.wait()
        results[t] = (torchscan_dispatch.measure_flops(outer), inner[0], (m, k, n), before, thread_state())

    run_threads(run)
    for t, (outer, inner, (m, k, n), before, after) in results.items():
        # 1000 calls cycling mm/addmm/bmm: 334 mm, 333 addmm, 333 bmm; the
        # inner measurement spans calls 250..749: 166 mm, 167 addmm, 167 bmm.
        assert outer["by_operator"] == {
            "aten.mm": 334 * mm_flops(m, k, n),
            "aten.addmm": 333 * mm_flops(m, k, n),
            "aten.bmm": 333 * 2 * mm_flops(m, k, n),
        }, t
        assert outer["total"]["status"] == "complete", t
        assert inner["by_operator"] == {
            "aten.mm": 166 * mm_flops(m, k, n),
            "aten.addmm": 167 * mm_flops(m, k, n),
            "aten.bmm": 167 * 2 * mm_flops(m, k, n),
        }, t
        assert after == before, t


def test_unmeasured_threads_running_alongside_a_measurement_are_not_counted():
    measuring, done = threading.Event(), threading.Event()
    ops_while_measuring = [0] * 4
    states = []
    # Each thread makes its tensor before the measurement opens: randn's
    # normal_ on another thread during it would be reported too.
    set_up = threading.Barrier(5)

    native_ids = set()

    def unmeasured(index):
        a = torch.randn(5, 5)
        native_ids.add(threading.get_native_id())
        states.append(thread_state())
        set_up.wait()
        while not done.is_set():
            during = measuring.is_set()
            torch.mm(a, a)
            if during:
                ops_while_measuring[index] += 1
        states.append(thread_state())

    others = [threading.Thread(target=unmeasured, args=(i,)) for i in range(4)]
    for thread in others:
        thread.start()
    set_up.wait()
    a, b = torch.randn(3, 7), torch.randn(7, 2)

    def workload():
        measuring.set()
        while min(ops_while_measuring) < 20:  # the others really run meanwhile
            torch.bmm(a[None], b[None])
        for _ in range(500):
            torch.mm(a, b)
        measuring.clear()

    try:
        report = torchscan_dispatch.measure_flops(workload)
    finally:
        done.set()
        for thread in others:
            thread.join()
    bmm_calls = report["by_operator"]["aten.bmm"] // mm_flops(3, 7, 2)
    assert bmm_calls >= 1
    assert report["by_operator"] == {"aten.mm": 500 * mm_flops(3, 7, 2), "aten.bmm": bmm_calls * mm_flops(3, 7, 2)}
    assert min(ops_while_measuring) >= 20
    assert len(set(states)) == 1  # no other thread ever saw counting switched on
    # Not counted, but named: the total is a lower bound.
    assert report["total"]["status"] == "partial"
    (diagnostic,) = report["diagnostics"]
    assert (diagnostic["code"], diagnostic["operator"]) == ("unseen_work", "aten.mm")
    for native_id in native_ids:
        assert f"on thread {native_id} " in diagnostic["message"]


class MatMul(torch.autograd.Function):
    """y = a @ b with a hand-written backward."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a @ b

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return grad @ b.t(), a.t() @ grad


def test_custom_function_backward_run_by_the_engine_counts_per_thread():
    barrier = threading.Barrier(THREADS)
    results = {}

    def run(t):
        m, k, n = 2 + t, 3, 4 + t % 2
        a = torch.randn(m, k, requires_grad=True)
        b = torch.randn(k, n, requires_grad=True)
        grad = torch.ones(m, n)

        def workload():
            barrier.wait()
            for _ in range(20):
                MatMul.apply(a, b).backward(grad)

        results[t] = (torchscan_dispatch.measure_flops(workload), (m, k, n))

    run_threads(run)
    for t, (report, (m, k, n)) in results.items():
        # Forward [m,k]@[k,n]; backward [m,n]@[n,k] and [k,m]@[m,n].
        assert report["by_operator"] == {"aten.mm": 20 * 3 * mm_flops(m, k, n)}, t


def test_autograd_grad_inside_the_measurement_is_counted():
    a = torch.randn(4, 6, requires_grad=True)
    b = torch.randn(6, 3)
    c = torch.randn(6, 3, requires_grad=True)
    grad = torch.ones(4, 3)

    def workload():
        (grad_a,) = torch.autograd.grad(torch.mm(a, b), (a,), grad)
        assert grad_a.shape == a.shape
        torch.autograd.grad(MatMul.apply(a, c), (a, c), grad)

    report = torchscan_dispatch.measure_flops(workload)
    # mm forward + its grad_a only (b needs none); MatMul forward + both grads.
    assert report["by_operator"] == {
        "aten.mm": mm_flops(4, 6, 3) + mm_flops(4, 3, 6) + mm_flops(4, 6, 3) + mm_flops(4, 3, 6) + mm_flops(6, 4, 3)
    }


def _mlp(width_in, hidden, width_out):
    return nn.Sequential(nn.Linear(width_in, hidden), nn.Linear(hidden, width_out))


def test_crawl_module_and_measure_flops_on_eight_threads_at_once():
    barrier = threading.Barrier(THREADS)
    failures = []

    def run(t):
        width_in, hidden, width_out = 3 + t, 5 + t, 2 + t % 3
        model = _mlp(width_in, hidden, width_out)
        x = torch.randn(4, width_in)
        first, second = mm_flops(1, width_in, hidden), mm_flops(1, hidden, width_out)
        barrier.wait()
        for _ in range(10):
            if t % 2 == 0:
                report = torchscan_dispatch.crawl_module(model, (width_in,))
                flops = {layer["path"]: layer["total"]["value"] for layer in report["layer_operator_flops"]}
                if report["operator_flops"]["by_operator"] != {"aten.addmm": first + second} or flops != {
                    "": first + second,
                    "0": first,
                    "1": second,
                }:
                    failures.append((t, report["operator_flops"], flops))
            else:
                report = torchscan_dispatch.measure_flops(lambda: model(x))
                expected = {"Sequential": 4 * (first + second), "Sequential.0": 4 * first, "Sequential.1": 4 * second}
                if report["by_module"] != expected or report["by_operator"] != {"aten.addmm": 4 * (first + second)}:
                    failures.append((t, report["by_module"], report["by_operator"]))

    run_threads(run)
    assert failures == []


def test_threads_importing_and_loading_at_once_in_a_fresh_process():
    result = run_fresh_python(
        """
        import os, threading
        barrier = threading.Barrier(8)
        results, errors = {}, []

        def run(t):
            try:
                barrier.wait()
                import torch
                import torchscan_dispatch
                path = torchscan_dispatch.load_library()
                a = torch.ones(2 + t, 3)
                report = torchscan_dispatch.measure_flops(lambda: torch.mm(a, a.t()))
                results[t] = (path, report["by_operator"])
            except BaseException as error:
                errors.append(repr(error))

        threads = [threading.Thread(target=run, args=(t,)) for t in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == [], errors
        assert len({path for path, _ in results.values()}) == 1
        for t, (_, by_operator) in results.items():
            assert by_operator == {"aten.mm": 2 * (2 + t) * 3 * (2 + t)}, (t, by_operator)
        import torch
        path = os.path.realpath(results[0][0])
        mapped = {line.split()[-1] for line in open("/proc/self/maps") if "libtorchscan_dispatch" in line}
        assert mapped == {path}, mapped
        loaded = [p for p in torch.ops.loaded_libraries if "libtorchscan_dispatch" in p]
        assert len(loaded) == 1, loaded
        print("OK")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("OK")
