"""TorchScan Dispatch: the TorchScan 0.2 API, counted in C++ at the PyTorch
dispatcher.

Importing this package loads the native library into the running torch
process (``torch.ops.load_library``).
"""

from torchscan_dispatch import _compiled_graphs, distributed, mfu, process
from torchscan_dispatch._library import library_path, load_library
from torchscan_dispatch._version import __version__
from torchscan_dispatch.crawler import crawl_module, format_summary, summary
from torchscan_dispatch.distributed import gather_job_report, merge_rank_reports
from torchscan_dispatch.flops import FlopCounter, measure_flops
from torchscan_dispatch.mfu import StepMeter
from torchscan_dispatch.render import list_diagnostics, to_folded, to_html, write_html
from torchscan_dispatch.report import IncompleteAnalysisError, compare_reports

_compiled_graphs.install_on_import()

__all__ = [
    "FlopCounter",
    "StepMeter",
    "IncompleteAnalysisError",
    "__version__",
    "compare_reports",
    "crawl_module",
    "distributed",
    "format_summary",
    "gather_job_report",
    "library_path",
    "list_diagnostics",
    "load_library",
    "measure_flops",
    "merge_rank_reports",
    "mfu",
    "process",
    "summary",
    "to_folded",
    "to_html",
    "write_html",
]
