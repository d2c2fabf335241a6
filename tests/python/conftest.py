"""Shared helpers for the Python tests: the real library in a real torch."""

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

import torchscan_dispatch
from machine import use_an_executable_tmpdir

use_an_executable_tmpdir()


@pytest.fixture(scope="session", autouse=True)
def loaded_library():
    return torchscan_dispatch.load_library()


def flop_counter_mode_counts(workload):
    """Runs the workload under PyTorch's FlopCounterMode: (total, per-operator)."""
    with FlopCounterMode(display=False) as mode:
        workload()
    per_operator = {str(packet): count for packet, count in mode.get_flop_counts()["Global"].items()}
    return mode.get_total_flops(), per_operator
