"""crawl_module and summary against the released torchscan==0.2.0, side by
side, on a zoo of models built here.

Equal: layers (paths, call indices, names, types, shapes, parameters,
buffers, module metrics), totals, diagnostics and the summary text. Where we
deliberately differ the test says so:
  * context.torchscan_version is ours;
  * operators we count beyond FlopCounterMode (the fused MHA, LSTM and CPU
    attention kernels; docs/operators.md) make our operator FLOPs larger and
    remove upstream's uncounted_operator diagnostics for them;
  * `layer_operator_flops` is ours alone.
"""

import copy
import io
import json
from contextlib import redirect_stdout

import pytest
import torch
import torchscan

import torchscan_dispatch
from model_zoo import zoo

BEYOND = {
    "aten._native_multi_head_attention",
    "aten._transformer_encoder_layer_fwd",
    "aten.mkldnn_rnn_layer",
    "aten._scaled_dot_product_flash_attention_for_cpu",
}
MODELS = zoo()


def crawl_both(name, **options):
    model, call = MODELS[name]
    torch.manual_seed(1)
    ours = torchscan_dispatch.crawl_module(model, **copy.deepcopy(call), **options)
    torch.manual_seed(1)
    theirs = torchscan.crawl_module(model, **copy.deepcopy(call), **options)
    return ours, theirs


def expected_operator_flops(ours, theirs):
    """Upstream's operator report with our extra formulas applied."""
    beyond = {op: n for op, n in ours["operator_flops"]["by_operator"].items() if op in BEYOND}
    expected = copy.deepcopy(theirs["operator_flops"])
    if not beyond:
        return expected, []
    expected["by_operator"] = dict(sorted({**expected["by_operator"], **beyond}.items()))
    removed = [d for d in expected["diagnostics"] if d["operator"] in beyond]
    expected["diagnostics"] = [d for d in expected["diagnostics"] if d["operator"] not in beyond]
    known = sum(expected["by_operator"].values())
    expected["total"].update(
        {"status": "partial", "value": None, "known_value": known}
        if expected["diagnostics"]
        else {"status": "complete", "value": known, "known_value": known}
    )
    for module, flops in ours["operator_flops"]["by_module"].items():
        expected["by_module"][module] = flops  # modules that ran the extra operators
    expected["by_module"] = dict(sorted(expected["by_module"].items()))
    return expected, removed


@pytest.mark.parametrize("name", sorted(MODELS))
def test_crawl_matches_released_torchscan(name):
    ours, theirs = crawl_both(name)
    assert list(ours) == [
        "schema_version", "context", "inputs", "layers", "operator_flops",
        "layer_operator_flops", "totals", "diagnostics",
    ]
    assert {**ours["context"], "torchscan_version": None} == {**theirs["context"], "torchscan_version": None}
    assert ours["inputs"] == theirs["inputs"]
    assert ours["layers"] == theirs["layers"]
    expected_flops, removed = expected_operator_flops(ours, theirs)
    assert ours["operator_flops"] == expected_flops
    expected_totals = {**theirs["totals"], "operator_flops": expected_flops["total"]}
    assert ours["totals"] == expected_totals
    assert ours["diagnostics"] == [d for d in theirs["diagnostics"] if d not in removed]
    # Every layer call has its own operator FLOPs; the root's equal the total.
    per_layer = ours["layer_operator_flops"]
    assert [(e["path"], e["call_index"]) for e in per_layer] == [(l["path"], l["call_index"]) for l in ours["layers"]]
    assert per_layer[0]["total"]["known_value"] == ours["totals"]["operator_flops"]["known_value"]
    assert json.loads(json.dumps(ours)) == ours


@pytest.mark.parametrize("name", sorted(MODELS))
def test_structure_mode_matches_released_torchscan(name):
    ours, theirs = crawl_both(name, mode="structure")
    assert {**ours, "context": None} == {**theirs, "context": None}
    assert {**ours["context"], "torchscan_version": None} == {**theirs["context"], "torchscan_version": None}


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("options", [{}, {"receptive_field": True, "effective_rf_stats": True}, {"max_depth": 1}])
def test_summary_text_matches_released_torchscan(name, options):
    model, call = MODELS[name]
    outputs = []
    for package in (torchscan_dispatch, torchscan):
        buffer = io.StringIO()
        torch.manual_seed(1)
        try:
            with redirect_stdout(buffer):
                package.summary(model, **copy.deepcopy(call), **options)
        except ValueError as error:  # e.g. max_depth beyond the model's depth
            outputs.append(f"ValueError: {error}")
        else:
            outputs.append(buffer.getvalue())
    ours, theirs = outputs
    report, _ = crawl_both(name)
    if any(op in BEYOND for op in report["operator_flops"]["by_operator"]):
        # Only the operator lines differ: ours counts the fused kernels.
        ours_lines = [line for line in ours.splitlines() if not line.startswith(("Operator forward", "Diagnostics:"))]
        theirs_lines = [line for line in theirs.splitlines() if not line.startswith(("Operator forward", "Diagnostics:"))]
        assert ours_lines == theirs_lines
    else:
        assert ours == theirs
