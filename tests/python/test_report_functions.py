"""The report functions of the library's extension module
(python/operators/report_functions.h) behind format_summary,
compare_reports, to_html, to_folded, list_diagnostics and the command
line's --folded: the same output as the JSON-string operators they replaced,
one-line errors naming the path of a bad value, and exact ints over the
reports' 128 bits.

testdata/report_functions/ was captured from those operators (main before
they were removed), through the same public calls as below: inputs.json
holds crawl_module reports of SmallCnn(8) and SmallCnn(12) on (3, 16, 16), a
measure_flops report of SmallCnn(8) on a (2, 3, 16, 16) batch, and "big",
SmallCnn(8)'s crawl with counts beyond 64 bits; outputs.json what each call
returned (pages as their sha256, without the embedded report.js and
report.css) and the messages of bad reports.
"""

import hashlib
import io
import json
import warnings
from pathlib import Path

import pytest
import torch
from torch import nn

import torchscan_dispatch as tsd
from torchscan_dispatch._library import hooks
from torchscan_dispatch.cli import main
from torchscan_dispatch.render import folded_stacks

DATA = Path(__file__).resolve().parent / "testdata" / "report_functions"
INPUTS = json.loads((DATA / "inputs.json").read_text())
OUTPUTS = json.loads((DATA / "outputs.json").read_text())
# The page embeds report/render/assets verbatim; the pages' hashes leave them
# out, so that the script and style sheet can change without recapturing.
ASSETS = tuple(
    (Path(__file__).resolve().parents[2] / "report" / "render" / "assets" / name).read_text().rstrip("\n")
    for name in ("report.js", "report.css")
)
BEFORE, AFTER, FLOPS, BIG = (INPUTS[name] for name in ("before", "after", "flops", "big"))
MACS = ("layers", 4, "metrics", "macs", "value")  # features.2, a convolution


class SmallCnn(nn.Module):
    def __init__(self, width=8):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, width, 3, padding=1), nn.ReLU(), nn.Conv2d(width, 16, 3, stride=2, padding=1)
        )
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        return self.head(torch.flatten(self.pool(self.features(x)), 1))


def text(value):
    """JSON text tells 1 from 1.0 and True from 1, which == does not."""
    return json.dumps(value, indent=1)


def with_value(report, keys, value):
    changed = json.loads(json.dumps(report))
    node = changed
    for key in keys[:-1]:
        node = node[key]
    node[keys[-1]] = value
    return changed


@pytest.mark.parametrize(
    ("name", "report", "options"),
    [
        ("default", BEFORE, {}),
        ("depth1_rf", BEFORE, {"wrap_mode": None, "max_depth": 1, "receptive_field": True, "effective_rf_stats": True}),
        ("wrap_end", AFTER, {"wrap_mode": "end", "max_depth": 2}),
        ("big", BIG, {}),
    ],
)
def test_summary_is_the_operators(name, report, options):
    assert OUTPUTS["summary"][name] == tsd.format_summary(report, **options)


def test_summary_of_a_fresh_crawl_is_the_operators():
    assert OUTPUTS["summary"]["default"] == tsd.format_summary(tsd.crawl_module(SmallCnn(8), (3, 16, 16)))


@pytest.mark.parametrize(
    ("name", "before", "after"), [("diff", BEFORE, AFTER), ("big", BEFORE, BIG), ("same", BEFORE, BEFORE)]
)
def test_compare_is_the_operators(name, before, after):
    assert text(OUTPUTS["compare"][name]) == text(tsd.compare_reports(before, after))


def test_compare_leaves_its_inputs_alone():
    before, after = json.loads(json.dumps(BEFORE)), json.loads(json.dumps(BIG))
    tsd.compare_reports(before, after)
    assert (text(BEFORE), text(BIG)) == (text(before), text(after))


def test_folded_is_the_operators():
    diff = tsd.compare_reports(BEFORE, AFTER)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert OUTPUTS["folded"]["before"] == tsd.to_folded(BEFORE)
        assert OUTPUTS["folded"]["flops"] == tsd.to_folded(FLOPS)
        assert OUTPUTS["folded"]["diff"] == tsd.to_folded(diff, before=BEFORE, after=AFTER)


def test_the_command_lines_folded_stacks_are_the_operators():
    assert tuple(OUTPUTS["folded"]["cli"]) == folded_stacks(BEFORE, None, None)


def test_the_python_commands_compare_folded_is_the_operators(tmp_path):
    before, after = tmp_path / "before.json", tmp_path / "after.json"
    before.write_text(json.dumps(BEFORE))
    after.write_text(json.dumps(AFTER))
    out, err = io.StringIO(), io.StringIO()
    assert 0 == main(["compare", str(before), str(after), "--folded", "-"], out, err)
    assert OUTPUTS["folded"]["diff"] == out.getvalue()


def test_the_python_commands_compare_folded_of_minimal_reports_is_a_usage_error(tmp_path):
    minimal = tmp_path / "minimal.json"
    minimal.write_text(json.dumps({"schema_version": 1, "totals": {}, "layers": []}))
    out, err = io.StringIO(), io.StringIO()
    assert 2 == main(["compare", str(minimal), str(minimal), "--folded", "-"], out, err)
    assert "--folded needs two full analysis reports: before.context: is missing" in err.getvalue()


def test_diagnostics_are_the_operators():
    assert OUTPUTS["diagnostics"]["before"] == tsd.list_diagnostics(BEFORE)
    assert OUTPUTS["diagnostics"]["flops"] == tsd.list_diagnostics(FLOPS)
    summary = tsd.format_summary(BEFORE)
    assert OUTPUTS["diagnostics"]["with_summary"] == tsd.list_diagnostics(BEFORE, summary=summary)


@pytest.mark.parametrize(
    ("name", "page"),
    [
        ("before", lambda: tsd.to_html(BEFORE)),
        ("flops", lambda: tsd.to_html(FLOPS, title="a FLOP report")),
        ("diff", lambda: tsd.to_html(tsd.compare_reports(BEFORE, AFTER), before=BEFORE, after=AFTER, title="diff")),
    ],
)
def test_html_is_the_operators(name, page):
    html = page()
    for asset in ASSETS:
        assert asset in html
        html = html.replace(asset, "")
    assert OUTPUTS["html_sha256"][name] == hashlib.sha256(html.encode()).hexdigest()


BROKEN = with_value(BEFORE, ("layers", 2, "metrics", "macs", "status"), "done")
NEGATIVE = with_value(BIG, MACS, -(2**90))


@pytest.mark.parametrize(
    ("name", "call"),
    [
        ("html_broken", lambda: tsd.to_html(BROKEN)),
        ("html_version", lambda: tsd.to_folded({**BEFORE, "schema_version": 2})),
        ("html_sides", lambda: tsd.to_html(BEFORE, before=BEFORE, after=AFTER)),
        ("html_model", lambda: tsd.to_html({"model": "resnet"})),
        ("compare_version", lambda: tsd.compare_reports(BEFORE, {**AFTER, "schema_version": 9})),
        ("compare_broken", lambda: tsd.compare_reports(BROKEN, AFTER)),
        ("summary_broken", lambda: tsd.format_summary(BROKEN)),
        ("summary_option", lambda: hooks().render_summary(BEFORE, {"max_width": 80})),
        ("diagnostics_model", lambda: tsd.list_diagnostics({"model": "x"})),
        ("summary_negative_big", lambda: tsd.format_summary(NEGATIVE)),
    ],
)
def test_a_report_that_does_not_read_is_the_operators_value_error(name, call):
    with pytest.raises(ValueError) as caught:
        call()
    assert OUTPUTS["errors"][name] == str(caught.value)


def deep(levels):
    value = []
    for _ in range(levels - 1):
        value = [value]
    return value


def holding_itself():
    value = []
    value.append(value)
    return value


@pytest.mark.parametrize(
    ("message", "call"),
    [
        (
            "report is not a JSON report: report.extra: a value of type Tensor is not JSON data",
            lambda: tsd.to_html({**BEFORE, "extra": torch.zeros(1)}),
        ),
        (
            "before is not a JSON report: before.layers[4].metrics.macs.value: nan is not a JSON number",
            lambda: tsd.compare_reports(with_value(BEFORE, MACS, float("nan")), AFTER),
        ),
        (
            "after is not a JSON report: after.layers[4].metrics.macs.value: -inf is not a JSON number",
            lambda: tsd.to_folded(
                tsd.compare_reports(BEFORE, AFTER), before=BEFORE, after=with_value(AFTER, MACS, -1e999)
            ),
        ),
        (
            "report is not a JSON report: report.layers[4].metrics.macs.value: "
            "an int outside 128 bits (JSON reports hold -2^127 to 2^127 - 1)",
            lambda: tsd.format_summary(with_value(BEFORE, MACS, 2**127)),
        ),
        (
            "report is not a JSON report: report.layers[4].metrics.macs.value: "
            "an int outside 128 bits (JSON reports hold -2^127 to 2^127 - 1)",
            lambda: tsd.list_diagnostics(with_value(BEFORE, MACS, -(2**127) - 1)),
        ),
        (
            "report is not a JSON report: report.layers[4].metrics.macs.value: "
            "an int outside 128 bits (JSON reports hold -2^127 to 2^127 - 1)",
            lambda: tsd.format_summary(with_value(BEFORE, MACS, 10**5000)),  # beyond int's str() limit
        ),
        (
            "report is not a JSON report: report.layers[0]: a dict key of type int, not str",
            lambda: tsd.format_summary(with_value(BEFORE, ("layers", 0, 7), "seven")),
        ),
        (
            "report is not a JSON report: report.context.model_type: "
            "a str that is not valid Unicode (a lone surrogate)",
            lambda: tsd.to_html(with_value(BEFORE, ("context", "model_type"), "Net\udc80")),
        ),
        (
            "before is not a JSON report: before.extra" + "[0]" * 511 + ": nested deeper than 512 levels",
            lambda: tsd.compare_reports({**BEFORE, "extra": deep(512)}, AFTER),
        ),
        (
            "after is not a JSON report: after.extra" + "[0]" * 511 + ": nested deeper than 512 levels",
            lambda: tsd.compare_reports(BEFORE, {**AFTER, "extra": holding_itself()}),
        ),
    ],
)
def test_a_value_no_json_report_holds_is_one_line_naming_its_path(message, call):
    with pytest.raises(ValueError) as caught:
        call()
    assert message == str(caught.value)


def test_nesting_up_to_the_json_limit_is_read():
    # What ParseJson reads (kMaxJsonDepth): the report and 511 lists below.
    assert tsd.compare_reports(BEFORE, BEFORE) == tsd.compare_reports({**BEFORE, "extra": deep(511)}, BEFORE)


def test_a_report_that_is_not_a_dict_is_a_type_error():
    with pytest.raises(TypeError, match="report must be a dict .* got list"):
        tsd.list_diagnostics([BEFORE])
    with pytest.raises(TypeError, match="after must be a dict .* got str"):
        tsd.to_folded(BEFORE, before=BEFORE, after="{}")


@pytest.mark.parametrize("value", [2**63 - 1, 2**63, 2**64 - 1, 2**64, 2**100 + 7, 2**127 - 1])
def test_big_ints_cross_exactly_both_ways(value):
    after = with_value(BEFORE, MACS, value)
    after = with_value(after, MACS[:-1] + ("known_value",), value)
    macs = BEFORE
    for key in MACS:
        macs = macs[key]
    changed = tsd.compare_reports(BEFORE, after)["layers"]["changed"]
    [delta] = [metric["delta"] for change in changed for name, metric in change["metrics"].items() if name == "macs"]
    assert (value - macs, int) == (delta, type(delta))


@pytest.mark.parametrize("value", [-(2**127), 2**127 - 1, -(2**64), 2**64 + 1])
def test_ints_within_128_bits_are_accepted_anywhere(value):
    # compare_reports reads layers and totals only: "extra" is converted and
    # then ignored.
    assert tsd.compare_reports(BEFORE, BEFORE) == tsd.compare_reports({**BEFORE, "extra": [value]}, BEFORE)


def test_a_report_read_with_json_load_and_made_here_render_alike():
    assert tsd.format_summary(BEFORE) == tsd.format_summary(json.loads(json.dumps(BEFORE)))


def test_tuples_and_subclasses_are_json_as_json_dumps_writes_them():
    class Text(str):
        pass

    class Number(int):
        def __str__(self):
            return "not digits"

    expected = with_value(with_value(BEFORE, MACS, 2**70), MACS[:-1] + ("known_value",), 2**70)
    report = json.loads(json.dumps(expected))
    report["context"]["model_type"] = Text(report["context"]["model_type"])
    report["layers"][4]["metrics"]["macs"].update(value=Number(2**70), known_value=Number(2**70))
    report["layers"] = tuple(report["layers"])
    assert text(tsd.compare_reports(BEFORE, expected)) == text(tsd.compare_reports(BEFORE, report))
    assert tsd.format_summary(expected) == tsd.format_summary(report)


def rank_report(rank, world_size=2):
    """A measured [4,5] @ [5,6] report, as rank `rank` of a job would write it."""
    a, b = torch.ones(4, 5), torch.ones(5, 6)
    report = tsd.measure_flops(lambda: a @ b)
    report["distributed"] = {"job_id": "job", "rank": rank, "world_size": world_size, "backend": "gloo",
                             "groups": []}
    return report


def test_merge_rank_reports_sums_the_ranks():
    job = hooks().merge_rank_reports([rank_report(0), rank_report(1)], ["r0", "r1"])
    # By hand: 2 * 4 * 5 * 6 FLOPs per rank.
    assert (2 * 240, "complete", []) == (job["total"]["value"], job["total"]["status"], job["missing_ranks"])
    assert {"0": 240, "1": 240} == {rank: entry["value"] for rank, entry in job["per_rank"].items()}
    assert job == tsd.merge_rank_reports([rank_report(0), rank_report(1)], ["r0", "r1"])


def test_merge_rank_reports_names_the_report_and_path_of_a_bad_value():
    bad = rank_report(1)
    bad["total"]["value"] = float("nan")
    with pytest.raises(ValueError, match=r"^r1 is not a JSON report: r1\.total\.value: nan is not a JSON number$"):
        hooks().merge_rank_reports([rank_report(0), bad], ["r0", "r1"])


def test_merge_rank_reports_wants_one_name_per_report():
    with pytest.raises(ValueError, match="one name per report"):
        hooks().merge_rank_reports([rank_report(0)], [])
    with pytest.raises(TypeError, match="takes two lists"):
        hooks().merge_rank_reports((rank_report(0),), ["r0"])
