"""crawl_module on torch.export programs (python/torchscan_dispatch/exported.py)
against crawl_module on the original eager modules and FlopCounterMode.

Equal: the layers (paths, call indices, names, types, output shapes,
parameters, buffers), the leaf modules' formulas where the graph shows every
attribute, the totals, and operator FLOPs by operator and by module.
Documented difference (docs/python.md): a layer's output is the values
later operators read, so nn.MultiheadAttention's (output, None) is its
output tensor.
"""

import pytest
import torch
from conftest import flop_counter_mode_counts
from torch import nn

import torchscan_dispatch
from torchscan_dispatch.exported import load_exported_program


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3, padding=1, groups=2, bias=False)
        self.bn = nn.BatchNorm2d(4)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)) + x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 4, 3, stride=2, dilation=1)
        self.blocks = nn.Sequential(Block(), Block())
        self.pool = nn.AvgPool2d((2, 2))
        self.shared = nn.Linear(4, 4)
        self.head = nn.Sequential(nn.Dropout(0.1), nn.Linear(4, 3))

    def forward(self, x):
        x = self.pool(self.blocks(self.stem(x))).mean((2, 3))
        return self.head(self.shared(torch.tanh(self.shared(x))))


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(8)
        self.attention = nn.MultiheadAttention(8, 2, batch_first=True)
        self.out = nn.Linear(8, 8)

    def forward(self, x):
        y = self.norm(x)
        return self.out(self.attention(y, y, y, need_weights=False)[0])


MODELS = {
    "net": (Net, (3, 17, 17)),
    "attention": (Attention, (5, 8)),
}
LAYER_FIELDS = ("path", "call_index", "name", "depth", "type", "output", "parameters", "buffers")


@pytest.fixture(scope="module", params=sorted(MODELS))
def exported(request):
    model_class, shape = MODELS[request.param]
    torch.manual_seed(0)
    model = model_class().eval()
    example = torch.rand(1, *shape)
    program = torch.export.export(model, (example,))
    return model, example, program


def test_layers_totals_and_operator_flops_equal_the_eager_crawl(exported):
    model, example, program = exported
    report = torchscan_dispatch.crawl_module(program, args=(example,))
    eager = torchscan_dispatch.crawl_module(model, args=(example,))
    def fields(layer):
        kept = {k: layer[k] for k in LAYER_FIELDS}
        if layer["type"] == "MultiheadAttention":
            output = kept.pop("output")
            kept["output"] = output["items"][0] if output["kind"] == "tuple" else output
        return kept

    assert [fields(layer) for layer in report["layers"]] == [fields(layer) for layer in eager["layers"]]
    for name in ("parameters", "trainable_parameters", "parameter_bytes", "buffer_elements", "operator_flops"):
        assert report["totals"][name] == eager["totals"][name]
    # FlopCounterMode on the program's own graph (eager nn.MultiheadAttention
    # may take its fused fast path, which the export did not capture).
    total, by_operator = flop_counter_mode_counts(lambda: program.module()(example))
    ours = report["operator_flops"]["by_operator"]
    assert {name: count for name, count in ours.items() if name in by_operator} == by_operator
    # FlopCounterMode has no formula for the CPU's flash attention; ours is
    # 4 * batch * heads * queries * keys * head_dim (QK^T and AV).
    extra = {name: count for name, count in ours.items() if name not in by_operator}
    expected_extra = {"aten._scaled_dot_product_flash_attention_for_cpu": 4 * 1 * 2 * 5 * 5 * 4}
    assert extra == (expected_extra if isinstance(model, Attention) else {})
    assert report["totals"]["operator_flops"]["known_value"] == total + sum(extra.values())
    assert report["operator_flops"]["by_module"] == eager["operator_flops"]["by_module"]


def test_leaf_formulas_recovered_from_the_graph(exported):
    model, example, program = exported
    report = torchscan_dispatch.crawl_module(program, args=(example,))
    eager = torchscan_dispatch.crawl_module(model, args=(example,))
    recovered = [d for d in report["diagnostics"] if d["code"] == "unrecovered_module_attribute"]
    missing = {d["path"] for d in recovered}
    compared = 0
    for ours, theirs in zip(report["layers"], eager["layers"], strict=True):
        if ours["path"] in missing or ours["type"] in ("Sequential", "Net", "Attention", "Block"):
            continue
        assert theirs["metrics"]["module_flops"]["status"] == "complete", theirs["path"]
        for metric in ("module_flops", "macs", "dmas"):
            assert ours["metrics"].get(metric) == theirs["metrics"].get(metric), (ours["path"], metric)
        compared += 1
    assert compared >= 2
    # The graph keeps no batch_first or add_zero_attn: only the attention is unrecovered.
    assert [(d["path"], "batch_first" in d["message"]) for d in recovered] == (
        [("attention", True)] if isinstance(model, Attention) else []
    )


def test_meta_device_counts_what_cpu_counts_and_leaves_the_program_as_it_was(exported):
    _, _, program = exported
    before = {name: tensor.clone() for name, tensor in program.state_dict.items()}
    nodes = len(program.graph.nodes)
    cpu = torchscan_dispatch.crawl_module(program)
    meta = torchscan_dispatch.crawl_module(program, device="meta")
    # The same FLOPs; attention may take another kernel on meta (bmm rather
    # than the CPU's flash attention), as it would in eager mode.
    assert meta["totals"]["operator_flops"] == cpu["totals"]["operator_flops"]
    assert meta["context"]["devices"] == ["meta"]
    assert cpu["inputs"]["source"] == "generated"
    assert len(program.graph.nodes) == nodes
    for name, tensor in program.state_dict.items():
        assert tensor.device.type == "cpu" and torch.equal(tensor, before[name])


def test_saved_program_round_trip(exported, tmp_path):
    _, example, program = exported
    path = tmp_path / "model.pt2"
    torch.export.save(program, path)
    loaded = torchscan_dispatch.crawl_module(load_exported_program(path), args=(example,))
    direct = torchscan_dispatch.crawl_module(program, args=(example,))
    assert loaded["layers"] == direct["layers"] and loaded["totals"] == direct["totals"]


def test_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        load_exported_program(tmp_path / "absent.pt2")
    bad = tmp_path / "bad.pt2"
    bad.write_text("hello")
    with pytest.raises(ValueError, match="is not a torch.export program file"):
        load_exported_program(bad)
    program = torch.export.export(nn.Linear(4, 2), (torch.rand(1, 4),))
    with pytest.raises(ValueError, match="mode must be"):
        torchscan_dispatch.crawl_module(program, mode="fast")
