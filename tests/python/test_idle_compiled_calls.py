"""What Dynamo sees of the library while nothing is measured.

The torch.compile integration puts a view of `torch` in place of Dynamo's
module-level `torch` (ModuleView, python/operators/module_view.h), so that
compiled calls get our guard class. These tests check that the view reads
everything else through, live, and that a compiled call made while no
measurement counts on its thread and none of our module hooks is installed
gets PyTorch's own _ForceDispatchKeyGuard (NOTE [Idle compiled calls] in
_compiled_calls.py). The cost of both is section 10 of tools/bench.
"""

from __future__ import annotations

import threading
import types

import pytest
import torch
import torch._dynamo
import torch._dynamo.eval_frame as eval_frame

import torchscan_dispatch
from torchscan_dispatch import _compiler_integration
from torchscan_dispatch._library import hooks


@pytest.fixture(scope="module", autouse=True)
def installed():
    if not _compiler_integration.integration_enabled():
        pytest.skip("TORCHSCAN_DISPATCH_COMPILER=off keeps the library out of Dynamo")
    _compiler_integration.install()


def view(target, own):
    return hooks().ModuleView(target, own)


def test_a_view_reads_the_targets_attributes():
    target = types.ModuleType("target")
    target.answer = 42
    assert view(target, {}).answer == 42


def test_a_view_reads_the_target_at_each_access():
    target = types.ModuleType("target")
    target.answer = 42
    seen = view(target, {})
    target.answer = 43
    target.added_later = "new"
    assert (seen.answer, seen.added_later) == (43, "new")


def test_a_views_own_attribute_comes_before_the_targets():
    target = types.ModuleType("target")
    target.answer = 42
    assert view(target, {"answer": 7}).answer == 7


def test_setting_an_attribute_on_a_view_leaves_the_target_alone():
    target = types.ModuleType("target")
    target.answer = 42
    seen = view(target, {})
    seen.answer = 7
    assert (seen.answer, target.answer) == (7, 42)


def test_deleting_a_views_own_attribute_shows_the_targets_again():
    target = types.ModuleType("target")
    target.answer = 42
    seen = view(target, {"answer": 7})
    del seen.answer
    assert seen.answer == 42


def test_deleting_an_attribute_the_view_does_not_own_is_an_attribute_error():
    target = types.ModuleType("target")
    target.answer = 42
    seen = view(target, {})
    with pytest.raises(AttributeError, match="answer"):
        del seen.answer
    assert target.answer == 42


def test_a_missing_attribute_is_the_targets_attribute_error():
    with pytest.raises(AttributeError, match="no_such_name"):
        view(types.ModuleType("target"), {}).no_such_name


def test_a_view_keeps_its_own_copy_of_the_dict_it_was_given():
    own = {"answer": 7}
    seen = view(types.ModuleType("target"), own)
    own["answer"] = 8
    seen.other = 1
    assert (seen.answer, own) == (7, {"answer": 8})


def test_a_view_takes_a_dict_of_its_own_attributes():
    with pytest.raises(TypeError):
        view(types.ModuleType("target"), [("answer", 7)])


def test_dynamo_sees_torch_through_a_view():
    assert type(eval_frame.torch).__name__ == "ModuleView"
    assert eval_frame.torch.compiler is torch.compiler
    assert eval_frame.torch._C._dispatch_tls_local_include_set is torch._C._dispatch_tls_local_include_set


def guard_from_dynamos_view():
    """What Dynamo's compile wrapper constructs for a compiled call here."""
    return eval_frame.torch._C._ForceDispatchKeyGuard(
        torch._C._dispatch_tls_local_include_set(), torch._C._dispatch_tls_local_exclude_set()
    )


def test_an_idle_compiled_call_gets_pytorchs_own_guard():
    assert type(guard_from_dynamos_view()) is torch._C._ForceDispatchKeyGuard


def test_a_compiled_call_inside_a_measurement_gets_our_guard():
    guards = []
    torchscan_dispatch.measure_flops(lambda: guards.append(guard_from_dynamos_view()), track_modules=False)
    assert type(guards[0]).__name__ == "CompiledCallGuard"


def test_a_compiled_call_beside_a_module_tracking_measurement_gets_our_guard():
    """Another thread's measurement installs our module hooks: this thread's
    compiled calls must hide them from Dynamo's guards, so they take our
    guard although nothing counts here."""
    started, release = threading.Event(), threading.Event()

    def workload():
        started.set()
        release.wait(60)

    measuring = threading.Thread(target=lambda: torchscan_dispatch.measure_flops(workload, track_modules=True))
    measuring.start()
    try:
        assert started.wait(60)
        guard = guard_from_dynamos_view()
    finally:
        release.set()
        measuring.join(60)
    assert type(guard).__name__ == "CompiledCallGuard"
    assert type(guard_from_dynamos_view()) is torch._C._ForceDispatchKeyGuard  # idle again


def test_an_idle_guard_forces_dynamos_key_sets():
    """PyTorch's own guard, as without the library: the sets it forces are
    the ones Dynamo passed, restored on exit."""
    before = (torch._C._dispatch_tls_local_include_set(), torch._C._dispatch_tls_local_exclude_set())
    forced_include = before[0] | torch._C.DispatchKeySet(torch._C.DispatchKey.Python)
    with eval_frame.torch._C._ForceDispatchKeyGuard(forced_include, before[1]):
        inside = torch._C._dispatch_tls_local_include_set()
    assert (inside, torch._C._dispatch_tls_local_include_set()) == (forced_include, before[0])


def test_a_compiled_model_counts_the_same_after_idle_calls():
    """Idle calls take PyTorch's path; a measured call of the same compiled
    model still takes ours: counted by its tally, without recompiling."""
    torch._dynamo.reset()
    try:
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Linear(32, 8))
        x = torch.randn(4, 16)
        compiled = torch.compile(model)
        with torch.no_grad():
            expected = model(x)
            for _ in range(3):
                assert torch.allclose(compiled(x), expected, atol=1e-6)
            with torch._dynamo.config.patch(error_on_recompile=True):
                report = torchscan_dispatch.measure_flops(lambda: compiled(x), track_modules=False)
        # Two addmm: 2*4*16*32 and 2*4*32*8 (FLOPs of [m,k] @ [k,n] = 2mkn).
        assert (report["total"]["status"], report["total"]["value"]) == ("complete", 2 * 4 * 16 * 32 + 2 * 4 * 32 * 8)
    finally:
        torch._dynamo.reset()
