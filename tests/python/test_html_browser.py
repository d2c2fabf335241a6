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
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

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
    assert bars["features.0"]["text"] == "0 110.59 kFLOPs"
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
