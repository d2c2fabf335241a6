"""Workloads of the differential tests (test_flop_parity.py).

Each builder takes a mode and returns a zero-argument callable. Modes:
"fp32"; "autocast_bf16" (CPU autocast to bfloat16 around the call: where
oneDNN supports bf16, its kernels run); "autocast_bf16_onednn_off" (the same
autocast with oneDNN switched off, so PyTorch's native kernels run: bf16
counting that any x86-64 CPU can check, even where oneDNN has no bf16
primitive for a workload, machine.py); "meta" (model and inputs on the meta
device: nothing is computed).
"""

from __future__ import annotations

import contextlib

import torch
from torch import nn
from torch.nn import functional as F


def _device(mode: str) -> torch.device:
    return torch.device("meta" if mode == "meta" else "cpu")


def _wrap(mode: str, fn):
    if mode == "autocast_bf16":

        def run():
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return fn()

        return run
    if mode == "autocast_bf16_onednn_off":

        def run():
            with torch.backends.mkldnn.flags(enabled=False), torch.autocast("cpu", dtype=torch.bfloat16):
                return fn()

        return run
    return fn


def _backward(output) -> None:
    if isinstance(output, (tuple, list)):
        output = output[0]
    output.float().sum().backward()


def mlp(mode):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.GELU(), nn.Linear(64, 10))
    model = model.to(_device(mode))
    x = torch.randn(8, 32, device=_device(mode))
    return _wrap(mode, lambda: _backward(model(x)))


class _ConvZoo(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1d = nn.Conv1d(3, 8, 5, stride=2, padding=2)
        self.conv2d = nn.Conv2d(3, 8, 3, padding=1)
        self.grouped = nn.Conv2d(8, 16, 3, groups=4, padding=1)
        self.depthwise = nn.Conv2d(16, 16, 3, groups=16, padding=2, dilation=2)
        self.strided = nn.Conv2d(16, 8, 3, stride=2)
        self.transposed = nn.ConvTranspose2d(8, 4, 4, stride=2, padding=1)
        self.transposed_grouped = nn.ConvTranspose2d(4, 4, 3, groups=2)
        self.conv3d = nn.Conv3d(2, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)

    def forward(self, x1, x2, x3):
        a = self.conv1d(x1)
        b = self.bn(self.conv2d(x2))
        b = self.depthwise(self.grouped(b))
        b = self.pool(F.relu(self.strided(b)))
        b = self.transposed_grouped(self.transposed(b))
        c = self.conv3d(x3)
        return a.sum() + b.sum() + c.sum()


def cnn(mode):
    torch.manual_seed(0)
    device = _device(mode)
    model = _ConvZoo().to(device)
    x1 = torch.randn(2, 3, 32, device=device)
    x2 = torch.randn(2, 3, 16, 16, device=device, requires_grad=True)
    x3 = torch.randn(1, 2, 6, 6, 6, device=device)
    return _wrap(mode, lambda: model(x1, x2, x3).backward())


def transformer_encoder(mode):
    torch.manual_seed(0)
    device = _device(mode)
    layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
    model = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).to(device)
    x = torch.randn(2, 10, 32, device=device)
    mask = nn.Transformer.generate_square_subsequent_mask(10, device=device)
    return _wrap(mode, lambda: _backward(model(x, mask=mask, is_causal=True)))


def transformer_decoder(mode):
    torch.manual_seed(0)
    device = _device(mode)
    layer = nn.TransformerDecoderLayer(32, 4, 64, dropout=0.0)
    model = nn.TransformerDecoder(layer, 2).to(device)
    tgt = torch.randn(7, 2, 32, device=device)
    memory = torch.randn(9, 2, 32, device=device)
    return _wrap(mode, lambda: _backward(model(tgt, memory)))


def multihead_attention(mode):
    torch.manual_seed(0)
    device = _device(mode)
    model = nn.MultiheadAttention(32, 4, batch_first=True, kdim=16, vdim=24).to(device)
    q = torch.randn(2, 6, 32, device=device)
    k = torch.randn(2, 9, 16, device=device)
    v = torch.randn(2, 9, 24, device=device)
    padding = torch.zeros(2, 9, dtype=torch.bool, device=device)
    return _wrap(mode, lambda: _backward(model(q, k, v, key_padding_mask=padding)))


def sdpa_with_masks(mode):
    torch.manual_seed(0)
    device = _device(mode)
    q = torch.randn(2, 4, 16, 8, device=device, requires_grad=True)
    k = torch.randn(2, 4, 12, 8, device=device, requires_grad=True)
    v = torch.randn(2, 4, 12, 8, device=device, requires_grad=True)
    bool_mask = torch.ones(16, 12, dtype=torch.bool, device=device).tril()
    float_mask = torch.zeros(2, 1, 16, 12, device=device)

    def run():
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=bool_mask)
        b = F.scaled_dot_product_attention(q, k, v, attn_mask=float_mask)
        c = F.scaled_dot_product_attention(q, q, q, is_causal=True)
        (a.sum() + b.sum() + c.sum()).backward()

    return _wrap(mode, run)


def recurrent(mode):
    torch.manual_seed(0)
    device = _device(mode)
    lstm = nn.LSTM(8, 16, num_layers=2, batch_first=True).to(device)
    gru = nn.GRU(8, 16, bidirectional=True).to(device)
    x = torch.randn(3, 5, 8, device=device)

    def run():
        out, _ = lstm(x)
        out2, _ = gru(x)
        (out.sum() + out2.sum()).backward()

    return _wrap(mode, run)


class _TinyLanguageModel(nn.Module):
    def __init__(self, vocab=50, width=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.proj = nn.Linear(width, width)
        self.head = nn.Linear(width, vocab, bias=False)
        self.head.weight = self.embed.weight  # tied

    def forward(self, ids):
        return self.head(torch.tanh(self.proj(self.embed(ids))))


def language_model_head(mode):
    torch.manual_seed(0)
    device = _device(mode)
    model = _TinyLanguageModel().to(device)
    ids = torch.randint(0, 50, (2, 7), device=device) if device.type != "meta" else torch.zeros(2, 7, dtype=torch.long, device=device)
    return _wrap(mode, lambda: F.cross_entropy(model(ids).flatten(0, 1), ids.flatten()).backward())


def einsum(mode):
    torch.manual_seed(0)
    device = _device(mode)
    a = torch.randn(2, 3, 4, 5, device=device)
    b = torch.randn(2, 3, 5, 6, device=device)
    m = torch.randn(7, 5, device=device)
    v = torch.randn(5, device=device)

    def run():
        return (
            torch.einsum("bhij,bhjk->bhik", a, b),
            torch.einsum("bhij,kj->bhik", a, m),
            torch.einsum("ij,j->i", m, v),
            torch.einsum("bhij,bhij->bh", a, a),
        )

    return _wrap(mode, run)


def training_step(mode):
    torch.manual_seed(0)
    device = _device(mode)
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 14 * 14, 10)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=False)
    x = torch.randn(4, 3, 16, 16, device=device)
    y = torch.zeros(4, dtype=torch.long, device=device)

    def run():
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()

    return _wrap(mode, run)


WORKLOADS = {
    "mlp": mlp,
    "cnn": cnn,
    "transformer_encoder": transformer_encoder,
    "transformer_decoder": transformer_decoder,
    "multihead_attention": multihead_attention,
    "sdpa_with_masks": sdpa_with_masks,
    "recurrent": recurrent,
    "language_model_head": language_model_head,
    "einsum": einsum,
    "training_step": training_step,
}

MODES = ("fp32", "autocast_bf16", "autocast_bf16_onednn_off", "meta")
