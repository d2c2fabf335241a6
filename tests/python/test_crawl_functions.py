"""The crawl functions of the library's extension module
(python/operators/crawl_functions.h) behind the ExportedProgram crawler's
finish_report (crawl_report; evaluate_crawl for bare records): the same
output as the JSON-string operators they replaced (_evaluate_crawl,
_evaluate_measured_crawl), and one-line errors naming the cause.

testdata/crawl_functions/outputs.json was captured from those operators
(main before they were removed): "evaluated", what _evaluate_crawl returned
for each crawl record of the crawl fuzzer's corpus (real records of eight
models, crawl/testdata/crawl_fuzz_corpus); "reports", the crawl_module
reports of test_exported.py's exported programs in both modes (full mode
evaluated through _evaluate_measured_crawl); "errors", the type and message
of bad records.
"""

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


@pytest.mark.parametrize("path", CORPUS, ids=lambda path: path.stem)
def test_evaluation_of_a_real_crawl_record_is_the_operators(path):
    assert text(OUTPUTS["evaluated"][path.stem]) == text(hooks().evaluate_crawl(json.loads(path.read_text())))


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
        hooks().evaluate_crawl(record)
    assert (kind, message) == (type(raised.value).__name__, str(raised.value))


def test_a_value_no_json_holds_is_a_value_error_naming_its_path():
    record = {"mode": "structure", "layer_count": 0, "model": {"sizes": [1, torch.ones(1)]}}
    with pytest.raises(ValueError) as raised:
        hooks().evaluate_crawl(record)
    assert str(raised.value) == "crawl is not a JSON crawl record: crawl.model.sizes[1]: a value of type Tensor is not JSON data"


def test_a_key_that_is_not_a_str_is_a_value_error():
    with pytest.raises(ValueError) as raised:
        hooks().evaluate_crawl({"mode": "structure", 1: 0})
    assert str(raised.value) == "crawl is not a JSON crawl record: crawl: a dict key of type int, not str"


def test_an_unknown_measurement_is_the_operators_runtime_error():
    kind, message = OUTPUTS["errors"]["unknown_handle"]
    with pytest.raises(RuntimeError) as raised:
        hooks().evaluate_measured_crawl(12345, {"mode": "full", "layer_count": 0})
    assert (kind, message) == (type(raised.value).__name__, str(raised.value))


def test_wrong_arguments_are_type_errors():
    with pytest.raises(TypeError, match=r"^torchscan_dispatch._hooks.evaluate_crawl takes 1 arguments \(0 given\)$"):
        hooks().evaluate_crawl()
    with pytest.raises(TypeError, match="^'str' object cannot be interpreted as an integer$"):
        hooks().evaluate_measured_crawl("1", {})



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
