"""`python -m torchscan_dispatch`: the `torchscan` command line in Python, for
TorchScript files, torch.export .pt2 files and model factories.

The same TorchScript file through both command lines gives the same table
(diagnostics listed), the same JSON (but the context's python_version, which
the C++ command leaves empty) and the same folded stacks; the other inputs
are checked against FlopCounterMode and the modules' own parameter counts.
Error cases run main() in this process (fast); the rest run the real
command in a subprocess.
"""

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import flop_counter_mode_counts
from torch import nn

from torchscan_dispatch._imports import prepare_torchvision
from torchscan_dispatch.cli import main

ROOT = Path(__file__).resolve().parents[2]
CLI = os.environ.get("TORCHSCAN_CLI", str(ROOT / "bazel-bin" / "tools" / "torchscan"))


def python_cli(*args):
    # timeout: a hang guard (a run takes seconds).
    return subprocess.run(
        [sys.executable, "-m", "torchscan_dispatch", *map(str, args)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "python"), *sys.path])},
    )


def cpp_cli(*args):
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, check=False, timeout=300)


def in_process(*args):
    out, err = io.StringIO(), io.StringIO()
    status = main([str(arg) for arg in args], out, err)
    return status, out.getvalue(), err.getvalue()


def small_cnn():
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, stride=2, padding=1),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(8 * 8 * 8, 10),
    ).eval()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    directory = tmp_path_factory.mktemp("models")
    model = small_cnn()
    torch.jit.script(model).save(str(directory / "cnn.pt"))
    example = torch.rand(1, 3, 16, 16)
    torch.export.save(torch.export.export(model, (example,)), str(directory / "cnn.pt2"))
    return directory


def test_torchscript_file_gives_the_cpp_commands_table_json_and_folded_stacks(files, tmp_path):
    python_json, cpp_json = tmp_path / "python.json", tmp_path / "cpp.json"
    python_folded, cpp_folded = tmp_path / "python.folded", tmp_path / "cpp.folded"
    python = python_cli(files / "cnn.pt", "--input-shape", "3,16,16", "--json", python_json, "--folded", python_folded)
    cpp = cpp_cli(files / "cnn.pt", "--input-shape", "3,16,16", "--json", cpp_json, "--folded", cpp_folded)
    assert (python.returncode, cpp.returncode) == (0, 0), python.stderr + cpp.stderr
    assert python.stdout == cpp.stdout
    assert "Diagnostics: 2\n  uncounted_operator: 2 on 2 operators (flops)" in python.stdout
    python_report, cpp_report = json.loads(python_json.read_text()), json.loads(cpp_json.read_text())
    assert cpp_report["context"].pop("python_version") == ""
    assert python_report["context"].pop("python_version") != ""
    assert python_report == cpp_report
    assert python_folded.read_text() == cpp_folded.read_text()
    assert python.stderr == cpp.stderr


def test_pt2_file_counts_equal_flop_counter_mode_on_the_original_module(files):
    result = python_cli(files / "cnn.pt2", "--json", "-")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    model, example = small_cnn(), torch.rand(1, 3, 16, 16)
    total, by_operator = flop_counter_mode_counts(lambda: model(example))
    assert report["operator_flops"]["by_operator"] == by_operator
    assert report["totals"]["operator_flops"]["known_value"] == total
    assert report["totals"]["parameters"]["value"] == sum(p.numel() for p in model.parameters())
    assert [layer["path"] for layer in report["layers"]] == ["", "0", "1", "2", "3", "4"]
    assert report["inputs"]["source"] == "generated"


def test_pt2_file_on_meta_counts_what_cpu_counts(files):
    status, meta_text, err = in_process(files / "cnn.pt2", "--device", "meta", "--input-shape", "3,16,16", "--json", "-")
    assert status == 0, err
    status, cpu_text, err = in_process(files / "cnn.pt2", "--input-shape", "3,16,16", "--json", "-")
    assert status == 0, err
    meta, cpu = json.loads(meta_text), json.loads(cpu_text)
    assert meta["operator_flops"] == cpu["operator_flops"]
    assert meta["context"]["devices"] == ["meta"] and cpu["context"]["devices"] == ["cpu"]


def test_factory_with_keyword_arguments():
    status, out, err = in_process(
        "torch.nn:Linear", "--kwarg", "in_features=6", "--kwarg", "out_features=3", "--input-shape", "6", "--json", "-"
    )
    assert status == 0, err
    report = json.loads(out)
    assert report["totals"]["parameters"]["value"] == 6 * 3 + 3
    assert report["operator_flops"]["by_operator"] == {"aten.addmm": 2 * 6 * 3}
    assert report["context"]["model_type"] == "torch.nn.modules.linear.Linear"


def test_torchvision_factory():
    prepare_torchvision()  # what the command does before importing a factory's module
    pytest.importorskip("torchvision", reason="torchvision is not installed (tools/setup installs it)")
    status, out, err = in_process(
        "torchvision.models:resnet18", "--kwarg", "num_classes=10", "--kwarg", "weights=None",
        "--input-shape", "3,32,32", "--device", "meta", "--json", "-",
    )  # fmt: skip
    assert status == 0, err
    report = json.loads(out)
    import torchvision  # noqa: PLC0415 - importable once prepare_torchvision has run

    model = torchvision.models.resnet18(num_classes=10).eval()
    total, by_operator = flop_counter_mode_counts(lambda: model(torch.rand(1, 3, 32, 32)))
    assert report["totals"]["parameters"]["value"] == sum(p.numel() for p in model.parameters())
    assert report["operator_flops"]["by_operator"] == by_operator
    assert report["context"]["devices"] == ["meta"]  # the factory's module went to --device


def test_strict_exits_1_and_still_prints(files):
    status, out, err = in_process(files / "cnn.pt", "--input-shape", "3,16,16", "--strict")
    assert status == 1
    assert "Total params:" in out
    assert err == "torchscan: Analysis is incomplete for: flops, operator_flops.\n"


def test_structure_mode_and_html(files, tmp_path):
    page = tmp_path / "cnn.html"
    status, out, err = in_process(files / "cnn.pt2", "--mode", "structure", "--html", page)
    assert status == 0, err
    assert "Total params:" in out and "Operator forward FLOPs: unavailable" in out
    html = page.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and "<title>cnn.pt2</title>" in html


def test_compare_prints_what_the_cpp_command_prints(files, tmp_path):
    narrow, wide = tmp_path / "narrow.json", tmp_path / "wide.json"
    for path, width in ((narrow, 3), (wide, 5)):
        assert in_process("torch.nn:Linear", "--kwarg", "in_features=4", "--kwarg", f"out_features={width}",
                          "--input-shape", "4", "--json", path)[0] == 0  # fmt: skip
    status, out, err = in_process("compare", narrow, wide)
    assert status == 0, err
    assert out == cpp_cli("compare", narrow, wide).stdout
    assert "parameters: complete, delta 10" in out  # (5 - 3) * (4 + 1)
    status, out, _ = in_process("compare", narrow, wide, "--json", "-")
    assert json.loads(out) == json.loads(cpp_cli("compare", narrow, wide, "--json", "-").stdout)


@pytest.mark.parametrize(
    ("arguments", "status", "message"),
    [
        (["absent.pt", "--input-shape", "4"], 2, "no such file: absent.pt"),
        (["{files}/cnn.pt", "--input-shape", "3,-1"], 2, "bad --input-shape"),
        (["{files}/cnn.pt", "--input-shape", "3,16,16", "--dtype", "float7"], 2, "unknown --dtype 'float7'"),
        (["{files}/cnn.pt", "--input-shape", "3,16,16", "--mode", "fast"], 2, "--mode must be 'full' or 'structure'"),
        (["{files}/cnn.pt"], 2, "pass --input-shape"),
        (["{files}/cnn.pt", "--input-shape", "3,16,16", "--json=-", "--html=-"], 2, "only one of --json, --html"),
        (["no_such_package.models:net", "--input-shape", "4"], 2, "cannot import 'no_such_package.models'"),
        (["torch.nn:NoSuchModule", "--input-shape", "4"], 2, "has no attribute 'NoSuchModule'"),
        (["torch.nn:Linear", "--kwarg", "in_features", "--input-shape", "4"], 2, "bad --kwarg 'in_features'"),
        (["{files}/cnn.pt", "--input-shape", "3,15"], 3, "the model raised on the input"),
        (["{files}/cnn.pt2", "--input-shape", "3,32"], 3, "the model raised on the input"),
    ],
)
def test_bad_input(files, tmp_path, arguments, status, message):
    arguments = [argument.format(files=files) for argument in arguments]
    result = in_process(*arguments)
    assert result[0] == status
    assert message in result[2]


def test_file_that_is_no_model(tmp_path):
    path = tmp_path / "notes.pt"
    path.write_text("hello")
    status, _, err = in_process(path, "--input-shape", "4")
    assert status == 2
    assert err.startswith(f"torchscan: {path} is not a TorchScript model file (torch.jit.save): ")
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    "arguments",
    [["--input-shape", "3,a"], ["--input-shape", "3,,"], ["--input-shape", "3,16,16", "--dtype", "float7"]],
)
def test_bad_option_messages_are_the_cpp_commands(files, arguments):
    status, _, err = in_process(files / "cnn.pt", *arguments)
    cpp = cpp_cli(files / "cnn.pt", *arguments)
    assert (status, err) == (cpp.returncode, cpp.stderr) == (2, cpp.stderr)


def _bad_files(files, directory):
    """name -> path of a file no command line can read."""
    notes = directory / "notes.pt"
    notes.write_text("hello\n")
    truncated = directory / "truncated.pt"
    data = (files / "cnn.pt").read_bytes()
    truncated.write_bytes(data[: len(data) // 2])
    return {"text file": notes, "truncated TorchScript": truncated, "absent": directory / "absent.pt"}


@pytest.mark.parametrize("name", ["text file", "truncated TorchScript", "absent"])
def test_a_bad_model_file_gives_one_line_the_same_on_both_command_lines(files, tmp_path, name):
    path = _bad_files(files, tmp_path)[name]
    cpp = cpp_cli(path, "--input-shape", "3,16,16")
    status, out, err = in_process(path, "--input-shape", "3,16,16")
    assert (status, out, err) == (cpp.returncode, cpp.stdout, cpp.stderr)
    assert status == 2 and out == "" and err.count("\n") == 1 and str(path) in err


@pytest.mark.parametrize(
    ("shape", "cause"),
    [
        ("3,16", "Given groups=1, weight of size [8, 3, 3, 3], expected input[1, 1, 3, 16] to have 3 channels, "
                 "but got 1 channels instead"),
        ("3,14,14", "mat1 and mat2 shapes cannot be multiplied (1x392 and 512x10)"),
    ],
)
def test_a_shape_the_torchscript_model_rejects_gives_its_cause_on_both_command_lines(files, shape, cause):
    cpp = cpp_cli(files / "cnn.pt", "--input-shape", shape)
    status, out, err = in_process(files / "cnn.pt", "--input-shape", shape)
    assert (status, err) == (cpp.returncode, cpp.stderr)
    assert status == 3
    assert err == f"torchscan: the model raised on the input: RuntimeError: {cause}\n"


@pytest.mark.parametrize("content", [b"hello\n", b"truncated"])
def test_a_bad_pt2_file_gives_one_line(tmp_path, files, content):
    path = tmp_path / "model.pt2"
    path.write_bytes(content if content != b"truncated" else (files / "cnn.pt2").read_bytes()[:5000])
    result = python_cli(path)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"torchscan: {path} is not a torch.export program file (.pt2): ")
