"""The crawl's layer hooks, written into a module's hook dicts (NOTE [Hooks
written into the module's dicts] in _forward_hooks.py): the same calls, in
the same order, as hooks registered through PyTorch's methods, and the
module's dicts as they were once removed."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.utils.hooks import RemovableHandle

from torchscan_dispatch import crawl_module
from torchscan_dispatch._forward_hooks import ForwardHooks

DICTS = ("_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_forward_hooks", "_forward_hooks_with_kwargs",
         "_forward_hooks_always_called")


def hook_state(module: nn.Module) -> dict[str, list]:
    return {name: list(getattr(module, name).items()) for name in DICTS}


class Scale(nn.Module):
    def forward(self, x, *, factor=1.0):
        return x * factor


def recording_hooks(log: list, tag: str):
    def pre_hook(module, args, kwargs):
        log.append((tag, "pre", args[0].shape, dict(kwargs)))
        return None

    def hook(module, args, kwargs, output):
        log.append((tag, "post", output.shape, dict(kwargs)))
        return None

    return pre_hook, hook


def run_with(register, module: nn.Module) -> list:
    """The hook calls seen around one forward, with a user's pre-hook that
    doubles the input (registered first) and a user's forward hook
    registered after ours."""
    log: list = []

    def user_pre_hook(module, args):
        log.append(("user", "pre", args[0].shape, {}))
        return (torch.cat([args[0], args[0]]),)

    first = module.register_forward_pre_hook(user_pre_hook)
    remove = register(module, *recording_hooks(log, "ours"))
    last = module.register_forward_hook(lambda m, a, o: log.append(("user", "post", o.shape, {})))
    module(torch.ones(2, 3), factor=2.0)
    remove()
    first.remove()
    last.remove()
    return log


def through_methods(module, pre_hook, hook):
    handles = [module.register_forward_pre_hook(pre_hook, with_kwargs=True),
               module.register_forward_hook(hook, with_kwargs=True)]
    return lambda: [handle.remove() for handle in handles]


def through_dicts(module, pre_hook, hook):
    hooks = ForwardHooks()
    hooks.add(module, pre_hook, hook)
    return hooks.remove_all


def test_hooks_run_as_registered_ones_do():
    expected = run_with(through_methods, Scale())
    assert expected == [
        ("user", "pre", torch.Size([2, 3]), {}),
        ("ours", "pre", torch.Size([4, 3]), {"factor": 2.0}),
        ("ours", "post", torch.Size([4, 3]), {"factor": 2.0}),
        ("user", "post", torch.Size([4, 3]), {}),
    ]
    assert run_with(through_dicts, Scale()) == expected


def test_removal_leaves_the_dicts_as_they_were():
    module = Scale()
    kept = module.register_forward_hook(lambda m, a, o: None, always_call=True)
    before = hook_state(module)
    hooks = ForwardHooks()
    hooks.add(module, *recording_hooks([], "ours"))
    assert len(module._forward_pre_hooks) == 1 and len(module._forward_hooks) == 2
    hooks.remove_all()
    assert hook_state(module) == before
    kept.remove()
    assert all(not entries for entries in hook_state(module).values())


def test_ids_come_from_pytorchs_counter():
    module = Scale()
    hooks = ForwardHooks()
    start = RemovableHandle.next_id
    hooks.add(module, *recording_hooks([], "ours"))
    theirs = module.register_forward_hook(lambda m, a, o: None)
    assert list(module._forward_pre_hooks) == [start]
    assert list(module._forward_hooks) == [start + 1, start + 2]
    assert theirs.id == start + 2
    hooks.remove_all()
    assert list(module._forward_hooks) == [theirs.id]
    theirs.remove()


def test_removal_survives_a_forward_that_cleared_the_dicts():
    module = Scale()
    hooks = ForwardHooks()
    hooks.add(module, *recording_hooks([], "ours"))
    module._forward_hooks.clear()
    module._forward_pre_hooks = type(module._forward_pre_hooks)()
    hooks.remove_all()
    assert not module._forward_hooks and not module._forward_pre_hooks
    assert not module._forward_hooks_with_kwargs and not module._forward_pre_hooks_with_kwargs


class TrackedHooks(nn.Linear):
    """A class that keeps its own record of its hooks."""

    def __init__(self):
        super().__init__(3, 3)
        self.registered = []

    def register_forward_pre_hook(self, hook, **kwargs):
        self.registered.append("pre")
        return super().register_forward_pre_hook(hook, **kwargs)

    def register_forward_hook(self, hook, **kwargs):
        self.registered.append("post")
        return super().register_forward_hook(hook, **kwargs)


def test_a_class_with_its_own_registration_gets_the_method_calls():
    module = TrackedHooks()
    log: list = []
    hooks = ForwardHooks()
    hooks.add(module, *recording_hooks(log, "ours"))
    assert module.registered == ["pre", "post"]
    module(torch.ones(1, 3))
    assert [entry[:2] for entry in log] == [("ours", "pre"), ("ours", "post")]
    hooks.remove_all()
    assert not module._forward_hooks and not module._forward_pre_hooks


def test_a_crawl_is_the_same_with_either_registration(monkeypatch):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 3), TrackedHooks())
    args = (torch.randn(2, 3, 8, 8),)
    written = crawl_module(model, args=args)
    assert model[4].registered == ["pre", "post"]

    def methods_only(self, module, pre_hook, hook):
        self._handles.append(module.register_forward_pre_hook(pre_hook, with_kwargs=True))
        self._handles.append(module.register_forward_hook(hook, with_kwargs=True))

    monkeypatch.setattr(ForwardHooks, "add", methods_only)
    registered = crawl_module(model, args=args)
    assert written == registered
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())


def test_hooks_are_removed_when_the_forward_raises():
    class Fails(nn.Module):
        def forward(self, x):
            raise RuntimeError("the workload's own error")

    model = nn.Sequential(nn.Linear(3, 3), Fails())
    with pytest.raises(RuntimeError, match="the workload's own error"):
        crawl_module(model, args=(torch.ones(1, 3),))
    for module in model.modules():
        assert all(not entries for entries in hook_state(module).values())
