"""TorchScan Dispatch: operator FLOPs counted in C++ at the PyTorch dispatcher.

Importing this package loads the native library into the running torch
process (``torch.ops.load_library``); the counting runs in C++.
"""

from torchscan_dispatch._library import library_path, load_library
from torchscan_dispatch.flops import measure_flops

__all__ = ["library_path", "load_library", "measure_flops"]
