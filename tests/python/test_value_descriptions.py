"""The library's value descriptions (python/operators/value_descriptions.h,
the one rule set every Python front end uses) against the released
torchscan==0.2.0's own `_describe`, on values of every rule and on the
corners of each: subclasses, custom iteration, keys kept and dropped, and
exceptions raised by a value's own methods."""

import collections
import enum
from collections.abc import Mapping

import pytest
import torch
from torchscan.crawler import _describe, _describe_call

from torchscan_dispatch._describe import describe_call, describe_value


class TensorSubclass(torch.Tensor):
    pass


class Color(enum.IntEnum):
    RED = 1


class Flag(str):
    pass


class ReversedList(list):
    """A list whose iteration order is its own."""

    def __iter__(self):
        return iter(list(super().__iter__())[::-1])


class Table(Mapping):
    """A Mapping that is not a dict."""

    def __init__(self, items):
        self._items = dict(items)

    def __getitem__(self, key):
        return self._items[key]

    def __iter__(self):
        return iter(self._items)

    def __len__(self):
        return len(self._items)


class Outer:
    class Inner:
        pass


Point = collections.namedtuple("Point", "x y")


def values():
    return {
        "float tensor": torch.ones(2, 3),
        "half tensor": torch.zeros(4, dtype=torch.float16),
        "int tensor": torch.arange(5),
        "bool scalar tensor": torch.tensor(True),
        "empty tensor": torch.empty(0, 3),
        "parameter": torch.nn.Parameter(torch.ones(2)),
        "requires grad": torch.ones(2, requires_grad=True),
        "subclass": torch.ones(3).as_subclass(TensorSubclass),
        "meta tensor": torch.empty(7, 2, device="meta"),
        "none": None,
        "tuple": (1, 2.0, "three"),
        "empty tuple": (),
        "named tuple": Point(torch.ones(1), None),
        "list": [None, [torch.ones(1)], (b"x",)],
        "list subclass iterated its way": ReversedList([1, "a", None]),
        "dict": {"a": 1, "not an id": 2, 3: None, (4,): 5.0, True: [], "_ok": "x"},
        "ordered dict": collections.OrderedDict(b=torch.ones(1), a=2),
        "defaultdict": collections.defaultdict(int, {"k": 1}),
        "custom mapping": Table({"x": 1, 2: "y"}),
        "int enum key": {Color.RED: 1},
        "big int key": {2**100: 1},
        "str subclass key": {Flag("name"): 1},
        "scalars": [True, 1, 1.5, 2j, "s", b"b", Color.RED, Flag("f")],
        "object": object(),
        "nested class": Outer.Inner(),
        "function": len,
        "device": torch.device("cpu"),
        "dtype": torch.float32,
        "deep": [[[[[[[[[[torch.ones(1)]]]]]]]]]],
    }


@pytest.mark.parametrize("name", sorted(values()))
def test_describe_value_equals_released_torchscans(name):
    value = values()[name]
    assert _describe(value) == describe_value(value)


def test_describe_call_equals_released_torchscans():
    args = (torch.ones(2), None, {"a": [1]})
    kwargs = {"mask": torch.zeros(2, dtype=torch.bool), "scale": 0.5}
    assert _describe_call(args, kwargs) == describe_call(args, kwargs)


def test_describe_call_keeps_keyword_order():
    assert ["b", "a"] == list(describe_call((), {"b": 1, "a": 2})["kwargs"])


class BrokenMapping(Table):
    def items(self):
        raise KeyError("broken items")


class BrokenShape(torch.Tensor):
    @property
    def shape(self):
        raise RuntimeError("no shape here")


def test_an_exception_from_a_values_own_method_propagates_unchanged():
    with pytest.raises(KeyError, match="broken items"):
        describe_value(BrokenMapping({}))
    with pytest.raises(RuntimeError, match="no shape here"):
        describe_value(torch.ones(1).as_subclass(BrokenShape))


def test_a_mapping_key_past_128_bits_is_a_clear_error():
    with pytest.raises(OverflowError, match="mapping key is out of range"):
        describe_value({2**200: 1})
