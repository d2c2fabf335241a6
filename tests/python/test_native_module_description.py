"""The crawl's native module description (python/operators/module_attributes.cc)
against Python's describe_module (python/torchscan_dispatch/_describe.py): for
every family, the same description; for modules whose attributes are missing
or of another type, a decline (describe_module decides), never a crash; and
crawls of such modules the same as the released torchscan==0.2.0's.
"""

import pytest
import torch
import torchscan
from torch import nn

import torchscan_dispatch
from torchscan_dispatch._describe import describe_module
from torchscan_dispatch._library import hooks, load_library


def _matches(module):
    load_library()
    return hooks().native_module_description_matches(module, describe_module(module))


class MyConv(nn.Conv2d):
    """A subclass of a family class: described as its base."""


class OddLinear(nn.Linear):
    @property
    def in_features(self):  # a property: read as Python reads it
        return 5

    @in_features.setter
    def in_features(self, value):
        pass


class StatsFromGetattr(nn.BatchNorm2d):
    """A class with its own __getattr__: its answer, not the buffer's."""

    def __getattr__(self, name):
        if name == "running_mean" and self.__dict__.get("stats_from_getattr"):
            return torch.zeros(3)
        return super().__getattr__(name)


def _stats_from_getattr():
    norm = StatsFromGetattr(8)  # its running_mean buffer stays in _buffers
    norm.stats_from_getattr = True
    return norm


class _RaisingOnTheClass:
    """A data descriptor whose __get__ raises when asked on the class."""

    def __get__(self, module, owner):
        if module is None:
            raise AttributeError("only on instances")
        return None

    def __set__(self, module, value):
        raise AttributeError("read-only")


def _descriptor_raising_on_the_class():
    cls = type("DescribedLinear", (nn.Linear,), {})
    linear = cls(4, 3)
    cls.bias = _RaisingOnTheClass()  # the instance's bias is None, not its parameter
    return linear


def _class_attribute_over_a_buffer():
    # A class attribute of a buffer's name hides the buffer from getattr
    # (the generic lookup finds it before Module.__getattr__ runs).
    cls = type("ClassLevelStats", (nn.BatchNorm2d,), {})
    norm = cls(8)
    cls.running_var = None
    return norm


class _Parameters(dict):
    """Not exactly a dict: Module.__getattr__ reads it through
    __contains__ and __getitem__, which hide the bias it holds."""

    def __getitem__(self, name):
        return None if name == "bias" else super().__getitem__(name)


def _parameters_in_a_dict_subclass():
    conv = nn.Conv2d(2, 2, 1, bias=False)
    object.__setattr__(conv, "_parameters", _Parameters(conv._parameters, bias=nn.Parameter(torch.zeros(2))))
    return conv


def _without_bias_attribute():
    norm = nn.LayerNorm(4, bias=False)
    del norm.bias  # getattr(module, "bias", None): absent is no bias
    return norm


def _tuple_padding_pool():
    pool = nn.MaxPool2d((3, 2), stride=[2, 1], padding=(1, 0), dilation=(1, 1))
    return pool


FAMILIES = {
    "unsupported": nn.Embedding(10, 3),
    "identity": nn.Identity(),
    "flatten": nn.Flatten(),
    "linear": nn.Linear(4, 3),
    "linear without bias": nn.Linear(4, 3, bias=False),
    "linear subclass with a property": OddLinear(5, 2),
    "relu": nn.ReLU(inplace=True),
    "elu": nn.ELU(),
    "leaky_relu": nn.LeakyReLU(0.2),
    "relu6": nn.ReLU6(),
    "tanh": nn.Tanh(),
    "sigmoid": nn.Sigmoid(),
    "conv_transpose": nn.ConvTranspose2d(3, 4, 3, stride=2, output_padding=1),
    "conv": nn.Conv2d(3, 8, (3, 5), stride=(2, 1), dilation=2, groups=1, bias=False),
    "conv padding same": nn.Conv1d(2, 4, 3, padding="same"),
    "conv padding valid": nn.Conv3d(2, 4, 3, padding="valid"),
    "conv subclass": MyConv(3, 3, 1),
    "lazy conv, initialised": nn.LazyConv2d(4, 3),
    "batch_norm": nn.BatchNorm2d(8),
    "batch_norm without affine or stats": nn.BatchNorm1d(5, affine=False, track_running_stats=False),
    "batch_norm momentum None": nn.BatchNorm3d(2, momentum=None),
    "max_pool int": nn.MaxPool2d(2),
    "max_pool tuples and lists": _tuple_padding_pool(),
    "avg_pool (no dilation attribute)": nn.AvgPool2d((2, 2), stride=1),
    "adaptive_max_pool": nn.AdaptiveMaxPool2d(1),
    "adaptive_avg_pool": nn.AdaptiveAvgPool1d(3),
    "dropout": nn.Dropout(0.25),
    "dropout int p": nn.Dropout(0),
    "multihead_attention": nn.MultiheadAttention(8, 2, bias=False, add_bias_kv=True, batch_first=True),
    "multihead_attention kdim": nn.MultiheadAttention(8, 4, kdim=3, vdim=5, dropout=0.1),
    "layer_norm": nn.LayerNorm((4, 5)),
    "layer_norm without affine": nn.LayerNorm(4, elementwise_affine=False),
    "layer_norm without a bias attribute": _without_bias_attribute(),
    # NOTE [Module attributes read from the module's dicts]: wherever the
    # class or the module's dicts differ from nn.Module's, what getattr gives.
    "batch_norm with its own __getattr__": _stats_from_getattr(),
    "batch_norm with a class attribute over a buffer": _class_attribute_over_a_buffer(),
    "conv with parameters in a dict subclass": _parameters_in_a_dict_subclass(),
    "linear with a descriptor that raises on the class": _descriptor_raising_on_the_class(),
}


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_the_native_description_equals_describe_modules(name):
    module = FAMILIES[name]
    if name.startswith("lazy"):
        module(torch.zeros(1, 2, 5, 5))
    assert _matches(module) is True


def test_a_transformer_is_left_to_describe_module():
    model = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=16)
    assert _matches(model) is None


def _with(module, **attributes):
    for name, value in attributes.items():
        object.__setattr__(module, name, value)
    return module


# Attributes describe_module converts (int(), float(), bool()) or rejects:
# the native description declines each, so describe_module decides.
DECLINED = {
    "float kernel size": _with(nn.MaxPool2d(2), kernel_size=2.0),
    "bool in_features": _with(nn.Linear(2, 2), in_features=True),
    "int inplace": _with(nn.ReLU(), inplace=1),
    "tuple subclass stride": _with(nn.Conv2d(1, 1, 1), stride=torch.Size([1, 1])),
    "numpy-like float p": _with(nn.Dropout(), p=torch.tensor(0.5)),
    "huge groups": _with(nn.Conv2d(1, 1, 1), groups=2**70),
    "string pool padding": _with(nn.AvgPool2d(2), padding="same"),
    "non-finite dropout": _with(nn.Dropout(), p=float("nan")),
    "normalized_shape as an int": _with(nn.LayerNorm(3), normalized_shape=3),
}


@pytest.mark.parametrize("name", sorted(DECLINED))
def test_an_attribute_of_another_type_is_left_to_describe_module(name):
    load_library()
    assert hooks().native_module_description_matches(DECLINED[name], {"type": "X", "family": "unsupported",
                                                                      "parameter_count": 0}) is None


def test_a_missing_attribute_is_left_to_describe_module():
    linear = nn.Linear(2, 2)
    del linear.out_features
    load_library()
    assert hooks().native_module_description_matches(linear, {"type": "X", "family": "unsupported",
                                                              "parameter_count": 0}) is None
    with pytest.raises(AttributeError):
        describe_module(linear)


def test_a_crawl_with_a_missing_attribute_raises_describe_modules_error():
    linear = nn.Linear(2, 2)
    del linear.out_features
    with pytest.raises(AttributeError, match="out_features"):
        torchscan_dispatch.crawl_module(nn.Sequential(linear), args=(torch.zeros(1, 2),))


class Unusual(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = MyConv(3, 4, 3, padding="same")
        self.pool = nn.MaxPool2d((3, 2), stride=(2, 1), padding=(1, 0))
        self.relu = _with(nn.ReLU(), inplace=0)  # declined: Python's bool() converts
        self.norm = nn.BatchNorm2d(4, momentum=None)
        self.flat = nn.Flatten()
        self.linear = OddLinear(5, 2)
        self.drop = nn.Dropout(0)

    def forward(self, x):
        x = self.relu(self.pool(self.norm(self.conv(x))))
        return self.drop(self.linear(self.flat(x)[:, :5]))


def test_crawls_of_unusual_modules_match_released_torchscan():
    model, args = Unusual(), (torch.randn(1, 3, 16, 16),)
    ours = torchscan_dispatch.crawl_module(model, args=args)
    theirs = torchscan.crawl_module(model, args=args)
    assert ours["layers"] == theirs["layers"]
    assert ours["totals"]["module_flops"] == theirs["totals"]["module_flops"]


def test_a_crawl_calls_describe_module_only_for_the_modules_it_declines(monkeypatch):
    from torchscan_dispatch import crawler

    described = []

    def counting(module):
        described.append(type(module).__name__)
        return describe_module(module)

    monkeypatch.setattr(crawler, "describe_module", counting)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), _with(nn.ReLU(), inplace=0), nn.Flatten(),
                          nn.LazyLinear(2), nn.Dropout())
    torchscan_dispatch.crawl_module(model, args=(torch.randn(1, 3, 8, 8),))
    assert described == ["ReLU"]
