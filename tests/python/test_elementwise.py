"""The opt-in elementwise convention (measure_flops(elementwise=True)):
each elementwise operator's FLOPs against a hand computation from element
counts, and the default method left exactly as it was (docs/methodology.md,
"Elementwise work")."""

import json

import pytest
import torch
from torch import nn

import torchscan_dispatch
from conftest import flop_counter_mode_counts

DEFAULT_METHOD = "torch.utils.flop_counter.FlopCounterMode"
ELEMENTWISE_PREFIX = DEFAULT_METHOD + ", plus elementwise work"

BATCH, IN, HIDDEN, OUT = 4, 16, 32, 10


def small_mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(IN, HIDDEN), nn.LayerNorm(HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, OUT))


def forward_workload():
    model = small_mlp()
    x = torch.randn(BATCH, IN)
    return lambda: model(x).softmax(dim=-1)


def test_mlp_forward_is_complete_and_each_elementwise_operator_matches_its_element_count():
    report = torchscan_dispatch.measure_flops(forward_workload(), elementwise=True)

    assert report["total"]["status"] == "complete"
    assert report["diagnostics"] == []
    assert report["context"]["method"].startswith(ELEMENTWISE_PREFIX)
    assert report["total"]["method"] == report["context"]["method"]
    hidden, out = BATCH * HIDDEN, BATCH * OUT
    assert report["by_operator"] == {
        "aten.addmm": 2 * BATCH * IN * HIDDEN + 2 * BATCH * HIDDEN * OUT,
        "aten.native_layer_norm": 7 * hidden,
        "aten.relu": 1 * hidden,
        "aten._softmax": 5 * out,
    }
    assert report["total"]["value"] == sum(report["by_operator"].values())


def test_default_method_stays_partial_and_unchanged_by_an_elementwise_measurement():
    workload = forward_workload()
    before = torchscan_dispatch.measure_flops(workload)
    torchscan_dispatch.measure_flops(workload, elementwise=True)
    after = torchscan_dispatch.measure_flops(workload)

    assert json.dumps(before, sort_keys=True) == json.dumps(after, sort_keys=True)
    assert after["context"]["method"] == DEFAULT_METHOD
    assert after["total"]["method"] == DEFAULT_METHOD
    assert after["total"]["status"] == "partial"
    uncounted = {d["operator"] for d in after["diagnostics"] if d["code"] == "uncounted_operator"}
    assert uncounted == {"aten.native_layer_norm", "aten.relu", "aten._softmax"}
    assert after["by_operator"] == {"aten.addmm": 2 * BATCH * IN * HIDDEN + 2 * BATCH * HIDDEN * OUT}


def test_backward_pass_is_counted_by_the_convention():
    model = small_mlp()
    x = torch.randn(BATCH, IN)
    grad = torch.randn(BATCH, OUT)

    def step():
        model(x).softmax(dim=-1).backward(grad)

    report = torchscan_dispatch.measure_flops(step, elementwise=True)

    assert report["total"]["status"] == "complete", report["diagnostics"]
    hidden, out = BATCH * HIDDEN, BATCH * OUT
    by_operator = report["by_operator"]
    assert by_operator["aten._softmax_backward_data"] == 4 * out
    assert by_operator["aten.native_layer_norm_backward"] == 13 * hidden
    # ReLU's backward: one FLOP per element of its (BATCH, HIDDEN) result.
    assert by_operator["aten.threshold_backward"] == hidden
    # Both bias gradients sum the output gradients over the batch: one FLOP
    # per element read.
    assert by_operator["aten.sum"] == out + hidden
    # The products keep FlopCounterMode's counts.
    _, mode = flop_counter_mode_counts(step)
    for packet in ("aten.addmm", "aten.mm"):
        assert by_operator[packet] == mode[packet]


def test_training_step_with_scalar_loss_is_complete():
    # loss.backward() seeds the gradient with ones_like: zero-FLOP creation
    # under the convention, so the whole step is complete.
    model = small_mlp()
    x = torch.randn(BATCH, IN)

    report = torchscan_dispatch.measure_flops(
        lambda: model(x).softmax(dim=-1).sum().backward(), elementwise=True
    )

    assert report["total"]["status"] == "complete", report["diagnostics"]
    assert report["ignored_operators"]["aten.ones_like"]["calls"] == 1
    # The loss's sum reads BATCH * OUT elements; the bias gradients the same
    # as in the test above.
    assert report["by_operator"]["aten.sum"] == BATCH * OUT + (BATCH * OUT + BATCH * HIDDEN)
    default = torchscan_dispatch.measure_flops(lambda: model(x).softmax(dim=-1).sum().backward())
    assert "aten.ones_like" not in default["ignored_operators"]
    assert "aten.ones_like" in {d["operator"] for d in default["diagnostics"]}


def test_formula_operators_keep_flop_counter_mode_counts():
    torch.manual_seed(0)
    conv = nn.Conv2d(3, 8, 3)
    image = torch.randn(2, 3, 10, 10)
    a, b = torch.randn(6, 7), torch.randn(7, 5)

    def workload():
        torch.relu(conv(image))
        torch.mm(a, b)

    default = torchscan_dispatch.measure_flops(workload)
    elementwise = torchscan_dispatch.measure_flops(workload, elementwise=True)
    _, mode = flop_counter_mode_counts(workload)

    for packet in ("aten.convolution", "aten.mm"):
        assert elementwise["by_operator"][packet] == default["by_operator"][packet] == mode[packet]
    assert elementwise["by_operator"]["aten.relu"] == 2 * 8 * 8 * 8


def test_operator_without_rule_stays_named_and_partial():
    # A sort's work is not a fixed number per element: no rule counts it.
    x = torch.randn(2, 3, 8)

    report = torchscan_dispatch.measure_flops(lambda: torch.sort(x).values.relu(), elementwise=True)

    assert report["total"]["status"] == "partial"
    assert report["total"]["method"].startswith(ELEMENTWISE_PREFIX)
    assert [d["operator"] for d in report["diagnostics"]] == ["aten.sort"]
    assert report["diagnostics"][0]["code"] == "uncounted_operator"
    assert report["by_operator"] == {"aten.relu": 2 * 3 * 8}


def test_reduction_and_broadcast_pointwise_counts():
    a, b = torch.randn(5, 1), torch.randn(1, 6)

    report = torchscan_dispatch.measure_flops(lambda: (a + b).sum(dim=0), elementwise=True)

    assert report["total"]["status"] == "complete"
    # add broadcasts to 5 x 6 = 30 elements; sum reads all 30.
    assert report["by_operator"] == {"aten.add": 30, "aten.sum": 30}


def test_flop_counter_takes_the_option_and_validates_it():
    x = torch.randn(3, 4)
    with torchscan_dispatch.FlopCounter(elementwise=True) as counter:
        x.exp()
    assert counter.report()["by_operator"] == {"aten.exp": 12}
    assert counter.get_total_flops() == 12
    with pytest.raises(TypeError, match="elementwise must be a bool"):
        torchscan_dispatch.FlopCounter(elementwise=1)


def test_mask_aware_total_carries_the_elementwise_method():
    report = torchscan_dispatch.measure_flops(forward_workload(), elementwise=True)

    mask_aware = report["mask_aware"]
    assert mask_aware["status"] == "complete"
    assert mask_aware["known_value"] == report["total"]["value"]
    assert mask_aware["method"].startswith(ELEMENTWISE_PREFIX)
    assert mask_aware["method"].endswith("attention over allowed (query, key) pairs")


def test_nested_elementwise_measurement_leaves_the_enclosing_default_one_unchanged():
    x = torch.randn(3, 4)
    with torchscan_dispatch.FlopCounter() as outer:
        with torchscan_dispatch.FlopCounter(elementwise=True) as inner:
            x.exp()
    assert inner.report()["by_operator"] == {"aten.exp": 12}
    assert outer.report()["by_operator"] == {}
    assert outer.report()["total"]["status"] == "partial"
    assert [d["operator"] for d in outer.report()["diagnostics"]] == ["aten.exp"]


def test_compiled_graph_applies_the_convention_to_its_decomposed_operators():
    model = small_mlp()
    x = torch.randn(BATCH, IN)
    compiled = torch.compile(lambda: model(x).softmax(dim=-1))
    compiled()

    default = torchscan_dispatch.measure_flops(compiled)
    report = torchscan_dispatch.measure_flops(compiled, elementwise=True)

    assert default["total"]["status"] == "partial"
    assert default["context"]["method"] == DEFAULT_METHOD
    assert report["total"]["status"] == "complete", report["diagnostics"]
    assert report["context"]["method"].startswith(ELEMENTWISE_PREFIX)
    # The graph holds Inductor's decompositions (layer norm and softmax as
    # pointwise operators and reductions), each counted by its rule; ReLU
    # and the products are counted as in eager code.
    assert report["by_operator"]["aten.relu"] == BATCH * HIDDEN
    assert report["by_operator"]["aten.addmm"] == default["by_operator"]["aten.addmm"]
    assert report["by_operator"]["aten.amax"] == BATCH * OUT
    assert "aten.native_layer_norm" not in report["by_operator"]


# Operators beyond pointwise, reductions, softmax and normalisations: pooling,
# losses, indexing and data movement (docs/operators.md, "Elementwise
# convention"). Each count is computed here from element counts and windows,
# independently of the rule table.


def _convention(workload):
    return torchscan_dispatch.measure_flops(workload, elementwise=True)


def _adaptive_spans(inputs, outputs):
    """Summed window lengths of adaptive pooling, enumerated cell by cell."""
    total = 0
    for i in range(outputs):
        start = (i * inputs) // outputs
        end = -((-(i + 1) * inputs) // outputs)  # ceil
        total += len(range(start, end))
    return total


def test_cnn_training_step_is_complete_and_pooling_counts_every_window():
    torch.manual_seed(0)
    conv = nn.Conv2d(3, 4, 3, padding=1)
    model = nn.Sequential(conv, nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2), nn.AdaptiveAvgPool2d((3, 2)),
                          nn.Flatten(), nn.Linear(24, 5))  # fmt: skip
    x, target = torch.randn(2, 3, 10, 10), torch.tensor([1, 4])

    report = _convention(lambda: nn.functional.cross_entropy(model(x), target).backward())

    assert report["total"]["status"] == "complete", report["diagnostics"]
    by_operator = report["by_operator"]
    # max pool 2x2 over 2x4x10x10: 2x4x5x5 outputs, 4 compares each; its
    # backward adds each of the 2x4x5x5 gradients once.
    assert by_operator["aten.max_pool2d_with_indices"] == 2 * 4 * 5 * 5 * 4
    assert by_operator["aten.max_pool2d_with_indices_backward"] == 2 * 4 * 5 * 5
    # adaptive average pooling 5x5 -> 3x2: windows [0,2) [1,4) [3,5) by rows,
    # [0,3) [2,5) by columns.
    windows = _adaptive_spans(5, 3) * _adaptive_spans(5, 2)
    assert windows == 7 * 6
    assert by_operator["aten._adaptive_avg_pool2d"] == 2 * 4 * windows
    assert by_operator["aten._adaptive_avg_pool2d_backward"] == 2 * 4 * windows
    # negative log-likelihood: one per target, forward and backward.
    assert by_operator["aten.nll_loss_forward"] == 2
    assert by_operator["aten.nll_loss_backward"] == 2
    # batch norm in training computes statistics: 7 per element.
    assert by_operator["aten.native_batch_norm"] == 7 * 2 * 4 * 10 * 10
    # The formula operators keep FlopCounterMode's counts.
    _, mode = flop_counter_mode_counts(lambda: nn.functional.cross_entropy(model(x), target).backward())
    for packet, count in mode.items():
        assert by_operator[packet] == count, packet


def test_batch_norm_in_evaluation_counts_the_running_statistics_only():
    torch.manual_seed(0)
    norm = nn.BatchNorm2d(3)
    x = torch.randn(2, 3, 4, 4)
    norm.train()
    training = _convention(lambda: norm(x))
    norm.eval()
    evaluation = _convention(lambda: norm(x))

    assert training["by_operator"]["aten.native_batch_norm"] == 7 * x.numel()
    assert evaluation["by_operator"]["aten.native_batch_norm"] == 4 * x.numel()
    assert evaluation["total"]["status"] == "complete"


def test_embedding_and_indexing_move_data_and_accumulations_add():
    torch.manual_seed(0)
    table = nn.Embedding(50, 8)
    ids = torch.randint(0, 50, (3, 7))
    source = torch.randn(4, 8, requires_grad=True)
    rows = torch.tensor([0, 2, 2, 5])

    def workload():
        hidden = table(ids)  # embedding: a gather of rows
        picked = hidden.gather(2, torch.zeros(3, 7, 1, dtype=torch.long))  # gather
        buffer = torch.zeros(6, 8).index_put((rows,), source, accumulate=True)  # 4x8 adds
        copied = torch.zeros(6, 8).index_put((rows,), source)  # a copy only
        (picked.sum() + buffer.sum() + copied[1].sum()).backward()

    report = _convention(workload)

    assert report["total"]["status"] == "complete", report["diagnostics"]
    by_operator, ignored = report["by_operator"], report["ignored_operators"]
    for moved in ("aten.embedding", "aten.gather", "aten.select_backward"):
        assert moved in ignored, moved
        assert moved not in by_operator, moved
    # The embedding's backward adds each of the 3x7x8 gradient elements into
    # the table's gradient.
    assert by_operator["aten.embedding_dense_backward"] == 3 * 7 * 8
    # index_put: only the accumulating call adds (4x8 values); the other moves.
    assert by_operator["aten.index_put"] == source.numel()


def test_index_put_counts_its_values_as_given_not_broadcast():
    # NOTE [Broadcast values of index_put]: the positions a boolean mask
    # selects are not in any shape, so a broadcast value counts once per
    # element it has, a lower bound on the adds; a full-size one is exact.
    rows = torch.tensor([0, 2, 2, 5])
    mask = torch.tensor([True, False, True, True, False, False])

    def workload():
        torch.zeros(6, 8).index_put_((rows,), torch.tensor(1.0), accumulate=True)
        torch.zeros(6, 8).index_put_((mask,), torch.ones(8), accumulate=True)
        torch.zeros(6, 8).index_put_((rows,), torch.ones(4, 8), accumulate=True)

    report = _convention(workload)
    assert report["total"]["status"] == "complete", report["diagnostics"]
    assert report["by_operator"]["aten.index_put_"] == 1 + 8 + 4 * 8


def test_untagged_overload_takes_the_tag_its_siblings_agree_on():
    # where.ScalarOther carries no ATen tag; where.self is pointwise.
    x = torch.randn(6, 5)
    report = _convention(lambda: torch.where(x > 0, x, 0.0))

    assert report["total"]["status"] == "complete", report["diagnostics"]
    assert report["by_operator"]["aten.where"] == x.numel()
    assert report["by_operator"]["aten.gt"] == x.numel()


def test_operator_whose_schema_returns_a_view_is_zero_flop_under_the_convention():
    x = torch.randn(4, 6)
    report = _convention(lambda: x.unfold(1, 2, 2).sum())

    assert report["total"]["status"] == "complete", report["diagnostics"]
    assert "aten.unfold" in report["ignored_operators"]
    assert report["by_operator"] == {"aten.sum": x.numel()}


def test_default_method_still_names_the_new_rules_operators():
    # The convention's new rules change nothing under the default method.
    torch.manual_seed(0)
    pool = nn.Sequential(nn.MaxPool2d(2), nn.AdaptiveAvgPool2d(3))
    x = torch.randn(1, 2, 8, 8)
    report = torchscan_dispatch.measure_flops(lambda: pool(x))

    assert report["total"]["status"] == "partial"
    uncounted = {d["operator"] for d in report["diagnostics"] if d["code"] == "uncounted_operator"}
    assert uncounted == {"aten.max_pool2d_with_indices", "aten._adaptive_avg_pool2d"}
    assert report["by_operator"] == {}
