"""1,000 repeated crawl_module calls of one model do not grow memory.

Measured two ways after a warm-up (first-call caches, operator descriptions,
allocator pools): the bytes the C heap has handed out and not taken back
(glibc's mallinfo2: in-use chunks plus mmapped ones; native sessions,
reports and tensors live there), and the Python heap (tracemalloc).
docs/reliability.md has the numbers measured on the project machine.

NOTE: not the resident set. How the resident set moves depends on the
machine, not on the library: with transparent huge pages set to `always`
(RHEL's default) one touched page brings in 2 MiB, and on the project
machine switching them on doubled the resident growth of the same 1,000
crawls. The in-use heap bytes depend only on what was allocated and freed;
the resident set is printed for information.

The bounds catch any per-call leak: one crawl's report is tens of KB of
Python objects and one native counting session several KB, so leaking either
once per call would add megabytes over 1,000 calls; leaking one hook closure
or one dict entry per call (>= 100 B) would add >= 100 KB of traced memory.
"""

import ctypes
import gc
import os
import tracemalloc

import pytest

import torch
from torch import nn

import torchscan_dispatch
from reliability_support import mm_flops

CALLS = 1000
WARM_UP = 100
HEAP_BOUND = 1024 * 1024  # C heap bytes in use, over the 1,000 calls
TRACED_BOUND = 64 * 1024  # bytes of live Python objects over the 1,000 calls


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")
    ]


def _mallinfo2():
    function = getattr(ctypes.CDLL(None), "mallinfo2", None)
    if function is None:
        pytest.skip("needs glibc's mallinfo2 (glibc 2.33 or newer) to read the C heap")
    function.restype = _MallInfo2
    return function


def resident_bytes():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_a_thousand_crawls_do_not_grow_memory():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 6 * 6, 10))
    expected_addmm = mm_flops(1, 8 * 6 * 6, 10)
    mallinfo2 = _mallinfo2()

    def heap_bytes():
        info = mallinfo2()
        return info.uordblks + info.hblkhd  # every arena's in-use chunks, and mmapped ones

    for _ in range(WARM_UP):
        torchscan_dispatch.crawl_module(model, (3, 8, 8))
    gc.collect()
    tracemalloc.start()
    try:
        traced_before = tracemalloc.get_traced_memory()[0]
        heap_before, rss_before = heap_bytes(), resident_bytes()
        heap_growth, rss_growth, traced_growth, addmm = [], [], [], set()
        for call in range(CALLS):
            # No report is kept alive: only what the crawls leave behind counts.
            addmm.add(torchscan_dispatch.crawl_module(model, (3, 8, 8))["operator_flops"]["by_operator"]["aten.addmm"])
            if call % 250 == 249:
                gc.collect()
                heap_growth.append(heap_bytes() - heap_before)
                rss_growth.append(resident_bytes() - rss_before)
                traced_growth.append(tracemalloc.get_traced_memory()[0] - traced_before)
    finally:
        tracemalloc.stop()
    assert addmm == {expected_addmm}  # every crawl counted exactly
    print(
        f"growth after 250/500/750/1000 crawls: C heap in use {heap_growth} bytes, "
        f"traced Python heap {traced_growth} bytes, resident set {rss_growth} bytes (not checked)"
    )
    assert heap_growth[-1] < HEAP_BOUND, heap_growth
    # No trend: the last 750 calls add almost nothing to what the first 250
    # settled at (tracemalloc's own bookkeeping included).
    assert heap_growth[-1] - heap_growth[0] < HEAP_BOUND // 4, heap_growth
    assert traced_growth[-1] < TRACED_BOUND, traced_growth
    assert traced_growth[-1] - traced_growth[0] < TRACED_BOUND // 4, traced_growth
