"""One set of description rules for every front end: the values a scripted
module's layers take and return, described by the TorchScript front end
(torchscan/ivalue_metadata.h, reading c10::IValues inside the interpreter),
equal what the eager crawl of the same module records (the Python describer,
python/operators/value_descriptions.h, reading the Python objects).

The layers pass the value kinds TorchScript can carry: tensors of every
dtype the CPU converts to, dicts keyed by str (identifiers and not), int,
float, bool and complex, nested tuples and lists, None, the scalars, a
device and an enum member.
"""

from __future__ import annotations

from enum import Enum
from typing import Dict, List, Optional, Tuple

import pytest
import torch
from torch import Tensor, nn

import torchscan_dispatch as tsd

DTYPES = [
    torch.float16, torch.bfloat16, torch.float32, torch.float64,
    torch.complex64, torch.complex128, torch.int8, torch.int16, torch.int32,
    torch.int64, torch.uint8, torch.bool, torch.float8_e4m3fn, torch.float8_e5m2,
]  # fmt: skip


class ByString(nn.Module):
    def forward(self, x: Tensor) -> Dict[str, Tensor]:
        # Kept: identifiers; dropped: the others (their key_type stays).
        return {"ok": x, "_under1": x * 2, "not ok": x + 1, "1st": x - 1, "": x}


class ByInt(nn.Module):
    def forward(self, x: Dict[str, Tensor]) -> Dict[int, Tensor]:
        return {1: x["ok"], -5: x["_under1"], 1099511627776: x["not ok"]}


class ByFloat(nn.Module):
    def forward(self, x: Dict[int, Tensor]) -> Dict[float, Tensor]:
        return {0.5: x[1]}


class ByBool(nn.Module):
    def forward(self, x: Dict[float, Tensor]) -> Dict[bool, Tensor]:
        return {True: x[0.5], False: x[0.5]}


class ByComplex(nn.Module):
    def forward(self, x: Dict[bool, Tensor]) -> Dict[complex, Tensor]:
        return {complex(1.0, 2.0): x[True]}


class Nested(nn.Module):
    def forward(self, x: Dict[complex, Tensor]) -> Tuple[List[Tensor], Optional[Tensor], Tuple[int, float, str, bool]]:
        y = x[complex(1.0, 2.0)]
        return [y, y.t()], None, (3, 1.5, "s", True)


class Scalars(nn.Module):
    def forward(self, x: Tensor, scale: float, count: int, flag: bool, name: str, z: complex) -> Tensor:
        return x * scale


class Colour(Enum):
    RED = 1
    GREEN = 2


class WithEnum(nn.Module):
    def forward(self, x: Tensor) -> Tuple[Tensor, Colour]:
        return x, Colour.GREEN


class OnDevice(nn.Module):
    def forward(self, x: Tensor) -> Tuple[Tensor, torch.device]:
        return x, x.device


class Dtypes(nn.Module):
    def forward(self, x: Tensor) -> List[Tensor]:
        return [x.to(torch.float16), x.to(torch.bfloat16), x.to(torch.float32), x.to(torch.float64),
                x.to(torch.complex64), x.to(torch.complex128), x.to(torch.int8), x.to(torch.int16),
                x.to(torch.int32), x.to(torch.int64), x.to(torch.uint8), x.to(torch.bool),
                x.to(torch.float8_e4m3fn), x.to(torch.float8_e5m2)]  # fmt: skip


class Chain(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.by_string = ByString()
        self.by_int = ByInt()
        self.by_float = ByFloat()
        self.by_bool = ByBool()
        self.by_complex = ByComplex()
        self.nested = Nested()
        self.scalars = Scalars()
        self.on_device = OnDevice()
        self.with_enum = WithEnum()
        self.dtypes = Dtypes()

    def forward(self, x: Tensor) -> List[Tensor]:
        values = self.nested(self.by_complex(self.by_bool(self.by_float(self.by_int(self.by_string(x))))))
        y = self.scalars(values[0][0], 2.0, 3, True, "name", complex(0.0, 1.0))
        return self.dtypes(self.with_enum(self.on_device(y)[0])[0])


@pytest.fixture(scope="module")
def reports():
    torch.manual_seed(0)
    model = Chain().eval()
    x = torch.rand(2, 3, requires_grad=True)
    eager = tsd.crawl_module(model, args=(x,))
    scripted = tsd.crawl_module(torch.jit.script(model), args=(x,))
    return eager, scripted


def layers_by_name(report):
    return {layer["name"]: layer for layer in report["layers"]}


def test_every_layer_is_in_both_crawls(reports):
    eager, scripted = reports
    assert sorted(layers_by_name(scripted)) == sorted(layers_by_name(eager))


@pytest.mark.parametrize("name", ["by_string", "by_int", "by_float", "by_bool", "by_complex", "nested", "on_device", "with_enum", "dtypes"])
def test_outputs_are_described_alike(reports, name):
    eager, scripted = reports
    assert layers_by_name(scripted)[name]["output"] == layers_by_name(eager)[name]["output"]


@pytest.mark.parametrize("name", ["by_int", "by_float", "by_bool", "by_complex", "nested", "scalars", "on_device", "dtypes"])
def test_inputs_are_described_alike(reports, name):
    eager, scripted = reports
    assert layers_by_name(scripted)[name]["input"] == layers_by_name(eager)[name]["input"]


def test_string_keys_kept_are_the_identifiers(reports):
    eager, _ = reports
    items = layers_by_name(eager)["by_string"]["output"]["items"]
    assert [(item.get("key"), item["key_type"]) for item in items] == [
        ("ok", "str"), ("_under1", "str"), (None, "str"), (None, "str"), (None, "str"),
    ]  # fmt: skip


def test_dtype_names_are_pythons(reports):
    eager, scripted = reports
    expected = [str(dtype) for dtype in DTYPES]
    for report in (eager, scripted):
        assert [item["dtype"] for item in layers_by_name(report)["dtypes"]["output"]["items"]] == expected
