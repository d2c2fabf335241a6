"""Instructions the counter adds to one operator call, counted by callgrind.

Wall-clock medians move with the machine; instruction counts do not. This
runs a Python loop of `torch.add` on 16 elements under
`valgrind --tool=callgrind`, uninstrumented and inside a measurement, at two
loop lengths; the difference between the lengths cancels interpreter start-up
and imports. It prints the instructions per call of each run, what counting
adds, and how the addition splits between our code (functions in
`torchscan::`) and PyTorch's boxing of the call for a boxed fallback.

    TORCHSCAN_DISPATCH_LIBRARY=$PWD/bazel-bin/python/libtorchscan_dispatch.so \\
      PYTHONPATH=python python3 tools/bench/instructions_per_op.py

Needs valgrind (apt: valgrind); takes about five minutes.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

SHORT, LONG = 1000, 5000
# PyTorch's side of a boxed fallback: boxing the arguments onto a stack,
# redispatching, unboxing for the kernel, and the stack's allocation.
BOXING = ("BoxedKernel", "IValue", "redispatchBoxed", "push_outputs", "make_boxed", "malloc", "free",
          "_int_", "__tls_get_addr", "intrusive_ptr", "Scalar")


def child(mode: str, calls: int) -> None:
    import torch

    from torchscan_dispatch._native import Measurement

    torch.set_num_threads(1)
    a = torch.ones(16)
    torch.add(a, a)
    measurement = Measurement()
    if mode == "uninstrumented":
        measurement.stop()
    for _ in range(calls):
        torch.add(a, a)
    measurement.stop()
    measurement.finish()


def instructions_by_function(mode: str, calls: int, work: Path) -> collections.Counter:
    out = work / f"callgrind.{mode}.{calls}"
    # The real interpreter, not a wrapper script (pyenv shims are shell).
    python = os.path.realpath(sys.executable)
    subprocess.run(["valgrind", "--tool=callgrind", "--separate-threads=yes", f"--callgrind-out-file={out}",
                    python, __file__, "--child", mode, str(calls)], check=True, capture_output=True)
    # Only the calling thread: background threads (OpenBLAS's spinning
    # server) would add counts that depend on time, not on the work.
    main_thread = f"{out}-01"
    text = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100", "--auto=no", main_thread],
                          check=True, capture_output=True, text=True).stdout
    counts = collections.Counter()
    for line in text.splitlines():
        match = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*)$", line)
        if match and "PROGRAM TOTALS" not in line:
            name = re.sub(r"\s*\[.*$", "", match.group(2))
            # Drop the file and the call count ("(5,000x)"), which differ between runs.
            name = re.sub(r"\s*\([\d,]+x\)$", "", name.split(":", 1)[-1])
            counts[name] += int(match.group(1).replace(",", ""))
    return counts


def per_call(mode: str, work: Path) -> collections.Counter:
    long, short = instructions_by_function(mode, LONG, work), instructions_by_function(mode, SHORT, work)
    long.subtract(short)
    return collections.Counter({name: value / (LONG - SHORT) for name, value in long.items()})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        child(options.child[0], int(options.child[1]))
        return
    with tempfile.TemporaryDirectory() as directory:
        plain, counted = per_call("uninstrumented", Path(directory)), per_call("counted", Path(directory))
    added = collections.Counter(counted)
    added.subtract(plain)
    ours = sum(v for k, v in added.items() if "torchscan::" in k)
    boxing = sum(v for k, v in added.items() if "torchscan::" not in k and any(b in k for b in BOXING))
    rows = [
        ("uninstrumented torch.add from Python (varies)", sum(plain.values())),
        ("inside a measurement (varies)", sum(counted.values())),
        ("added by counting", ours + boxing),
        ("  our fallback and session (torchscan::)", ours),
        ("  PyTorch's boxing of the call, stack allocation", boxing),
    ]
    print(f"Instructions per operator call (callgrind, {LONG} - {SHORT} calls)")
    for label, value in rows:
        print(f"{label:50s} {value:8,.0f}")
    print("\nOur functions, instructions per call:")
    for name, value in added.most_common():
        if "torchscan::" in name and value >= 1:
            print(f"{value:8.0f}  {name[:100]}")
    print("\nThe calling thread only. The totals move between runs by thousands of instructions (the "
          "interpreter's garbage collector and allocator), so 'added' is the sum over our functions and "
          "PyTorch's boxing functions, not a difference of totals.")


if __name__ == "__main__":
    main()
