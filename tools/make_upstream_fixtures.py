#!/usr/bin/env python3
"""Writes report/testdata/upstream/: what the released torchscan==0.2.0 emits.

The C++ tests in report/ parse these files and must reproduce them: reports
byte for byte (json.dumps), summary tables character for character, and
compare_reports results or error messages. Every expected value there comes
from running the released package, never from our own code.

Run from the repository root with the Python that has torchscan==0.2.0 and
torch installed:

    python3 tools/make_upstream_fixtures.py

Output is deterministic (no tensor values are recorded); rerunning it on the
same torch/torchscan versions rewrites identical files.
"""

import contextlib
import copy
import io
import json
import os
import sys
from collections import OrderedDict

import torch
from torch import nn

import torchscan
from torchscan import compare_reports, crawl_module, summary
from torchscan.report import IncompleteAnalysisError
from torchscan.utils import aggregate_info, format_info

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "report", "testdata", "upstream")


# --- models ------------------------------------------------------------------


class Custom(nn.Module):
    """A leaf no module formula knows: partial metrics and diagnostics."""

    def forward(self, x):
        return x * 2


class SharedBlock(nn.Module):
    """One Linear called twice, a tied weight and a shared buffer."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.tied = nn.Linear(4, 4, bias=False)
        self.tied.weight = self.fc.weight
        self.norm = nn.BatchNorm1d(4)
        self.act = nn.ReLU()

    def forward(self, x):
        x = self.act(self.fc(x))
        x = self.act(self.fc(x))
        return self.norm(self.tied(x))


class Outer:
    class Inner:
        pass


class NestedIo(nn.Module):
    """Exercises every value-metadata kind on inputs and outputs."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(3, 2)

    def forward(self, x, scale, nothing, pair, *, mask, options, handle):
        y = self.proj(x) * scale
        return {"features": (y, [None]), "text": "secret", 7: y.shape[0], "with space": (mask,)}


class PairOut(nn.Module):
    """A container whose output text is longer than the Output Shape column."""

    def __init__(self):
        super().__init__()
        self.pool = nn.MaxPool2d(2, return_indices=True)

    def forward(self, x):
        values, indices = self.pool(x)
        return values, indices, [values, None]


def deep_names_model():
    inner = nn.Sequential(
        OrderedDict([
            ("act", nn.ReLU()),
            ("name_with_exactly_27_chars_", nn.Identity()),
            ("name_with_exactly_30_chars_xyz", nn.Identity()),
            ("this_module_name_is_forty_characters_lng", nn.Identity()),
        ])
    )
    assert len("name_with_exactly_27_chars_") == 27
    assert len("name_with_exactly_30_chars_xyz") == 30
    assert len("this_module_name_is_forty_characters_lng") == 40
    assert len("a_depth_one_name_of_26_chr") == 26
    assert len("another_depth_one_name_29_chr") == 29
    return nn.Sequential(
        OrderedDict([
            ("a_depth_one_name_of_26_chr", nn.Identity()),
            ("another_depth_one_name_29_chr", nn.Identity()),
            ("stem", nn.Conv2d(3, 8, 3)),
            (
                "body",
                nn.Sequential(
                    OrderedDict([
                        ("inner", inner),
                        ("ünïcödé_模块", nn.Identity()),
                        ("pair", PairOut()),
                    ])
                ),
            ),
        ])
    )


def frozen_model():
    model = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.Linear(16, 4))
    for parameter in model[0].parameters():
        parameter.requires_grad_(False)
    return model


def scaled_model():
    return nn.Sequential(
        nn.Conv2d(3, 64, 7, stride=2, padding=3),
        nn.BatchNorm2d(64),
        nn.ReLU(),
        nn.Conv2d(64, 256, 3, padding=1),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(256, 1000),
    )


def rf_model():
    return nn.Sequential(
        nn.ConvTranspose2d(3, 4, 3, stride=2),
        nn.MaxPool2d(2),
        nn.AdaptiveAvgPool2d(3),
        nn.Conv2d(4, 4, 3, dilation=2, padding=2, stride=2),
    )


def nested_io_call():
    x = torch.ones(1, 3)
    args = (x, 1.5, None, [torch.zeros(2), "text"])
    kwargs = {
        "mask": torch.ones(1, 3, dtype=torch.bool),
        "options": {"alpha": 1, 2: None, "/private/model.pt": 3.0, True: b"x", "nested": {"k": [1, 2]}},
        "handle": Outer.Inner(),
    }
    return args, kwargs


# Each entry: name -> (callable returning (module, crawl kwargs)).
REPORTS = {
    "conv2d_3_8_3": lambda: (nn.Conv2d(3, 8, 3), {"input_shape": (3, 32, 32)}),
    "conv2d_3_12_3": lambda: (nn.Conv2d(3, 12, 3), {"input_shape": (3, 32, 32)}),
    "linear_relu_linear": lambda: (
        nn.Sequential(nn.Linear(8, 4), nn.ReLU(), nn.Linear(4, 2)),
        {"input_shape": (8,)},
    ),
    "shared_module": lambda: (SharedBlock(), {"input_shape": (4,)}),
    "unsupported_custom": lambda: (nn.Sequential(nn.Linear(4, 4), Custom()), {"input_shape": (4,)}),
    "structure_mode": lambda: (
        nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU()),
        {"input_shape": (3, 16, 16), "mode": "structure"},
    ),
    "conv_same_padding": lambda: (nn.Conv2d(3, 4, 3, padding="same"), {"input_shape": (3, 8, 8)}),
    "nested_io": lambda: (NestedIo(), dict(zip(("args", "kwargs"), nested_io_call(), strict=True))),
    "receptive_fields": lambda: (rf_model(), {"input_shape": (3, 8, 8)}),
    "scaled_units": lambda: (scaled_model(), {"input_shape": (3, 224, 224)}),
    "tera_linear_meta": lambda: (nn.Linear(16384, 16384, device="meta"), {"input_shape": (4096, 16384)}),
    "deep_names": lambda: (deep_names_model(), {"input_shape": (3, 10, 10)}),
    "frozen_and_buffers": lambda: (frozen_model(), {"input_shape": (8,)}),
}

# (report, options) pairs rendered with format_info exactly as summary() does.
SUMMARIES = [
    ("conv2d_3_8_3", {}),
    ("conv2d_3_8_3", {"receptive_field": True, "effective_rf_stats": True}),
    ("conv2d_3_8_3", {"effective_rf_stats": True}),
    ("linear_relu_linear", {"receptive_field": True}),
    ("linear_relu_linear", {"max_depth": 0}),
    ("linear_relu_linear", {"max_depth": 1}),
    ("linear_relu_linear", {"max_depth": 2}),
    ("linear_relu_linear", {"max_depth": -1}),
    ("shared_module", {"receptive_field": True, "effective_rf_stats": True}),
    ("unsupported_custom", {"receptive_field": True, "effective_rf_stats": True}),
    ("structure_mode", {"receptive_field": True}),
    ("conv_same_padding", {}),
    ("conv_same_padding", {"receptive_field": True, "effective_rf_stats": True}),
    ("nested_io", {"receptive_field": True}),
    ("receptive_fields", {"receptive_field": True, "effective_rf_stats": True}),
    ("scaled_units", {}),
    ("tera_linear_meta", {}),
    ("deep_names", {}),
    ("deep_names", {"wrap_mode": "end"}),
    ("deep_names", {"wrap_mode": None}),
    ("deep_names", {"wrap_mode": "bogus"}),
    ("deep_names", {"max_depth": 1, "wrap_mode": "bogus"}),
    ("deep_names", {"max_depth": 3, "receptive_field": True, "effective_rf_stats": True}),
    ("frozen_and_buffers", {"receptive_field": True, "effective_rf_stats": True}),
]

# Pairs of full reports to compare.
FULL_COMPARES = [
    ("conv2d_3_8_3", "conv2d_3_12_3"),
    ("conv2d_3_12_3", "conv2d_3_8_3"),
    ("conv2d_3_8_3", "conv2d_3_8_3"),
    ("linear_relu_linear", "unsupported_custom"),
    ("shared_module", "shared_module"),
    ("receptive_fields", "receptive_fields"),
    ("conv_same_padding", "conv_same_padding"),
    ("conv_same_padding", "conv2d_3_8_3"),
    ("structure_mode", "structure_mode"),
    ("conv2d_3_8_3", "structure_mode"),
    ("scaled_units", "tera_linear_meta"),
    ("deep_names", "frozen_and_buffers"),
]


# --- hand-built compare cases (tests/test_compare.py style) ---------------------


def metric(status, value=None, known_value=None, unit="FLOPs", scope="forward", method="torchscan_module_formula"):
    return torchscan.metric_result(
        status=status, value=value, known_value=known_value, unit=unit, scope=scope, method=method
    )


def layer(path, call_index, **metrics):
    return {"path": path, "call_index": call_index, "metrics": metrics}


def minimal(totals, layers=(), version=1):
    return {"schema_version": version, "totals": totals, "layers": list(layers)}


def minimal_compares():
    c = lambda v, **kw: metric("complete", value=v, **kw)  # noqa: E731
    p = lambda v, **kw: metric("partial", known_value=v, **kw)  # noqa: E731
    u = lambda **kw: metric("unavailable", **kw)  # noqa: E731
    cases = {}
    cases["numeric_totals_sorted"] = (
        minimal({"macs": c(10, unit="MACs"), "dmas": c(7, unit="DMAs"), "module_flops": c(20)}),
        minimal({"macs": c(15, unit="MACs"), "dmas": c(7, unit="DMAs"), "module_flops": c(20)}),
    )
    cases["layer_calls"] = (
        minimal(
            {},
            [
                layer("shared", 0, macs=c(3, unit="MACs")),
                layer("shared", 1, macs=c(3, unit="MACs"), effective_stride=c(1, unit="elements")),
                layer("old", 0, macs=c(1, unit="MACs")),
            ],
        ),
        minimal(
            {},
            [
                layer("new", 0, macs=c(2, unit="MACs")),
                layer("shared", 1, macs=c(7, unit="MACs"), effective_stride=c(1.0, unit="elements")),
                layer("shared", 0, macs=c(3, unit="MACs")),
            ],
        ),
    )
    cases["propagation"] = (
        minimal({"a": c(1), "b": p(2), "c": p(2), "d": u(), "e": c(5), "f": u()}),
        minimal({"a": p(4), "b": u(), "c": p(3), "d": c(1), "e": c(5), "f": u()}),
    )
    cases["missing_metric"] = (
        minimal({"only_before": c(1), "both": c(2)}, [layer("x", 0, gone=c(3))]),
        minimal({"only_after": p(4), "both": c(2)}, [layer("x", 0, fresh=c(3))]),
    )
    cases["numbers"] = (
        minimal({
            "big": c(2**64, unit="FLOPs"),
            "huge": c(2**100),
            "float": c(0.1, unit="ratio"),
            "mixed": c(3, unit="ratio"),
            "neg": c(10),
            "receptive_field": c(-3, unit="elements"),
            "effective_stride": c(0.5, unit="elements"),
        }),
        minimal({
            "big": c(2**70, unit="FLOPs"),
            "huge": c(2**101 + 1),
            "float": c(0.3, unit="ratio"),
            "mixed": c(1.25, unit="ratio"),
            "neg": c(4),
            "receptive_field": c(0.5, unit="elements"),
            "effective_stride": c(2, unit="elements"),
        }),
    )
    cases["equal_int_and_float_layers_skipped"] = (
        minimal({}, [layer("a", 0, receptive_field=c(1, unit="elements"), effective_padding=c("same", unit="elements"))]),
        minimal({}, [layer("a", 0, receptive_field=c(1.0, unit="elements"), effective_padding=c("same", unit="elements"))]),
    )
    cases["versions_differ"] = (minimal({}, version=1), minimal({}, version=2))
    cases["versions_differ_reversed"] = (minimal({}, version=2), minimal({}, version=1))
    cases["unsupported_version"] = (minimal({}, version=99), minimal({}, version=99))
    cases["duplicate_before"] = (minimal({}, [layer("x", 0), layer("x", 0)]), minimal({}))
    cases["duplicate_after"] = (minimal({}), minimal({}, [layer("", 2), layer("", 2)]))
    cases["duplicate_quoted_path"] = (minimal({}, [layer("it's", 0), layer("it's", 0)]), minimal({}))
    cases["duplicate_both_quotes"] = (minimal({}, [layer("a'b\"c", 1), layer("a'b\"c", 1)]), minimal({}))
    cases["duplicate_before_wins"] = (
        minimal({}, [layer("b", 0), layer("b", 0)]),
        minimal({}, [layer("a", 0), layer("a", 0)]),
    )
    for field, other in (("unit", {"unit": "MACs"}), ("scope", {"scope": "model"}), ("method", {"method": "x"})):
        cases[f"incompatible_total_{field}"] = (minimal({"macs": c(1)}), minimal({"macs": c(1, **other)}))
        cases[f"incompatible_layer_{field}"] = (
            minimal({}, [layer("l", 0, macs=c(1))]),
            minimal({}, [layer("l", 0, macs=c(2, **other))]),
        )
    cases["incompatible_equal_layer_metric_not_checked"] = (
        minimal({}, [layer("l", 0, macs=c(1))]),
        minimal({}, [layer("l", 0, macs=c(1))]),
    )
    cases["incompatible_quoted_name"] = (minimal({"it's": c(1)}), minimal({"it's": c(1, unit="x")}))
    cases["layers_checked_before_totals"] = (
        minimal({"a": c(1)}, [layer("l", 0, z=c(1))]),
        minimal({"a": c(1, unit="x")}, [layer("l", 0, z=c(2, scope="x"))]),
    )
    cases["string_delta"] = (
        minimal({}, [layer("conv", 0, effective_padding=c("same", unit="elements"))]),
        minimal({}, [layer("conv", 0, effective_padding=c(1, unit="elements"))]),
    )
    return cases


# --- writing -----------------------------------------------------------------


def dump(path, document):
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        handle.write(json.dumps(document))
        handle.write("\n")


def write_text(path, text):
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        handle.write(text)


class _Verbatim(str):
    """A string whose f"{x:.0f}" is itself: our documented deviation."""

    def __format__(self, spec):
        return str(self)


def verbatim_rf_strings(report):
    view = copy.deepcopy(report)
    for layer in view["layers"]:
        for result in layer["metrics"].values():
            for key in ("value", "known_value"):
                if isinstance(result[key], str):
                    result[key] = _Verbatim(result[key])
    return view


def summary_text(report, options):
    display = report
    max_depth = options.get("max_depth")
    if isinstance(max_depth, int):
        display = aggregate_info(report, max_depth)
    text = format_info(
        display,
        options.get("wrap_mode", "mid"),
        options.get("receptive_field", False),
        options.get("effective_rf_stats", False),
    )
    return text + "\n"


def main():
    os.makedirs(OUT, exist_ok=True)
    for sub in ("reports", "summaries", "diffs", "compare_inputs"):
        os.makedirs(os.path.join(OUT, sub), exist_ok=True)
    torch.manual_seed(0)
    manifest = {
        "generator": "tools/make_upstream_fixtures.py",
        "torchscan_version": torchscan.__version__,
        "torch_version": torch.__version__,
        "python_version": sys.version.split()[0],
        "reports": [],
        "summaries": [],
        "compares": [],
    }

    reports = {}
    for name, build in REPORTS.items():
        module, crawl_kwargs = build()
        report = crawl_module(module, **crawl_kwargs)
        assert json.loads(json.dumps(report)) == report
        reports[name] = report
        strict_message = None
        try:
            crawl_module(module, strict=True, **crawl_kwargs)
        except IncompleteAnalysisError as error:
            strict_message = str(error)
        file = f"reports/{name}.json"
        dump(os.path.join(OUT, file), report)
        manifest["reports"].append({"name": name, "file": file, "strict_error": strict_message})

    for index, (name, options) in enumerate(SUMMARIES):
        entry = {"report": name, "options": options}
        try:
            text = summary_text(reports[name], options)
        except ValueError as error:
            entry["error"] = str(error)
            if "Unknown format code" in str(error):
                # Upstream cannot render string receptive fields; record the
                # table with them shown as is, which is what we print.
                deviation = f"summaries/{index:02d}_{name}.deviation.txt"
                write_text(os.path.join(OUT, deviation), summary_text(verbatim_rf_strings(reports[name]), options))
                entry["deviation_file"] = deviation
        else:
            file = f"summaries/{index:02d}_{name}.txt"
            write_text(os.path.join(OUT, file), text)
            entry["file"] = file
            # format_info on the stored report is exactly what summary() prints.
            if "max_depth" not in options or options["max_depth"] >= 0:
                module, crawl_kwargs = REPORTS[name]()
                out = io.StringIO()
                with contextlib.redirect_stdout(out):
                    summary(
                        module,
                        crawl_kwargs.pop("input_shape", None),
                        options.get("wrap_mode", "mid"),
                        options.get("max_depth"),
                        options.get("receptive_field", False),
                        options.get("effective_rf_stats", False),
                        **crawl_kwargs,
                    )
                assert out.getvalue() == text, name
        manifest["summaries"].append(entry)

    def record_compare(label, before, after, before_file, after_file):
        before_copy, after_copy = copy.deepcopy(before), copy.deepcopy(after)
        entry = {"name": label, "before": before_file, "after": after_file}
        try:
            diff = compare_reports(before, after)
        except (ValueError, TypeError) as error:
            entry["error"] = f"{type(error).__name__}: {error}"
        else:
            file = f"diffs/{label}.json"
            dump(os.path.join(OUT, file), diff)
            entry["file"] = file
        assert before == before_copy and after == after_copy
        manifest["compares"].append(entry)

    for before, after in FULL_COMPARES:
        record_compare(
            f"{before}__vs__{after}",
            reports[before],
            reports[after],
            f"reports/{before}.json",
            f"reports/{after}.json",
        )
    for label, (before, after) in minimal_compares().items():
        before_file = f"compare_inputs/{label}.before.json"
        after_file = f"compare_inputs/{label}.after.json"
        dump(os.path.join(OUT, before_file), before)
        dump(os.path.join(OUT, after_file), after)
        record_compare(label, before, after, before_file, after_file)

    with open(os.path.join(OUT, "manifest.json"), "w", encoding="utf-8", newline="\n") as handle:
        json.dump(manifest, handle, indent=2, ensure_ascii=False)
        handle.write("\n")
    print(f"wrote {len(manifest['reports'])} reports, {len(manifest['summaries'])} summaries, "
          f"{len(manifest['compares'])} compares to {os.path.normpath(OUT)}")


if __name__ == "__main__":
    main()
