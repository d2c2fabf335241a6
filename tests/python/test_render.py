"""to_html, write_html, to_folded and list_diagnostics on real reports, in a
real torch process: folded stacks checked against hand-computed FLOPs and
against FlopCounterMode's own module attribution, the page's embedded data
against the report, and every kind of bad input."""

import json
import re
import warnings

import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

import torchscan_dispatch as tsd
from model_zoo import TinyMobileNet, TinyResNet


class SmallCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 16, 3, stride=2, padding=1))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        return self.head(torch.flatten(self.pool(self.features(x)), 1))


# Per input (3, 16, 16), counted as FlopCounterMode counts: 2 x output
# elements x (input channels x kernel) for a convolution (bias not counted),
# 2 x M x K x N for the classifier's addmm.
CONV1 = 2 * (8 * 16 * 16) * (3 * 3 * 3)
CONV2 = 2 * (16 * 8 * 8) * (8 * 3 * 3)
HEAD = 2 * 1 * 16 * 10


@pytest.fixture(scope="module")
def cnn():
    torch.manual_seed(0)
    return SmallCnn()


@pytest.fixture(scope="module")
def report(cnn):
    return tsd.crawl_module(cnn, (3, 16, 16))


def self_flops_from_flop_counter_mode(model, x):
    """Folded lines computed from FlopCounterMode's inclusive module counts,
    independently of our code: self = a module's count minus its direct
    children's."""
    with FlopCounterMode(display=False) as mode:
        model(x)
    inclusive = {name: sum(counts.values()) for name, counts in mode.get_flop_counts().items() if name != "Global"}
    lines = {}
    for name, value in inclusive.items():
        children = sum(v for other, v in inclusive.items() if other.rsplit(".", 1)[0] == name and other != name)
        if value - children:
            lines[name.replace(".", ";")] = value - children
    return lines


def parse_folded(text):
    lines = {}
    for line in text.splitlines():
        stack, value = line.rsplit(" ", 1)
        lines[stack] = int(value)
    return lines


def test_folded_stacks_of_a_crawl_are_hand_computed_self_flops(report):
    assert tsd.to_folded(report) == (
        f"SmallCnn;features;0 {CONV1}\n" f"SmallCnn;features;2 {CONV2}\n" f"SmallCnn;head {HEAD}\n"
    )
    assert sum(parse_folded(tsd.to_folded(report)).values()) == report["totals"]["operator_flops"]["known_value"]


def test_folded_stacks_of_measure_flops_are_the_crawls(cnn, report):
    x = torch.randn(1, 3, 16, 16)
    flops = tsd.measure_flops(lambda: cnn(x))
    assert tsd.to_folded(flops) == tsd.to_folded(report)


@pytest.mark.parametrize("model", [TinyResNet, TinyMobileNet])
def test_folded_stacks_match_flop_counter_modes_module_attribution(model):
    torch.manual_seed(0)
    net = model().eval()
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        expected = self_flops_from_flop_counter_mode(net, x)
        flops = tsd.measure_flops(lambda: net(x))
    assert parse_folded(tsd.to_folded(flops)) == expected


def test_folded_stacks_outside_every_module():
    # A projection after the model runs outside every module.
    torch.manual_seed(0)
    linear = nn.Linear(4, 3)
    x, w = torch.randn(5, 2, 4), torch.randn(3, 1)
    flops = tsd.measure_flops(lambda: (linear(x) @ w).sum())
    assert parse_folded(tsd.to_folded(flops)) == {
        "Linear": 2 * 10 * 4 * 3,  # 10 rows of 4 -> 3
        "(no module)": 2 * 10 * 3 * 1,  # 10 rows of 3 -> 1
    }


def test_differential_folded_stacks_of_a_compare(cnn, report):
    wider = SmallCnn()
    wider.head = nn.Linear(16, 20)
    after = tsd.crawl_module(wider, (3, 16, 16))
    diff = tsd.compare_reports(report, after)
    assert tsd.to_folded(diff, before=report, after=after) == (
        f"SmallCnn;features;0 {CONV1} {CONV1}\n"
        f"SmallCnn;features;2 {CONV2} {CONV2}\n"
        f"SmallCnn;head {HEAD} {2 * HEAD}\n"
    )
    with pytest.raises(ValueError, match="need the two reports it was computed from"):
        tsd.to_folded(diff)
    with pytest.raises(ValueError, match="not the ones this diff was computed from"):
        tsd.to_folded(diff, before=after, after=report)


def test_a_submodule_called_by_an_enclosing_module_warns():
    # `inner` is block's submodule, but the root's forward calls it: its
    # FLOPs count in the root and in block.inner, not in block.
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = nn.Linear(4, 4)

        def forward(self, x):
            return x + 1

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()

        def forward(self, x):
            return self.block.inner(self.block(x))

    report = tsd.crawl_module(Outer(), (4,))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        text = tsd.to_folded(report)
    # The difference is taken from the root, the caller: exact here.
    assert text == f"Outer;block;inner {2 * 4 * 4}\n"
    assert [str(w.message) for w in caught] == [
        "folded stacks: 'block': its submodules hold 32 more than it (a submodule called from outside it); "
        "the difference is taken from the enclosing modules' own values"
    ]


def embedded_data(html):
    match = re.search(r'<script type="application/json" id="torchscan-data">(.*?)</script>', html, re.S)
    return json.loads(match.group(1))


def test_html_embeds_the_reports_numbers(report, tmp_path):
    path = tmp_path / "report.html"
    tsd.write_html(report, path)
    html = path.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>")
    assert not re.search(r"https?:|<link|src=", html)
    charts = {chart["id"]: chart for chart in embedded_data(html)["charts"]}
    operators = charts["operator_flops"]["root"]
    assert operators["value"] == str(report["totals"]["operator_flops"]["known_value"]) == str(CONV1 + CONV2 + HEAD)
    assert operators["status"] == "partial"  # aten.relu and the pooling have no formula
    features = operators["children"][0]
    assert (features["name"], features["value"]) == ("features", str(CONV1 + CONV2))
    assert [child["value"] for child in features["children"]] == [str(CONV1), "0", str(CONV2)]
    assert charts["module_flops"]["root"]["value"] == str(report["totals"]["module_flops"]["value"])
    assert charts["parameters"]["root"]["value"] == str(report["totals"]["parameters"]["value"])
    assert f'<tr data-metric="operator_flops"><th>Operator FLOPs</th><td class="num partial" data-value="{CONV1 + CONV2 + HEAD}" title="partial (lower bound)">\u2265 {CONV1 + CONV2 + HEAD:,}</td>' in html


def test_html_of_a_flop_report_and_of_a_compare(cnn, report):
    flops = tsd.measure_flops(lambda: cnn(torch.randn(1, 3, 16, 16)))
    assert embedded_data(tsd.to_html(flops))["charts"][0]["root"]["value"] == str(CONV1 + CONV2 + HEAD)
    diff = tsd.compare_reports(report, report)
    assert embedded_data(tsd.to_html(diff))["charts"] == []
    charts = embedded_data(tsd.to_html(diff, before=report, after=report, title="same"))["charts"]
    assert [chart["id"] for chart in charts] == [
        "before_module_flops",
        "after_module_flops",
        "before_operator_flops",
        "after_operator_flops",
    ]


def test_bad_input_names_the_problem(report):
    with pytest.raises(TypeError, match="report must be a dict .* got list"):
        tsd.to_html([report])
    with pytest.raises(ValueError, match="got an object with keys 'model'"):
        tsd.to_html({"model": "resnet"})
    broken = json.loads(json.dumps(report))
    broken["layers"][2]["metrics"]["macs"]["status"] = "done"
    with pytest.raises(ValueError, match=r"report\.layers\[2\]\.metrics\.macs\.status: status must be"):
        tsd.write_html(broken, "/nonexistent/never-written.html")
    with pytest.raises(ValueError, match="schema_version"):
        tsd.to_folded({**report, "schema_version": 2})
    with pytest.raises(ValueError, match="not a JSON report"):
        tsd.to_html({**report, "extra": torch.zeros(1)})
    with pytest.raises(ValueError, match="before and after go with a report diff"):
        tsd.to_html(report, before=report, after=report)


def test_list_diagnostics_groups_by_code(report):
    assert tsd.list_diagnostics(report) == (
        "Diagnostics: 2\n"
        "  uncounted_operator: 2 on 2 operators (flops)\n"
        "    aten.mean, aten.relu\n"
        "    e.g. aten.mean was observed 1 time(s), but no FLOP formula is registered.\n"
    )
    # The summary itself keeps TorchScan 0.2's hint, byte for byte; a
    # command line shows the listing in its place.
    summary = tsd.format_summary(report)
    hint = "Diagnostics: 2 (inspect report['diagnostics'])\n"
    assert hint in summary
    assert tsd.list_diagnostics(report, summary=summary) == summary.replace(hint, tsd.list_diagnostics(report))
