"""Matrix products of nested tensors (torchscan_dispatch/nested_products.h).

On CPU a strided nested tensor's matmul pads every component to the longest
and runs one dense bmm; a jagged tensor's attention takes that path. The
executed count is the padded bmm (the work that ran); the mask-aware count
keeps only the components' own products, as it keeps a key-padding mask's
allowed pairs. Every expectation is computed here from the component shapes.
FlopCounterMode cannot be the reference: it fails on jagged attention
("Given dimension -2 is irregular").
"""

import warnings

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import torchscan_dispatch

warnings.filterwarnings("ignore", message=".*nested tensors is in prototype.*")


def nested(shapes, requires_grad=False):
    return torch.nested.nested_tensor([torch.randn(*shape) for shape in shapes], requires_grad=requires_grad)


def jagged_heads(lengths, heads, dim, requires_grad=False):
    """(B, H, j, E): a jagged batch of sequences of `lengths` tokens."""
    values = torch.nested.nested_tensor(
        [torch.randn(length, heads, dim) for length in lengths], layout=torch.jagged, requires_grad=requires_grad
    )
    return values, values.transpose(1, 2)


def mask_aware(report):
    return report["mask_aware"]["known_value"]


def test_padded_matmul_executes_the_longest_component_and_allows_each_ones_own():
    a, b = nested([(3, 4), (5, 4)]), nested([(4, 6), (4, 2)])
    report = torchscan_dispatch.measure_flops(lambda: torch.matmul(a, b))
    padded = 2 * 2 * 5 * 4 * 6  # both components padded to m=5, n=6
    own = 2 * 3 * 4 * 6 + 2 * 5 * 4 * 2
    assert padded == report["by_operator"]["aten.bmm"]
    assert own == mask_aware(report)
    assert [] == report["mask_aware"]["diagnostics"]


def test_components_of_equal_shapes_have_no_padding():
    a, b = nested([(4, 3), (4, 3)]), nested([(3, 5), (3, 5)])
    report = torchscan_dispatch.measure_flops(lambda: torch.matmul(a, b))
    assert 2 * 2 * 4 * 3 * 5 == report["by_operator"]["aten.bmm"] == mask_aware(report)


@pytest.mark.parametrize("lengths", [(3, 5), (1, 7, 4), (6,)])
def test_jagged_attention_forward(lengths):
    heads, dim = 2, 8
    _, q = jagged_heads(lengths, heads, dim)
    report = torchscan_dispatch.measure_flops(lambda: F.scaled_dot_product_attention(q, q, q))
    longest = max(lengths)
    # Scores and output: two products of 2 x H x L x S x E per sequence.
    assert 2 * 2 * len(lengths) * heads * longest * longest * dim == report["by_operator"]["aten.bmm"]
    assert sum(2 * 2 * heads * n * n * dim for n in lengths) == mask_aware(report)


def test_jagged_attention_backward_pads_its_products_too():
    heads, dim, lengths = 2, 8, (3, 5)
    values, q = jagged_heads(lengths, heads, dim, requires_grad=True)

    def step():
        F.scaled_dot_product_attention(q, q, q).values().sum().backward()

    report = torchscan_dispatch.measure_flops(step)
    # Forward two products; the nested matmul_backward two gradients each.
    assert 3 * 2 * 2 * len(lengths) * heads * 5 * 5 * dim == report["by_operator"]["aten.bmm"]
    assert 3 * sum(2 * 2 * heads * n * n * dim for n in lengths) == mask_aware(report)
    assert values.grad is not None
    assert not any("matmul" in d.get("operator", "") for d in report["diagnostics"])


def test_mask_aware_by_module_keeps_the_components_products():
    class JaggedAttention(nn.Module):
        def forward(self, q):
            return F.scaled_dot_product_attention(q, q, q)

    model = nn.Sequential(JaggedAttention())
    heads, dim, lengths = 2, 4, (2, 6)
    _, q = jagged_heads(lengths, heads, dim)
    report = torchscan_dispatch.measure_flops(lambda: model(q))
    own = sum(2 * 2 * heads * n * n * dim for n in lengths)
    assert own == report["mask_aware"]["by_module"]["Sequential.0"]
    assert 2 * 2 * 2 * heads * 6 * 6 * dim == report["by_module"]["Sequential.0"]


def test_a_nested_linear_multiplies_the_values_without_padding():
    x = nested([(3, 4), (5, 4)])
    weight = torch.randn(7, 4)
    report = torchscan_dispatch.measure_flops(lambda: F.linear(x, weight))
    assert 2 * (3 + 5) * 4 * 7 == report["by_operator"]["aten.mm"] == mask_aware(report)


def test_dense_matmul_is_unchanged():
    a, b = torch.randn(2, 3, 4), torch.randn(2, 4, 5)
    report = torchscan_dispatch.measure_flops(lambda: torch.matmul(a, b))
    assert {"aten.bmm": 2 * 2 * 3 * 4 * 5} == report["by_operator"]
    assert report["mask_aware"]["known_value"] == report["total"]["value"]


def test_an_error_inside_a_nested_matmul_propagates_and_the_next_call_is_counted():
    a, b = nested([(3, 4), (5, 4)]), nested([(5, 6), (4, 2)])  # 4 != 5
    with pytest.raises(RuntimeError) as raised:
        torchscan_dispatch.measure_flops(lambda: torch.matmul(a, b))
    with pytest.raises(RuntimeError) as plain:
        torch.matmul(a, b)
    assert str(plain.value) == str(raised.value)
    good = nested([(4, 6), (4, 2)])
    report = torchscan_dispatch.measure_flops(lambda: torch.matmul(a, good))
    assert 2 * 3 * 4 * 6 + 2 * 5 * 4 * 2 == mask_aware(report)


# --- The fused inference layers on a nested batch (NOTE [A fused layer's
# components, one dense call each] in nested_products.cc). Their CPU kernel
# projects the real tokens and attends over sequences padded to the longest.


def products(report):
    names = ("aten.mm", "aten.addmm", "aten.bmm", "aten._addmm_activation")
    return sum(report["by_operator"].get(name, 0) for name in names)


def attention_layer_flops(tokens, embed):
    """One sequence of `tokens` through self-attention: q, k, v and output
    projections (2 x tokens x E x E each), scores and weighted values
    (2 x tokens x tokens x E each, over all heads)."""
    return 4 * 2 * tokens * embed * embed + 2 * 2 * tokens * tokens * embed


def encoder_layer_flops(tokens, embed, feed_forward):
    return attention_layer_flops(tokens, embed) + 2 * 2 * tokens * embed * feed_forward


@pytest.mark.parametrize("lengths", [(3, 5), (1, 6, 4), (7,)])
@pytest.mark.parametrize("activation,norm_first", [("relu", False), ("gelu", True)])
def test_nested_encoder_layer_counts_its_padded_attention_and_allows_each_sequence(lengths, activation, norm_first):
    embed, heads, feed_forward = 16, 2, 24
    layer = nn.TransformerEncoderLayer(
        embed, heads, feed_forward, dropout=0.0, activation=activation, norm_first=norm_first, batch_first=True
    ).eval()
    x = nested([(n, embed) for n in lengths])
    with torch.no_grad():
        report = torchscan_dispatch.measure_flops(lambda: layer(x), track_modules=False)
    tokens, longest = sum(lengths), max(lengths)
    executed = (
        4 * 2 * tokens * embed * embed  # projections over the real tokens
        + 2 * 2 * len(lengths) * longest * longest * embed  # attention, padded
        + 2 * 2 * tokens * embed * feed_forward
    )
    assert executed == products(report)
    assert sum(encoder_layer_flops(n, embed, feed_forward) for n in lengths) == mask_aware(report)
    assert [] == report["mask_aware"]["diagnostics"]
    assert not any(d["code"] == "operator_formula_error" for d in report["diagnostics"])


def test_nested_encoder_layer_allows_what_each_sequence_alone_counts():
    """The mask-aware count equals measuring the dense layer on each sequence
    as a batch of one: the same kernel family, no padding."""
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True).eval()
    sequences = [torch.randn(n, 8) for n in (2, 9, 5)]
    with torch.no_grad():
        report = torchscan_dispatch.measure_flops(lambda: layer(torch.nested.nested_tensor(sequences)))
        alone = [torchscan_dispatch.measure_flops(lambda s=s: layer(s.unsqueeze(0))) for s in sequences]
    assert sum(one["total"]["known_value"] for one in alone) == mask_aware(report)


def test_nested_multihead_attention_by_module():
    class Block(nn.Module):
        def __init__(self, embed, heads):
            super().__init__()
            self.attention = nn.MultiheadAttention(embed, heads, batch_first=True)

        def forward(self, x):
            return self.attention(x, x, x, need_weights=False)[0]

    embed, heads, lengths = 16, 4, (2, 5)
    model = nn.Sequential(Block(embed, heads)).eval()
    x = nested([(n, embed) for n in lengths])
    with torch.no_grad():
        report = torchscan_dispatch.measure_flops(lambda: model(x))
        plain = model(x)
    tokens, longest = sum(lengths), max(lengths)
    executed = 4 * 2 * tokens * embed * embed + 2 * 2 * len(lengths) * longest * longest * embed
    assert executed == products(report) == report["by_module"]["Sequential.0.attention"]
    own = sum(attention_layer_flops(n, embed) for n in lengths)
    assert own == mask_aware(report) == report["mask_aware"]["by_module"]["Sequential.0.attention"]
    with torch.no_grad():
        assert torch.equal(plain.to_padded_tensor(0.0), model(x).to_padded_tensor(0.0))


def test_nested_encoder_of_equal_lengths_has_no_padding():
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True).eval()
    x = nested([(4, 8), (4, 8)])
    with torch.no_grad():
        report = torchscan_dispatch.measure_flops(lambda: layer(x))
    assert products(report) == mask_aware(report) == 2 * encoder_layer_flops(4, 8, 16)
