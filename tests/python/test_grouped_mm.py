"""torch._grouped_mm (mixture-of-experts layers): counted by hand, in every
offs layout, where FlopCounterMode counts 0; partial and named where the
group offsets cannot be read."""

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

import torchscan_dispatch

BF16 = torch.bfloat16


def mm(m, k, n):
    return 2 * m * k * n


def experts(groups, k, n):
    # Row-major [G, n, k] transposed: the column-major layout the kernel wants.
    return torch.randn(groups, n, k, dtype=BF16).transpose(-2, -1)


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        # Rows grouped, as a router sends tokens: [64,32] @ [4,32,16].
        (lambda: (torch.randn(64, 32, dtype=BF16), experts(4, 32, 16), torch.tensor([16, 32, 48, 64], dtype=torch.int32)),
         65_536),
        # Uneven groups, one empty, the last 8 rows in no group.
        (lambda: (torch.randn(64, 32, dtype=BF16), experts(4, 32, 16), torch.tensor([10, 10, 40, 56], dtype=torch.int32)),
         mm(56, 32, 16)),
        # Batched experts, no offs: [4,8,32] @ [4,32,16].
        (lambda: (torch.randn(4, 8, 32, dtype=BF16), experts(4, 32, 16), None), 4 * mm(8, 32, 16)),
        # Inner dimension grouped (the experts' weight gradient): [32,64] @ [64,16].
        (lambda: (torch.randn(32, 64, dtype=BF16), torch.randn(16, 64, dtype=BF16).t(),
                  torch.tensor([16, 32, 48, 64], dtype=torch.int32)),
         4 * mm(32, 16, 16)),
    ],
)  # fmt: skip
def test_grouped_products_are_counted_by_hand(make, expected):
    torch.manual_seed(0)
    a, b, offs = make()
    report = torchscan_dispatch.measure_flops(lambda: torch._grouped_mm(a, b, offs=offs))
    assert report["total"] == {**report["total"], "status": "complete", "value": expected}
    assert report["by_operator"] == {"aten._grouped_mm": expected}
    with FlopCounterMode(display=False) as flop_counter_mode:
        torch._grouped_mm(a, b, offs=offs)
    assert flop_counter_mode.get_total_flops() == 0  # what we go beyond


def test_unreadable_offsets_make_the_count_partial_and_named():
    a = torch.empty(64, 32, dtype=BF16, device="meta")
    b = torch.empty(4, 16, 32, dtype=BF16, device="meta").transpose(-2, -1)
    offs = torch.empty(4, dtype=torch.int32, device="meta")
    report = torchscan_dispatch.measure_flops(lambda: torch._grouped_mm(a, b, offs=offs))
    assert report["total"]["status"] == "partial" and report["total"]["known_value"] == 0
    [diagnostic] = [d for d in report["diagnostics"] if d.get("operator") == "aten._grouped_mm"]
    assert "the values of offs cannot be read here" in diagnostic["message"]
