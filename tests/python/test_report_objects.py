"""Reports as Python objects straight from the field tables
(python/operators/report_objects.h): for every record with a field table,
ToPython(record) is the object FromJson(ToJson(record)) gives, type for type
(int, float, bool, str, None) and key for key in the same order.

The records come from the test-only extension module _report_objects_check
(//python/operators/testdata:libreport_objects_check.so), which reads a
document as the record and writes it both ways. The documents are real
reports (crawls of the model zoo's CNNs and transformers, measure_flops with bytes,
diagnostics, the mask-aware count and the elementwise convention, a
collective, counts beyond 64 bits, TorchScan 0.2's reports, comparisons,
job merges, compiled-graph specs with non-finite constants) and the records
inside them; together they write every key of every table.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import random
import tempfile
from collections import defaultdict
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from model_zoo import TinyResNet, zoo
from torch import nn

import torchscan_dispatch as tsd

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
INPUTS = json.loads((HERE / "testdata" / "report_functions" / "inputs.json").read_text())
UPSTREAM = REPO / "report" / "testdata" / "upstream"
UNFUSED_METHOD = (
    "the bytes moved of the eager calls, plus each compiled graph's unfused sum: every operator call of its "
    "post-grad graph by the same rule, its tensors contiguous"
)


def check_library() -> Path | None:
    override = os.environ.get("TORCHSCAN_REPORT_OBJECTS_CHECK")
    if override:
        return Path(override)
    plugin = Path(os.environ.get("TORCHSCAN_DISPATCH_LIBRARY") or tsd.library_path())
    candidate = plugin.parent / "operators" / "testdata" / "libreport_objects_check.so"
    return candidate if candidate.is_file() else None


@pytest.fixture(scope="module")
def check():
    path = check_library()
    if path is None:
        pytest.skip(
            "build //python/operators/testdata:libreport_objects_check.so first "
            "(tools/test does), or set TORCHSCAN_REPORT_OBJECTS_CHECK"
        )
    loader = importlib.machinery.ExtensionFileLoader("_report_objects_check", str(path))
    spec = importlib.util.spec_from_file_location("_report_objects_check", path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def assert_same(new, old, path="record"):
    """Equal, with the same types (1 is not 1.0 nor True) and key order."""
    assert type(new) is type(old), f"{path}: {type(new).__name__} != {type(old).__name__}"
    if isinstance(new, dict):
        assert list(new) == list(old), path
        for key in new:
            assert_same(new[key], old[key], f"{path}.{key}")
    elif isinstance(new, list):
        assert len(new) == len(old), path
        for index, (a, b) in enumerate(zip(new, old)):
            assert_same(a, b, f"{path}[{index}]")
    elif isinstance(new, float):
        assert repr(new) == repr(old), path
    else:
        assert new == old, path


# --- The documents, and the records inside them.


def values(value):
    yield "ValueMetadata", value
    for item in value.get("items", []):
        if value["kind"] == "mapping":
            yield "MappingItem", item
            yield from values(item["value"])
        else:
            yield from values(item)


def metric(result):
    yield "MetricResult", result
    yield "MetricKind", {key: result[key] for key in ("unit", "scope", "method")}


def flop_parts(report):
    yield "FlopReport", report
    yield from metric(report["total"])
    for entry in report["ignored_operators"].values():
        yield "IgnoredOperator", entry
    for diagnostic in report["diagnostics"]:
        yield "Diagnostic", diagnostic
    if "mask_aware" in report:
        yield "MaskAwareFlops", report["mask_aware"]
    if "bytes" in report:
        moved = report["bytes"]
        yield "BytesMoved", moved
        for entry in moved["by_operator"].values():
            yield "OperatorBytes", entry
        bounded = dict(moved, upper_bound={key: moved[key] for key in ("status", "value", "known_value", "unit", "scope")}
                       | {"method": UNFUSED_METHOD})
        yield "BytesMoved", bounded
    if "communication" in report:
        yield "CommunicationReport", report["communication"]
        yield "CommunicationTotals", report["communication"]["total"]
    if "distributed" in report:
        yield "RankReport", report
        yield "DistributedContext", report["distributed"]


def analysis_parts(report):
    yield "AnalysisReport", report
    yield "ComparableReport", report
    yield "ReportContext", report["context"]
    yield "InputsMetadata", report["inputs"]
    yield "CallMetadata", {"args": report["inputs"]["args"], "kwargs": report["inputs"]["kwargs"]}
    for value in report["inputs"]["args"]:
        yield from values(value)
    for value in report["inputs"]["kwargs"].values():
        yield from values(value)
    for layer in report["layers"]:
        yield "LayerReport", layer
        yield "ComparableLayer", layer
        yield "ParameterAttribution", layer["parameters"]
        yield "BufferAttribution", layer["buffers"]
        yield "CallMetadata", layer["input"]
        for value in layer["input"]["args"] + list(layer["input"]["kwargs"].values()):
            yield from values(value)
        yield from values(layer["output"])
        for result in layer["metrics"].values():
            yield from metric(result)
    for result in report["totals"].values():
        yield from metric(result)
    for entry in report.get("layer_operator_flops", []):
        yield "LayerOperatorFlops", entry
    for diagnostic in report["diagnostics"]:
        yield "Diagnostic", diagnostic
    yield from flop_parts(report["operator_flops"])


def diff_parts(diff):
    yield "ReportDiff", diff
    for entry in diff["totals"].values():
        yield "MetricDiff", entry
    for key in ("added", "removed"):
        for layer in diff["layers"][key]:
            yield "LayerSnapshot", layer
    for layer in diff["layers"]["changed"]:
        yield "LayerDiff", layer
        for entry in layer["metrics"].values():
            yield "MetricDiff", entry


def job_parts(job):
    yield "JobReport", job
    for result in job["per_rank"].values():
        yield from metric(result)
    if "bytes" in job:
        yield "JobBytes", job["bytes"]
        per_rank = {"per_rank": job["bytes"]["per_rank"]}
        metric_keys = {key: job["bytes"][key] for key in ("status", "value", "known_value", "unit", "scope", "method")}
        yield "JobMetric", metric_keys | per_rank
        yield "JobBytes", job["bytes"] | {"upper_bound": metric_keys | {"method": UNFUSED_METHOD} | per_rank}
    yield "CommunicationReport", job["communication"]
    for totals in job["communication_per_rank"].values():
        yield "CommunicationTotals", totals
    for diagnostic in job["diagnostics"]:
        yield "Diagnostic", diagnostic


class Outputs(nn.Module):
    """Inputs and outputs of every value kind: tensors, None, scalars,
    tuples, lists, mappings with kept and unkept keys, objects."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x, scale=2.0, extra=None):
        y = self.linear(x) * scale
        return {"y": y, 3: [y, None], True: (y, 1.5), "not an identifier": Path(".")}


def crawls():
    for model, arguments in zoo().values():
        yield tsd.crawl_module(model.eval(), **arguments)
    layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
    yield tsd.crawl_module(nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval(), (6, 32))
    yield tsd.crawl_module(Outputs(), args=(torch.randn(2, 4),), kwargs={"scale": 3.0})
    yield from (INPUTS[name] for name in ("before", "after", "big"))
    for path in sorted((UPSTREAM / "reports").glob("*.json")):
        yield json.loads(path.read_text())


def measured_reports():
    a, b = torch.randn(8, 16), torch.randn(16, 4)
    q = k = v = torch.randn(1, 2, 8, 16)
    mask = torch.ones(8, 8, dtype=torch.bool).tril()
    yield tsd.measure_flops(lambda: torch.relu(a @ b).sum())
    yield tsd.measure_flops(lambda: nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask))
    yield tsd.measure_flops(lambda: torch.linalg.svd(a), elementwise=True)
    yield tsd.measure_flops(lambda: TinyResNet()(torch.randn(1, 3, 16, 16)).sum().backward())
    yield INPUTS["flops"]


def communicating_report():
    with tempfile.TemporaryDirectory() as directory:
        dist.init_process_group("gloo", init_method=f"file://{directory}/store", rank=0, world_size=1)
        try:
            t = torch.ones(10)
            report = tsd.measure_flops(lambda: (dist.all_reduce(t), dist.broadcast(t, 0), t @ t))
        finally:
            dist.destroy_process_group()
    groups = [{"name": "0", "size": 1, "ranks": [0], "mesh_dim": {"name": "dp", "index": 0}}]
    report["distributed"] = {"job_id": "job", "rank": 0, "world_size": 1, "backend": "gloo", "groups": groups}
    return report


def specs():
    from test_compiled_graph_spec_fuzz import _described, _program

    for seed in range(4):
        program, weights, _, _ = _program(seed)
        _, spec, _, _ = _described(
            program, [torch.randn(3, 8), *weights], "symbolic" if seed % 2 else "fake", random.Random(seed)
        )
        yield json.loads(spec)


# What the pass writes for graphs these programs do not make (compiled_graph_spec_test.cc's).
HAND_WRITTEN_SPECS = [
    {"version": 6, "family": "0/0", "calls": [
        {"op": "aten::mm", "overload": "default", "form": "decomposed_product",
         "modules": [["L['self']", "fc", "Linear"]],
         "arguments": [{"tensor": [{"symbol": 1}, 32], "dtype": "float32"}, {"float": "-inf"},
                       {"tensors": [[2], None], "dtypes": ["int64", None]}, {"bools": [True, False]},
                       {"none": None}, {"str": "floor"}],
         "results": [{"unknown_tensor": None}], "recomputed": True},
        {"op": "higher_order::flex_attention", "overload": "", "modules": [], "arguments": [],
         "results": [{"other": None}]}]},
    {"version": 6, "family": "1/0", "graph": "backward", "unseen": "a graph the pass could not describe",
     "calls": []},
]


def spec_parts(spec):
    yield "CompiledGraphSpec", spec
    for call in spec["calls"]:
        yield "SpecCall", call
        for value in call["arguments"] + call["results"]:
            yield "SpecValue", value
            for dimension in value.get("tensor", []) if isinstance(value.get("tensor"), list) else []:
                if isinstance(dimension, dict):
                    yield "SpecSymbol", dimension


def exported_crawl_documents():
    """The crawl record a real exported crawl sends measured_crawl_report:
    a MultiheadAttention, whose graph keeps no batch_first, so the record
    carries the front end's own diagnostic."""
    from torchscan_dispatch._library import hooks

    sent = []
    original = hooks().measured_crawl_report

    def capture(handle, record, *parts):
        sent.append(record)
        return original(handle, record, *parts)

    torch.manual_seed(0)
    attention = torch.nn.MultiheadAttention(8, 2, batch_first=True).eval()
    query = torch.rand(1, 3, 8)
    program = torch.export.export(attention, (query, query, query))
    hooks().measured_crawl_report = capture
    try:
        tsd.crawl_module(program, args=(query, query, query))
    finally:
        hooks().measured_crawl_report = original
    (record,) = sent
    assert record["diagnostics"], "the exported attention's record names what it cannot recover"
    return json.loads(json.dumps(record))


def crawl_document_parts(document):
    """A crawl record the ExportedProgram crawler sends (the crawl fuzzer's
    corpus: real records of eight models) and its leaf calls."""
    yield "CrawlDocument", document
    for leaf in document.get("leaf_calls", []):
        yield "LeafCallDocument", leaf


@pytest.fixture(scope="module")
def documents():
    found = defaultdict(list)

    def add(parts):
        for name, document in parts:
            found[name].append(document)

    for report in crawls():
        add(analysis_parts(report))
    for report in measured_reports():
        add(flop_parts(report))
    rank = communicating_report()
    add(flop_parts(rank))
    other = dict(rank, distributed=dict(rank["distributed"], rank=1, world_size=2))
    first = dict(rank, distributed=dict(rank["distributed"], world_size=2))
    add(job_parts(tsd.merge_rank_reports([first, other], ["r0", "r1"])))
    add([("UnreadableCollective", {"calls": 3, "reason": "a process group object we cannot read"})])
    add([("MeshDimension", {"name": "tp", "index": None})])
    add(diff_parts(tsd.compare_reports(INPUTS["before"], INPUTS["after"])))
    add(diff_parts(tsd.compare_reports(INPUTS["before"], INPUTS["big"])))
    for path in sorted((UPSTREAM / "diffs").glob("*.json")):
        add(diff_parts(json.loads(path.read_text())))
    add([("RooflineDevice", {"name": "cpu", "memory_bandwidth": 5e10, "peak_flops": {"fp32": 1.5e12, "bf16": 3e12}})])
    add([("RooflineDevice", {"name": "L4", "memory_bandwidth": 3e11, "peak_flops": {"bf16": 1.21e14}, "source": "a datasheet"})])
    for spec in [*specs(), *HAND_WRITTEN_SPECS]:
        add(spec_parts(spec))
    for path in sorted((REPO / "crawl" / "testdata" / "crawl_fuzz_corpus").glob("crawl_*.json")):
        add(crawl_document_parts(json.loads(path.read_text())))
    add(crawl_document_parts(exported_crawl_documents()))
    return found


# --- The tests.


def test_every_record_has_documents(check, documents):
    assert [] == [name for name in check.records() if not documents.get(name)]


def test_the_documents_write_every_key_of_every_table(check, documents):
    missing = {}
    for name in check.records():
        written = set()
        for document in documents[name]:
            new, _ = check.convert(name, document)
            written.update(new)
        left = [key for key in check.field_names(name) if key not in written]
        if left:
            missing[name] = left
    assert {} == missing


# Every record with a field table (test_report_from_objects reads them back).
RECORDS = [
    "MetricKind", "MetricResult", "Diagnostic", "ValueMetadata", "MappingItem", "CallMetadata",
    "ParameterAttribution", "BufferAttribution", "LayerReport", "OperatorBytes", "BytesMoved",
    "IgnoredOperator", "MaskAwareFlops", "FlopReport", "ReportContext", "InputsMetadata",
    "LayerOperatorFlops", "AnalysisReport", "CommunicationTotals", "UnreadableCollective",
    "CommunicationReport", "ComparableLayer", "ComparableReport", "MetricDiff", "LayerSnapshot",
    "LayerDiff", "ReportDiff", "MeshDimension", "DistributedContext", "RankReport", "JobMetric",
    "JobBytes", "JobReport", "RooflineDevice", "SpecSymbol", "SpecValue", "SpecCall", "CompiledGraphSpec",
    "LeafCallDocument", "CrawlDocument",
]


@pytest.mark.parametrize("name", RECORDS)
def test_python_objects_are_those_of_the_json(check, documents, name):
    assert name in check.records()
    for index, document in enumerate(documents[name]):
        new, old = check.convert(name, document)
        assert_same(new, old, f"{name}[{index}]")


def test_the_records_held_are_those_tested(check):
    listed = test_python_objects_are_those_of_the_json.pytestmark[0].args[1]
    assert sorted(listed) == sorted(check.records())


def test_crawl_and_measure_flops_return_the_objects_of_their_json(check):
    report = tsd.crawl_module(TinyResNet().eval(), (3, 32, 32))
    _, old = check.convert("AnalysisReport", report)
    assert_same(report, old)
    flops = tsd.measure_flops(lambda: TinyResNet()(torch.randn(1, 3, 16, 16)))
    _, old = check.convert("FlopReport", flops)
    assert_same(flops, old)


def test_counts_beyond_64_bits_are_exact_ints(check):
    big = INPUTS["big"]
    new, old = check.convert("AnalysisReport", big)
    assert_same(new, old)
    assert_same(big, new)
    assert any(
        isinstance(result["value"], int) and result["value"] >= 2**64
        for layer in new["layers"]
        for result in layer["metrics"].values()
    )


def test_non_finite_constants_of_a_spec_are_strings(check, documents):
    written = [check.convert("SpecValue", value)[0] for value in documents["SpecValue"]]
    scalars = [value.get("float") for value in written if "float" in value]
    assert {"inf", "-inf", "nan"} & {value for value in scalars if isinstance(value, str)}


def test_metrics_of_one_kind_are_separate_dicts(check):
    # NOTE [Metric dicts copied by kind]: a metric starts as a copy of the
    # last one of its kind; each keeps its own value, and changing one
    # returned dict changes no other, nor the next of that kind.
    kind = {"unit": "FLOPs", "scope": "layer_call", "method": "a method of this test"}
    first, _ = check.convert("MetricResult", {"status": "complete", "value": 7, "known_value": 7, **kind})
    first["value"] = "changed"
    first["extra"] = 1
    second, _ = check.convert("MetricResult", {"status": "complete", "value": 9, "known_value": 9, **kind})
    partial, _ = check.convert("MetricResult", {"status": "partial", "value": None, "known_value": 3, **kind})
    assert {"status": "complete", "value": 9, "known_value": 9, **kind} == second
    assert list(second) == ["status", "value", "known_value", "unit", "scope", "method"]
    assert {"status": "partial", "value": None, "known_value": 3, **kind} == partial
    assert second is not first and "extra" not in second
