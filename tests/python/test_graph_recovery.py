"""The one graph recovery (crawl/recover_from_graph.h) behind both front
ends whose modules keep no Python attributes: an ExportedProgram's modules
(FX graphs, python/torchscan_dispatch/_recover_from_graph.py) and a traced
TorchScript module (torchscan/script_module_graph.h).

For one module of each family with hyper-parameters, built with values
other than the defaults, the module formulas of an exported crawl and of a
traced crawl equal those of the eager crawl, which reads the module's own
attributes: the independent truth; and no attribute is reported
unrecovered, None being a value where the module holds None (a BatchNorm
without affine parameters). (Pool kernels are tuples: TorchScan 0.2
counts MaxPool2d(3) and MaxPool2d((3, 3)) differently, its quirk 10, and a
graph keeps only the tuple.)
"""

import math
import warnings

import pytest
import torch
from torch import nn

import torchscan_dispatch as tsd

METRICS = ("module_flops", "macs", "dmas", "receptive_field", "effective_stride", "effective_padding")

CASES = {
    "conv1d_same": (lambda: nn.Conv1d(4, 6, 3, padding="same", dilation=2, bias=False), (1, 4, 9)),
    "conv2d_grouped": (lambda: nn.Conv2d(4, 8, (3, 1), stride=(2, 1), padding=(1, 0), groups=2), (1, 4, 8, 8)),
    "conv3d": (lambda: nn.Conv3d(2, 3, 2, stride=2), (1, 2, 4, 4, 4)),
    "conv_transpose2d": (lambda: nn.ConvTranspose2d(4, 6, 3, stride=2, groups=2, bias=False), (1, 4, 5, 5)),
    "linear_no_bias": (lambda: nn.Linear(7, 5, bias=False), (3, 7)),
    "max_pool2d": (lambda: nn.MaxPool2d((3, 3), stride=(2, 2), padding=(1, 1)), (1, 2, 9, 9)),
    "max_pool1d_default_stride": (lambda: nn.MaxPool1d((2,)), (1, 2, 8)),
    "avg_pool2d": (lambda: nn.AvgPool2d((2, 3), stride=(1, 2)), (1, 2, 6, 7)),
    "batch_norm1d_no_affine": (lambda: nn.BatchNorm1d(5, affine=False, momentum=0.3), (4, 5)),
    "batch_norm2d": (lambda: nn.BatchNorm2d(3, momentum=0.05), (2, 3, 4, 4)),
    "layer_norm_no_bias": (lambda: nn.LayerNorm((3, 4), bias=False), (2, 3, 4)),
    "dropout": (lambda: nn.Dropout(0.3), (2, 6)),
    "relu_inplace": (lambda: nn.ReLU(inplace=True), (2, 6)),
    "relu6": (lambda: nn.ReLU6(), (2, 6)),
    "leaky_relu_inplace": (lambda: nn.LeakyReLU(0.2, inplace=True), (2, 6)),
    "elu": (lambda: nn.ELU(), (2, 6)),
}


class Wrapped(nn.Module):
    """The module as a child, so that it is a leaf layer of its own."""

    def __init__(self, module):
        super().__init__()
        self.module = module

    def forward(self, x):
        return self.module(x)


def leaf_metrics(report):
    layer = next(layer for layer in report["layers"] if layer["path"] == "module")
    return {name: layer["metrics"].get(name) for name in METRICS}


def crawl(subject, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tsd.crawl_module(subject, args=args)


@pytest.fixture(params=sorted(CASES), ids=str)
def case(request):
    build, shape = CASES[request.param]
    torch.manual_seed(0)
    model = Wrapped(build()).eval()
    example = torch.rand(*shape)
    return model, example, crawl(model, example.clone())


def test_an_exported_module_recovers_what_the_eager_module_holds(case):
    model, example, eager = case
    program = torch.export.export(model, (example.clone(),))
    exported = crawl(program, example.clone())
    assert [] == [d for d in exported["diagnostics"] if d["code"] == "unrecovered_module_attribute"]
    assert leaf_metrics(eager) == leaf_metrics(exported)


def test_a_traced_module_recovers_what_the_eager_module_holds(case):
    model, example, eager = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = torch.jit.trace(model, (example.clone(),))
    report = crawl(traced, example.clone())
    assert [] == [d for d in report["diagnostics"] if d["code"] == "unrecovered_module_attribute"]
    assert leaf_metrics(eager) == leaf_metrics(report)


@pytest.mark.parametrize("front_end", ["exported", "traced"])
def test_a_cumulative_batch_norms_momentum_is_unrecovered(front_end):
    # momentum=None evaluates with the factor 0.0, as momentum=0.0 does, and
    # TorchScan 0.2's formulas tell the two apart: the graph cannot.
    torch.manual_seed(0)
    model = Wrapped(nn.BatchNorm2d(3, momentum=None)).eval()
    example = torch.rand(2, 3, 4, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if front_end == "exported":
            subject = torch.export.export(model, (example.clone(),))
        else:
            subject = torch.jit.trace(model, (example.clone(),))
    report = crawl(subject, example.clone())
    (diagnostic,) = [d for d in report["diagnostics"] if d["code"] == "unrecovered_module_attribute"]
    assert diagnostic["path"] == "module"
    assert "momentum" in diagnostic["message"]
    assert leaf_metrics(report)["module_flops"]["status"] != "complete"


class MaskedAttention(nn.Module):
    """An attention given a padding mask (its scope fills -inf) and a leaf
    of its own that clamps at inf: arguments no hyper-parameter is."""

    def __init__(self):
        super().__init__()
        self.attention = nn.MultiheadAttention(8, 2, batch_first=True)
        self.clamp = Clamp()

    def forward(self, x, mask):
        return self.clamp(self.attention(x, x, x, key_padding_mask=mask, need_weights=False)[0])


class Clamp(nn.Module):
    def forward(self, x):
        return torch.clamp(x, min=-math.inf, max=math.inf)


def test_non_finite_arguments_do_not_stop_an_exported_crawl():
    torch.manual_seed(0)
    model = MaskedAttention().eval()
    x = torch.rand(1, 3, 8)
    mask = torch.tensor([[False, False, True]])
    program = torch.export.export(model, (x, mask))
    report = crawl(program, x, mask)
    eager = crawl(model, x, mask)
    assert [layer["path"] for layer in eager["layers"]] == [layer["path"] for layer in report["layers"]]
    # The graph keeps no batch_first, add_zero_attn or training: the
    # attention alone is unrecovered, and says so.
    (diagnostic,) = [d for d in report["diagnostics"] if d["code"] == "unrecovered_module_attribute"]
    assert diagnostic["path"] == "attention"
    # (Eager runs the fused kernel, the exported graph its parts: their
    # operator FLOPs are compared by test_exported.py where both run alike.)
    assert report["operator_flops"]["total"]["known_value"] > 0
