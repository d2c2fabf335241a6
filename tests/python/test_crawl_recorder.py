"""crawl_module's native layer recorder (python/operators/crawl_recorder.cc)
against the released torchscan==0.2.0, on what its native path hands back to
Python: lazy modules (parameters read at the first call), values it does not
describe natively (tensor subclasses, mappings, namedtuples, other objects),
calls with keyword arguments (bound to the forward signature), another
thread's calls, and its own lifetime.
"""

import collections
import gc
import threading

import pytest
import torch
import torchscan
from torch import nn

import torchscan_dispatch

Pair = collections.namedtuple("Pair", "left right")


class Tagged(torch.Tensor):
    """A tensor subclass: described by Python's rules, not natively."""


class Marker:
    pass


class ManyValues(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(6, 4)
        self.norm = nn.LayerNorm(4)

    def forward(self, x, options, pair, scale=2.0, tag="t", marker=None, flag=True, extra=None, items=()):
        h = self.linear(input=x * scale)  # a keyword call of a metric leaf
        h = self.norm(h + pair.left.sum())
        return {"out": h, "pair": Pair(h, pair.right), "count": 3, "items": [h, None, 1.5]}


def _many_values_call():
    torch.manual_seed(0)
    x = torch.randn(2, 6).as_subclass(Tagged)
    pair = Pair(torch.randn(3), torch.randn(1, 2))
    options = {"depth": 2, 7: torch.zeros(2), "not an identifier": 1}
    return (x, options, pair), {"tag": "name", "marker": Marker(), "items": [torch.ones(1), b"x", 1j]}


def _compare(model, args, kwargs):
    torch.manual_seed(1)
    ours = torchscan_dispatch.crawl_module(model, args=args, kwargs=kwargs)
    torch.manual_seed(1)
    theirs = torchscan.crawl_module(model, args=args, kwargs=kwargs)
    assert ours["inputs"] == theirs["inputs"]
    assert ours["layers"] == theirs["layers"]
    assert ours["totals"]["module_flops"] == theirs["totals"]["module_flops"]
    assert ours["totals"]["parameters"] == theirs["totals"]["parameters"]
    return ours


def test_values_described_by_python_match_released_torchscan():
    args, kwargs = _many_values_call()
    ours = _compare(ManyValues(), args, kwargs)
    root = ours["layers"][0]
    assert root["output"]["kind"] == "mapping"
    assert root["input"]["args"][0]["kind"] == "tensor"  # the subclass
    assert root["input"]["args"][2] == {"kind": "tuple", "items": [
        {"kind": "tensor", "shape": [3], "dtype": "torch.float32", "device": "cpu", "requires_grad": False},
        {"kind": "tensor", "shape": [1, 2], "dtype": "torch.float32", "device": "cpu", "requires_grad": False},
    ]}


def test_structure_mode_with_values_described_by_python_matches_released_torchscan():
    args, kwargs = _many_values_call()
    model = ManyValues()
    ours = torchscan_dispatch.crawl_module(model, args=args, kwargs=kwargs, mode="structure")
    theirs = torchscan.crawl_module(model, args=args, kwargs=kwargs, mode="structure")
    assert {**ours, "context": None} == {**theirs, "context": None}


def test_a_keyword_call_of_a_metric_leaf_gets_its_formula():
    args, kwargs = _many_values_call()
    ours = torchscan_dispatch.crawl_module(ManyValues(), args=args, kwargs=kwargs)
    linear = next(layer for layer in ours["layers"] if layer["path"] == "linear")
    assert linear["input"]["args"] == [] and list(linear["input"]["kwargs"]) == ["input"]
    # nn.Linear(6, 4) on 2 rows: 2 * 6 * 4 multiply-adds, and the bias.
    assert linear["metrics"]["macs"]["value"] == 2 * 6 * 4


def test_lazy_modules_are_counted_after_they_initialise():
    model = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.LazyLinear(2))
    x = torch.randn(3, 5)
    ours = torchscan_dispatch.crawl_module(model, args=(x,))
    # Each layer counts its own parameters (the root holds none itself), and
    # a lazy module is named by the class it becomes.
    layers = [(layer["type"], layer["parameters"]["trainable"]) for layer in ours["layers"]]
    assert layers == [("Sequential", 0), ("Linear", 5 * 8 + 8), ("ReLU", 0), ("Linear", 8 * 2 + 2)]


def test_lazy_modules_match_released_torchscan():
    torch.manual_seed(0)
    _compare(nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.LazyLinear(2)), (torch.randn(3, 5),), None)


def test_another_threads_calls_are_not_layers_of_the_crawl():
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    x = torch.randn(2, 4)
    started, release = threading.Event(), threading.Event()

    class Waits(nn.Module):
        def forward(self, y):
            started.set()
            release.wait(10)
            return y

    waiting = Waits()
    root = nn.Sequential(model, waiting)

    def other_thread():
        started.wait(10)
        model(x)  # runs while the crawl's forward is inside `waiting`
        release.set()

    thread = threading.Thread(target=other_thread)
    thread.start()
    report = torchscan_dispatch.crawl_module(root, args=(x,))
    thread.join()
    assert [(layer["path"], layer["call_index"]) for layer in report["layers"]] == [
        ("", 0), ("0", 0), ("0.0", 0), ("0.1", 0), ("1", 0)]


def test_crawls_leave_no_recorder_behind():
    model = nn.Sequential(nn.Linear(4, 4))
    for mode in ("full", "structure"):
        torchscan_dispatch.crawl_module(model, args=(torch.randn(2, 4),), mode=mode)
    gc.collect()
    assert [o for o in gc.get_objects() if type(o).__name__ == "CrawlRecorder"] == []
    assert not model._forward_hooks and not model._forward_pre_hooks


@pytest.mark.parametrize("mode", ["full", "structure"])
def test_a_failing_forward_leaves_the_model_as_it_was(mode):
    class Fails(nn.Module):
        def forward(self, x):
            raise KeyError("inside the model")

    model = nn.Sequential(nn.Linear(4, 4), Fails()).train()
    with pytest.raises(KeyError, match="inside the model"):
        torchscan_dispatch.crawl_module(model, args=(torch.randn(2, 4),), mode=mode)
    assert model.training and model[0].training
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())


# --- a model's own tensors, read from the modules' dicts where their classes
# inherit nn.Module's methods, and through the methods where they override
# them (NOTE [A module's own tensors from its dicts], model_tensors.h)


class BiasHidden(nn.Linear):
    """Overrides parameters(): its layer tally and the model totals follow."""

    def parameters(self, recurse=True):
        return iter([self.weight])


class RunningStatsOnly(nn.BatchNorm1d):
    """Overrides named_buffers(): num_batches_tracked is left out."""

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        for name, buffer in super().named_buffers(prefix, recurse, remove_duplicate):
            if "running" in name:
                yield name, buffer


class OwnTensors(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = BiasHidden(5, 4)
        self.norm = RunningStatsOnly(4)
        self.plain = nn.Linear(4, 3, bias=False)  # a None entry in _parameters
        self.plain.register_parameter("alias", self.plain.weight)  # one object, two names
        self.frozen = nn.Linear(3, 3)
        self.frozen.requires_grad_(False)
        self.register_buffer("scale", torch.ones(3, dtype=torch.float64))
        self.register_buffer("scratch", torch.zeros(7), persistent=False)
        self.tied = nn.Linear(4, 3, bias=False)
        self.tied.weight = self.plain.weight  # shared across modules

    def forward(self, x):
        h = self.norm(self.hidden(x))
        return self.frozen(self.plain(h) + self.tied(h)) * self.scale


class WeightsOnlyRoot(OwnTensors):
    """A root that overrides parameters() and buffers(): the totals follow
    its methods, not the modules' dicts."""

    def parameters(self, recurse=True):
        return iter([self.hidden.weight, self.frozen.weight])

    def buffers(self, recurse=True):
        return iter([self.scale])


def _hand_totals(parameters, buffers):
    parameters = list({id(p): p for p in parameters}.values())
    buffers = list({id(b): b for b in buffers}.values())
    return {
        "trainable_parameters": sum(p.numel() for p in parameters if p.requires_grad),
        "frozen_parameters": sum(p.numel() for p in parameters if not p.requires_grad),
        "parameter_bytes": sum(p.numel() * p.element_size() for p in parameters),
        "buffer_elements": sum(b.numel() for b in buffers),
        "buffer_bytes": sum(b.numel() * b.element_size() for b in buffers),
    }


@pytest.mark.parametrize("model_class", [OwnTensors, WeightsOnlyRoot])
def test_overridden_tensor_methods_match_released_torchscan(model_class):
    torch.manual_seed(0)
    _compare(model_class().eval(), (torch.randn(2, 5),), None)


@pytest.mark.parametrize("model_class", [OwnTensors, WeightsOnlyRoot])
def test_model_totals_are_the_roots_tensors_each_counted_once(model_class):
    model = model_class().eval()
    report = torchscan_dispatch.crawl_module(model, args=(torch.randn(2, 5),))
    expected = _hand_totals(model.parameters(), model.buffers())
    assert expected == {name: report["totals"][name]["value"] for name in expected}
    tensors = [*model.parameters(), *model.buffers()]
    assert sorted({str(t.dtype) for t in tensors}) == report["context"]["dtypes"]
    assert sorted({str(t.device) for t in tensors}) == report["context"]["devices"]


def test_a_layer_tally_follows_its_classes_overridden_methods():
    report = torchscan_dispatch.crawl_module(OwnTensors().eval(), args=(torch.randn(2, 5),))
    layers = {layer["path"]: layer for layer in report["layers"]}
    assert 5 * 4 == layers["hidden"]["parameters"]["trainable"]  # no bias
    assert 4 + 4 == layers["norm"]["buffers"]["elements"]  # no num_batches_tracked
    assert 4 * 3 == layers["plain"]["parameters"]["trainable"]  # alias once
    assert 3 * 3 + 3 == layers["frozen"]["parameters"]["frozen"]
    assert layers["tied"]["parameters"] == {"trainable": 0, "frozen": 0, "bytes": 0, "shared": True}


class CountsSetattr(nn.Linear):
    """A class with its own __setattr__: the crawl must call it to give the
    training flag back."""

    def __init__(self):
        super().__init__(4, 4)
        object.__setattr__(self, "training_sets", [])

    def __setattr__(self, name, value):
        if name == "training":
            self.training_sets.append(value)
        super().__setattr__(name, value)


def test_each_training_flag_is_given_back_through_the_modules_own_setattr():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5), CountsSetattr(), nn.ReLU())
    model.train()
    model[1].eval()
    before = [m.training for m in model.modules()]
    model[2].training_sets.clear()
    torchscan_dispatch.crawl_module(model, args=(torch.ones(2, 4),))
    assert [m.training for m in model.modules()] == before == [True, True, False, True, True]
    # eval() then the crawl's own restore, through the class's __setattr__.
    assert model[2].training_sets == [False, True]
    # A module already in evaluation mode is left as it was.
    assert model[1].training is False
