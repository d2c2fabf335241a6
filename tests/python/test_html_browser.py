"""The HTML report in a real browser: headless Chromium (Debian's, installed
by tools/setup) renders pages of a small CNN whose FLOPs are computed by
hand, and the tests check what a person sees: the chart's bars, their
widths proportional to FLOPs, partial values hatched and marked, the numbers
in the tables, zooming, no script errors in the console and no network
request. One screenshot is kept as a test artifact ($TORCHSCAN_TEST_ARTIFACTS,
default test-artifacts/ in the checkout).
"""

from __future__ import annotations

import importlib.util
import os
import re
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

import torchscan_dispatch as tsd
from test_render import CONV1, CONV2, HEAD, SmallCnn

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "html_screenshot.py"
ARTIFACTS = Path(os.environ.get("TORCHSCAN_TEST_ARTIFACTS", ROOT / "test-artifacts"))

_spec = importlib.util.spec_from_file_location("html_screenshot", SCRIPT)
html_screenshot = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(html_screenshot)

ROW_HEIGHT = 24  # report.js

# What a bar looks like to a person, relative to its chart.
BARS = """(id => {
  const chart = document.getElementById(id);
  const box = chart.getBoundingClientRect();
  return {
    width: box.width,
    bars: [...chart.querySelectorAll('.bar')].map(bar => {
      const r = bar.getBoundingClientRect();
      return {path: bar.dataset.path, value: bar.dataset.value, status: bar.dataset.status,
              left: r.left - box.left, top: r.top - box.top, width: r.width, height: r.height,
              text: bar.textContent, classes: bar.className,
              hatching: getComputedStyle(bar).backgroundImage};
    }),
  };
})"""


@pytest.fixture(scope="module")
def browser():
    if html_screenshot.find_chromium() is None:
        pytest.skip("Chromium is not installed (tools/setup installs Debian's chromium); the HTML is not checked in a browser")
    with html_screenshot.Chromium() as chromium:
        yield chromium


def show(browser, path: Path, height: int = 1400):
    browser.events.clear()
    browser.open(path, width=1280, height=height)


def bars_of(browser, chart_id):
    layout = browser.evaluate(f"{BARS}('{chart_id}')")
    return layout["width"], {bar["path"]: bar for bar in layout["bars"]}


def text_of(browser, selector):
    return browser.evaluate(f"document.querySelector({selector!r}).textContent")


def assert_clean(browser):
    assert browser.console_problems() == []
    assert [url for url in browser.requested_urls() if not url.startswith("file:")] == []


@pytest.fixture(scope="module")
def report():
    torch.manual_seed(0)
    return tsd.crawl_module(SmallCnn(), (3, 16, 16))


@pytest.fixture(scope="module")
def page(report, tmp_path_factory):
    path = tmp_path_factory.mktemp("html") / "small_cnn.html"
    tsd.write_html(report, path, title="SmallCnn")
    return path


def test_operator_flops_bars_are_proportional_to_hand_computed_flops(browser, report, page):
    show(browser, page)
    width, bars = bars_of(browser, "chart-operator_flops")
    # Zero-FLOP modules (the ReLU, the pooling) have no bar.
    assert set(bars) == {"", "features", "features.0", "features.2", "head"}
    # One scale with the module-formula chart beside it: the larger total.
    scale = max(report["totals"]["module_flops"]["value"], CONV1 + CONV2 + HEAD)
    expected = {  # path: (FLOPs, FLOPs before it in its row, depth)
        "": (CONV1 + CONV2 + HEAD, 0, 0),
        "features": (CONV1 + CONV2, 0, 1),
        "features.0": (CONV1, 0, 2),
        "features.2": (CONV2, CONV1, 2),
        "head": (HEAD, CONV1 + CONV2, 1),
    }
    for path, (flops, before, depth) in expected.items():
        bar = bars[path]
        assert bar["value"] == str(flops)
        assert bar["width"] == pytest.approx(width * flops / scale, abs=0.5), path
        assert bar["left"] == pytest.approx(width * before / scale, abs=0.5), path
        assert bar["top"] == pytest.approx(depth * ROW_HEIGHT, abs=0.5), path
        assert bar["height"] > 0


def test_partial_values_are_hatched_and_marked_as_lower_bounds(browser, page):
    show(browser, page)
    _, bars = bars_of(browser, "chart-operator_flops")
    # aten.relu and aten.mean have no formula: the root and features are
    # lower bounds; each convolution is exact.
    for path in ("", "features"):
        assert bars[path]["status"] == "partial"
        assert "\u2265" in bars[path]["text"]
        assert "repeating-linear-gradient" in bars[path]["hatching"]
    assert bars[""]["text"] == "SmallCnn \u2265 258.37 kFLOPs"
    assert bars["features.0"]["text"] == "features.0 110.59 kFLOPs"
    assert bars["features.0"]["hatching"] == "none"


def test_module_formula_chart_matches_the_report(browser, report, page):
    show(browser, page)
    width, bars = bars_of(browser, "chart-module_flops")
    layers = {layer["path"]: layer for layer in report["layers"]}
    total = report["totals"]["module_flops"]["value"]
    assert bars[""]["width"] == pytest.approx(width, abs=0.5)  # the larger chart spans the width
    for path in ("features.0", "features.1", "features.2", "head"):
        flops = layers[path]["metrics"]["module_flops"]["value"]
        assert bars[path]["width"] == pytest.approx(width * flops / total, abs=0.5), path


def test_tables_show_the_numbers(browser, report, page):
    show(browser, page)
    assert text_of(browser, 'tr[data-metric="operator_flops"] td') == f"\u2265 {CONV1 + CONV2 + HEAD:,}"
    assert text_of(browser, 'tr[data-metric="parameters"] td') == f"{report['totals']['parameters']['value']:,}"
    head = browser.evaluate("[...document.querySelectorAll('tr[data-path=\"head\"] td')].map(td => td.textContent)")
    # Layer, type, output shape, parameters (16 * 10 + 10), bytes, module
    # FLOPs, MACs, operator FLOPs.
    assert head[:5] == ["head", "Linear", "(1, 10)", "170", "680"]
    assert head[-1] == str(HEAD)
    convolution = browser.evaluate(
        "[...document.querySelectorAll('tr[data-operator=\"aten.convolution\"] td')].map(td => td.textContent)"
    )
    assert convolution[:2] == ["aten.convolution", f"{CONV1 + CONV2:,}"]
    assert text_of(browser, 'details[data-code="uncounted_operator"] .count') == "2"
    assert_clean(browser)


def test_clicking_a_bar_zooms_in_and_the_top_bar_zooms_out(browser, page):
    show(browser, page)
    browser.evaluate("document.querySelector('#chart-operator_flops .bar[data-path=\"features\"]').click()")
    width, bars = bars_of(browser, "chart-operator_flops")
    assert set(bars) == {"features", "features.0", "features.2"}
    assert bars["features"]["width"] == pytest.approx(width, abs=0.5)
    assert bars["features"]["top"] == 0
    assert bars["features.0"]["width"] == pytest.approx(width * CONV1 / (CONV1 + CONV2), abs=0.5)
    browser.evaluate("document.querySelector('#chart-operator_flops .bar[data-path=\"features\"]').click()")
    _, bars = bars_of(browser, "chart-operator_flops")
    assert "" in bars and "head" in bars
    assert_clean(browser)


def test_compare_outlines_the_changed_layer_on_one_scale(browser, report, tmp_path):
    torch.manual_seed(0)
    wider = SmallCnn()
    wider.head = nn.Linear(16, 20)
    after = tsd.crawl_module(wider, (3, 16, 16))
    path = tmp_path / "compare.html"
    tsd.write_html(tsd.compare_reports(report, after), path, before=report, after=after)
    show(browser, path)
    width, old = bars_of(browser, "chart-before_operator_flops")
    _, new = bars_of(browser, "chart-after_operator_flops")
    assert "mark-changed" in old["head"]["classes"] and "mark-changed" in new["head"]["classes"]
    assert "mark-changed" not in new["features"]["classes"]
    scale = CONV1 + CONV2 + 2 * HEAD  # the after side is the larger
    assert new[""]["width"] == pytest.approx(width, abs=0.5)
    assert old[""]["width"] == pytest.approx(width * (CONV1 + CONV2 + HEAD) / scale, abs=0.5)
    assert new["head"]["width"] == pytest.approx(width * 2 * HEAD / scale, abs=0.5)
    assert text_of(browser, 'tr[data-metric="parameters"] td:nth-of-type(3)') == "+170"  # 16 * 10 + 10 more
    assert_clean(browser)


def test_flop_report_page(browser, tmp_path):
    torch.manual_seed(0)
    cnn = SmallCnn()
    path = tmp_path / "flops.html"
    tsd.write_html(tsd.measure_flops(lambda: cnn(torch.randn(1, 3, 16, 16))), path)
    show(browser, path)
    width, bars = bars_of(browser, "chart-operator_flops")
    assert bars[""]["width"] == pytest.approx(width, abs=0.5)
    assert bars["features.2"]["width"] == pytest.approx(width * CONV2 / (CONV1 + CONV2 + HEAD), abs=0.5)
    assert_clean(browser)


# What the roofline plot shows: each point's operator, numbers and place.
POINTS = """(() => {
  const svg = document.getElementById('roofline-plot');
  const box = svg.getBoundingClientRect();
  return {
    box: {width: box.width, height: box.height},
    points: [...svg.querySelectorAll('circle.point')].map(point => {
      const r = point.getBoundingClientRect();
      return {op: point.dataset.operator, intensity: Number(point.dataset.intensity),
              flops_per_second: Number(point.dataset.flopsPerSecond),
              x: r.left + r.width / 2 - box.left, y: r.top + r.height / 2 - box.top,
              fill: point.getAttribute('fill')};
    }),
    roofs: svg.querySelectorAll('line.roof').length,
  };
})()"""


def test_flop_report_page_shows_bytes_and_the_roofline(browser, tmp_path):
    torch.manual_seed(0)
    cnn = SmallCnn()
    x = torch.randn(1, 3, 16, 16)
    report = tsd.measure_flops(lambda: cnn(x))
    moved = report["bytes"]
    path = tmp_path / "roofline.html"
    tsd.write_html(report, path, device_model="H100 SXM")
    show(browser, path)
    # The totals: bytes moved as the report has them, complete (no `\u2265`).
    bytes_row = text_of(browser, 'tr[data-metric="bytes"] td')
    assert bytes_row == f"{moved['value']:,}"
    # The bytes by module: its own chart, the whole report at the top.
    width, bars = bars_of(browser, "chart-bytes_moved")
    assert bars[""]["value"] == str(moved["value"])
    assert bars[""]["width"] == pytest.approx(width, abs=0.5)
    # One point per operator with both FLOPs and bytes, at its FLOPs per
    # byte, under the fp32 roofs (the CNN ran in float32).
    plotted = {
        op: flops / (moved["by_operator"][op]["read"] + moved["by_operator"][op]["written"])
        for op, flops in report["by_operator"].items()
        if flops and op in moved["by_operator"]
    }
    plot = browser.evaluate(POINTS)
    assert len(plot["points"]) == len(plotted) >= 2
    assert plot["roofs"] == 2  # the memory roof and the fp32 compute roof
    h100 = tsd.devices.device_spec("H100 SXM")
    for point in plot["points"]:
        intensity = plotted[point["op"]]
        assert point["intensity"] == pytest.approx(intensity, rel=1e-3)
        bound = min(h100.peak_flops["fp32"], intensity * h100.memory_bandwidth)
        assert point["flops_per_second"] == pytest.approx(bound, rel=1e-3)
        assert 0 < point["x"] < plot["box"]["width"] and 0 < point["y"] < plot["box"]["height"]
        assert point["fill"] != "none"  # complete counts: filled
    # Higher intensity sits further right.
    ordered = sorted(plot["points"], key=lambda point: point["intensity"])
    assert [point["x"] for point in ordered] == sorted(point["x"] for point in ordered)
    # The operators table's bytes and FLOPs per byte, for the first product.
    op = max(plotted, key=lambda name: report["by_operator"][name])
    cells = browser.evaluate(
        f"[...document.querySelector('tr[data-operator=\"{op}\"]').children].map(c => c.textContent)"
    )
    assert cells[3] == f"{moved['by_operator'][op]['read'] + moved['by_operator'][op]['written']:,}"
    assert cells[4] == f"{plotted[op]:.2f}"
    # FLOPs per byte are ratios, not integer counts: sorting by them orders
    # the operators by intensity, largest first, those without one last.
    order = """[...document.getElementById('operators-table').tBodies[0].rows]
      .filter(row => row.offsetParent !== null).map(row => row.dataset.operator)"""
    browser.click("#operators-table thead th:nth-child(5)")
    operators = browser.evaluate(order)
    intensities = sorted(plotted.values(), reverse=True)
    assert [plotted[name] for name in operators[: len(plotted)]] == intensities
    assert not set(operators[len(plotted) :]) & set(plotted)
    browser.click("#operators-table thead th:nth-child(5)")  # smallest first
    operators = browser.evaluate(order)
    assert [plotted[name] for name in operators[: len(plotted)]] == intensities[::-1]
    browser.click("#operators-table thead th:nth-child(5)")  # back to the report's order
    # A search for an operator outlines its point as it does its row.
    browser.press("/")
    browser.type_text(op)
    hits = browser.evaluate("[...document.querySelectorAll('circle.point.hit')].map(p => p.dataset.operator)")
    assert hits == [op]
    browser.press("Escape")
    assert browser.evaluate("document.querySelectorAll('circle.point.hit').length") == 0
    assert_clean(browser)


# ---- A tower of repeated blocks: layout, labels, colours, folds, sorting,
# filtering, search and zoom on a page a person would scroll through.


class Proj(nn.Module):
    """x @ W: a class with no module formula, as transformers' Conv1D."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(16, 16))

    def forward(self, x):
        return x @ self.weight


class Block(nn.Module):
    def __init__(self, act):
        super().__init__()
        self.proj, self.act, self.proj2 = Proj(), act, Proj()

    def forward(self, x):
        return self.proj2(self.act(self.proj(x)))


class Tower(nn.Module):
    """Six blocks; the third's GELU makes it differ from its neighbours."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(8, 16)
        self.blocks = nn.Sequential(*[Block(nn.GELU() if i == 2 else nn.ReLU()) for i in range(6)])
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        return self.head(self.blocks(self.embed(x)))


# Per input (8,): 2 x M x K x N for each matrix product, biases not counted.
EMBED, PROJ, TOWER_HEAD = 2 * 8 * 16, 2 * 16 * 16, 2 * 16 * 4
TOWER = EMBED + 6 * 2 * PROJ + TOWER_HEAD


@pytest.fixture(scope="module")
def tower():
    torch.manual_seed(0)
    return tsd.crawl_module(Tower(), (8,))


@pytest.fixture(scope="module")
def tower_page(tower, tmp_path_factory):
    path = tmp_path_factory.mktemp("html") / "tower.html"
    tsd.write_html(tower, path, title="Tower")
    return path


# The rows of a table as a person sees them: visible ones, in page order.
VISIBLE_ROWS = """(id => [...document.getElementById(id).tBodies[0].rows]
  .filter(row => row.offsetParent !== null)
  .map(row => [...row.cells].map(cell => cell.innerText)))"""


def visible_rows(browser, table_id):
    return browser.evaluate(f"{VISIBLE_ROWS}('{table_id}')")


def layer_flops(tower):
    """Layer call -> operator FLOPs (known value) from the report."""
    return {(e["path"], e["call_index"]): e["total"]["known_value"] for e in tower["layer_operator_flops"]}


def test_charts_are_full_width_one_above_the_other(browser, page):
    show(browser, page)
    layout = browser.evaluate(
        """[...document.querySelectorAll('#flops .icicle, #flops')].map(e => {
             const r = e.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; })"""
    )
    (left, _, width, _), modules, operators = layout
    for chart in (modules, operators):
        assert chart[0] == pytest.approx(left, abs=0.5) and chart[2] == pytest.approx(width, abs=0.5)
    assert operators[1] >= modules[1] + modules[3]  # below, not beside
    assert width > 1100  # the page's width at 1280 px, less its margins
    assert_clean(browser)


def test_labels_fit_their_bars_or_are_left_out(browser, page, tower_page):
    for path in (page, tower_page):
        show(browser, path)
        labels = browser.evaluate(
            "[...document.querySelectorAll('.icicle .bar')].map(b => [b.dataset.path, b.textContent,"
            " b.scrollWidth <= b.clientWidth, b.getBoundingClientRect().width])"
        )
        assert len(labels) > 10
        for path_, text, fits, _ in labels:
            assert fits, (path_, text)
            assert not re.match(r"^\d+\b", text), (path_, text)  # never a bare "0 ..." or "0..."
    # Narrow bars say nothing rather than something cut: the SmallCnn's head
    # is 320 of 258,368 FLOPs, about 1.5 px.
    show(browser, page)
    _, bars = bars_of(browser, "chart-operator_flops")
    assert bars["head"]["width"] < 3 and bars["head"]["text"] == ""
    # Wide ones name the full path with the value (tooltips always do).
    assert bars["features.2"]["text"] == f"features.2 {CONV2 / 1e3:.2f} kFLOPs"
    assert browser.evaluate(
        "document.querySelector('#chart-operator_flops .bar[data-path=\"head\"]').title"
    ).startswith("head (Linear)\n320 FLOPs")


def test_touching_sibling_bars_have_different_colours(browser, tower_page):
    show(browser, tower_page)
    bars = browser.evaluate(
        """[...document.querySelectorAll('#chart-operator_flops .bar')].map(b => {
             const r = b.getBoundingClientRect();
             return [b.dataset.path, r.left, r.right, r.top, getComputedStyle(b).backgroundColor]; })"""
    )
    touching = [
        (a[0], b[0])
        for a in bars
        for b in bars
        if a[3] == b[3] and abs(a[2] - b[1]) < 0.5 and a[4] == b[4] and a[0] != b[0]
    ]
    assert touching == []
    colour = {path: rgb for path, _, _, _, rgb in bars}
    # The six blocks, all of one class, alternate two shades of one hue.
    assert len({colour[f"blocks.{i}"] for i in range(6)}) == 2
    assert colour["blocks.0"] != colour["blocks.1"] and colour["blocks.0"] == colour["blocks.2"]


def test_a_chart_of_layers_without_formulas_is_folded_and_says_why(browser, tower, tower_page):
    show(browser, tower_page)
    summary = text_of(browser, "details.chart-fold summary")
    # 464 of 6,528 FLOPs: the Proj layers (12 calls) and the GELU have none.
    assert tower["totals"]["module_flops"]["known_value"] == EMBED + TOWER_HEAD + 5 * 16
    assert summary.startswith("Module formulas: \u2265 464 FLOPs (7.1% of the scale: folded")
    assert "No module formula for Proj (12 calls), GELU (1 call)" in summary
    assert browser.evaluate("document.querySelectorAll('#chart-module_flops .bar').length") == 0
    # The operator chart has the whole width and sits right under the line.
    width, bars = bars_of(browser, "chart-operator_flops")
    assert bars[""]["width"] == pytest.approx(width, abs=0.5) and bars[""]["value"] == str(TOWER)
    browser.click("details.chart-fold summary")
    width, bars = bars_of(browser, "chart-module_flops")
    assert bars[""]["width"] == pytest.approx(width * 464 / TOWER, abs=0.5)  # one scale with the operators
    assert bars["embed"]["width"] == pytest.approx(width * EMBED / TOWER, abs=0.5)
    assert_clean(browser)


def test_identical_blocks_are_folded_and_open_on_a_click(browser, tower_page):
    show(browser, tower_page)
    rows = visible_rows(browser, "layers-table")
    names = [row[0] for row in rows]
    folds = [name for name in names if "identical" in name]
    # blocks.2 (a GELU) differs: 0-1 fold, then 3-5.
    assert [fold.split(" blocks")[0] for fold in folds] == [
        "2 \u00d7 Block, identical",
        "3 \u00d7 Block, identical",
    ]
    expanded = "[...document.querySelectorAll('.fold-toggle')].map(b => b.getAttribute('aria-expanded'))"
    assert browser.evaluate(expanded) == ["false", "false"]
    assert "blocks.0 to blocks.1, 4 rows each" in folds[0]
    # 28 layer calls; blocks.1, .4 and .5 (4 rows each) folded away.
    assert len(rows) - len(folds) == 28 - 12
    assert text_of(browser, '.table-count[data-table="layers"]') == "16 of 28 rows shown (identical blocks folded)"
    shown = lambda path: browser.evaluate(f"document.querySelector('tr[data-path=\"{path}\"]').offsetParent !== null")
    assert shown("blocks.3.proj") and not shown("blocks.4.proj") and not shown("blocks.5")
    browser.click('tr.fold:has(+ tr[data-path="blocks.3"]) .fold-toggle')
    assert shown("blocks.4.proj") and shown("blocks.5") and not shown("blocks.1")
    assert browser.evaluate(expanded) == ["false", "true"]
    assert text_of(browser, '.table-count[data-table="layers"]') == "24 of 28 rows shown (identical blocks folded)"
    assert_clean(browser)


def heading(table_id, text):
    """The selector of a table's column heading."""
    index = {"Layer": 1, "Type": 2, "Parameters": 4, "Module FLOPs": 6, "Operator FLOPs": 8, "Operator": 1, "FLOPs": 2}
    return f"#{table_id} thead th:nth-child({index[text]})"


def test_sorting_the_layers_by_operator_flops(browser, tower, tower_page):
    show(browser, tower_page)
    flops = layer_flops(tower)
    # The report's numbers, largest first, calls in call order on ties.
    calls = [(layer["path"], layer["call_index"]) for layer in tower["layers"]]
    expected = sorted(calls, key=lambda call: -flops[call])
    assert [flops[call] for call in expected[:3]] == [TOWER, 12 * PROJ, 2 * PROJ]
    name = lambda path: path or "<root>"

    browser.click(heading("layers-table", "Operator FLOPs"))
    rows = visible_rows(browser, "layers-table")
    # Flat: every call, folds and indentation gone, each named by its path.
    assert [row[0] for row in rows] == [name(path) for path, _ in expected]
    assert [row[-1] for row in rows[:3]] == [f"\u2265 {TOWER:,}", f"\u2265 {12 * PROJ:,}", f"\u2265 {2 * PROJ:,}"]
    assert browser.evaluate(f"document.querySelector({heading('layers-table', 'Operator FLOPs')!r}).getAttribute('aria-sort')") == "descending"

    browser.click(heading("layers-table", "Operator FLOPs"))  # smallest first
    rows = visible_rows(browser, "layers-table")
    assert [row[0] for row in rows][:6] == [f"blocks.{i}.act" for i in range(6)]  # 0 FLOPs (no formula)
    assert rows[-1][0] == "<root>"

    browser.click(heading("layers-table", "Operator FLOPs"))  # the tree again, folded
    rows = visible_rows(browser, "layers-table")
    assert [row[0] for row in rows[:4]] == ["tower", "embed", "blocks", rows[3][0]]
    assert "2 \u00d7 Block, identical" in rows[3][0]
    assert len(rows) == 16 + 2
    assert_clean(browser)


def test_missing_values_sort_last_both_ways(browser, tower, tower_page):
    show(browser, tower_page)
    # Module FLOPs: containers have none; Proj and GELU only "≥ 0".
    containers = ["<root>", "blocks"] + [f"blocks.{i}" for i in range(6)]
    browser.click(heading("layers-table", "Module FLOPs"))  # largest first
    rows = visible_rows(browser, "layers-table")
    assert [row[0] for row in rows[:2]] == ["embed", "head"]  # 256 and 128 FLOPs
    assert [row[0] for row in rows[-8:]] == containers and {row[5] for row in rows[-8:]} == {""}
    browser.click(heading("layers-table", "Module FLOPs"))  # smallest first
    rows = visible_rows(browser, "layers-table")
    assert [row[5] for row in rows[:13]] == ["\u2265 0"] * 13  # 12 Proj, 1 GELU
    assert [row[0] for row in rows[-8:]] == containers  # still after every number
    assert_clean(browser)


def test_filtering_the_layer_and_operator_tables(browser, tower_page):
    show(browser, tower_page)
    browser.click('.table-filter[data-table="layers"]')
    browser.type_text("proj2")
    rows = visible_rows(browser, "layers-table")
    assert [row[0] for row in rows] == [f"blocks.{i}.proj2" for i in range(6)]  # folded ones too
    assert [row[-1] for row in rows] == [f"{PROJ:,}"] * 6
    assert text_of(browser, '.table-count[data-table="layers"]') == "6 of 28 rows shown"
    browser.press("Escape")  # clears the filter
    assert len(visible_rows(browser, "layers-table")) == 16 + 2  # the folded tree again
    # By type, in any case.
    browser.click('.table-filter[data-table="layers"]')
    browser.type_text("GELU")
    assert [row[0] for row in visible_rows(browser, "layers-table")] == ["blocks.2.act"]

    browser.click('.table-filter[data-table="operators"]')
    browser.type_text("mm")
    operators = [row[0] for row in visible_rows(browser, "operators-table")]
    assert operators == ["aten.mm", "aten.addmm"]  # 12 x PROJ, then EMBED + TOWER_HEAD
    browser.click(heading("operators-table", "Operator"))  # A to Z
    assert [row[0] for row in visible_rows(browser, "operators-table")] == ["aten.addmm", "aten.mm"]
    assert_clean(browser)


def classes_of(browser, selector):
    return browser.evaluate(
        f"Object.fromEntries([...document.querySelectorAll({selector!r})].map(e => [e.dataset.path, e.className]))"
    )


def test_search_highlights_bars_and_rows(browser, tower_page):
    show(browser, tower_page)
    browser.press("/")  # from anywhere on the page
    assert browser.evaluate("document.activeElement.id") == "search"
    browser.type_text("PROJ2")
    assert browser.evaluate("document.getElementById('search').value") == "PROJ2"
    bars = classes_of(browser, "#chart-operator_flops .bar")
    hits = sorted(path for path, classes in bars.items() if "hit" in classes.split())
    assert hits == [f"blocks.{i}.proj2" for i in range(6)]
    assert all("dim" in classes.split() for path, classes in bars.items() if path not in hits)
    rows = classes_of(browser, "#layers-table tbody tr[data-path]")
    assert sorted(path for path, classes in rows.items() if "hit" in classes.split()) == hits
    # Both folds hide a matching row, and say so.
    assert browser.evaluate("document.querySelectorAll('tr.fold.holds-hit').length") == 2
    # Six bars in each of the operator, parameter and byte charts (the
    # folded module-formula chart draws none), six layer rows.
    assert text_of(browser, "#search-count") == "18 bars and 6 rows match"
    # A zoom keeps the highlight.
    browser.click('#chart-operator_flops .bar[data-path="blocks.3"]')
    assert "hit" in classes_of(browser, "#chart-operator_flops .bar")["blocks.3.proj2"].split()
    browser.press("Escape")  # the focus is on the chart now: Escape still ends the search
    assert text_of(browser, "#search-count") == ""
    assert browser.evaluate("document.querySelectorAll('.hit, .dim, .holds-hit').length") == 0
    # Operators match by name.
    browser.press("/")
    browser.type_text("addmm")
    operator_rows = browser.evaluate("[...document.querySelectorAll('#operators-table tr.hit')].map(r => r.dataset.operator)")
    assert operator_rows == ["aten.addmm"]
    assert_clean(browser)


def test_breadcrumbs_follow_the_zoom(browser, tower_page):
    show(browser, tower_page)
    crumbs = lambda: text_of(browser, '[data-chart="operator_flops"] .crumbs')
    assert crumbs() == ""  # not zoomed
    browser.click('#chart-operator_flops .bar[data-path="blocks.3"]')
    assert crumbs() == "Zoomed into: Tower \u203a blocks \u203a blocks.3"
    width, bars = bars_of(browser, "chart-operator_flops")
    assert set(bars) == {"blocks.3", "blocks.3.proj", "blocks.3.proj2"}  # the ReLU ran no counted FLOPs
    assert bars["blocks.3.proj"]["width"] == pytest.approx(width / 2, abs=0.5)
    browser.click('[data-chart="operator_flops"] .crumbs .crumb:nth-of-type(2)')  # "blocks"
    assert crumbs() == "Zoomed into: Tower \u203a blocks"
    width, bars = bars_of(browser, "chart-operator_flops")
    assert bars["blocks"]["width"] == pytest.approx(width, abs=0.5) and "blocks.5" in bars
    assert bars["blocks.5"]["width"] == pytest.approx(width / 6, abs=0.5)
    browser.click('[data-chart="operator_flops"] .crumbs .crumb')  # "Tower"
    assert crumbs() == ""
    width, bars = bars_of(browser, "chart-operator_flops")
    assert bars[""]["width"] == pytest.approx(width, abs=0.5)
    assert_clean(browser)


def test_hovering_a_bar_outlines_the_module_in_the_other_chart(browser, page):
    show(browser, page)
    browser.hover('#chart-operator_flops .bar[data-path="features.2"]')
    linked = lambda: sorted(
        (chart, path)
        for chart in ("module_flops", "operator_flops")
        for path, classes in classes_of(browser, f"#chart-{chart} .bar").items()
        if "linked" in classes.split()
    )
    assert linked() == [("module_flops", "features.2")]
    browser.hover('#chart-module_flops .bar[data-path="features"]')
    assert linked() == [("operator_flops", "features")]
    assert_clean(browser)


def test_flops_by_module_type_and_where_each_operator_ran(browser, tower_page):
    torch.manual_seed(0)
    with FlopCounterMode(display=False) as mode:
        Tower()(torch.randn(1, 8))
    counts = mode.get_flop_counts()["Global"]
    show(browser, tower_page)
    rows = {row[0]: row[1:] for row in visible_rows(browser, "types-table")}
    # Modules, calls, FLOPs (inclusive), self FLOPs, self share.
    assert rows["Proj"][:4] == ["12", "12", f"{12 * PROJ:,}", f"{12 * PROJ:,}"]
    assert 12 * PROJ == counts[torch.ops.aten.mm]  # the x @ W products are all Proj's
    assert rows["Linear"][:4] == ["2", "2", f"{EMBED + TOWER_HEAD:,}", f"{EMBED + TOWER_HEAD:,}"]
    assert EMBED + TOWER_HEAD == counts[torch.ops.aten.addmm]
    assert rows["Block"][:4] == ["6", "6", f"\u2265 {12 * PROJ:,}", "\u2265 0"]  # no FLOPs of their own
    assert rows["ReLU"][:2] == ["5", "5"] and rows["GELU"][:2] == ["1", "1"]
    assert sum(int(row[3].lstrip("\u2265 ").replace(",", "")) for row in rows.values()) == TOWER
    assert rows["Proj"][4] == f"{100 * 12 * PROJ / TOWER:.1f}%"
    assert rows["Tower"][5] == f"aten.mm {100 * 12 * PROJ / TOWER:.1f}%, aten.addmm {100 * (EMBED + TOWER_HEAD) / TOWER:.1f}%"
    # Each operator names the types that ran it.
    run_in = {row[0]: row[3] for row in visible_rows(browser, "operators-table")}
    assert run_in["aten.mm"] == "Proj 100.0%" and run_in["aten.addmm"] == "Linear 100.0%"

    # A type's button highlights its modules, and only those.
    browser.click('#types-table tr[data-type="Proj"] .type-search')
    assert browser.evaluate("document.getElementById('search').value") == "type:Proj"
    bars = classes_of(browser, "#chart-operator_flops .bar")
    hits = sorted(path for path, classes in bars.items() if "hit" in classes.split())
    assert hits == sorted(f"blocks.{i}.{name}" for i in range(6) for name in ("proj", "proj2"))
    layer_hits = browser.evaluate("[...document.querySelectorAll('#layers-table tr.hit')].map(r => r.dataset.path)")
    assert sorted(layer_hits) == hits
    # Sorting the types by self FLOPs, largest first.
    browser.click("#types-table thead th:nth-child(5)")
    order = [row[0] for row in visible_rows(browser, "types-table")]
    assert order[:2] == ["Proj", "Linear"]
    assert_clean(browser)


def png_size(path: Path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_screenshot_script_keeps_a_picture_of_the_page(browser, page):
    # The script that makes the README's picture (docs/cli.md), run as a
    # program; its picture of this page is the test artifact.
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    out = ARTIFACTS / "html_report.png"
    result = subprocess.run(
        [sys.executable, str(SCRIPT), str(page), str(out), "--width", "1280", "--height", "1000"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert png_size(out) == (1280, 1000)
    # Scrolled to a section, as the docs' picture of the layer table is.
    layers = ARTIFACTS / "html_report_layers.png"
    command = [sys.executable, str(SCRIPT), str(page), str(layers), "--height", "600", "--scroll-to"]
    result = subprocess.run(command + ["#layers"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert png_size(layers) == (1280, 600)
    result = subprocess.run(command + ["#no-such-section"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr == "html_screenshot: --scroll-to: no element matches '#no-such-section'\n"
