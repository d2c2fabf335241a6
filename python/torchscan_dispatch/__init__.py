"""TorchScan Dispatch: the TorchScan 0.2 API, counted in C++ at the PyTorch
dispatcher.

Importing this package loads the native library into the running torch
process (``torch.ops.load_library``).
"""

from torchscan_dispatch import _compiler_integration, devices, distributed, mfu, process, roofline
from torchscan_dispatch._library import library_path, load_library
from torchscan_dispatch._version import __version__
from torchscan_dispatch.crawler import crawl_module, format_summary, summary
from torchscan_dispatch.distributed import gather_job_report, merge_rank_reports
from torchscan_dispatch.flops import FlopCounter, measure_flops
from torchscan_dispatch.mfu import StepMeter
from torchscan_dispatch.render import list_diagnostics, to_folded, to_html, write_html
from torchscan_dispatch.report import IncompleteAnalysisError, compare_reports

_compiler_integration.install_on_import()


def set_compiler_integration(enabled: bool) -> None:
    """Turns the torch.compile integration on or off (the API form of the
    environment variable TORCHSCAN_DISPATCH_COMPILER=off). Off keeps this
    library out of Dynamo and Inductor: no graph pass, no patch while nothing
    is measured; measured compiled regions then run without a FLOP tally and
    are reported as ``unseen_work`` (docs/python.md, "torch.compile")."""
    _compiler_integration.set_integration(enabled)


def compiler_integration_enabled() -> bool:
    """Whether the torch.compile integration is on."""
    return _compiler_integration.integration_enabled()

__all__ = [
    "FlopCounter",
    "StepMeter",
    "IncompleteAnalysisError",
    "__version__",
    "compare_reports",
    "compiler_integration_enabled",
    "crawl_module",
    "devices",
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
    "roofline",
    "set_compiler_integration",
    "summary",
    "to_folded",
    "to_html",
    "write_html",
]
