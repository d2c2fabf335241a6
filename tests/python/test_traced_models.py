"""Traced and scripted TorchScript of real models: torchvision's ResNet-50,
MobileNet-V3, EfficientNet, ViT and Swin, and a Hugging Face BERT built from
a config (random weights, nothing downloaded).

A traced module keeps its parameters but not its Python attributes; the C++
TorchScript front end recovers them from the module's forward graph
(crawl/recover_from_graph.h). Checked against independent values: the
parameter count of the original module, FlopCounterMode on the very same
TorchScript module, and the module formulas of crawl_module on the original
eager module, layer by layer. What cannot be recovered (a traced
MultiheadAttention's head count) is an `unrecovered_module_attribute`
diagnostic naming the module and the attribute, never a failed report.

Small inputs (64x64, BERT on 8 tokens) keep this suite to about a minute.
"""

import json
import os
import subprocess
import warnings
from pathlib import Path

import pytest
import torch
from conftest import flop_counter_mode_counts

import torchscan_dispatch
from torchscan_dispatch._imports import prepare_torchvision

prepare_torchvision()
torchvision = pytest.importorskip("torchvision", reason="torchvision is not installed (tools/setup installs it)")

CLI = os.environ.get("TORCHSCAN_CLI", str(Path(__file__).resolve().parents[2] / "bazel-bin" / "tools" / "torchscan"))
SHAPE = (3, 64, 64)

# Module formulas compared layer by layer: those of the families whose
# attributes a trace drops and the graph gives back exactly. (A pool's
# kernel comes back as the list its operator takes, and TorchScan 0.2
# counts MaxPool2d(3) and MaxPool2d((3, 3)) differently: its quirk 10.)
RECOVERED_TYPES = {"Conv2d", "Linear", "BatchNorm2d", "LayerNorm", "Dropout"}
FORMULAS = ("module_flops", "macs", "dmas")
FUSED_ATTENTION = {"aten._native_multi_head_attention", "aten._scaled_dot_product_flash_attention_for_cpu"}

VISION_MODELS = {
    "resnet50": lambda: torchvision.models.resnet50(),
    "mobilenet_v3_small": lambda: torchvision.models.mobilenet_v3_small(),
    "efficientnet_b0": lambda: torchvision.models.efficientnet_b0(),
    "vit_b_16": lambda: torchvision.models.vit_b_16(image_size=64),
    "swin_t": lambda: torchvision.models.swin_t(),
}


class Zoo:
    """Each model built once for the module, with its eager crawl."""

    def __init__(self):
        self._models = {}

    def get(self, name):
        if name not in self._models:
            torch.manual_seed(0)
            if name == "bert":
                model, example = bert()
            else:
                model, example = VISION_MODELS[name]().eval(), torch.rand(1, *SHAPE)
            report = torchscan_dispatch.crawl_module(model, args=(example,))
            self._models[name] = (model, example, report)
        return self._models[name]


def bert():
    transformers = pytest.importorskip("transformers", reason="transformers is not installed (tools/setup installs it)")
    config = transformers.BertConfig(
        vocab_size=128,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=32,
        torchscript=True,
        return_dict=False,
    )
    return transformers.BertModel(config).eval(), torch.zeros(1, 8, dtype=torch.long)


@pytest.fixture(scope="module")
def zoo():
    return Zoo()


def to_torchscript(model, example, how):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tracer's notes on Python control flow
        if how == "trace":
            return torch.jit.trace(model, (example,), check_trace=False)
        return torch.jit.script(model)


def leaf_formulas(report):
    return {
        (layer["path"], layer["call_index"]): (layer["type"], {name: layer["metrics"].get(name) for name in FORMULAS})
        for layer in report["layers"]
        if layer["type"] in RECOVERED_TYPES
    }


def check(report, model, script, example, eager_report):
    assert report["totals"]["parameters"]["value"] == sum(p.numel() for p in model.parameters())
    expected = leaf_formulas(eager_report)
    found = leaf_formulas(report)
    assert expected, "the model has no layer of a recovered family"
    assert all(metrics["module_flops"]["status"] == "complete" for _, metrics in expected.values())
    assert found == expected
    # FlopCounterMode as the crawl runs: without gradients (attention's fused
    # path depends on it).
    ours = report["operator_flops"]["by_operator"]
    with torch.no_grad():
        try:
            _, by_operator = flop_counter_mode_counts(lambda: script(example))
        except RuntimeError:
            # Some traced graphs cannot run under a Python dispatch mode (torch
            # passes a traced constant where a tensor is due): the eager model
            # runs instead. The traced graph calls aten::_convolution where
            # eager code calls aten::convolution (the same work); eager
            # nn.MultiheadAttention runs its fused kernel where the traced
            # graph has the matrix products, so with it only the
            # convolutions compare.
            _, by_operator = flop_counter_mode_counts(lambda: model(example))
            ours = dict(ours)
            if "aten._convolution" in ours:
                ours["aten.convolution"] = ours.get("aten.convolution", 0) + ours.pop("aten._convolution")
            if any(isinstance(module, torch.nn.MultiheadAttention) for module in model.modules()):
                assert ours["aten.convolution"] == by_operator["aten.convolution"]
                return
    assert {name: count for name, count in ours.items() if name in by_operator} == by_operator
    # Beyond FlopCounterMode: our formulas of the fused attention kernels.
    assert set(ours) - set(by_operator) <= FUSED_ATTENTION


@pytest.mark.parametrize("how", ["trace", "script"])
@pytest.mark.parametrize("name", sorted(VISION_MODELS))
def test_torchvision_model(zoo, name, how):
    model, example, eager_report = zoo.get(name)
    script = to_torchscript(model, example, how)
    report = torchscan_dispatch.crawl_module(script, args=(example,))
    check(report, model, script, example, eager_report)
    unrecovered = [d for d in report["diagnostics"] if d["code"] == "unrecovered_module_attribute"]
    if how == "script":
        assert unrecovered == []
    elif name == "vit_b_16":
        # nn.MultiheadAttention: its traced forward is matmuls; the head
        # count is no operator's argument.
        assert [d["path"] for d in unrecovered] == [f"encoder.layers.encoder_layer_{i}.self_attention" for i in range(12)]
        assert "num_heads" in unrecovered[0]["message"] and "MultiheadAttention" in unrecovered[0]["message"]
        attention = next(layer for layer in report["layers"] if layer["path"] == unrecovered[0]["path"])
        assert attention["metrics"]["module_flops"]["status"] == "partial"
        assert attention["parameters"]["trainable"] == 4 * 768 * 768 + 4 * 768
    else:
        assert unrecovered == []


def test_traced_hugging_face_bert(zoo):
    model, example, eager_report = zoo.get("bert")
    script = to_torchscript(model, example, "trace")
    report = torchscan_dispatch.crawl_module(script, args=(example,))
    check(report, model, script, example, eager_report)


def test_traced_resnet50_file_on_the_command_line(zoo, tmp_path):
    model, example, _ = zoo.get("resnet50")
    path = tmp_path / "resnet50_traced.pt"
    to_torchscript(model, example, "trace").save(str(path))
    result = subprocess.run(
        [CLI, str(path), "--input-shape", ",".join(map(str, SHAPE)), "--json", "-"],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["totals"]["parameters"]["value"] == 25_557_032  # torchvision's published count
    conv1 = next(layer for layer in report["layers"] if layer["path"] == "conv1")
    # 7x7 stride-2 padding-3 convolution, 3 -> 64 channels, 32x32 output.
    assert conv1["metrics"]["macs"]["value"] == 64 * 32 * 32 * 3 * 7 * 7
