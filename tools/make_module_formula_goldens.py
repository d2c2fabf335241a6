#!/usr/bin/env python3
"""Prints the expected module-formula results of the released torchscan 0.2.0.

The C++ module formulas (formulas/module_*.cc) must reproduce TorchScan 0.2's
numbers, warnings and errors exactly. This script builds real torch modules,
runs the RELEASED torchscan formulas on them and prints, for each case, the
plain module description and call our formulas take (formulas/module_json.h)
together with what upstream returned. The output is committed as
formulas/testdata/module_formula_goldens.json and read by
formulas/module_formula_goldens_test.cc, so the C++ test compares against
upstream's real numbers rather than against our own output.

Two kinds of cases:
  * "formula" cases call module_flops / module_macs / module_dmas / module_rf
    directly, with the module in whatever training mode the case sets
    (BatchNorm tracking terms, MHA dropout and Transformer dropouts need it);
  * "crawl" cases run crawl_module on the module as the root and record its
    module-formula metrics and module diagnostics (TorchScan 0.2's per-call
    metric evaluation), which formulas/module_metrics.h must reproduce.

Module descriptions come from the package's own describe_module
(python/torchscan_dispatch/_describe.py), the one crawl_module sends to the
C++ formulas; the expected numbers come from upstream.

Usage: PYTHONPATH=python python3 tools/make_module_formula_goldens.py > formulas/testdata/module_formula_goldens.json
Requires torch and torchscan==0.2.0 (pip install torchscan==0.2.0).
"""

import inspect
import json
import sys
import warnings
from collections import OrderedDict
from importlib.metadata import version

import torch
import torchscan
from torch import nn
from torch.nn import functional as F
from torchscan.crawler import _describe, _first_tensor, _ordered_inputs
from torchscan.modules import module_dmas, module_flops, module_macs, module_rf

from torchscan_dispatch._describe import describe_module

# ----------------------------------------------------------------------------
# Running upstream


def _number(value):
    # Keep Python's number kinds: ints stay ints, floats stay floats.
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise TypeError(f"unexpected formula result {value!r}")
    return value


def _run(fn):
    """Result of one formula call: value or error, plus the warnings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = fn()
        except Exception as error:  # noqa: BLE001 - errors are part of the contract
            return {"error": {"type": type(error).__name__, "message": str(error)}, "warnings": []}
    result = {"warnings": [str(w.message) for w in caught]}
    if isinstance(value, tuple):
        result["value"] = [_number(v) for v in value]
    else:
        result["value"] = _number(value)
    return result


def _ordered(module, args, kwargs):
    try:
        signature = inspect.signature(module.forward)
    except (TypeError, ValueError):
        signature = None
    return _ordered_inputs(signature, args, kwargs)


def formula_case(name, module, args, kwargs=None, out=None, inputs=None):
    """Calls the four formulas the way a crawl would, with the module as is."""
    kwargs = kwargs or {}
    if out is None:
        with torch.no_grad():
            out = module(*args, **kwargs)
    if inputs is None:
        inputs = _ordered(module, args, kwargs)
    first_in, first_out = _first_tensor(inputs), _first_tensor(out)
    flops_out = out if isinstance(module, nn.MultiheadAttention) else first_out
    return {
        "name": name,
        "module": describe_module(module),
        "call": {"inputs": [_describe(v) for v in inputs], "output": _describe(out)},
        "flops": _run(lambda: module_flops(module, inputs, flops_out)),
        "macs": _run(lambda: module_macs(module, first_in, first_out)),
        "dmas": _run(lambda: module_dmas(module, first_in, first_out)),
        "receptive_field": _run(lambda: module_rf(module, first_in, first_out)),
    }


def crawl_case(name, model, args, kwargs=None):
    """crawl_module on `model`: every metric-leaf call with its metrics.

    Calls are listed in completion order, the order in which crawl_module
    evaluates them, so the concatenated module diagnostics of our
    module_metrics layer must equal upstream's list.
    """
    model.eval()  # crawls evaluate formulas in eval mode; describe it so
    kwargs = kwargs or {}
    if isinstance(model, nn.Transformer):
        targets = [("", model)]
    else:
        targets = list(model.named_modules())
    captured, handles, counts = [], [], {}

    def is_metric_leaf(m):
        return not any(m.children()) or isinstance(m, nn.MultiheadAttention) or (m is model and isinstance(m, nn.Transformer))

    for path, m in targets:
        if not is_metric_leaf(m):
            continue

        def pre(hooked, hook_args, hook_kwargs, path=path):
            index = counts.get(id(hooked), 0)
            counts[id(hooked)] = index + 1
            hooked._golden_call_stack = [*getattr(hooked, "_golden_call_stack", []), index]

        def post(hooked, hook_args, hook_kwargs, output, path=path):
            index = hooked._golden_call_stack.pop()
            inputs = _ordered(hooked, hook_args, hook_kwargs)
            captured.append({
                "path": path,
                "call_index": index,
                "module": describe_module(hooked),
                "call": {"inputs": [_describe(v) for v in inputs], "output": _describe(output)},
            })

        handles.append(m.register_forward_pre_hook(pre, with_kwargs=True))
        handles.append(m.register_forward_hook(post, with_kwargs=True))
    with torch.no_grad():
        model(*args, **kwargs)
    for handle in handles:
        handle.remove()

    report = torchscan.crawl_module(model, args=args, kwargs=kwargs)
    metrics = {
        (layer["path"], layer["call_index"]): {k: v for k, v in layer["metrics"].items() if k != "calls"}
        for layer in report["layers"]
        if "module_flops" in layer["metrics"]
    }
    if len(metrics) != len(captured):
        raise RuntimeError(f"{name}: captured {len(captured)} leaf calls, the crawl has {len(metrics)}")
    for call in captured:
        call["metrics"] = metrics[(call["path"], call["call_index"])]
    return {
        "name": name,
        "calls": captured,
        "diagnostics": [d for d in report["diagnostics"] if "path" in d],
    }


def _t(*shape, dtype=torch.float32):
    return torch.rand(*shape).to(dtype)


class MyModule(nn.Module):
    def forward(self, x):
        return x


class ReluWithLeadingNone(nn.ReLU):
    """A supported family whose first ordered input is None."""

    def forward(self, a=None, b=None):
        return torch.relu(b)


class SecretOutput(nn.Module):
    def forward(self, x):
        return {"text": "secret"}


class NoTensorInput(nn.Module):
    def forward(self, n):
        return torch.zeros(n)


class IntFirstLinear(nn.Linear):
    def forward(self, scale, x):
        return super().forward(x) * scale


class ReusedModules(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.ReLU()
        self.embed = nn.Embedding(4, 4)
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.act(self.fc(self.act(x))) + self.embed(torch.zeros(1, dtype=torch.long))


class TinyEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(4, 2, batch_first=True)
        self.norm = nn.LayerNorm(4)

    def forward(self, x):
        y, _ = self.attn(x, x, x, need_weights=False)
        return self.norm(x + y)


class CustomEncoder(nn.Module):
    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        return src


def formula_cases():
    torch.manual_seed(0)
    cases = []
    add = cases.append

    # TorchScan 0.2's golden module-formula values and friends.
    add(formula_case("MyModule", MyModule(), (_t(1),)))
    add(formula_case("Linear(8,4)", nn.Linear(8, 4), (_t(1, 8),)))
    add(formula_case("Linear(8,4,bias=False)", nn.Linear(8, 4, bias=False), (_t(1, 8),)))
    add(formula_case("Linear(8,4) 3-D", nn.Linear(8, 4), (_t(1, 2, 8),)))
    add(formula_case("Linear(8,4) 1-D", nn.Linear(8, 4), (_t(8),)))
    add(formula_case("Linear(3,5) batch 7x2", nn.Linear(3, 5), (_t(7, 2, 3),)))
    add(formula_case("Identity", nn.Identity(), (_t(1, 8),)))
    add(formula_case("Flatten", nn.Flatten(), (_t(1, 8),)))
    add(formula_case("Flatten 4-D", nn.Flatten(), (_t(2, 3, 4, 5),)))
    for cls in (nn.ReLU, nn.ELU, nn.LeakyReLU, nn.ReLU6):
        add(formula_case(f"{cls.__name__}", cls(), (_t(1, 8),)))
        add(formula_case(f"{cls.__name__}(inplace)", cls(inplace=True), (_t(2, 3, 5),)))
    add(formula_case("Tanh", nn.Tanh(), (_t(1, 8),)))
    add(formula_case("Sigmoid", nn.Sigmoid(), (_t(1, 8),)))
    add(formula_case("Sigmoid 3-D", nn.Sigmoid(), (_t(2, 3, 4),)))

    # BatchNorm: every flag combination that changes a term.
    add(formula_case("BatchNorm1d(8) training", nn.BatchNorm1d(8), (_t(1, 8, 4),)))
    add(formula_case("BatchNorm1d(8) eval", nn.BatchNorm1d(8).eval(), (_t(1, 8, 4),)))
    add(formula_case("BatchNorm1d(8) 2-D input", nn.BatchNorm1d(8), (_t(3, 8),)))
    add(formula_case("BatchNorm2d(3) training", nn.BatchNorm2d(3), (_t(2, 3, 5, 4),)))
    add(formula_case("BatchNorm2d(3) eval", nn.BatchNorm2d(3).eval(), (_t(2, 3, 5, 4),)))
    add(formula_case("BatchNorm2d(3,affine=False) training", nn.BatchNorm2d(3, affine=False), (_t(2, 3, 5, 4),)))
    add(
        formula_case(
            "BatchNorm2d(3,track_running_stats=False) training",
            nn.BatchNorm2d(3, track_running_stats=False),
            (_t(2, 3, 5, 4),),
        )
    )
    add(formula_case("BatchNorm2d(3,momentum=None) training", nn.BatchNorm2d(3, momentum=None), (_t(2, 3, 5, 4),)))
    add(formula_case("BatchNorm2d(3,momentum=None) eval", nn.BatchNorm2d(3, momentum=None).eval(), (_t(2, 3, 5, 4),)))
    add(
        formula_case(
            "BatchNorm3d(4,affine=False,track_running_stats=False) eval",
            nn.BatchNorm3d(4, affine=False, track_running_stats=False).eval(),
            (_t(2, 4, 3, 3, 2),),
        )
    )
    sync = nn.SyncBatchNorm(3)
    x = _t(2, 3, 4, 4)
    add(formula_case("SyncBatchNorm(3) training (no forward)", sync, (x,), out=x.clone()))

    # Convolutions.
    add(formula_case("Conv2d(3,8,3)", nn.Conv2d(3, 8, 3), (_t(1, 3, 32, 32),)))
    add(formula_case("Conv2d(3,8,3,bias=False)", nn.Conv2d(3, 8, 3, bias=False), (_t(1, 3, 32, 32),)))
    add(formula_case("Conv2d(3,8,3,dilation=2)", nn.Conv2d(3, 8, 3, dilation=2), (_t(1, 3, 16, 16),)))
    add(
        formula_case(
            "Conv2d(4,8,(3,5),stride=(2,1),padding=(1,2),groups=2)",
            nn.Conv2d(4, 8, (3, 5), stride=(2, 1), padding=(1, 2), groups=2),
            (_t(2, 4, 9, 11),),
        )
    )
    add(formula_case("Conv2d(6,6,3,groups=6) depthwise", nn.Conv2d(6, 6, 3, groups=6, padding=1), (_t(1, 6, 7, 7),)))
    add(formula_case("Conv2d(3,4,3,padding=same)", nn.Conv2d(3, 4, 3, padding="same"), (_t(1, 3, 8, 8),)))
    add(formula_case("Conv2d(3,4,3,padding=valid)", nn.Conv2d(3, 4, 3, padding="valid"), (_t(1, 3, 8, 8),)))
    add(formula_case("Conv1d(4,6,5,stride=2,padding=2)", nn.Conv1d(4, 6, 5, stride=2, padding=2), (_t(3, 4, 20),)))
    add(formula_case("Conv1d(4,6,3) unbatched", nn.Conv1d(4, 6, 3), (_t(4, 10),)))
    add(formula_case("Conv3d(2,4,3,stride=2,padding=1)", nn.Conv3d(2, 4, 3, stride=2, padding=1), (_t(1, 2, 6, 6, 6),)))
    add(formula_case("Conv3d(4,4,(1,3,3),groups=4)", nn.Conv3d(4, 4, (1, 3, 3), groups=4), (_t(1, 4, 3, 5, 5),)))
    add(formula_case("ConvTranspose2d(3,8,3)", nn.ConvTranspose2d(3, 8, 3), (_t(1, 3, 32, 32),)))
    add(
        formula_case(
            "ConvTranspose2d(4,6,(3,2),stride=2,padding=1,groups=2,bias=False)",
            nn.ConvTranspose2d(4, 6, (3, 2), stride=2, padding=1, groups=2, bias=False),
            (_t(1, 4, 5, 5),),
        )
    )
    add(formula_case("ConvTranspose1d(2,3,4,stride=3)", nn.ConvTranspose1d(2, 3, 4, stride=3), (_t(2, 2, 7),)))
    add(
        formula_case(
            "ConvTranspose3d(2,2,3,stride=2,dilation=2)",
            nn.ConvTranspose3d(2, 2, 3, stride=2, dilation=2),
            (_t(1, 2, 3, 3, 3),),
        )
    )

    # Pooling: int versus tuple kernels (quirk 10), strides, padding, dilation.
    add(formula_case("MaxPool2d((2,2))", nn.MaxPool2d((2, 2)), (_t(1, 8, 4, 4),)))
    add(formula_case("MaxPool2d(2)", nn.MaxPool2d(2), (_t(1, 8, 4, 4),)))
    add(formula_case("MaxPool2d(3,stride=2,padding=1)", nn.MaxPool2d(3, stride=2, padding=1), (_t(1, 2, 9, 9),)))
    add(
        formula_case(
            "MaxPool2d((3,2),stride=(2,1),dilation=(2,1))",
            nn.MaxPool2d((3, 2), stride=(2, 1), dilation=(2, 1)),
            (_t(1, 2, 9, 9),),
        )
    )
    add(formula_case("MaxPool2d(2,dilation=2)", nn.MaxPool2d(2, dilation=2), (_t(1, 2, 8, 8),)))
    add(formula_case("MaxPool2d(2) unbatched", nn.MaxPool2d(2), (_t(3, 4, 4),)))
    add(formula_case("MaxPool1d(3)", nn.MaxPool1d(3), (_t(2, 3, 12),)))
    add(formula_case("MaxPool1d(3) unbatched 2-D", nn.MaxPool1d(3), (_t(3, 12),)))
    add(formula_case("MaxPool3d(2)", nn.MaxPool3d(2), (_t(1, 2, 4, 4, 4),)))
    add(formula_case("MaxPool3d((1,2,2))", nn.MaxPool3d((1, 2, 2)), (_t(1, 2, 4, 4, 4),)))
    add(formula_case("MaxPool2d(2,return_indices=True)", nn.MaxPool2d(2, return_indices=True), (_t(1, 1, 4, 4),)))
    add(formula_case("AvgPool2d((2,2))", nn.AvgPool2d((2, 2)), (_t(1, 8, 4, 4),)))
    add(formula_case("AvgPool2d(2)", nn.AvgPool2d(2), (_t(1, 8, 4, 4),)))
    add(formula_case("AvgPool2d(3,stride=1,padding=1)", nn.AvgPool2d(3, stride=1, padding=1), (_t(1, 2, 5, 5),)))
    add(formula_case("AvgPool1d(4,stride=2)", nn.AvgPool1d(4, stride=2), (_t(2, 3, 10),)))
    add(formula_case("AvgPool3d(2)", nn.AvgPool3d(2), (_t(1, 2, 4, 4, 4),)))
    add(formula_case("AvgPool3d((2,1,2),stride=1)", nn.AvgPool3d((2, 1, 2), stride=1), (_t(1, 2, 4, 4, 4),)))
    add(formula_case("AvgPool2d(2) unbatched", nn.AvgPool2d(2), (_t(3, 4, 4),)))
    for cls, size in ((nn.AdaptiveMaxPool2d, (2, 2)), (nn.AdaptiveMaxPool2d, 2), (nn.AdaptiveAvgPool2d, (2, 2))):
        add(formula_case(f"{cls.__name__}({size})", cls(size), (_t(1, 8, 4, 4),)))
    add(formula_case("AdaptiveAvgPool2d(2)", nn.AdaptiveAvgPool2d(2), (_t(1, 8, 4, 4),)))
    add(formula_case("AdaptiveAvgPool2d(3) from 7x7", nn.AdaptiveAvgPool2d(3), (_t(1, 2, 7, 7),)))
    add(formula_case("AdaptiveMaxPool2d((3,2)) from 7x5", nn.AdaptiveMaxPool2d((3, 2)), (_t(1, 2, 7, 5),)))
    add(formula_case("AdaptiveAvgPool2d(1) from 7x7", nn.AdaptiveAvgPool2d(1), (_t(1, 4, 7, 7),)))
    add(formula_case("AdaptiveMaxPool2d(5) from 3x3 (upsampling)", nn.AdaptiveMaxPool2d(5), (_t(1, 1, 3, 3),)))
    add(formula_case("AdaptiveAvgPool1d(4) from 10", nn.AdaptiveAvgPool1d(4), (_t(2, 3, 10),)))
    add(formula_case("AdaptiveMaxPool1d(3) from 9", nn.AdaptiveMaxPool1d(3), (_t(2, 3, 9),)))
    add(formula_case("AdaptiveAvgPool3d((2,3,1)) from 5x7x4", nn.AdaptiveAvgPool3d((2, 3, 1)), (_t(1, 2, 5, 7, 4),)))
    add(formula_case("AdaptiveMaxPool3d(2) from 4x5x6", nn.AdaptiveMaxPool3d(2), (_t(1, 1, 4, 5, 6),)))
    add(formula_case("AdaptiveAvgPool2d(2) unbatched", nn.AdaptiveAvgPool2d(2), (_t(3, 5, 5),)))

    # Dropout (training mode does not matter for FLOPs, quirk 9).
    add(formula_case("Dropout()", nn.Dropout(), (_t(1, 8),)))
    add(formula_case("Dropout(p=0)", nn.Dropout(p=0), (_t(1, 8),)))
    add(formula_case("Dropout(0.1,inplace=True) eval", nn.Dropout(0.1, inplace=True).eval(), (_t(2, 3, 4),)))

    # LayerNorm.
    add(formula_case("LayerNorm(4)", nn.LayerNorm(4), (_t(2, 3, 4),)))
    add(formula_case("LayerNorm(4,bias=False)", nn.LayerNorm(4, bias=False), (_t(2, 3, 4),)))
    add(formula_case("LayerNorm(4,elementwise_affine=False)", nn.LayerNorm(4, elementwise_affine=False), (_t(2, 3, 4),)))
    add(formula_case("LayerNorm((3,4))", nn.LayerNorm((3, 4)), (_t(2, 3, 4),)))
    add(formula_case("LayerNorm(6) 1-D", nn.LayerNorm(6), (_t(6),)))

    # MultiheadAttention: reference 6.1.1 goldens and variants.
    for batch_first in (True, False):
        for bias in (False, True):
            tag = f"batch_first={batch_first},bias={bias}"

            def qkv(length):
                return _t(2, length, 4) if batch_first else _t(length, 2, 4)

            mha = nn.MultiheadAttention(4, 2, bias=bias, batch_first=batch_first).eval()
            q, kv = qkv(3), qkv(5)
            add(formula_case(f"MHA self {tag}", mha, (q, q, q), {"need_weights": False}))
            add(formula_case(f"MHA cross {tag}", mha, (q, kv, kv), {"need_weights": False}))
            add(formula_case(f"MHA self weights {tag}", mha, (q, q, q)))
            add(formula_case(f"MHA cross per-head weights {tag}", mha, (q, kv, kv), {"average_attn_weights": False}))
            add(
                formula_case(
                    f"MHA attn_mask {tag}",
                    mha,
                    (q, q, q),
                    {"attn_mask": torch.zeros(3, 3, dtype=torch.bool), "need_weights": False},
                )
            )
            add(
                formula_case(
                    f"MHA key_padding_mask+attn_mask {tag}",
                    mha,
                    (q, kv, kv),
                    {
                        "key_padding_mask": torch.zeros(2, 5, dtype=torch.bool),
                        "attn_mask": torch.zeros(3, 5, dtype=torch.bool),
                    },
                )
            )
    mha = nn.MultiheadAttention(8, 4, dropout=0.5, kdim=6, vdim=5)
    q, k, v = _t(3, 2, 8), _t(7, 2, 6), _t(7, 2, 5)
    add(formula_case("MHA kdim/vdim dropout training", mha, (q, k, v)))
    add(formula_case("MHA kdim/vdim dropout eval", mha.eval(), (q, k, v)))
    mha = nn.MultiheadAttention(6, 3, batch_first=True).eval()
    x = _t(2, 4, 6)
    add(formula_case("MHA positional need_weights=False", mha, (x, x, x, None, False)))
    add(formula_case("MHA add_zero_attn", nn.MultiheadAttention(4, 2, add_zero_attn=True).eval(), (_t(3, 2, 4),) * 3))
    add(formula_case("MHA add_bias_kv", nn.MultiheadAttention(4, 2, add_bias_kv=True).eval(), (_t(3, 2, 4),) * 3))
    add(formula_case("MHA unbatched 2-D", nn.MultiheadAttention(4, 2).eval(), (_t(3, 4),) * 3))
    mha = nn.MultiheadAttention(4, 2).eval()
    x = _t(3, 2, 4)
    add(formula_case("MHA two inputs only", mha, (x, x), out=mha(x, x, x), inputs=(x, x)))
    add(formula_case("MHA None query", mha, (x, x, x), inputs=(None, x, x)))
    add(formula_case("MHA fallback order (no signature)", mha, (x, x, x), inputs=(x, x, x)))

    # Transformer: reference 6.1.2 goldens and variants.
    for batch_first in (False, True):
        model = nn.Transformer(4, 2, 1, 1, 8, dropout=0.0, batch_first=batch_first).eval()
        src = _t(1, 3, 4) if batch_first else _t(3, 1, 4)
        tgt = _t(1, 2, 4) if batch_first else _t(2, 1, 4)
        add(formula_case(f"Transformer batch_first={batch_first}", model, (src, tgt)))
        masks = {
            "src_mask": torch.zeros(3, 3, dtype=torch.bool),
            "tgt_mask": torch.zeros(2, 2, dtype=torch.bool),
            "memory_mask": torch.zeros(2, 3, dtype=torch.bool),
            "src_key_padding_mask": torch.zeros(1, 3, dtype=torch.bool),
            "tgt_key_padding_mask": torch.zeros(1, 2, dtype=torch.bool),
            "memory_key_padding_mask": torch.zeros(1, 3, dtype=torch.bool),
        }
        add(formula_case(f"Transformer six masks batch_first={batch_first}", model, (src, tgt), masks))
    model = nn.Transformer(8, 2, 2, 3, 16, dropout=0.1, batch_first=True)
    src, tgt = _t(2, 5, 8), _t(2, 4, 8)
    add(formula_case("Transformer 2+3 layers dropout training", model, (src, tgt)))
    add(formula_case("Transformer 2+3 layers dropout eval", model.eval(), (src, tgt)))
    add(
        formula_case(
            "Transformer src_mask only",
            model,
            (src, tgt),
            {"src_mask": torch.zeros(5, 5, dtype=torch.bool)},
        )
    )
    model = nn.Transformer(4, 2, 1, 1, 8, activation="gelu", batch_first=True).eval()
    add(formula_case("Transformer gelu", model, (src[..., :4], tgt[..., :4])))
    model = nn.Transformer(4, 2, 1, 1, 8, dropout=0.0, norm_first=True, bias=False, batch_first=True).eval()
    add(formula_case("Transformer norm_first bias=False", model, (src[..., :4], tgt[..., :4])))
    model = nn.Transformer(4, 2, 1, 1, 8, dropout=0.0, custom_encoder=CustomEncoder()).eval()
    add(formula_case("Transformer custom encoder", model, (_t(3, 1, 4), _t(2, 1, 4))))
    model = nn.Transformer(4, 2, 1, 1, 8, dropout=0.0).eval()
    model.decoder.layers[0].multihead_attn = nn.MultiheadAttention(4, 2, add_zero_attn=True).eval()
    add(formula_case("Transformer add_zero_attn cross-attention", model, (_t(3, 1, 4), _t(2, 1, 4)), out=_t(2, 1, 4)))
    model = nn.Transformer(4, 2, 1, 1, 8, dropout=0.0).eval()
    model.encoder.layers[0].activation = F.gelu
    model.decoder.layers[0].self_attn = nn.MultiheadAttention(4, 2, add_bias_kv=True).eval()
    add(formula_case("Transformer gelu encoder then bias_kv decoder", model, (_t(3, 1, 4), _t(2, 1, 4)), out=_t(2, 1, 4)))
    model = nn.Transformer(4, 2, 0, 1, 8, dropout=0.0).eval()
    model.encoder.norm = nn.Identity()
    add(formula_case("Transformer no encoder layers, no encoder norm", model, (_t(3, 1, 4), _t(2, 1, 4)), out=_t(2, 1, 4)))
    model = nn.Transformer(4, 2, 1, 1, 8, dropout=0.0).eval()
    x = _t(3, 1, 4)
    add(formula_case("Transformer one input", model, (x, x), inputs=(x,)))
    add(formula_case("Transformer None src", model, (x, x), inputs=(None, x)))
    add(formula_case("Transformer unbatched", model, (_t(3, 4), _t(2, 4))))

    # Unsupported types (every formula warns) and malformed calls.
    add(formula_case("Embedding", nn.Embedding(10, 3), (torch.zeros(1, 3, dtype=torch.long),)))
    add(formula_case("GELU", nn.GELU(), (_t(1, 8),)))
    add(formula_case("Dropout2d", nn.Dropout2d(), (_t(1, 2, 3, 3),)))
    add(formula_case("GroupNorm", nn.GroupNorm(2, 4), (_t(1, 4, 3),)))
    add(formula_case("Hardtanh", nn.Hardtanh(), (_t(1, 8),)))
    x = _t(1, 8)
    add(formula_case("ReLU with None first input", nn.ReLU(), (x,), inputs=(None, x)))
    add(formula_case("Linear with int first input", nn.Linear(8, 4), (x,), inputs=(3, x)))
    add(formula_case("Conv2d with list first input", nn.Conv2d(8, 8, 1), (_t(1, 8, 2, 2),), inputs=([x], x)))
    add(formula_case("AvgPool2d with None first input", nn.AvgPool2d(2), (_t(1, 2, 4, 4),), inputs=(None, _t(1, 2, 4, 4))))
    add(formula_case("MaxPool2d with None first input", nn.MaxPool2d(2), (_t(1, 2, 4, 4),), inputs=(None, _t(1, 2, 4, 4))))
    add(
        formula_case(
            "AdaptiveAvgPool2d with dict first input",
            nn.AdaptiveAvgPool2d(2),
            (_t(1, 2, 4, 4),),
            inputs=({"a": 1}, _t(1, 2, 4, 4)),
        )
    )
    add(formula_case("Dropout(p=0) with None first input", nn.Dropout(0.0), (x,), inputs=(None, x)))
    add(formula_case("BatchNorm1d with 0-d first tensor", nn.BatchNorm1d(1).eval(), (x,), out=torch.tensor(1.0), inputs=(torch.tensor(2.0),)))
    add(formula_case("Conv1d with 1-D first input", nn.Conv1d(2, 2, 1), (x,), out=_t(2, 2, 3), inputs=(_t(5),)))
    add(
        formula_case(
            "AdaptiveAvgPool1d with 0-d first input", nn.AdaptiveAvgPool1d(1), (x,), out=_t(1, 1, 1), inputs=(torch.tensor(1.0),)
        )
    )
    add(formula_case("ReLU with no inputs", nn.ReLU(), (x,), inputs=()))
    add(formula_case("Identity with no inputs", nn.Identity(), (x,), inputs=()))
    add(formula_case("LayerNorm with empty normalized_shape product", nn.LayerNorm((0,)), (x,), out=_t(2, 0), inputs=(_t(2, 0),)))
    add(formula_case("AdaptiveMaxPool2d to empty output", nn.AdaptiveMaxPool2d(2), (x,), out=_t(1, 1, 0, 0), inputs=(_t(1, 1, 4, 4),)))
    return cases


def crawl_cases():
    torch.manual_seed(1)
    cases = []
    add = cases.append
    add(crawl_case("Conv2d(3,8,3)", nn.Conv2d(3, 8, 3), (_t(1, 3, 32, 32),)))
    add(crawl_case("Conv2d padding=same", nn.Conv2d(3, 4, 3, padding="same"), (_t(1, 3, 8, 8),)))
    add(crawl_case("ConvTranspose2d(3,8,3)", nn.ConvTranspose2d(3, 8, 3), (_t(1, 3, 8, 8),)))
    add(crawl_case("Linear(4,2)", nn.Linear(4, 2), (_t(1, 4),)))
    add(crawl_case("Identity", nn.Identity(), (_t(2, 4),)))
    add(crawl_case("BatchNorm2d(3)", nn.BatchNorm2d(3), (_t(2, 3, 4, 4),)))
    add(crawl_case("MaxPool2d(2) return_indices", nn.MaxPool2d(2, return_indices=True), (_t(1, 1, 4, 4),)))
    add(crawl_case("AvgPool2d(2)", nn.AvgPool2d(2), (_t(1, 2, 4, 4),)))
    add(crawl_case("AdaptiveAvgPool2d(1) from 7x7", nn.AdaptiveAvgPool2d(1), (_t(1, 2, 7, 7),)))
    add(crawl_case("Dropout()", nn.Dropout(), (_t(1, 8),)))
    add(crawl_case("LayerNorm(4)", nn.LayerNorm(4), (_t(2, 3, 4),)))
    add(crawl_case("MyModule (unsupported)", MyModule(), (_t(1, 2),)))
    add(crawl_case("Embedding (unsupported)", nn.Embedding(10, 3), (torch.zeros(1, 3, dtype=torch.long),)))
    mha = nn.MultiheadAttention(4, 2, batch_first=True)
    q = _t(2, 3, 4)
    add(crawl_case("MultiheadAttention weights", mha, (q, q, q)))
    add(crawl_case("MultiheadAttention kwargs need_weights=False", mha, (q,), {"key": q, "value": q, "need_weights": False}))
    add(crawl_case("MultiheadAttention add_zero_attn", nn.MultiheadAttention(4, 2, add_zero_attn=True), (_t(3, 2, 4),) * 3))
    for batch_first in (False, True):
        model = nn.Transformer(4, 2, 1, 1, 8, dropout=0.0, batch_first=batch_first)
        src = _t(1, 3, 4) if batch_first else _t(3, 1, 4)
        tgt = _t(1, 2, 4) if batch_first else _t(2, 1, 4)
        add(crawl_case(f"Transformer batch_first={batch_first}", model, (src, tgt)))
    add(crawl_case("Transformer gelu", nn.Transformer(4, 2, 1, 1, 8, activation="gelu"), (_t(3, 1, 4), _t(2, 1, 4))))
    add(crawl_case("Non-tensor output", SecretOutput(), (_t(1, 2),)))
    add(crawl_case("No tensor input", NoTensorInput(), (3,)))
    add(crawl_case("ReLU subclass with leading None", ReluWithLeadingNone(), (None, _t(1, 4))))
    add(crawl_case("Linear subclass with int first input", IntFirstLinear(4, 2), (2, _t(1, 4))))
    add(crawl_case("Sequential(Linear, ReLU, Linear)", nn.Sequential(nn.Linear(8, 4), nn.ReLU(), nn.Linear(4, 2)), (_t(1, 8),)))
    add(
        crawl_case(
            "Small CNN",
            nn.Sequential(
                nn.Conv2d(3, 4, 3, padding=1, bias=False),
                nn.BatchNorm2d(4),
                nn.ReLU(inplace=True),
                nn.MaxPool2d(2),
                nn.Sequential(nn.Conv2d(4, 4, 3, groups=4), nn.GELU()),
                nn.AdaptiveAvgPool2d(1),
                nn.Flatten(),
                nn.Dropout(0.2),
                nn.Linear(4, 3),
            ),
            (_t(1, 3, 12, 12),),
        )
    )
    add(crawl_case("Reused ReLU and unsupported leaf", ReusedModules(), (_t(1, 4),)))
    add(crawl_case("Encoder with MHA and LayerNorm", TinyEncoder(), (_t(2, 3, 4),)))
    return cases


_PARAMETER_KINDS = {
    inspect.Parameter.POSITIONAL_ONLY: "positional_only",
    inspect.Parameter.POSITIONAL_OR_KEYWORD: "positional_or_keyword",
    inspect.Parameter.VAR_POSITIONAL: "var_positional",
    inspect.Parameter.KEYWORD_ONLY: "keyword_only",
    inspect.Parameter.VAR_KEYWORD: "var_keyword",
}


def ordered_case(name, forward, args, kwargs=None):
    """TorchScan 0.2's argument ordering: the crawler's ordering of one call's arguments."""
    kwargs = kwargs or {}
    signature = inspect.signature(forward)
    parameters = []
    for parameter in signature.parameters.values():
        entry = {"name": parameter.name, "kind": _PARAMETER_KINDS[parameter.kind]}
        if parameter.default is not inspect.Parameter.empty:
            entry["default"] = _describe(parameter.default)
        parameters.append(entry)
    return {
        "name": name,
        "signature": parameters,
        "args": [_describe(v) for v in args],
        "kwargs": [[key, _describe(v)] for key, v in kwargs.items()],
        "ordered": [_describe(v) for v in _ordered_inputs(signature, args, kwargs)],
    }


def ordered_cases():
    cases = []
    add = cases.append
    q, k, v = _t(2, 3, 4), _t(2, 5, 4), _t(2, 5, 6)
    mha = nn.MultiheadAttention(4, 2)
    add(ordered_case("MHA(q, k, v)", mha.forward, (q, k, v)))
    add(ordered_case("MHA(q, key=k, value=v, need_weights=False)", mha.forward, (q,), {"key": k, "value": v, "need_weights": False}))
    add(ordered_case("MHA(q, k, v, attn_mask=m)", mha.forward, (q, k, v), {"attn_mask": _t(3, 5)}))
    add(ordered_case("MHA unknown keyword falls back", mha.forward, (q, k, v), {"bogus": 1}))
    add(ordered_case("MHA value given twice falls back", mha.forward, (q, k, v), {"key": k}))
    add(ordered_case("MHA too many positional falls back", mha.forward, (q, k, v, None, True, None, True, False, 1)))
    transformer = nn.Transformer(4, 2, 1, 1, 8)
    add(ordered_case("Transformer(src, tgt)", transformer.forward, (q, k)))
    add(ordered_case("Transformer(src, tgt, tgt_mask=m)", transformer.forward, (q, k), {"tgt_mask": _t(5, 5)}))
    add(ordered_case("Linear(x)", nn.Linear(4, 2).forward, (q,)))
    add(ordered_case("Linear() partial bind", nn.Linear(4, 2).forward, ()))
    add(ordered_case("Linear(input=x)", nn.Linear(4, 2).forward, (), {"input": q}))

    def varargs(a, *rest, scale=2.0, **options):
        return a

    add(ordered_case("*args and **kwargs", varargs, (q, k, 3), {"scale": 1.0, "mode": "x", "mask": v}))
    add(ordered_case("*args empty, **kwargs empty", varargs, (q,)))
    add(ordered_case("keyword before *args", varargs, (), {"a": q, "other": None}))

    def positional_only(a, b=None, /, c=1, *, d, e=None):
        return a

    add(ordered_case("positional-only and keyword-only", positional_only, (q, k), {"d": v}))
    add(ordered_case("positional-only passed by keyword falls back", positional_only, (), {"a": q, "d": v}))
    add(ordered_case("positional-only later passed by keyword falls back", positional_only, (q,), {"b": k, "d": v}))
    add(ordered_case("keyword-only given positionally falls back", positional_only, (q, k, 3, v)))
    add(ordered_case("required keyword-only left out", positional_only, (q,)))

    def with_kwargs_only(x, **extra):
        return x

    add(ordered_case("positional-only name into **kwargs", positional_only_into_kwargs, (q,), {"a": k}))
    add(ordered_case("**kwargs only", with_kwargs_only, (), {"y": q, "x": k}))
    return cases


def positional_only_into_kwargs(a, /, **extra):
    return a


def main():
    # Construction-time notices of torch itself are not formula warnings.
    warnings.filterwarnings("ignore", message="enable_nested_tensor is True")
    document = OrderedDict(
        generator="tools/make_module_formula_goldens.py",
        torchscan_version=version("torchscan"),
        torch_version=torch.__version__,
        python_version=sys.version.split()[0],
        formula_cases=formula_cases(),
        crawl_cases=crawl_cases(),
        ordered_inputs_cases=ordered_cases(),
    )
    # One case per line: reviewable diffs when upstream's numbers change.
    out = sys.stdout
    out.write("{\n")
    for key in ("generator", "torchscan_version", "torch_version", "python_version"):
        out.write(f" {json.dumps(key)}: {json.dumps(document[key])},\n")
    keys = ("formula_cases", "crawl_cases", "ordered_inputs_cases")
    for key in keys:
        out.write(f" {json.dumps(key)}: [\n")
        cases = document[key]
        for index, case in enumerate(cases):
            out.write("  " + json.dumps(case) + (",\n" if index + 1 < len(cases) else "\n"))
        out.write(" ]" + (",\n" if key != keys[-1] else "\n"))
    out.write("}\n")


if __name__ == "__main__":
    main()
