#!/usr/bin/env python3
"""Times turning a crawl's typed report into Python objects, the old way and
the new, in one process (docs/performance.md, "Where the remaining time
goes"; issue 29).

Old: report::ToJson (nlohmann values), then FromJson (python_objects.h), as
the extension module did before report_objects.h. New: ToPython from the
field tables (report_objects.h). Both run in C++ on the same typed record,
through the test-only module //python/operators/testdata:
libreport_objects_check.so, on the crawl reports of tools/bench section 4's
models (on CPU), on their operator_flops, and on the FlopReport
measure_flops returns for one forward of each (by_module included). Prints the medians over rounds of the time per
conversion.

    bazel build //python:libtorchscan_dispatch.so \\
        //python/operators/testdata:libreport_objects_check.so
    TORCHSCAN_DISPATCH_LIBRARY=bazel-bin/python/libtorchscan_dispatch.so \\
        python3 tools/bench/report_objects_bench.py
"""

from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import os
import statistics
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1] / "python"))

import torchscan_dispatch  # noqa: E402
from run_benchmarks import bert_base_like, resnet_like  # noqa: E402


def load_check(path: Path):
    loader = importlib.machinery.ExtensionFileLoader("_report_objects_check", str(path))
    spec = importlib.util.spec_from_file_location("_report_objects_check", path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--number", type=int, default=20, help="conversions per round")
    parser.add_argument("--check", type=Path, help="libreport_objects_check.so (default: beside the library)")
    options = parser.parse_args()
    torch.set_num_threads(1)
    library = Path(os.environ.get("TORCHSCAN_DISPATCH_LIBRARY") or torchscan_dispatch.library_path())
    check = load_check(options.check or library.parent / "operators" / "testdata" / "libreport_objects_check.so")
    print(f"medians of {options.rounds} rounds of {options.number} conversions, ms per conversion")
    print("| report | layers | ToJson alone | old: ToJson + FromJson | new: ToPython | old / new |")
    print("| --- | --- | --- | --- | --- | --- |")
    for title, make in (("ResNet-18-like", resnet_like), ("BERT-base-sized encoder", bert_base_like)):
        model, args = make()
        report = torchscan_dispatch.crawl_module(model, args=args)
        flops = torchscan_dispatch.measure_flops(lambda: model(*args))
        documents = (
            (f"{title} crawl", "AnalysisReport", report),
            (f"{title} crawl's operator_flops", "FlopReport", report["operator_flops"]),
            (f"{title} measure_flops", "FlopReport", flops),
        )
        for name, record, document in documents:
            check.time_conversion(record, document, options.number)  # warm-up
            rounds = [check.time_conversion(record, document, options.number) for _ in range(options.rounds)]
            json_ms, old_ms, new_ms = (statistics.median(r[i] for r in rounds) * 1e3 for i in range(3))
            print(f"| {name} | {len(report['layers'])} | {json_ms:.3f} | {old_ms:.3f} | {new_ms:.3f} | "
                  f"{old_ms / new_ms:.2f}x |")


if __name__ == "__main__":
    main()
