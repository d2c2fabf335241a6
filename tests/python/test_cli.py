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
