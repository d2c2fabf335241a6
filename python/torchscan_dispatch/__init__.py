"""TorchScan Dispatch: the TorchScan 0.2 API, counted in C++ at the PyTorch
dispatcher.

Importing this package loads the native library into the running torch
process (``torch.ops.load_library``).
"""

from torchscan_dispatch import _compiled_graphs, process
from torchscan_dispatch._library import library_path, load_library
from torchscan_dispatch._version import __version__
from torchscan_dispatch.crawler import crawl_module, format_summary, summary
from torchscan_dispatch.flops import measure_flops
from torchscan_dispatch.render import list_diagnostics, to_folded, to_html, write_html
from torchscan_dispatch.report import IncompleteAnalysisError, compare_reports

_compiled_graphs.install_on_import()

__all__ = [
    "IncompleteAnalysisError",
    "__version__",
    "compare_reports",
    "crawl_module",
    "format_summary",
    "library_path",
    "list_diagnostics",
    "load_library",
    "measure_flops",
    "process",
    "summary",
    "to_folded",
    "to_html",
    "write_html",
]
