"""The device table is declared once (device_table.json): Python's
devices.DEVICES and the C++ library's embedded copy (report/device_table.h,
reached through the extension module) hold the same rows and find the same
row for every name, by the same exact-name rules."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from torchscan_dispatch import devices
from torchscan_dispatch._library import hooks


def variants(name: str) -> list[str]:
    """ASCII spellings the normalisation rules make equal to ``name``."""
    return [
        name,
        name.upper(),
        name.lower(),
        name.swapcase(),
        f"  {name}\t",
        name.replace(" ", "   "),
        name.replace(" ", "\t\n"),
        name.replace(" ", "\x1c"),  # Python's str.isspace() counts it
    ]


def cpp_name(name: str) -> str | None:
    row = hooks().device_model(name)
    return None if row is None else row["name"]


def test_python_reads_every_row_of_the_data_file():
    text = resources.files("torchscan_dispatch").joinpath(devices.TABLE_FILE).read_text(encoding="utf-8")
    rows = json.loads(text)["devices"]
    assert [spec.name for spec in devices.DEVICES] == [row["name"] for row in rows]
    assert len(devices.DEVICES) == 13


@pytest.mark.parametrize("spec", devices.DEVICES, ids=lambda spec: spec.name)
def test_cpp_holds_the_same_figures(spec):
    row = hooks().device_model(spec.name)
    assert row["name"] == spec.name
    assert row["reported_names"] == list(spec.reported_names)
    assert row["peak_flops"] == dict(spec.peak_flops)
    assert row["memory_bandwidth"] == spec.memory_bandwidth
    assert row["interconnect_bandwidth"] == spec.interconnect_bandwidth
    assert row["source"] == spec.source
    assert row.get("note", "") == spec.note


@pytest.mark.parametrize("spec", devices.DEVICES, ids=lambda spec: spec.name)
def test_every_name_and_variant_finds_the_same_row_in_both(spec):
    for name in spec.names():
        for variant in variants(name):
            assert devices.device_spec(variant) is spec, repr(variant)
            assert cpp_name(variant) == spec.name, repr(variant)


@pytest.mark.parametrize(
    "name",
    ["L40", "NVIDIA L40", "H100", "NVIDIA H100", "H100 SXM5", "NVIDIA H100 80GB HBM3 (MIG 1g.10gb)",
     "NVIDIA-H100-80GB-HBM3", "A100", "MI300", "", " "],
)  # fmt: skip
def test_near_names_find_nothing_in_both(name):
    assert devices.device_spec(name) is None
    assert cpp_name(name) is None


def test_unicode_folding_is_pythons_only():
    # report/device_table.h documents it: C++ folds ASCII only.
    full_width = "\uff2e\uff36\uff29\uff24\uff29\uff21 \uff2c\uff14"  # "ＮＶＩＤＩＡ Ｌ４"
    assert devices.device_spec(full_width).name == "L4"
    assert cpp_name(full_width) is None
