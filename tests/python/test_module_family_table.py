"""The module family table (formulas/module_families.h) against torch's own
classes, and the front ends that derive their family knowledge from it.

A family is declared once, in C++; Python's describe_module, the TorchScript
front end and the graph recoveries read the rows. These tests check the
rows against torch itself (the classes exist, TorchScript's class lists are
exactly torch's concrete subclasses) and that describe_module, derived from
the rows, still describes every family as torchscan==0.2.0 counts it.
"""

import importlib

import pytest
import torch
import torchscan
from torch import nn

import torchscan_dispatch
from torchscan_dispatch._describe import describe_module, families, module_family
from torchscan_dispatch._library import hooks, load_library


def _rows():
    load_library()
    return hooks().module_family_rows()


def _resolve(qualified):
    owner, _, name = qualified.rpartition(".")
    return getattr(importlib.import_module(owner), name)


def _all_subclasses(cls):
    found = set()
    pending = [cls]
    while pending:
        for sub in pending.pop().__subclasses__():
            if sub not in found:
                found.add(sub)
                pending.append(sub)
    return found


def _first_family(cls, classes):
    """The first row (upstream's isinstance order) whose class `cls` is a
    subclass of."""
    return next((name for name, base in classes if issubclass(cls, base)), None)


def test_every_row_names_a_torch_module_class():
    for row in _rows():
        cls = _resolve(row["torch_class"])
        assert issubclass(cls, nn.Module), row["family"]


def test_the_rows_follow_upstreams_families_in_order():
    expected = [
        "identity", "flatten", "linear", "relu", "elu", "leaky_relu", "relu6", "tanh", "sigmoid",
        "conv_transpose", "conv", "batch_norm", "max_pool", "avg_pool", "adaptive_max_pool",
        "adaptive_avg_pool", "dropout", "multihead_attention", "layer_norm", "transformer",
    ]
    assert expected == [row["family"] for row in _rows()]


def test_torchscript_class_lists_are_torchs_concrete_subclasses():
    # TorchScript keeps no base classes: a row lists every concrete class of
    # torch.nn that isinstance would put in its family. Lazy modules become
    # their concrete class before they can be scripted.
    rows = _rows()
    classes = [(row["family"], _resolve(row["torch_class"])) for row in rows]
    for row in rows:
        if not row["attributes"] and row["has_params"]:
            assert [] == row["script_classes"], row["family"]  # not offered to TorchScript
            continue
        base = _resolve(row["torch_class"])
        concrete = {
            f"{cls.__module__}.{cls.__qualname__}"
            for cls in _all_subclasses(base) | {base}
            if cls.__module__.startswith("torch.nn.modules.")
            and not cls.__name__.startswith(("_", "Lazy"))
            and _first_family(cls, classes) == row["family"]
        }
        listed = set(row["script_classes"]) | ({row["torch_class"]} if not base.__name__.startswith("_") else set())
        assert concrete == listed, row["family"]


def test_activation_operators_are_aten_operators_with_an_inplace_variant():
    rows = {row["family"]: row for row in _rows()}
    assert ["aten::relu"] == rows["relu"]["activation_operators"]
    for row in rows.values():
        for name in row["activation_operators"]:
            namespace, _, op = name.partition("::")
            packet = getattr(getattr(torch.ops, namespace), op)
            assert hasattr(getattr(torch.ops, namespace), f"{op}_"), name
            assert packet.default._schema.name == name
            # An activation row reads `inplace` from its module.
            assert ["inplace", "truth", "inplace"] in row["attributes"], row["family"]


class MyConvTranspose(nn.ConvTranspose2d):
    """A user subclass: isinstance puts it in its base's family."""


def test_module_family_follows_subclasses_to_their_base():
    assert "conv_transpose" == module_family(f"{__name__}.MyConvTranspose")
    assert "conv" == module_family("torch.nn.modules.conv.Conv3d")
    assert "batch_norm" == module_family("torch.nn.modules.batchnorm.SyncBatchNorm")
    assert "unsupported" == module_family("torch.nn.modules.linear.Bilinear")
    assert "unsupported" == module_family("no.such.Module")


def test_describe_module_reads_each_kind_as_torch_stores_it():
    # Hand-written expectations, one per attribute kind of the table.
    assert {
        "type": "Conv2d", "family": "conv", "in_channels": 3, "kernel_size": [3, 3], "stride": [1, 1],
        "padding": "same", "dilation": [2, 2], "groups": 1, "bias": False, "parameter_count": 8 * 3 * 9,
    } == describe_module(nn.Conv2d(3, 8, 3, padding="same", dilation=2, bias=False))
    assert {
        "type": "MaxPool1d", "family": "max_pool", "kernel_size": 2, "stride": 2, "padding": 0, "dilation": 1,
        "parameter_count": 0,
    } == describe_module(nn.MaxPool1d(2))
    assert {
        "type": "AvgPool2d", "family": "avg_pool", "kernel_size": [2, 2], "stride": 1, "padding": 0,
        "parameter_count": 0,
    } == describe_module(nn.AvgPool2d((2, 2), stride=1))  # no dilation attribute: no key
    bn = nn.BatchNorm1d(4, momentum=None, affine=False)
    assert {
        "type": "BatchNorm1d", "family": "batch_norm", "num_features": 4, "affine": False,
        "track_running_stats": True, "training": True, "momentum": None, "running_mean_numel": 4,
        "running_var_numel": 4, "weight_numel": None, "bias_numel": None, "parameter_count": 0,
    } == describe_module(bn)
    assert {
        "type": "LayerNorm", "family": "layer_norm", "normalized_shape": [2, 5], "weight": True, "bias": False,
        "parameter_count": 10,
    } == describe_module(nn.LayerNorm((2, 5), bias=False))
    mha = describe_module(nn.MultiheadAttention(8, 2, bias=False))
    assert {"in_features": 8, "out_features": 8, "bias": False} == mha["out_proj"]
    assert (8, 2, 4, False, 0.0) == (
        mha["embed_dim"], mha["num_heads"], mha["head_dim"], mha["in_proj_bias"], mha["dropout"]
    )
    assert {"type": "ReLU6", "family": "relu6", "inplace": True, "parameter_count": 0} == describe_module(
        nn.ReLU6(inplace=True)
    )


def test_a_crawl_of_every_family_matches_released_torchscan():
    # Every family the rows describe by attributes, in one model, counted as
    # torchscan==0.2.0 counts it.
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv1d(2, 4, 3, padding=1), nn.BatchNorm1d(4), nn.ReLU(inplace=True), nn.MaxPool1d(2),
        nn.ConvTranspose1d(4, 4, 2, stride=2), nn.AvgPool1d(2), nn.ELU(), nn.AdaptiveMaxPool1d(4),
        nn.LeakyReLU(), nn.Dropout(0.1), nn.Identity(), nn.Tanh(), nn.Sigmoid(), nn.ReLU6(),
        nn.AdaptiveAvgPool1d(2), nn.Flatten(), nn.LayerNorm(8), nn.Linear(8, 3),
    ).eval()
    ours = torchscan_dispatch.crawl_module(model, (2, 16))
    torch.manual_seed(0)
    theirs = torchscan.crawl_module(model, (2, 16))
    assert theirs["layers"] == ours["layers"]
    assert theirs["totals"] == ours["totals"]


def test_families_are_read_once():
    assert families() is families()
