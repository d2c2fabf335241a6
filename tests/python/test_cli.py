"""The `torchscan` command line: outputs and exit codes, including every
bad-input case (missing file, not TorchScript, bad shape, a shape the model
rejects), strict mode and compare."""

import json
import os
import subprocess
from pathlib import Path

import pytest
import torch
from torch import nn

CLI = os.environ.get("TORCHSCAN_CLI", str(Path(__file__).resolve().parents[2] / "bazel-bin" / "tools" / "torchscan"))


def run(*args):
    # timeout: a hang guard (a run takes seconds), so a hang fails this test
    # instead of stalling the whole suite.
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, check=False, timeout=300)


@pytest.fixture(scope="module")
def linear_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("models") / "linear.pt"
    torch.manual_seed(0)
    torch.jit.script(nn.Linear(4, 2)).save(str(path))
    return path


@pytest.mark.parametrize("name", ["mlp", "resnet18", "transformer_encoder"])
def test_every_example_runs_and_prints_the_summary(name):
    result = run("--example", name)
    assert result.returncode == 0, result.stderr
    assert "Total params:" in result.stdout and "Operator forward FLOPs:" in result.stdout


def test_examples_are_listed():
    result = run("--list-examples")
    assert result.returncode == 0
    assert {line.split(":")[0] for line in result.stdout.splitlines()} == {"mlp", "resnet18", "transformer_encoder"}


def test_example_mlp_counts_are_hand_computed():
    report = json.loads(run("--example", "mlp", "--json", "-").stdout)
    # 784-256-64-10 with biases.
    params = 784 * 256 + 256 + 256 * 64 + 64 + 64 * 10 + 10
    assert report["totals"]["parameters"]["value"] == params
    assert report["operator_flops"]["by_operator"] == {"aten.addmm": 2 * (784 * 256 + 256 * 64 + 64 * 10)}


def test_example_resnet18_matches_torchvision_resnet18_counts():
    report = json.loads(run("--example", "resnet18", "--json", "-").stdout)
    # torchvision's resnet18: 11,689,512 parameters; 1.814 GMACs of
    # convolutions and the classifier at 224x224 (published figures).
    assert report["totals"]["parameters"]["value"] == 11_689_512
    by_operator = report["operator_flops"]["by_operator"]
    assert by_operator["aten.convolution"] + by_operator["aten.addmm"] == 2 * 1_814_073_344


def test_json_report_written_to_a_file_and_summary_printed(linear_file, tmp_path):
    out = tmp_path / "report.json"
    result = run(linear_file, "--input-shape", "4", "--json", out)
    assert result.returncode == 0, result.stderr
    assert "Linear" in result.stdout
    report = json.loads(out.read_text())
    assert report["operator_flops"]["by_operator"] == {"aten.addmm": 2 * 1 * 4 * 2}


def test_missing_file(tmp_path):
    result = run(tmp_path / "absent.pt", "--input-shape", "4")
    assert result.returncode == 2
    assert "no such file" in result.stderr


def test_file_that_is_not_torchscript(tmp_path):
    path = tmp_path / "not_a_model.pt"
    path.write_text("hello")
    result = run(path, "--input-shape", "4")
    assert result.returncode == 2
    assert "is not a TorchScript model file" in result.stderr


@pytest.mark.parametrize("shape", ["a,b", "3,-1", "", "3,,", ";"])
def test_bad_shapes(linear_file, shape):
    result = run(linear_file, "--input-shape", shape)
    assert result.returncode == 2
    assert "input-shape" in result.stderr or "input_shape" in result.stderr


def test_shape_the_model_rejects(linear_file):
    result = run(linear_file, "--input-shape", "5")
    assert result.returncode == 3
    assert "the model raised on the input" in result.stderr


def test_strict_exits_1_and_still_prints(tmp_path):
    path = tmp_path / "relu.pt"
    torch.jit.script(nn.Sequential(nn.Linear(4, 4), nn.ReLU())).save(str(path))
    result = run(path, "--input-shape", "4", "--strict")
    assert result.returncode == 1
    assert "Analysis is incomplete for: flops, operator_flops." in result.stderr
    assert "Total params:" in result.stdout
    assert run(path, "--input-shape", "4").returncode == 0


def test_bad_flags():
    assert run("--example", "mlp", "--mode", "fast").returncode == 2
    assert run("--example", "mlp", "--dtype", "float7").returncode == 2
    assert run("--example", "nope").returncode == 2
    assert run("--example", "mlp", "--device", "gpu:x").returncode == 2


def test_compare(tmp_path):
    before, after = tmp_path / "before.json", tmp_path / "after.json"
    for path, width in ((before, 8), (after, 12)):
        model_path = tmp_path / f"conv{width}.pt"
        torch.jit.script(nn.Conv2d(3, width, 3)).save(str(model_path))
        assert run(model_path, "--input-shape", "3,32,32", "--json", path).returncode == 0
    text = run("compare", before, after)
    assert text.returncode == 0
    assert "parameters: complete, delta 112" in text.stdout
    diff = json.loads(run("compare", before, after, "--json", "-").stdout)
    assert diff["totals"]["parameters"]["delta"] == 112  # (12 - 8) * (27 + 1)
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    result = run("compare", before, bad)
    assert result.returncode == 2 and "invalid JSON" in result.stderr
    assert run("compare", before).returncode == 2


# --html, --folded and the diagnostics listing.


def test_diagnostics_are_listed_by_code_not_pointed_at(tmp_path):
    path = tmp_path / "relu.pt"
    torch.jit.script(nn.Sequential(nn.Linear(4, 4), nn.ReLU())).save(str(path))
    result = run(path, "--input-shape", "4")
    assert result.returncode == 0, result.stderr
    assert "inspect report['diagnostics']" not in result.stdout
    lines = result.stdout.splitlines()
    start = lines.index("Diagnostics: 1")
    assert lines[start + 1 : start + 4] == [
        "  uncounted_operator: 1 on 1 operator (flops)",
        "    aten.relu",
        "    e.g. aten.relu was observed 1 time(s), but no FLOP formula is registered.",
    ]
    assert set(lines[start + 4]) == {"_"}  # the table's closing rule


def test_html_and_folded_of_an_analysis(tmp_path):
    html, folded = tmp_path / "mlp.html", tmp_path / "mlp.folded"
    result = run("--example", "mlp", "--html", html, "--folded", folded)
    assert result.returncode == 0, result.stderr
    assert "Total params:" in result.stdout
    page = html.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "<title>mlp</title>" in page
    # The example is Sequential(Linear(784, 256), ReLU, Linear(256, 64), ReLU,
    # Linear(64, 10)): one addmm in each Linear, nothing else counted.
    lines = dict(line.rsplit(" ", 1) for line in folded.read_text().splitlines())
    assert {stack.split(";", 1)[1]: int(value) for stack, value in lines.items()} == {
        "0": 2 * 784 * 256,
        "2": 2 * 256 * 64,
        "4": 2 * 64 * 10,
    }


def test_folded_to_standard_output_replaces_the_table():
    result = run("--example", "resnet18", "--folded=-")
    assert result.returncode == 0, result.stderr
    assert "Total params:" not in result.stdout
    report = json.loads(run("--example", "resnet18", "--json", "-").stdout)
    total = sum(int(line.rsplit(" ", 1)[1]) for line in result.stdout.splitlines())
    assert total == report["totals"]["operator_flops"]["known_value"]
    assert "each value is a lower bound" in result.stderr  # aten.add etc. are uncounted
    both = run("--example", "mlp", "--folded=-", "--json=-")
    assert both.returncode == 2 and "only one of --json, --html and --folded" in both.stderr


def test_folded_of_a_structure_mode_analysis_is_an_error(tmp_path):
    result = run("--example", "mlp", "--mode", "structure", "--folded", tmp_path / "x.folded")
    assert result.returncode == 2
    assert "--folded: the report has no operator FLOPs (it was made with mode='structure')" in result.stderr


def test_html_to_an_unwritable_path(tmp_path):
    result = run("--example", "mlp", "--html", tmp_path / "missing" / "page.html")
    assert result.returncode == 2
    assert "cannot write" in result.stderr and "page.html" in result.stderr


def test_compare_html_and_differential_folded(tmp_path):
    before, after = tmp_path / "before.json", tmp_path / "after.json"
    for path, width in ((before, 8), (after, 12)):
        model_path = tmp_path / f"conv{width}.pt"
        torch.jit.script(nn.Conv2d(3, width, 3)).save(str(model_path))
        assert run(model_path, "--input-shape", "3,32,32", "--json", path).returncode == 0
    html, folded = tmp_path / "diff.html", tmp_path / "diff.folded"
    result = run("compare", before, after, "--html", html, "--folded", folded)
    assert result.returncode == 0, result.stderr
    assert "parameters: complete, delta 112" in result.stdout
    page = html.read_text(encoding="utf-8")
    assert 'id="chart-before_operator_flops"' in page and 'id="chart-after_operator_flops"' in page
    # 30x30 outputs of 3x3x3 kernels: 2 * 30 * 30 * 27 FLOPs per channel.
    assert folded.read_text() == f"Conv2d {2 * 900 * 27 * 8} {2 * 900 * 27 * 12}\n"


def test_compare_of_minimal_reports_draws_no_charts(tmp_path):
    minimal = {"schema_version": 1, "totals": {}, "layers": []}
    before, after = tmp_path / "before.json", tmp_path / "after.json"
    before.write_text(json.dumps(minimal))
    after.write_text(json.dumps(minimal))
    result = run("compare", before, after, "--html", tmp_path / "diff.html")
    assert result.returncode == 0, result.stderr
    assert "--html shows the diff only, without charts: before.context: is missing" in result.stderr
    folded = run("compare", before, after, "--folded", tmp_path / "diff.folded")
    assert folded.returncode == 2
    assert "--folded needs two full analysis reports: before.context: is missing" in folded.stderr
