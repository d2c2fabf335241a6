"""Models for the crawl parity tests, each with the call that analyses it.

Each entry builds (model, crawl keyword arguments). Models are built in the
tests, never downloaded.
"""

from __future__ import annotations

import torch
from torch import nn


class ResidualBlock(nn.Module):
    def __init__(self, channels: int, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.downsample = (
            nn.Sequential(nn.Conv2d(channels, channels, 1, stride=stride, bias=False), nn.BatchNorm2d(channels))
            if stride != 1
            else None
        )

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class TinyResNet(nn.Module):
    def __init__(self, classes: int = 10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 7, stride=2, padding=3, bias=False), nn.BatchNorm2d(16), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1))
        self.layer1 = nn.Sequential(ResidualBlock(16), ResidualBlock(16, stride=2))
        self.pool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(16, classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.layer1(self.stem(x))), 1))


def _depthwise_block(cin, cout, stride):
    return nn.Sequential(
        nn.Conv2d(cin, cin, 3, stride=stride, padding=1, groups=cin, bias=False),
        nn.BatchNorm2d(cin),
        nn.ReLU6(inplace=True),
        nn.Conv2d(cin, cout, 1, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU6(inplace=True),
    )


class TinyMobileNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU6(inplace=True),
            _depthwise_block(8, 16, 1), _depthwise_block(16, 24, 2), nn.AvgPool2d(2), nn.Dropout(0.2),
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(24 * 4 * 4, 10))

    def forward(self, x):
        return self.classifier(self.features(x))


class TextEncoder(nn.Module):
    """Takes input_ids and attention_mask as keyword arguments."""

    def __init__(self, vocab=100, width=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.attention = nn.MultiheadAttention(width, 4, batch_first=True)
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, 2)

    def forward(self, input_ids, attention_mask=None):
        x = self.embed(input_ids)
        padding = None if attention_mask is None else ~attention_mask.bool()
        y, _ = self.attention(x, x, x, key_padding_mask=padding, need_weights=False)
        return {"logits": self.head(self.norm(x + y)), "hidden": (y, [None])}


class SharedModules(nn.Module):
    """One Linear used twice, a tied weight, a shared buffer and frozen layers."""

    def __init__(self):
        super().__init__()
        self.shared = nn.Linear(8, 8)
        self.first = nn.Linear(8, 8)
        self.second = nn.Linear(8, 8)
        self.second.weight = self.first.weight
        self.norm_a = nn.BatchNorm1d(8)
        self.norm_b = nn.BatchNorm1d(8)
        self.norm_b.running_mean = self.norm_a.running_mean
        self.frozen = nn.Linear(8, 4)
        for parameter in self.frozen.parameters():
            parameter.requires_grad_(False)
        self.unused = nn.Linear(3, 3)

    def forward(self, x):
        x = self.shared(self.shared(x))
        x = self.norm_b(self.norm_a(self.second(self.first(x))))
        return self.frozen(torch.relu(x))


class Unsupported(nn.Module):
    def forward(self, x):
        return x * 2


class WithUnsupportedLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(6, 6)
        self.custom = Unsupported()
        self.gelu = nn.GELU()

    def forward(self, x):
        return self.gelu(self.custom(self.linear(x)))


def zoo():
    torch.manual_seed(0)
    return {
        "mlp": (nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 4)), {"input_shape": (16,)}),
        "resnet": (TinyResNet(), {"input_shape": (3, 32, 32)}),
        "mobilenet": (TinyMobileNet(), {"input_shape": (3, 32, 32)}),
        "transformer": (
            nn.Transformer(d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=32, dropout=0.0, batch_first=True),
            {"args": (torch.rand(1, 5, 16), torch.rand(1, 3, 16))},
        ),
        "multihead_attention": (nn.MultiheadAttention(16, 4, batch_first=True), {"args": (torch.rand(2, 5, 16),) * 3}),
        "lstm": (nn.LSTM(8, 16, num_layers=2, batch_first=True), {"input_shape": (5, 8)}),
        "text_encoder": (
            TextEncoder(),
            {"args": (torch.zeros(1, 6, dtype=torch.long),), "kwargs": {"attention_mask": torch.tensor([[1, 1, 1, 1, 0, 0]])}},
        ),
        "shared_modules": (SharedModules(), {"input_shape": (8,)}),
        "unsupported_layer": (WithUnsupportedLayer(), {"input_shape": (6,)}),
        "conv_transpose_and_pools": (
            nn.Sequential(nn.ConvTranspose2d(3, 4, 3, stride=2), nn.AdaptiveMaxPool2d((3, 5)), nn.MaxPool2d(2), nn.Flatten()),
            {"input_shape": (3, 9, 9)},
        ),
    }
