"""Flex attention's block mask in eager code: the dense kernel's products
are counted as executed (every pair), and the mask-aware count charges only
the pairs the block mask's mask_mod allows (python/torchscan_dispatch/
_flex_attention.py). FlopCounterMode raises on eager flex attention in this
torch, so every expectation is computed here by hand: executed FLOPs from
the shapes, allowed pairs by enumerating them in Python loops or summing a
mask built with torch.tril and plain indexing, never through mask_mod under
vmap."""

import warnings

import pytest
import torch

import torchscan_dispatch
from torchscan_dispatch import _flex_attention

flex = pytest.importorskip("torch.nn.attention.flex_attention", reason="this torch has no flex attention")
hops = pytest.importorskip("torch._higher_order_ops.flex_attention", reason="this torch has no flex attention")

FORWARD = "higher_order.flex_attention"
BACKWARD = "higher_order.flex_attention_backward"


@pytest.fixture(autouse=True)
def _quiet():
    # Eager flex attention warns that it is not compiled, once per process.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yield


def forward_products(b, hq, l, s, e, ev):
    # scores = q @ k^T: 2*E per pair; out = scores @ v: 2*Ev per pair.
    return 2 * b * hq * l * s * (e + ev)


def backward_products(b, hq, l, s, e, ev):
    # Scores again (2E), grad v (2Ev), grad scores (2Ev), grad q (2E), grad k (2E).
    return 2 * b * hq * l * s * (3 * e + 2 * ev)


def known(metric):
    return metric["value"] if metric["value"] is not None else metric["known_value"]


def excluded(products, all_pairs, allowed):
    assert products % all_pairs == 0
    return products // all_pairs * (all_pairs - allowed)


def check(report, executed, all_pairs, allowed):
    """bmm carries the executed products; the mask-aware count is the total
    less the pairs the mask excludes, at the same cost per pair."""
    assert report["by_operator"] == {"aten.bmm": executed}
    assert report["mask_aware"]["diagnostics"] == []
    assert report["mask_aware"]["status"] == report["total"]["status"]
    assert known(report["mask_aware"]) == known(report["total"]) - excluded(executed, all_pairs, allowed)


def run(q, k, v, block_mask, **kwargs):
    return torchscan_dispatch.measure_flops(lambda: flex.flex_attention(q, k, v, block_mask=block_mask, **kwargs))


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def test_issue_example_causal():
    # B=2, H=4, L=S=256, E=16: executed 33,554,432; the mask allows
    # 256 * 257 / 2 of 65,536 pairs per head.
    b, h, l, e = 2, 4, 256, 16
    q = torch.randn(b, h, l, e)
    block_mask = flex.create_block_mask(causal, b, h, l, l, device="cpu")
    report = run(q, q, q, block_mask)
    executed = forward_products(b, h, l, l, e, e)
    assert executed == 33_554_432
    allowed = b * h * int(torch.ones(l, l).tril().sum())
    assert allowed == b * h * 256 * 257 // 2
    check(report, executed, b * h * l * l, allowed)
    assert known(report["mask_aware"]) == known(report["total"]) - 33_554_432 // 65_536 * (65_536 - 32_896)


@pytest.mark.parametrize(("l", "s"), [(64, 192), (192, 64)])
def test_lengths_differ_and_value_dimension_differs(l, s):
    b, h, e, ev = 1, 2, 8, 24
    q, k, v = torch.randn(b, h, l, e), torch.randn(b, h, s, e), torch.randn(b, h, s, ev)
    block_mask = flex.create_block_mask(causal, b, h, l, s, device="cpu")
    allowed = b * h * sum(1 for i in range(l) for j in range(s) if i >= j)
    check(run(q, k, v, block_mask), forward_products(b, h, l, s, e, ev), b * h * l * s, allowed)


def test_sliding_window():
    b, h, l, e, window = 1, 2, 128, 8, 24

    def sliding(b_, h_, q_idx, kv_idx):
        return (q_idx >= kv_idx) & (q_idx - kv_idx < window)

    q = torch.randn(b, h, l, e)
    block_mask = flex.create_block_mask(sliding, b, h, l, l, device="cpu")
    allowed = b * h * sum(min(i + 1, window) for i in range(l))
    check(run(q, q, q, block_mask), forward_products(b, h, l, l, e, e), b * h * l * l, allowed)


def test_document_mask_with_a_captured_buffer():
    # Three documents packed in one sequence, causal within each.
    b, h, l, e = 2, 2, 96, 8
    lengths = [40, 24, 32]
    document = torch.cat([torch.full((n,), i) for i, n in enumerate(lengths)])

    def same_document(b_, h_, q_idx, kv_idx):
        return (document[q_idx] == document[kv_idx]) & (q_idx >= kv_idx)

    q = torch.randn(b, h, l, e)
    block_mask = flex.create_block_mask(same_document, b, h, l, l, device="cpu")
    ids = document.tolist()
    allowed = b * h * sum(1 for i in range(l) for j in range(l) if ids[i] == ids[j] and i >= j)
    assert allowed == b * h * sum(n * (n + 1) // 2 for n in lengths)
    check(run(q, q, q, block_mask), forward_products(b, h, l, l, e, e), b * h * l * l, allowed)


def test_grouped_query_attention_counts_pairs_per_query_head():
    # Four query heads share two key/value heads; the mask depends on the
    # query head: heads 0 and 2 are causal, heads 1 and 3 see everything.
    b, hq, hkv, l, e = 1, 4, 2, 64, 8

    def per_head(b_, h, q_idx, kv_idx):
        return (q_idx >= kv_idx) | (h % 2 == 1)

    q, kv = torch.randn(b, hq, l, e), torch.randn(b, hkv, l, e)
    block_mask = flex.create_block_mask(per_head, b, hq, l, l, device="cpu")
    report = run(q, kv, kv, block_mask, enable_gqa=True)
    causal_pairs = sum(1 for i in range(l) for j in range(l) if i >= j)
    allowed = b * (2 * causal_pairs + 2 * l * l)
    check(report, forward_products(b, hq, l, l, e, e), b * hq * l * l, allowed)


def test_block_mask_broadcast_over_batch_and_heads():
    # A block mask made for B=None, H=None (size 1, broadcast by the kernel)
    # masks every batch and head of the call.
    b, h, l, e = 3, 2, 64, 8
    q = torch.randn(b, h, l, e)
    block_mask = flex.create_block_mask(causal, None, None, l, l, device="cpu")
    assert block_mask.kv_num_blocks.shape[:2] == (1, 1)
    allowed = b * h * int(torch.ones(l, l, dtype=torch.bool).tril().sum())
    check(run(q, q, q, block_mask), forward_products(b, h, l, l, e, e), b * h * l * l, allowed)


def test_batch_dependent_mask():
    # Each batch element has its own valid key length (padding).
    b, h, l, e = 3, 2, 32, 8
    valid = torch.tensor([32, 20, 7])

    def padding(b_, h_, q_idx, kv_idx):
        return kv_idx < valid[b_]

    q = torch.randn(b, h, l, e)
    block_mask = flex.create_block_mask(padding, b, None, l, l, device="cpu")
    allowed = h * l * sum(valid.tolist())
    check(run(q, q, q, block_mask), forward_products(b, h, l, l, e, e), b * h * l * l, allowed)


def test_without_a_block_mask_everything_is_allowed():
    b, h, l, e = 1, 2, 32, 8
    q = torch.randn(b, h, l, e)
    report = torchscan_dispatch.measure_flops(lambda: flex.flex_attention(q, q, q))
    check(report, forward_products(b, h, l, l, e, e), b * h * l * l, b * h * l * l)


def test_the_mask_evaluation_is_not_counted(monkeypatch):
    # The same call with the hook and without it: every operator the report
    # names is the same, with the same number of calls; only the mask-aware
    # count differs.
    b, h, l, e = 1, 2, 64, 8
    lengths = [30, 34]
    document = torch.cat([torch.full((n,), i) for i, n in enumerate(lengths)])

    def same_document(b_, h_, q_idx, kv_idx):
        return document[q_idx] == document[kv_idx]

    q = torch.randn(b, h, l, e)
    block_mask = flex.create_block_mask(same_document, b, h, l, l, device="cpu")
    hooked = run(q, q, q, block_mask)
    monkeypatch.setattr(_flex_attention._patched, "_install", lambda: None)
    plain = run(q, q, q, block_mask)
    assert hooked["by_operator"] == plain["by_operator"]
    assert hooked["total"] == plain["total"]
    assert hooked["diagnostics"] == plain["diagnostics"]
    assert hooked.get("ignored_operators") == plain.get("ignored_operators")
    allowed = b * h * sum(n * n for n in lengths)
    assert known(plain["mask_aware"]) == known(plain["total"])  # the defect: no exclusion
    assert known(hooked["mask_aware"]) == known(plain["total"]) - excluded(
        forward_products(b, h, l, l, e, e), b * h * l * l, allowed
    )


def test_nested_counters():
    b, h, l, e = 1, 2, 64, 8
    q = torch.randn(b, h, l, e)
    block_mask = flex.create_block_mask(causal, b, h, l, l, device="cpu")
    executed = forward_products(b, h, l, l, e, e)
    allowed = b * h * l * (l + 1) // 2
    with torchscan_dispatch.FlopCounter() as outer:
        flex.flex_attention(q, q, q, block_mask=block_mask)
        with torchscan_dispatch.FlopCounter() as inner:
            flex.flex_attention(q, q, q, block_mask=block_mask)
        assert _flex_attention.installed()  # the outer counter is still open
        flex.flex_attention(q, q, q, block_mask=block_mask)
    assert not _flex_attention.installed()
    check(inner.report(), executed, b * h * l * l, allowed)
    check(outer.report(), 3 * executed, 3 * b * h * l * l, 3 * allowed)


def test_a_thread_without_a_counter_is_not_recorded():
    import threading

    b, h, l, e = 1, 2, 64, 8
    q = torch.randn(b, h, l, e)
    block_mask = flex.create_block_mask(causal, b, h, l, l, device="cpu")
    expected = flex.flex_attention(q, q, q, block_mask=block_mask)
    outputs = []
    with torchscan_dispatch.FlopCounter() as counter:
        worker = threading.Thread(target=lambda: outputs.append(flex.flex_attention(q, q, q, block_mask=block_mask)))
        worker.start()
        worker.join()
    assert torch.equal(outputs[0], expected)
    report = counter.report()
    assert report["by_operator"] == {}
    assert known(report["mask_aware"]) == known(report["total"]) == 0


def test_mask_aware_by_module():
    b, h, l, e = 1, 2, 64, 8

    class Attention(torch.nn.Module):
        def forward(self, x, block_mask):
            return flex.flex_attention(x, x, x, block_mask=block_mask)

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(e, e)
            self.attention = Attention()

        def forward(self, x, block_mask):
            return self.attention(self.proj(x), block_mask)

    x = torch.randn(b, h, l, e)
    block_mask = flex.create_block_mask(causal, b, h, l, l, device="cpu")
    block = Block()
    with torch.no_grad():  # eager flex attention has no CPU backward
        report = torchscan_dispatch.measure_flops(lambda: block(x, block_mask))
    less = excluded(forward_products(b, h, l, l, e, e), b * h * l * l, b * h * l * (l + 1) // 2)
    by_module = report["by_module"]
    assert by_module["Block.attention"] == forward_products(b, h, l, l, e, e)
    assert report["mask_aware"]["by_module"] == {
        "Block": by_module["Block"] - less,
        "Block.proj": by_module["Block.proj"],
        "Block.attention": by_module["Block.attention"] - less,
    }


def score_identity(score, b, h, q_idx, kv_idx):
    return score


def test_meta_tensors_leave_the_call_not_read():
    # The public function refuses meta tensors; the operator runs its dense
    # kernel on them, with no values to evaluate the mask on.
    b, h, l, e = 1, 2, 64, 8
    q = torch.empty(b, h, l, e, device="meta")
    block_mask = flex.create_block_mask(causal, b, h, l, l, device="cpu")
    report = torchscan_dispatch.measure_flops(
        lambda: hops.flex_attention(q, q, q, score_identity, block_mask.as_tuple(), 0.5, {})
    )
    executed = forward_products(b, h, l, l, e, e)
    assert report["by_operator"] == {"aten.bmm": executed}
    mask_aware = report["mask_aware"]
    assert mask_aware["status"] == "partial"
    assert mask_aware["known_value"] == known(report["total"]) - executed
    [diagnostic] = mask_aware["diagnostics"]
    assert diagnostic["code"] == "attention_mask_not_read"
    assert diagnostic["operator"] == FORWARD
    assert "flex attention" in diagnostic["message"] and "meta tensor" in diagnostic["message"]


def test_a_failing_mask_evaluation_is_not_read_and_the_call_succeeds(monkeypatch):
    b, h, l, e = 1, 2, 32, 8
    q = torch.randn(b, h, l, e)
    block_mask = flex.create_block_mask(causal, b, h, l, l, device="cpu")
    expected = flex.flex_attention(q, q, q, block_mask=block_mask)

    def fail(*args, **kwargs):
        raise RuntimeError("cannot evaluate\nsecond line")

    monkeypatch.setattr(_flex_attention, "_allowed_pairs", fail)
    with torchscan_dispatch.FlopCounter() as counter:
        out = flex.flex_attention(q, q, q, block_mask=block_mask)
    assert torch.equal(out, expected)
    [diagnostic] = counter.report()["mask_aware"]["diagnostics"]
    assert "evaluating mask_mod failed: RuntimeError: cannot evaluate)" in diagnostic["message"]


def test_backward_operator_dense_kernel():
    # Eager backward on CPU is refused by the public function; the backward
    # operator's dense kernel (what CUDA runs eagerly) is called directly.
    b, h, l, e, ev = 1, 2, 64, 8, 16
    q, k, v = torch.randn(b, h, l, e), torch.randn(b, h, l, e), torch.randn(b, h, l, ev)
    block_mask = flex.create_block_mask(causal, b, h, l, l, device="cpu").as_tuple()
    out, lse, _ = hops.flex_attention(q, k, v, score_identity, block_mask, 0.5, {})
    examples = (q.new_zeros((), requires_grad=True),) + tuple(q.new_zeros((), dtype=torch.int) for _ in range(4))
    forward_graph, joint_graph = hops.create_fw_bw_graph(score_identity, examples, ())
    grad_out = torch.randn_like(out)

    def backward():
        return hops.flex_attention_backward(
            q, k, v, out, lse, grad_out, None, forward_graph, joint_graph, block_mask, 0.5, {}, (), ()
        )

    expected = backward()
    with torchscan_dispatch.FlopCounter() as counter:
        grads = backward()
    for got, want in zip(grads[:3], expected[:3]):
        assert torch.equal(got, want)
    executed = backward_products(b, h, l, l, e, ev)
    check(counter.report(), executed, b * h * l * l, b * h * l * (l + 1) // 2)


def test_idle_library_changes_nothing():
    torchscan_dispatch.load_library()
    operators = (hops.flex_attention, hops.flex_attention_backward)
    dense = torch._C.DispatchKey.CompositeExplicitAutograd
    kernels = [operator.py_kernels[dense] for operator in operators]
    fallthrough = [operator.non_fallthrough_keys.raw_repr() for operator in operators]
    assert not any(hasattr(kernel, "__wrapped__") for kernel in kernels)
    b, h, l, e = 2, 2, 64, 8
    q, k, v = torch.randn(b, h, l, e), torch.randn(b, h, l, e), torch.randn(b, h, l, e)
    block_mask = flex.create_block_mask(causal, b, h, l, l, device="cpu")
    before = flex.flex_attention(q, k, v, block_mask=block_mask)

    def unchanged():
        assert not _flex_attention.installed()
        assert [operator.py_kernels[dense] for operator in operators] == kernels
        for operator in operators:
            assert all(not hasattr(kernel, "__wrapped__") for kernel in operator._dispatch_cache.values())
        assert [operator.non_fallthrough_keys.raw_repr() for operator in operators] == fallthrough
        assert torch.equal(flex.flex_attention(q, k, v, block_mask=block_mask), before)

    unchanged()
    with torchscan_dispatch.FlopCounter():
        assert _flex_attention.installed()
        inside = flex.flex_attention(q, k, v, block_mask=block_mask)
    assert torch.equal(inside, before)
    unchanged()

    class WorkloadError(Exception):
        pass

    with pytest.raises(WorkloadError, match="^from the workload$"):
        with torchscan_dispatch.FlopCounter():
            flex.flex_attention(q, k, v, block_mask=block_mask)
            raise WorkloadError("from the workload")
    unchanged()


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_non_inductor_backends_run_the_dense_kernel(backend):
    # Dynamo without Inductor calls the operator eagerly: its dense kernel
    # runs, and its mask is read as in eager code.
    torch._dynamo.reset()
    b, h, l, e = 1, 2, 128, 16
    q = torch.randn(b, h, l, e)
    block_mask = flex.create_block_mask(causal, b, h, l, l, device="cpu")
    compiled = torch.compile(lambda q: flex.flex_attention(q, q, q, block_mask=block_mask), backend=backend)
    compiled(q)
    report = torchscan_dispatch.measure_flops(lambda: compiled(q))
    check(report, forward_products(b, h, l, l, e, e), b * h * l * l, b * h * l * (l + 1) // 2)
    torch._dynamo.reset()


def test_compiled_flex_attention_is_unchanged():
    # Inductor's kernel never reaches the dense kernel: the graph's tally
    # counts the operator, and its block mask stays not read.
    torch._dynamo.reset()
    b, h, l, e = 1, 2, 128, 16
    q = torch.randn(b, h, l, e)
    block_mask = flex.create_block_mask(causal, b, h, l, l, device="cpu")
    compiled = torch.compile(flex.flex_attention)
    compiled(q, q, q, block_mask=block_mask)  # compile outside the measurement
    calls = []
    original = _flex_attention._record
    try:
        _flex_attention._record = lambda *args: calls.append(args)
        report = torchscan_dispatch.measure_flops(
            lambda: compiled(q, q, q, block_mask=block_mask), track_modules=False
        )
    finally:
        _flex_attention._record = original
    assert calls == []
    executed = forward_products(b, h, l, l, e, e)
    assert report["by_operator"] == {FORWARD: executed}
    mask_aware = report["mask_aware"]
    assert mask_aware["status"] == "partial"
    assert mask_aware["known_value"] == known(report["total"]) - executed
    [diagnostic] = mask_aware["diagnostics"]
    assert diagnostic["operator"] == FORWARD
    assert "block mask and score_mod are not read" in diagnostic["message"]
    torch._dynamo.reset()
