"""format_summary renders an existing report exactly as summary prints it."""

from __future__ import annotations

import contextlib
import io

import pytest
import torch
from torch import nn

import torchscan_dispatch as tsd
from torchscan_dispatch._library import hooks


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Sequential(nn.Flatten(), nn.Linear(8 * 6 * 6, 4)))


@pytest.mark.parametrize(
    "options",
    [{}, {"max_depth": 1}, {"wrap_mode": "end"}, {"receptive_field": True, "effective_rf_stats": True}],
)
def test_format_summary_equals_what_summary_prints(options):
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        report = tsd.summary(_model(), (3, 8, 8), **options)
    assert tsd.format_summary(report, **options) + "\n" == printed.getvalue()


def test_max_depth_hides_nested_layers():
    report = tsd.crawl_module(_model(), (3, 8, 8))
    full, shallow = tsd.format_summary(report), tsd.format_summary(report, max_depth=1)
    # The nested Sequential's children (Flatten, Linear) are the only layers at depth 2.
    assert "Flatten" in full and "Flatten" not in shallow
    assert len(full.splitlines()) == len(shallow.splitlines()) + 2


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"wrap_mode": 3}, "wrap_mode must be a string or None, got int: 3"),
        ({"max_depth": "2"}, "max_depth must be an int or None, got str: '2'"),
        ({"max_depth": True}, "max_depth must be an int or None, got bool: True"),
    ],
)
def test_bad_option_types_are_named(options, message):
    report = tsd.crawl_module(_model(), (3, 8, 8))
    with pytest.raises(TypeError, match=message.replace("(", r"\(")):
        tsd.format_summary(report, **options)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_depth": "2"}, "options.max_depth: expected an integer, got string"),
        ({"wrap_mode": 3}, "options.wrap_mode: expected a string, got integer"),
        ({"receptive_field": 1}, "options.receptive_field: expected a boolean, got integer"),
        ({"max_width": 80}, "options.max_width: unknown field"),
    ],
)
def test_the_native_renderer_names_a_bad_option(options, message):
    # Below format_summary's own checks: the extension module's
    # render_summary reads its options through the report library's JSON
    # reader, field by field.
    report = tsd.crawl_module(_model(), (3, 8, 8))
    with pytest.raises(ValueError, match=message):
        hooks().render_summary(report, options)
