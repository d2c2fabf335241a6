"""The crawl functions of the library's extension module
(python/operators/crawl_functions.h) behind the ExportedProgram crawler's
finish_report (crawl_report, measured_crawl_report): the same output as the
JSON-string operators they replaced (_evaluate_crawl,
_evaluate_measured_crawl), and one-line errors naming the cause.

testdata/crawl_functions/outputs.json was captured from those operators
(main before they were removed): "evaluated", what _evaluate_crawl returned
(the report's computed parts) for each crawl record of the crawl fuzzer's
corpus (real records of eight models, crawl/testdata/crawl_fuzz_corpus),
now read back from crawl_report's report; "reports", the crawl_module
reports of test_exported.py's exported programs in both modes (full mode
evaluated through _evaluate_measured_crawl); "errors", the type and message
of bad records.
"""

import copy
import functools
import json
from pathlib import Path

import pytest
import torch
from test_exported import MODELS

import torchscan_dispatch as tsd
from torchscan_dispatch._library import hooks

ROOT = Path(__file__).resolve().parents[2]
CORPUS = sorted((ROOT / "crawl" / "testdata" / "crawl_fuzz_corpus").glob("crawl_*.json"))
OUTPUTS = json.loads((Path(__file__).resolve().parent / "testdata" / "crawl_functions" / "outputs.json").read_text())


def text(value):
    """JSON text tells 1 from 1.0 and True from 1, which == does not."""
    return json.dumps(value, indent=1)


def test_the_corpus_holds_the_captured_records():
    assert sorted(OUTPUTS["evaluated"]) == [path.stem for path in CORPUS]


@functools.cache
def _sent_parts():
    """The context, input metadata and one layer record a real exported
    crawl sends crawl_report."""
    model = torch.nn.Linear(2, 2).eval()
    example = torch.rand(1, 2)
    sent = []
    original = hooks().crawl_report

    def capture(*args):
        sent.append(args)
        return original(*args)

    hooks().crawl_report = capture
    try:
        tsd.crawl_module(torch.export.export(model, (example,)), args=(example,), mode="structure")
    finally:
        hooks().crawl_report = original
    ((_, context, inputs, (layer,)),) = sent
    return context, inputs, layer


def _front_end_parts(count):
    """A context, input metadata and `count` layer records without metrics:
    the parts a bare crawl record lacks (the computed parts do not depend
    on them)."""
    context, inputs, layer = _sent_parts()
    return copy.deepcopy(context), copy.deepcopy(inputs), [dict(layer, metrics={}) for _ in range(count)]


def _computed_parts(report, incomplete):
    """What _evaluate_crawl returned, read from the report: the layers'
    metrics by index, the operator FLOPs, each layer call's operator FLOPs
    without its key, the totals, diagnostics, analysis mode and strict
    mode's message."""
    parts = {
        "layer_metrics": {str(i): layer["metrics"] for i, layer in enumerate(report["layers"]) if layer["metrics"]},
        "operator_flops": report["operator_flops"],
    }
    if "layer_operator_flops" in report:
        parts["layer_operator_flops"] = [
            {key: value for key, value in call.items() if key not in ("path", "call_index")}
            for call in report["layer_operator_flops"]
        ]
    parts["totals"] = report["totals"]
    parts["diagnostics"] = report["diagnostics"]
    parts["analysis_mode"] = report["context"].get("analysis_mode")
    parts["incomplete"] = incomplete
    return parts


def _crawl_report(record):
    return hooks().crawl_report(record, *_front_end_parts(record.get("layer_count", 0)))


@pytest.mark.parametrize("path", CORPUS, ids=lambda path: path.stem)
def test_the_report_of_a_real_crawl_record_has_the_operators_parts(path):
    record = json.loads(path.read_text())
    assert text(OUTPUTS["evaluated"][path.stem]) == text(_computed_parts(*_crawl_report(record)))


@pytest.mark.parametrize("mode", ["full", "structure"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_crawl_of_an_exported_program_is_the_operators(name, mode):
    model_class, shape = MODELS[name]
    torch.manual_seed(0)
    example = torch.rand(1, *shape)
    program = torch.export.export(model_class().eval(), (example,))
    assert text(OUTPUTS["reports"][f"{name}_{mode}"]) == text(tsd.crawl_module(program, args=(example,), mode=mode))


@pytest.mark.parametrize(
    ("name", "record"),
    [
        ("bad_mode", {"mode": "fast", "layer_count": 0}),
        ("not_object", []),
        ("layer_missing", {"mode": "structure"}),
    ],
)
def test_a_record_the_crawl_library_cannot_read_keeps_the_operators_message(name, record):
    kind, message = OUTPUTS["errors"][name]
    with pytest.raises(ValueError) as raised:
        hooks().crawl_report(record, *_front_end_parts(0))
    assert (kind, message) == (type(raised.value).__name__, str(raised.value))


def _mlp_record():
    return json.loads((ROOT / "crawl" / "testdata" / "crawl_fuzz_corpus" / "crawl_mlp_full.json").read_text())


def test_a_value_of_the_wrong_type_is_a_value_error_naming_its_path():
    record = _mlp_record()
    record["leaf_calls"][1]["call"]["inputs"][0]["shape"] = [1, torch.ones(1)]
    with pytest.raises(ValueError) as raised:
        _crawl_report(record)
    assert (
        "crawl is not a JSON crawl record: crawl.leaf_calls[1].call.inputs[0].shape[1]: "
        "a value of type Tensor is not JSON data"
    ) == str(raised.value)


def test_a_key_that_is_not_a_str_is_a_value_error():
    with pytest.raises(ValueError) as raised:
        _crawl_report({"mode": "structure", 1: 0})
    assert "crawl is not a JSON crawl record: crawl: a dict key of type int, not str" == str(raised.value)


@pytest.mark.parametrize(
    ("argument", "path", "spelled"),
    [
        (1, (), "context"),
        (3, (0,), "layers[0]"),
        (3, (0, "metrics"), "layers[0].metrics"),
        (3, (0, "metrics", "calls"), "layers[0].metrics.calls"),
    ],
)
def test_a_dict_key_that_is_not_a_str_is_named_with_its_path(monkeypatch, argument, path, spelled):
    # A record's keys, a map's keys, a map of records' keys: JSON objects
    # have text keys, so an int key is refused where it stands, before any
    # field table reads the argument.
    args, _ = _sent_to_crawl_report(monkeypatch, "structure")
    args = copy.deepcopy(list(args))
    node = args[argument]
    for step in path:
        node = node[step]
    node[7] = 1
    with pytest.raises(ValueError) as raised:
        hooks().crawl_report(*args)
    name = ("context", "inputs", "layers")[argument - 1]
    assert f"{name} is not JSON data: {spelled}: a dict key of type int, not str" == str(raised.value)


def test_an_unknown_key_is_a_value_error_naming_it():
    with pytest.raises(ValueError) as raised:
        _crawl_report(dict(_mlp_record(), leaf_call=[]))
    assert "crawl.leaf_call: unknown field" == str(raised.value)


def test_a_leaf_call_of_a_layer_the_crawl_does_not_have_is_named():
    record = _mlp_record()
    record["leaf_calls"][0]["layer"] = record["layer_count"]
    with pytest.raises(ValueError) as raised:
        _crawl_report(record)
    assert "crawl.leaf_calls[0].layer: is not a layer index" == str(raised.value)


def _measured_record():
    record = _mlp_record()
    del record["operator_flops"], record["layer_call_flops"]
    return record


def test_an_unknown_measurement_is_the_operators_runtime_error():
    kind, message = OUTPUTS["errors"]["unknown_handle"]
    record = _measured_record()
    with pytest.raises(RuntimeError) as raised:
        hooks().measured_crawl_report(12345, record, *_front_end_parts(record["layer_count"]))
    assert (kind, message) == (type(raised.value).__name__, str(raised.value))


def test_a_measured_record_with_flops_of_its_own_is_refused():
    record = _mlp_record()
    del record["layer_call_flops"]
    with pytest.raises(ValueError) as raised:
        hooks().measured_crawl_report(12345, record, *_front_end_parts(record["layer_count"]))
    assert "crawl.operator_flops: comes from the measurement, not from the crawl record" == str(raised.value)


def test_wrong_arguments_are_type_errors():
    with pytest.raises(TypeError, match=r"^torchscan_dispatch._hooks.crawl_report takes 4 arguments \(0 given\)$"):
        hooks().crawl_report()
    with pytest.raises(TypeError, match="^'str' object cannot be interpreted as an integer$"):
        hooks().measured_crawl_report("1", {}, {}, {}, [])


def _sent_to_crawl_report(monkeypatch, mode):
    """The record, context, inputs and layers a real exported crawl sends
    crawl_report."""
    sent = []
    original = hooks().crawl_report

    def capture(*args):
        sent.append(args)
        return original(*args)

    monkeypatch.setattr(hooks(), "crawl_report", capture)
    model_class, shape = MODELS[sorted(MODELS)[0]]
    example = torch.rand(1, *shape)
    program = torch.export.export(model_class().eval(), (example,))
    report = tsd.crawl_module(program, args=(example,), mode=mode)
    monkeypatch.undo()
    (args,) = sent
    return args, report


def test_crawl_report_rejects_a_layer_count_the_layers_do_not_have(monkeypatch):
    (record, context, inputs, layers), _ = _sent_to_crawl_report(monkeypatch, "structure")
    record = dict(record, layer_count=len(layers) + 1)
    with pytest.raises(ValueError) as raised:
        hooks().crawl_report(record, context, inputs, layers)
    assert f"crawl.layer_count: {len(layers) + 1}, but the crawl has {len(layers)} layers" == str(raised.value)


def test_crawl_report_names_a_bad_layer_field(monkeypatch):
    (record, context, inputs, layers), _ = _sent_to_crawl_report(monkeypatch, "structure")
    layers = [dict(layers[0], depth="deep"), *layers[1:]]
    with pytest.raises(ValueError, match=r"layers\[0\]\.depth"):
        hooks().crawl_report(record, context, inputs, layers)


def test_a_strict_crawl_of_an_incomplete_exported_program_raises_as_an_eager_one():
    # GELU has no FLOP formula: both reports are partial, and strict mode
    # raises the same message with the finished report attached.
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.GELU()).eval()
    example = torch.rand(1, 4)
    program = torch.export.export(model, (example,))
    with pytest.raises(tsd.IncompleteAnalysisError) as exported:
        tsd.crawl_module(program, args=(example,), strict=True)
    with pytest.raises(tsd.IncompleteAnalysisError) as eager:
        tsd.crawl_module(model, args=(example,), strict=True)
    assert str(eager.value) == str(exported.value)
    assert "operator_flops" in str(exported.value).split(": ")[1].split(", ")
    assert text(tsd.crawl_module(program, args=(example,))) == text(exported.value.report)
