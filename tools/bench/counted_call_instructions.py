"""Instructions one counted operator call adds, in the C++ loop, by callgrind.

Wall-clock medians move with the machine; instruction counts do not. For
each operator this runs `cpp_loop_bench --profile=OP` under
`valgrind --tool=callgrind` three ways (the plain call, the guard with
RecordFunction off on the thread, the guard as users get it, with the
unseen-thread watch), each at two loop lengths; the difference between the
lengths cancels start-up and the first call. It prints the instructions per
call of each run and what the guard adds, as docs/performance.md's tables
give them.

    bazel build -c opt //tools/bench:cpp_loop_bench
    python3 tools/bench/counted_call_instructions.py \\
      --binary bazel-bin/tools/bench/cpp_loop_bench mm addmm bmm conv2d sdpa add

Needs valgrind (apt: valgrind); about two minutes per operator.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import tempfile
from pathlib import Path

SHORT, LONG = 1000, 3000
RUNS = {
    "plain": ["--profile_uninstrumented"],
    "counted, no watch": ["--profile_without_watch"],
    "counted": [],
}


def total_instructions(binary: str, op: str, run: str, calls: int, work: Path) -> int:
    out = work / f"callgrind.{op}.{calls}.{list(RUNS).index(run)}"
    flags = RUNS[run]
    subprocess.run(["valgrind", "--tool=callgrind", "--separate-threads=yes", f"--callgrind-out-file={out}",
                    binary, f"--profile={op}", f"--ops={calls}", "--repeats=1", *flags],
                   check=True, capture_output=True)
    # The calling thread alone: a background thread's spinning would add
    # counts that depend on time, not on the work.
    text = Path(f"{out}-01").read_text()
    match = re.search(r"^summary:\s+(\d+)", text, re.MULTILINE) or re.search(r"^totals:\s+(\d+)", text,
                                                                             re.MULTILINE)
    if match is None:
        raise RuntimeError(f"no instruction total in {out}-01")
    return int(match.group(1))


def per_call(binary: str, op: str, run: str, work: Path) -> float:
    longer = total_instructions(binary, op, run, LONG, work)
    shorter = total_instructions(binary, op, run, SHORT, work)
    return (longer - shorter) / (LONG - SHORT)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", required=True, help="cpp_loop_bench, built with -c opt")
    parser.add_argument("operators", nargs="+", help="operators cpp_loop_bench --profile knows")
    args = parser.parse_args()
    print("| operator | plain | counted, no watch | counted | added, no watch | added |")
    print("| --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as work:
        for op in args.operators:
            counts = {run: per_call(args.binary, op, run, Path(work)) for run in RUNS}
            plain = counts["plain"]
            print(f"| `{op}` | {plain:,.0f} | {counts['counted, no watch']:,.0f} | {counts['counted']:,.0f} "
                  f"| {counts['counted, no watch'] - plain:,.0f} | {counts['counted'] - plain:,.0f} |",
                  flush=True)


if __name__ == "__main__":
    main()
