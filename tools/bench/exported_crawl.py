"""The ExportedProgram crawl against the eager crawl of the same model, in one
process, interleaved: the exported crawler's last step (finish_report: its
crawl record, layer records, context and input metadata read by their
field tables, the report built by crawl::BuildAnalysisReport and written
back as Python objects) and the whole crawl of each, medians, on a 121-layer
MLP (60 Linear + ReLU pairs, batch 2) in both modes (docs/performance.md,
section 4c).

  PYTHONPATH=python TORCHSCAN_DISPATCH_LIBRARY=bazel-bin/python/libtorchscan_dispatch.so \\
      python3 tools/bench/exported_crawl.py [--rounds N]
"""

import argparse
import statistics
import time

import torch
from torch import nn

import torchscan_dispatch as tsd
from torchscan_dispatch import exported


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    rounds = parser.parse_args().rounds
    torch.manual_seed(0)
    model = nn.Sequential(*[m for _ in range(60) for m in (nn.Linear(16, 16), nn.ReLU())]).eval()
    x = torch.rand(2, 16)
    program = torch.export.export(model, (x,))
    finish = exported.finish_report
    last_step = [0.0]

    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return finish(*args, **kwargs)
        finally:
            last_step[0] += time.perf_counter() - start

    exported.finish_report = timed
    try:
        for mode in ("structure", "full"):
            steps, crawls = [], {"exported": [], "eager": []}
            for _ in range(rounds):
                for name, subject in (("exported", program), ("eager", model)):
                    last_step[0] = 0.0
                    start = time.perf_counter()
                    report = tsd.crawl_module(subject, args=(x,), mode=mode)
                    crawls[name].append((time.perf_counter() - start) * 1e3)
                    if name == "exported":
                        steps.append(last_step[0] * 1e3)
            exported_ms, eager_ms = (statistics.median(crawls[name]) for name in ("exported", "eager"))
            print(
                f"{mode}: {len(report['layers'])} layers; exported last step {statistics.median(steps):.2f} ms; "
                f"whole crawl exported {exported_ms:.1f} ms, eager {eager_ms:.1f} ms ({exported_ms / eager_ms:.2f}x)"
            )
    finally:
        exported.finish_report = finish


if __name__ == "__main__":
    main()
