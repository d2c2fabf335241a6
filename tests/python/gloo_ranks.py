"""Runs a worker script as the ranks of one real gloo job on this machine."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

RANK_TIMEOUT_S = 240


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_ranks(worker: Path, arguments: list[str], world: int, out_dir: Path,
              timeout_s: float = RANK_TIMEOUT_S) -> list[dict]:
    """Starts `world` processes of `worker arguments...` (RANK, WORLD_SIZE and
    a free MASTER_PORT set), waits for all, asserts each exited 0 (its output
    in the message otherwise) and returns the `rank{N}.json` each wrote into
    `out_dir`, by rank. Each rank may take `timeout_s` seconds."""
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
               WORLD_SIZE=str(world), OMP_NUM_THREADS="1")
    env.pop("TORCHELASTIC_RUN_ID", None)
    env.pop("TORCHSCAN_JOB_ID", None)
    processes = [
        subprocess.Popen([sys.executable, str(worker), *arguments], env=dict(env, RANK=str(rank)),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for rank in range(world)
    ]
    outputs = []
    try:
        for process in processes:
            outputs.append(process.communicate(timeout=timeout_s)[0])
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    for rank, process in enumerate(processes):
        assert process.returncode == 0, f"rank {rank} failed:\n{outputs[rank]}"
    return [json.loads((out_dir / f"rank{rank}.json").read_text()) for rank in range(world)]
