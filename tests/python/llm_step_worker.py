"""One rank of test_llm_step.py's 2 x 2 mesh run of examples/llm_step.py's
model (FSDP2 on dp, tensor parallel on tp): one warm-up step, then one
measured forward + backward, and what the test needs to check it by hand.
Usage: llm_step_worker.py RESULT_DIR CONFIG_JSON BATCH
"""

from __future__ import annotations

import gc
import importlib.util
import json
import os
import sys
import traceback
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F

import torchscan_dispatch

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "llm_step.py"


def load_example():
    spec = importlib.util.spec_from_file_location("llm_step", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules["llm_step"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def main() -> None:
    result_dir, config, batch = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
    rank = int(os.environ["RANK"])
    llm_step = load_example()
    from torch.distributed.device_mesh import init_device_mesh

    dist.init_process_group("gloo")
    result: dict = {"rank": rank}
    try:
        mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
        torch.manual_seed(0)
        model = llm_step.Llama(llm_step.Config(**config))
        tokens = torch.randint(config["vocab"], (batch, config["length"] + 1), generator=torch.Generator().manual_seed(1))
        llm_step.parallelize(model, mesh)
        local = tokens.chunk(2)[mesh["dp"].get_local_rank()]

        def step():
            logits = model(local[:, :-1])
            F.cross_entropy(logits.flatten(0, 1), local[:, 1:].flatten()).backward()

        step()
        with torchscan_dispatch.FlopCounter() as counter:
            step()
        result["report"] = counter.report()
        result["local_batch"] = local.shape[0]
        result["dimension_groups"] = {name: str(mesh[name].get_group().group_name) for name in ("dp", "tp")}
        del model
    except Exception:  # noqa: BLE001 - reported to the test
        result["exception"] = traceback.format_exc()
    finally:
        with open(os.path.join(result_dir, f"rank{rank}.json"), "w") as file:
            json.dump(result, file)
        gc.collect()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
