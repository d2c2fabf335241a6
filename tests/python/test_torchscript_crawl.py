"""The C++ TorchScript front end (through the `torchscan` command line)
against Python's crawl_module on the original models.

A model is scripted and saved by the pinned torch in the test; the C++
crawler analyses the file; the Python crawler analyses the original module.
Equal: layers (paths, call indices, names, types, output shapes, parameters,
buffers, metrics), totals, operator FLOPs (by operator and by module),
per-layer operator FLOPs and diagnostics. Documented differences
(docs/cpp.md): the context's python_version is empty, and TorchScript passes
every argument positionally, defaults included, so a layer's recorded input
can list more arguments than the Python call did.
"""

import json
import os
import subprocess
from pathlib import Path

import pytest
import torch
from torch import nn

import torchscan_dispatch

CLI = os.environ.get("TORCHSCAN_CLI", str(Path(__file__).resolve().parents[2] / "bazel-bin" / "tools" / "torchscan"))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(4)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.act(self.bn(self.conv(x))) + x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 4, 3, stride=2)
        self.blocks = nn.ModuleList([Block(), Block()])
        self.shared = nn.Linear(4, 4)
        self.pool = nn.AdaptiveAvgPool2d((1, 1))
        self.head = nn.Sequential(nn.Flatten(), nn.Dropout(0.5), nn.Linear(4, 3))
        for p in self.head[2].parameters():
            p.requires_grad_(False)

    def forward(self, x):
        x = self.stem(x)
        for block in self.blocks:
            x = block(x)
        x = self.pool(x).flatten(1)
        x = self.shared(torch.tanh(self.shared(x)))
        return self.head(x.reshape(1, 4, 1, 1))


class SelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention = nn.MultiheadAttention(8, 2, batch_first=True)
        self.norm = nn.LayerNorm(8, bias=False)

    def forward(self, x):
        return self.norm(self.attention(x, x, x)[0])


def models():
    torch.manual_seed(0)
    return {
        "net": (Net(), [(3, 17, 17)]),
        "mlp": (nn.Sequential(nn.Linear(16, 8), nn.ReLU6(), nn.Linear(8, 2)), [(16,)]),
        "cnn_pools": (
            nn.Sequential(nn.Conv2d(2, 6, 3), nn.MaxPool2d(2), nn.ConvTranspose2d(6, 3, 2, stride=2), nn.AvgPool2d((2, 2)), nn.Sigmoid()),
            [(2, 12, 12)],
        ),
        "layer_norm_attention": (nn.Sequential(nn.LayerNorm(8), nn.Linear(8, 8), nn.ELU(), nn.LeakyReLU()), [(5, 8)]),
        # Every TorchScript class of the family table (formulas/
        # module_families.h) but SyncBatchNorm, which runs on GPUs only.
        "families_1d": (
            nn.Sequential(
                nn.Conv1d(2, 4, 3, padding=1), nn.BatchNorm1d(4), nn.ReLU(inplace=True), nn.MaxPool1d(2),
                nn.ConvTranspose1d(4, 4, 2, stride=2), nn.AvgPool1d(2), nn.AdaptiveMaxPool1d(4), nn.Dropout(0.1),
                nn.Identity(), nn.Tanh(), nn.AdaptiveAvgPool1d(2),
            ).eval(),
            [(2, 16)],
        ),
        "families_3d": (
            nn.Sequential(
                nn.Conv3d(1, 2, 3, padding="same"), nn.BatchNorm3d(2, momentum=None), nn.ELU(inplace=True),
                nn.MaxPool3d(2, dilation=1), nn.ConvTranspose3d(2, 2, 2, stride=2), nn.AvgPool3d(2),
                nn.AdaptiveMaxPool3d(2), nn.AdaptiveAvgPool3d(1), nn.Flatten(), nn.Linear(2, 3),
            ),
            [(1, 8, 8, 8)],
        ),
        "attention": (SelfAttention(), [(5, 8)]),
    }


def crawl_with_cli(path, shapes, *extra):
    shape_text = ";".join(",".join(str(d) for d in shape) for shape in shapes)
    result = subprocess.run(
        [CLI, str(path), "--input-shape", shape_text, "--json", "-", *extra],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,  # a hang guard: a run takes seconds
    )
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout), result


@pytest.mark.parametrize("name", sorted(models()))
def test_torchscript_file_crawl_matches_python_crawl(name, tmp_path):
    model, shapes = models()[name]
    path = tmp_path / f"{name}.pt"
    torch.jit.script(model).save(str(path))
    ours_cpp, _ = crawl_with_cli(path, shapes)
    torch.manual_seed(0)
    ours_python = torchscan_dispatch.crawl_module(model, shapes[0] if len(shapes) == 1 else shapes)

    assert ours_cpp["context"] == {**ours_python["context"], "python_version": ""}
    assert ours_cpp["inputs"] == ours_python["inputs"]

    def comparable(layer):
        return {k: v for k, v in layer.items() if k != "input"}

    assert [comparable(l) for l in ours_cpp["layers"]] == [comparable(l) for l in ours_python["layers"]]
    for cpp_layer, python_layer in zip(ours_cpp["layers"], ours_python["layers"]):
        # TorchScript fills in defaults; the arguments the caller passed agree.
        assert cpp_layer["input"]["args"][: len(python_layer["input"]["args"])] == python_layer["input"]["args"]
    assert ours_cpp["operator_flops"] == ours_python["operator_flops"]
    assert ours_cpp["layer_operator_flops"] == ours_python["layer_operator_flops"]
    assert ours_cpp["totals"] == ours_python["totals"]
    assert ours_cpp["diagnostics"] == ours_python["diagnostics"]


def test_structure_mode_of_a_torchscript_file(tmp_path):
    model, shapes = models()["net"]
    path = tmp_path / "net.pt"
    torch.jit.script(model).save(str(path))
    ours_cpp, _ = crawl_with_cli(path, shapes, "--mode", "structure")
    ours_python = torchscan_dispatch.crawl_module(model, shapes[0], mode="structure")
    assert [l["output"] for l in ours_cpp["layers"]] == [l["output"] for l in ours_python["layers"]]
    assert ours_cpp["totals"] == ours_python["totals"]
    assert "layer_operator_flops" not in ours_cpp


def test_the_users_module_is_left_untouched(tmp_path):
    model, shapes = models()["net"]
    scripted = torch.jit.script(model)
    scripted.train()
    path = tmp_path / "net.pt"
    scripted.save(str(path))
    report, _ = crawl_with_cli(path, shapes)
    assert report["context"]["training_before"] is True
    # The saved file still runs as before (the crawl instruments a clone).
    loaded = torch.jit.load(str(path))
    assert loaded.training and "torchscan" not in str(loaded.graph)
