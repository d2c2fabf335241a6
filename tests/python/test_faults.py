"""Fault injection from Python: workloads that raise in forward, in the
engine's backward, in a custom formula, in module hooks during crawl_module,
KeyboardInterrupt raised inside the workload or delivered by a signal or by
_thread.interrupt_main. After each fault the thread's dispatch state, grad
mode, every module hook (the model's and torch's global ones) and training
flag are compared with a snapshot taken before (checked, not assumed), and a
following measurement must count exactly (hand-computed values)."""

import _thread
import signal
import threading
import time

import pytest
import torch
from torch import nn

import torchscan_dispatch
from reliability_support import global_hooks, mm_flops, module_state, thread_state


class Snapshot:
    """Everything a measurement may touch, for one model."""

    def __init__(self, model=None):
        self.model = model
        self.state = self._take()

    def _take(self):
        return (thread_state(), global_hooks(), module_state(self.model) if self.model is not None else None)

    def assert_unchanged(self):
        assert self._take() == self.state


def assert_counts_exactly_afterwards():
    a, b = torch.randn(3, 4), torch.randn(4, 5)
    report = torchscan_dispatch.measure_flops(lambda: torch.mm(a, b))
    assert report["by_operator"] == {"aten.mm": mm_flops(3, 4, 5)}
    assert report["total"]["status"] == "complete"


def mlp():
    return nn.Sequential(nn.Linear(4, 6), nn.Linear(6, 3))


# crawl_module of mlp() on input_shape (4,): batch 1, addmm [1,4]@[4,6] and
# [1,6]@[6,3].
MLP_CRAWL_ADDMM = mm_flops(1, 4, 6) + mm_flops(1, 6, 3)


def assert_crawl_counts_exactly(model):
    report = torchscan_dispatch.crawl_module(model, (4,))
    assert report["operator_flops"]["by_operator"] == {"aten.addmm": MLP_CRAWL_ADDMM}
    assert [layer["total"]["value"] for layer in report["layer_operator_flops"]] == [
        MLP_CRAWL_ADDMM,
        mm_flops(1, 4, 6),
        mm_flops(1, 6, 3),
    ]


class Boom(Exception):
    pass


def test_exception_in_forward_propagates_and_restores_everything():
    model = mlp().train()
    snapshot = Snapshot(model)
    error = Boom("forward failed")

    class Failing(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = model

        def forward(self, x):
            self.inner(x)
            raise error

    failing = Failing()
    x = torch.randn(2, 4, requires_grad=True)
    with pytest.raises(Boom) as raised:
        torchscan_dispatch.measure_flops(lambda: failing(x).sum().backward())
    assert raised.value is error
    snapshot.assert_unchanged()
    with pytest.raises(Boom) as raised:
        torchscan_dispatch.crawl_module(failing, (4,))
    assert raised.value is error
    snapshot.assert_unchanged()
    assert failing.training  # crawl_module's eval() was undone
    assert_counts_exactly_afterwards()
    assert_crawl_counts_exactly(model)


class FailingBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a @ a

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        grad @ a  # work done before the failure
        raise Boom("backward failed")


def test_exception_in_the_engines_backward_propagates_and_restores_everything():
    snapshot = Snapshot()
    a = torch.randn(3, 3, requires_grad=True)
    with pytest.raises(Boom, match="backward failed"):
        torchscan_dispatch.measure_flops(lambda: FailingBackward.apply(a).sum().backward())
    snapshot.assert_unchanged()
    assert_counts_exactly_afterwards()

    # Caught inside the workload: the measurement goes on and counts exactly
    # what ran (the forward mm, the backward's mm before it raised, one more).
    def workload():
        with pytest.raises(Boom):
            FailingBackward.apply(a).backward(torch.ones(3, 3))
        torch.mm(a, a)

    report = torchscan_dispatch.measure_flops(workload)
    assert report["by_operator"] == {"aten.mm": 3 * mm_flops(3, 3, 3)}
    snapshot.assert_unchanged()


@pytest.mark.parametrize("transform", ["jacrev", "jacobian_vectorized"])
def test_exception_in_the_backward_of_a_transformed_module_restores_everything(transform):
    """The batched backward of jacrev (native gradient watches on functorch's
    wrapped tensors) and of jacobian(vectorize=True) (legacy vmap) raises
    from a gradient hook: the workload's exception, unchanged, and nothing
    left behind, functorch's interpreter stack included."""
    model = mlp().train()
    snapshot = Snapshot(model)
    error = Boom("gradient hook failed")

    def raise_error(grad):
        raise error

    def f(v):
        y = model(v)
        y.register_hook(raise_error)
        return y

    x = torch.randn(4)
    if transform == "jacrev":
        run = lambda: torch.func.jacrev(f)(x)  # noqa: E731
    else:
        run = lambda: torch.autograd.functional.jacobian(f, x, vectorize=True)  # noqa: E731
    with pytest.raises(Boom) as raised:
        torchscan_dispatch.measure_flops(run)
    assert raised.value is error
    assert torch._C._functorch.peek_interpreter_stack() is None
    snapshot.assert_unchanged()
    assert_counts_exactly_afterwards()


def test_exception_in_a_custom_formula_propagates_and_restores_everything():
    snapshot = Snapshot()
    error = ArithmeticError("formula failed")

    def formula(*args, **kwargs):
        raise error

    with pytest.raises(ArithmeticError) as raised:
        torchscan_dispatch.measure_flops(
            lambda: torch.sin(torch.ones(3)), custom_mapping={torch.ops.aten.sin: formula}
        )
    assert raised.value is error
    snapshot.assert_unchanged()
    assert_counts_exactly_afterwards()


@pytest.mark.parametrize("kind", ["forward_hook", "forward_pre_hook", "global_forward_hook"])
def test_exception_in_a_hook_during_crawl_module_restores_hooks_and_flags(kind):
    model = mlp()
    model.train()
    model[1].eval()  # mixed flags, restored one by one
    error = Boom(kind)

    def hook(*args, **kwargs):
        raise error

    if kind == "forward_hook":
        handle = model[1].register_forward_hook(hook)
    elif kind == "forward_pre_hook":
        handle = model[0].register_forward_pre_hook(hook)
    else:
        handle = torch.nn.modules.module.register_module_forward_hook(hook)
    try:
        snapshot = Snapshot(model)
        with pytest.raises(Boom) as raised:
            torchscan_dispatch.crawl_module(model, (4,))
        assert raised.value is error
        snapshot.assert_unchanged()  # the user's own hook is still there
        assert model.training and model[0].training and not model[1].training
        with pytest.raises(Boom):
            torchscan_dispatch.measure_flops(lambda: model(torch.randn(2, 4)))
        snapshot.assert_unchanged()
    finally:
        handle.remove()
    assert_crawl_counts_exactly(model)
    assert_counts_exactly_afterwards()


def test_keyboard_interrupt_raised_inside_the_workload():
    model = mlp().train()
    snapshot = Snapshot(model)

    def interrupted():
        model(torch.randn(2, 4))
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        torchscan_dispatch.measure_flops(interrupted)
    snapshot.assert_unchanged()

    class Interrupting(nn.Module):
        def forward(self, x):
            return interrupted()

    with pytest.raises(KeyboardInterrupt):
        torchscan_dispatch.crawl_module(Interrupting(), (4,))
    snapshot.assert_unchanged()
    assert_counts_exactly_afterwards()
    assert_crawl_counts_exactly(model)


class LongWorkload:
    """model(x) in a loop until a KeyboardInterrupt gets through (at most
    60 s), and the signal handler that interrupts it.

    NOTE: a KeyboardInterrupt raised by a signal handler is lost when the
    signal arrives while a finalizer runs (the __del__ of an object the
    collector frees meanwhile, such as an earlier test's subprocess.Popen:
    Python reports the exception as unraisable and goes on). How often that
    happens depends on the machine's speed and load, so one signal is not
    enough: the signal is sent again and again (a timer's ticks, a thread's
    loop), and `handler` raises only while the loop still runs and has
    advanced since the last raise. Exactly one KeyboardInterrupt leaves the
    loop; none arrives before the workload started or after it ended."""

    def __init__(self, model, x):
        self.model, self.x = model, x
        self.running = False
        self.iterations = 0
        self.raised_at = None
        self.ran = False

    def __call__(self, x=None):
        self.running = self.ran = True
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                self.model(self.x if x is None else x)
                self.iterations += 1
            raise AssertionError("no interrupt got through in 60 s")
        finally:
            self.running = False

    def handler(self, signum, frame):
        if self.running and (self.raised_at is None or self.iterations > self.raised_at):
            self.raised_at = self.iterations
            raise KeyboardInterrupt


class _InModule(nn.Module):
    def __init__(self, workload):
        super().__init__()
        self.workload = workload

    def forward(self, x):
        return self.workload(x)


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals need the main thread")
def test_signal_driven_interrupt_of_a_long_measure_flops_and_crawl():
    model = mlp().train()
    x = torch.randn(2, 4)
    snapshot = Snapshot(model)
    for run in (
        lambda workload: torchscan_dispatch.measure_flops(workload),
        lambda workload: torchscan_dispatch.crawl_module(nn.Sequential(_InModule(workload)), (4,)),
    ):
        workload = LongWorkload(model, x)
        previous = signal.signal(signal.SIGALRM, workload.handler)
        signal.setitimer(signal.ITIMER_REAL, 0.05, 0.05)  # a SIGALRM every 50 ms
        try:
            with pytest.raises(KeyboardInterrupt):
                run(workload)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        assert workload.ran and workload.raised_at is not None
        snapshot.assert_unchanged()
    assert_counts_exactly_afterwards()
    assert_crawl_counts_exactly(model)


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="interrupts the main thread")
def test_interrupt_main_from_another_thread_during_a_long_workload():
    model = mlp().train()
    x = torch.randn(2, 4)
    snapshot = Snapshot(model)
    workload = LongWorkload(model, x)
    finished = threading.Event()

    def interrupt_while_running():
        while not finished.wait(0.05):
            if workload.running:
                _thread.interrupt_main()  # calls the SIGINT handler in the main thread

    previous = signal.signal(signal.SIGINT, workload.handler)
    interrupter = threading.Thread(target=interrupt_while_running)
    interrupter.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            torchscan_dispatch.measure_flops(workload)
    finally:
        finished.set()
        interrupter.join()
        signal.signal(signal.SIGINT, previous)  # handles a pending interrupt first
    assert workload.ran and workload.raised_at is not None
    snapshot.assert_unchanged()
    assert_counts_exactly_afterwards()


def test_many_faults_in_a_row_leave_no_trace():
    model = mlp().train()
    snapshot = Snapshot(model)
    a = torch.randn(3, 3, requires_grad=True)
    faults = [
        lambda: torchscan_dispatch.measure_flops(lambda: (torch.mm(a, a), 1 / 0)),
        lambda: torchscan_dispatch.measure_flops(lambda: FailingBackward.apply(a).sum().backward()),
        lambda: torchscan_dispatch.crawl_module(nn.Sequential(model, _Raise()), (4,)),
        lambda: torchscan_dispatch.measure_flops(lambda: torchscan_dispatch.measure_flops(lambda: 1 / 0)),
    ]
    for i in range(100):
        with pytest.raises((ZeroDivisionError, Boom)):
            faults[i % len(faults)]()
        assert thread_state() == snapshot.state[0], i
    snapshot.assert_unchanged()
    assert_counts_exactly_afterwards()
    assert_crawl_counts_exactly(model)


class _Raise(nn.Module):
    def forward(self, x):
        raise Boom("in a module")
