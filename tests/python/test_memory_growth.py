"""1,000 repeated crawl_module calls of one model do not grow memory.

Measured two ways after a warm-up (first-call caches, operator descriptions,
allocator pools): the process's resident set (/proc/self/statm) and the
Python heap (tracemalloc). docs/reliability.md has the numbers measured on
the project machine: flat after the first 250 calls in both, the traced heap
growing only by the test's own bookkeeping (256 bytes over 750 calls).

The bounds catch any per-call leak: one crawl's report is tens of KB of
Python objects and one native counting session several KB, so leaking either
once per call would add megabytes over 1,000 calls; leaking one hook closure
or one dict entry per call (>= 100 B) would add >= 100 KB of traced memory.
"""

import gc
import os
import tracemalloc

import torch
from torch import nn

import torchscan_dispatch
from reliability_support import mm_flops

CALLS = 1000
WARM_UP = 100
RSS_BOUND = 2 * 1024 * 1024  # bytes over the 1,000 calls
TRACED_BOUND = 64 * 1024  # bytes of live Python objects over the 1,000 calls


def resident_bytes():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_a_thousand_crawls_do_not_grow_memory():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 6 * 6, 10))
    expected_addmm = mm_flops(1, 8 * 6 * 6, 10)
    for _ in range(WARM_UP):
        torchscan_dispatch.crawl_module(model, (3, 8, 8))
    gc.collect()
    tracemalloc.start()
    try:
        traced_before = tracemalloc.get_traced_memory()[0]
        rss_before = resident_bytes()
        rss_growth, traced_growth, addmm = [], [], set()
        for call in range(CALLS):
            # No report is kept alive: only what the crawls leave behind counts.
            addmm.add(torchscan_dispatch.crawl_module(model, (3, 8, 8))["operator_flops"]["by_operator"]["aten.addmm"])
            if call % 250 == 249:
                gc.collect()
                rss_growth.append(resident_bytes() - rss_before)
                traced_growth.append(tracemalloc.get_traced_memory()[0] - traced_before)
    finally:
        tracemalloc.stop()
    assert addmm == {expected_addmm}  # every crawl counted exactly
    print(f"growth after 250/500/750/1000 crawls: RSS {rss_growth} bytes, traced Python heap {traced_growth} bytes")
    assert rss_growth[-1] < RSS_BOUND, rss_growth
    # No trend: the last 750 calls add almost nothing to what the first 250
    # settled at (tracemalloc's own bookkeeping included).
    assert rss_growth[-1] - rss_growth[0] < RSS_BOUND // 4, rss_growth
    assert traced_growth[-1] < TRACED_BOUND, traced_growth
    assert traced_growth[-1] - traced_growth[0] < TRACED_BOUND // 4, traced_growth
