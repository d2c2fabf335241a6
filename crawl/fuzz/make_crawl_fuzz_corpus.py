"""Writes the seed corpus of the crawl-record fuzzer
(crawl/testdata/crawl_fuzz_corpus) from real inputs: the crawl records
Python's ExportedProgram crawler hands the library for a set of small
models (full and structure mode), in the JSON form of crawl::CrawlDocument
(crawl/crawl_document.h), the graphs of their module calls the graph
recovery reads (crawl/recover_from_graph.h, one per family), and module
description + call documents from
formulas/testdata/module_formula_goldens.json (one per module family).

(crawl_module on an nn.Module builds its record natively and hands none
over; the ExportedProgram crawler is the front end that sends its record,
as Python objects, to the extension module's crawl_report.)

Run from the repository root with the library built:
    PYTHONPATH=python python3 crawl/fuzz/make_crawl_fuzz_corpus.py
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch
from torch import nn

import torchscan_dispatch
from torchscan_dispatch._library import hooks

OUT = Path("crawl/testdata/crawl_fuzz_corpus")
GOLDENS = Path("formulas/testdata/module_formula_goldens.json")


class _Shared(nn.Module):
    """One module called twice (call_index 1) and keyword inputs."""

    def __init__(self):
        super().__init__()
        self.block = nn.Linear(4, 4)

    def forward(self, x, *, scale=None):
        return self.block(self.block(x)) * (1 if scale is None else scale)


def models():
    torch.manual_seed(0)
    yield "mlp", nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 2)), {"input_shape": (4,)}
    yield "convnet", nn.Sequential(
        nn.Conv2d(3, 4, 3, padding=1),
        nn.BatchNorm2d(4),
        nn.ReLU6(),
        nn.MaxPool2d(2),
        nn.Conv2d(4, 4, 3, groups=2, dilation=1),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Dropout(0.1),
        nn.Linear(4, 3),
    ), {"input_shape": (3, 8, 8)}
    yield "conv_transpose", nn.Sequential(
        nn.ConvTranspose2d(2, 3, 3, stride=2), nn.ELU(), nn.AvgPool2d(2), nn.LeakyReLU(), nn.AdaptiveMaxPool2d(2)
    ), {"input_shape": (2, 4, 4)}
    yield "activations", nn.Sequential(nn.Identity(), nn.Tanh(), nn.Sigmoid(), nn.GELU(), nn.LayerNorm(5)), {
        "input_shape": (3, 5)
    }
    yield "attention", nn.MultiheadAttention(8, 2, batch_first=True), {
        "args": (torch.randn(1, 3, 8), torch.randn(1, 3, 8), torch.randn(1, 3, 8))
    }
    yield "encoder_layer", nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True), {
        "input_shape": (3, 8)
    }
    yield "shared_kwargs", _Shared(), {"args": (torch.randn(2, 4),), "kwargs": {"scale": 2.0}}
    yield "conv1d_3d", nn.Sequential(nn.Conv1d(2, 2, 3), nn.BatchNorm1d(2)), {"input_shape": (2, 6)}


def exported_models():
    """(name, exported program, args, kwargs) of each model of models()."""
    for name, model, inputs in models():
        args, kwargs = inputs.get("args"), inputs.get("kwargs", {})
        if args is None:
            args = (torch.rand(1, *inputs["input_shape"]),)
        yield name, torch.export.export(model.eval(), args, kwargs), args, kwargs


def crawl_records():
    """(file name, record JSON) of each model's exported program, crawled.
    A full-mode crawl hands measured_crawl_report a record without its
    operator FLOPs (the measurement holds them); they are added back from
    the report, as a record crawled elsewhere carries them."""
    captured = []
    library = hooks()
    report, measured_report = library.crawl_report, library.measured_crawl_report

    def capture(record, *parts):
        captured.append(json.dumps(record, separators=(",", ":")))
        return report(record, *parts)

    def capture_measured(handle, record, *parts):
        built, incomplete = measured_report(handle, record, *parts)
        record = {
            **record,
            "operator_flops": built["operator_flops"],
            "layer_call_flops": {
                str(i): {"total": call["total"], "by_operator": call["by_operator"]}
                for i, call in enumerate(built["layer_operator_flops"])
            },
        }
        captured.append(json.dumps(record, separators=(",", ":")))
        return built, incomplete

    # The crawler looks the functions up on every call.
    library.crawl_report, library.measured_crawl_report = capture, capture_measured
    try:
        for name, program, args, kwargs in exported_models():
            for mode in ("full", "structure"):
                if mode == "structure" and name not in ("mlp", "convnet"):
                    continue
                torchscan_dispatch.crawl_module(program, args=args, kwargs=kwargs or None, mode=mode)
                yield f"crawl_{name}_{mode}.json", captured.pop()
    finally:
        library.crawl_report, library.measured_crawl_report = report, measured_report


def module_graphs():
    """(file name, graph JSON) of the first module call of each family the
    models' exported crawls hand the graph recovery."""
    library = hooks()
    recover = library.recover_attributes
    graphs = {}

    def capture(graph):
        graphs.setdefault(graph["family"], json.dumps(graph, separators=(",", ":")))
        return recover(graph)

    library.recover_attributes = capture
    try:
        for _, program, args, kwargs in exported_models():
            torchscan_dispatch.crawl_module(program, args=args, kwargs=kwargs or None)
    finally:
        library.recover_attributes = recover
    for family, text in sorted(graphs.items()):
        yield f"graph_{family}.json", text


def module_documents():
    cases = json.loads(GOLDENS.read_text())["formula_cases"]
    seen = set()
    for case in cases:
        family = case["module"].get("family")
        if family in seen:
            continue
        seen.add(family)
        document = {"path": case["name"], "module": case["module"], "call": case["call"]}
        yield f"module_{family}.json", json.dumps(document, sort_keys=True)


def main():
    torchscan_dispatch.load_library()
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    count = 0
    for name, text in [*crawl_records(), *module_graphs(), *module_documents()]:
        (OUT / name).write_text(text)
        count += 1
    print(f"wrote {count} seeds to {OUT}")


if __name__ == "__main__":
    main()
