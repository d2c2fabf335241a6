"""The ExportedProgram crawler's last step, finish_report, built in C++
(crawl_report: the layer records cross as Python objects and come back in
the report) against the Python assembly it replaced (evaluate_crawl's parts
merged into the layer dicts), in one process, interleaved: the step's own
time and the whole crawl's, medians, on a 121-layer exported MLP
(docs/performance.md, section 4c).

  PYTHONPATH=python TORCHSCAN_DISPATCH_LIBRARY=bazel-bin/python/libtorchscan_dispatch.so \
      python3 tools/bench/exported_report_assembly.py
"""

import statistics
import time

import torch
from torch import nn
import torchscan_dispatch as tsd
from torchscan_dispatch import _crawl_support, exported
from torchscan_dispatch._library import hooks

def old_finish(record, layers, context, input_metadata, strict, measurement=None):
    if measurement is None:
        parts = hooks().evaluate_crawl(record)
    else:
        parts = hooks().evaluate_measured_crawl(measurement.handle, record)
    for index, metrics in parts["layer_metrics"].items():
        layers[int(index)]["metrics"].update(metrics)
    if parts["analysis_mode"] is not None:
        context["analysis_mode"] = parts["analysis_mode"]
    report = {"schema_version": 1, "context": context, "inputs": input_metadata, "layers": layers,
              "operator_flops": parts["operator_flops"]}
    if "layer_operator_flops" in parts:
        report["layer_operator_flops"] = [{"path": l["path"], "call_index": l["call_index"], **f}
            for l, f in zip(layers, parts["layer_operator_flops"], strict=True)]
    report["totals"] = parts["totals"]; report["diagnostics"] = parts["diagnostics"]
    return report
new_finish = _crawl_support.finish_report
torch.manual_seed(0)
model = nn.Sequential(*[m for _ in range(60) for m in (nn.Linear(16, 16), nn.ReLU())]).eval()
x = torch.rand(2, 16)
program = torch.export.export(model, (x,))
for mode in ["structure", "full"]:
    times = {"old": [], "new": []}
    for r in range(15):
        for name, fn in (("old", old_finish), ("new", new_finish)):
            t = [0.0]
            def timed(*a, fn=fn, **k):
                s = time.perf_counter(); out = fn(*a, **k); t[0] += time.perf_counter() - s; return out
            exported.finish_report = timed
            rep = tsd.crawl_module(program, args=(x,), mode=mode)
            times[name].append(t[0] * 1e3)
    print(mode, len(rep["layers"]), "layers; finish_report ms median old %.2f new %.2f" % (statistics.median(times["old"]), statistics.median(times["new"])))
for mode in ["structure", "full"]:
    tot = {"old": [], "new": []}
    for r in range(9):
        for name, fn in (("old", old_finish), ("new", new_finish)):
            exported.finish_report = fn
            s = time.perf_counter(); tsd.crawl_module(program, args=(x,), mode=mode); tot[name].append((time.perf_counter()-s)*1e3)
    print(mode, "whole crawl ms median old %.1f new %.1f" % (statistics.median(tot["old"]), statistics.median(tot["new"])))
