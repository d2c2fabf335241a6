#!/usr/bin/env python3
"""Times reading a report's Python objects back as its typed record, the old
way and the new, in one process (docs/performance.md, section 4a; issue 29).

Old: ToJson (python_objects.h, a tree of nlohmann values), then
report::FromJson<T>, as the extension module read every report argument
before report_from_objects.h. New: CheckJsonData (ToJson's checks, nothing
built) then FromPython<T> from the field tables
(python/operators/report_from_objects.h). Both run in C++ on the same
Python objects, through the test-only module
//python/operators/testdata:libreport_objects_check.so, on the crawl
reports of tools/bench section 4's models (on CPU): as an AnalysisReport
(what format_summary reads) and as a ComparableReport (what
compare_reports reads, twice per call), and on a measure_flops FlopReport
(what roofline and merge_rank_reports read). Prints the medians over rounds
of the time per read, then timeit's best of the public calls that read them
(compare_reports of two BERT-sized crawls, format_summary of one), which
include the library's own work.

    bazel build //python:libtorchscan_dispatch.so \\
        //python/operators/testdata:libreport_objects_check.so
    TORCHSCAN_DISPATCH_LIBRARY=bazel-bin/python/libtorchscan_dispatch.so \\
        python3 tools/bench/report_from_objects_bench.py
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import timeit
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1] / "python"))

import torchscan_dispatch  # noqa: E402
from report_objects_bench import load_check  # noqa: E402
from run_benchmarks import bert_base_like, resnet_like  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--number", type=int, default=20, help="reads per round")
    parser.add_argument("--check", type=Path, help="libreport_objects_check.so (default: beside the library)")
    options = parser.parse_args()
    torch.set_num_threads(1)
    library = Path(os.environ.get("TORCHSCAN_DISPATCH_LIBRARY") or torchscan_dispatch.library_path())
    check = load_check(options.check or library.parent / "operators" / "testdata" / "libreport_objects_check.so")
    print(f"medians of {options.rounds} rounds of {options.number} reads, ms per read")
    print("| report | read as | old: ToJson + FromJson | new: CheckJsonData + FromPython | of which CheckJsonData "
          "| old / new |")
    print("| --- | --- | --- | --- | --- | --- |")
    crawls = {}
    for title, make in (("ResNet-18-like", resnet_like), ("BERT-base-sized encoder", bert_base_like)):
        model, args = make()
        report = torchscan_dispatch.crawl_module(model, args=args)
        crawls[title] = report
        flops = torchscan_dispatch.measure_flops(lambda: model(*args))
        documents = (
            (f"{title} crawl ({len(report['layers'])} layers)", "AnalysisReport", report),
            (f"{title} crawl ({len(report['layers'])} layers)", "ComparableReport", report),
            (f"{title} measure_flops", "FlopReport", flops),
        )
        for name, record, document in documents:
            check.time_reading(record, document, options.number)  # warm-up
            rounds = [check.time_reading(record, document, options.number) for _ in range(options.rounds)]
            old_ms, new_ms, check_ms = (statistics.median(r[i] for r in rounds) * 1e3 for i in range(3))
            print(f"| {name} | {record} | {old_ms:.3f} | {new_ms:.3f} | {check_ms:.3f} | {old_ms / new_ms:.2f}x |")
    bert = crawls["BERT-base-sized encoder"]
    other = torchscan_dispatch.crawl_module(*bert_base_like()[:1], args=bert_base_like()[1])
    calls = (
        ("compare_reports(BERT crawl, BERT crawl)", lambda: torchscan_dispatch.compare_reports(bert, other)),
        ("format_summary(BERT crawl)", lambda: torchscan_dispatch.format_summary(bert)),
    )
    print()
    print(f"timeit, best of {options.rounds} repeats of {options.number} calls, ms per call")
    for name, call in calls:
        best = min(timeit.repeat(call, number=options.number, repeat=options.rounds)) / options.number
        print(f"| {name} | {best * 1e3:.3f} |")


if __name__ == "__main__":
    main()
