"""Distributed jobs on real gloo process groups: per-rank FLOPs, collectives
(counts and bytes), the job report and MFU.

One 2-rank job (distributed_worker.py) runs every check once; each test
reads its part of the results. Each rank is a subprocess with a timeout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from gloo_ranks import RANK_TIMEOUT_S, free_port, run_ranks

WORKER = Path(__file__).with_name("distributed_worker.py")


def run_job(tmp_path: Path, world: int, checks: list[str]) -> list[dict]:
    results = run_ranks(WORKER, [str(tmp_path), ",".join(checks)], world, tmp_path)
    for result in results:
        for name in checks:
            assert "exception" not in result[name], f"rank {result['rank']} {name}:\n{result[name]['exception']}"
    return results


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory):
    return run_job(
        tmp_path_factory.mktemp("job2"), 2, ["plain", "ddp", "tp", "gather", "failing", "mfu", "compiled"]
    )


def communication(result: dict) -> dict:
    return result["report"]["communication"]


# --- plain collectives -------------------------------------------------------

# (kind, bytes nccl-tests calls the size S) per call in plain_collectives():
# all_reduce 10 float32; all_gather_into_tensor 2x6 float32 gathered;
# all_gather (list) 2x3 float32; reduce_scatter 2x4 float32 input;
# broadcast 5 float64; funcol all_reduce 7 float32.
PLAIN_EXPECTED = {
    "all_reduce": (2, 40 + 28, 40 + 28),  # bus = 2(n-1)/n S = S for n=2
    "all_gather": (2, 48 + 24, 24 + 12),  # bus = (n-1)/n S
    "reduce_scatter": (1, 32, 16),
    "broadcast": (1, 40, 40),
}


@pytest.mark.parametrize("rank", [0, 1])
def test_plain_collectives_counted_with_bytes(two_ranks, rank):
    comm = communication(two_ranks[rank]["plain"])
    assert comm["status"] == "complete"
    for kind, (calls, payload, bus) in PLAIN_EXPECTED.items():
        entry = comm["by_kind"][kind]
        assert (calls, payload, bus) == (entry["calls"], entry["payload_bytes"], entry["bus_bytes"]), kind
        assert list(entry["by_group_size"]) == ["2"]
    point_to_point = "send" if rank == 0 else "recv"
    assert comm["by_kind"][point_to_point]["payload_bytes"] == 24


def test_functional_collective_counted_once(two_ranks):
    report = two_ranks[0]["plain"]["report"]
    by_operator = report["communication"]["by_operator"]
    assert by_operator["_c10d_functional.all_reduce"] == 1
    assert by_operator["c10d.allreduce_"] == 1  # dist.all_reduce only
    assert "_c10d_functional.wait_tensor" not in by_operator
    assert "_c10d_functional.wait_tensor" in report["ignored_operators"]
    assert report["communication"]["status"] == "complete"


@pytest.mark.parametrize("rank", [0, 1])
def test_plain_collective_counts_match_comm_debug_mode(two_ranks, rank):
    plain = two_ranks[rank]["plain"]
    ours = dict(plain["report"]["communication"]["by_operator"])
    # CommDebugMode does not track point-to-point operations, and names
    # _c10d_functional.* "c10d_functional.*".
    ours.pop("c10d.send" if rank == 0 else "c10d.recv_")
    theirs = {
        ("_" + op if op.startswith("c10d_functional.") else op): calls
        for op, calls in plain["comm_debug"].items()
    }
    assert theirs == ours


def test_rank_context(two_ranks):
    contexts = [result["plain"]["report"]["distributed"] for result in two_ranks]
    assert [context["rank"] for context in contexts] == [0, 1]
    assert {context["world_size"] for context in contexts} == {2}
    assert {context["backend"] for context in contexts} == {"gloo"}
    assert contexts[0]["job_id"] == contexts[1]["job_id"]
    assert {"name": "0", "size": 2, "ranks": [0, 1]} in contexts[0]["groups"]


# --- DDP ---------------------------------------------------------------------


@pytest.mark.parametrize("rank", [0, 1])
def test_ddp_all_reduces_every_parameter_byte(two_ranks, rank):
    ddp = two_ranks[rank]["ddp"]
    all_reduce = communication(ddp)["by_kind"]["all_reduce"]
    assert all_reduce["payload_bytes"] == ddp["parameter_bytes"]
    assert all_reduce["calls"] == ddp["comm_debug"]["c10d.allreduce_"]
    assert list(communication(ddp)["by_kind"]) == ["all_reduce"]


@pytest.mark.parametrize("rank", [0, 1])
def test_ddp_flops_per_rank(two_ranks, rank):
    ddp = two_ranks[rank]["ddp"]
    batch, dims = 8, (16, 32, 4)
    forward = 2 * batch * (dims[0] * dims[1] + dims[1] * dims[2])
    # weight gradients of both layers, the input gradient of the second
    backward = forward + 2 * batch * dims[1] * dims[2]
    assert ddp["report"]["total"]["known_value"] == forward + backward
    assert ddp["flop_counter_mode"] == forward + backward


# --- tensor parallelism (DTensor) -------------------------------------------


@pytest.mark.parametrize("rank", [0, 1])
def test_tensor_parallel_mlp_counts_local_shards(two_ranks, rank):
    tp = two_ranks[rank]["tp"]
    report = tp["report"]
    comm = report["communication"]
    batch, hidden_shard = 8, 32 // 2
    # column shard of up (16 -> 16 of 32) and row shard of down (16 of 32 -> 16)
    assert report["total"]["known_value"] == 2 * batch * 16 * hidden_shard * 2
    assert comm["status"] == "complete"
    # RowwiseParallel's partial output is all-reduced: 8x16 float32.
    assert comm["by_kind"]["all_reduce"]["payload_bytes"] == batch * 16 * 4
    assert comm["by_kind"]["all_reduce"]["calls"] == sum(tp["comm_debug"].values())


# --- job report --------------------------------------------------------------


def test_gathered_job_report_sums_ranks(two_ranks):
    job = two_ranks[0]["gather"]["job"]
    assert two_ranks[1]["gather"]["job"] is None
    per_rank = [result["gather"]["report"]["total"]["value"] for result in two_ranks]
    assert job["total"] == {**job["total"], "status": "complete", "value": sum(per_rank)}
    assert [job["per_rank"][str(r)]["value"] for r in (0, 1)] == per_rank
    assert (job["rank_min"], job["rank_max"]) == (min(per_rank), max(per_rank))
    assert job["imbalance"] == pytest.approx(max(per_rank) * 2 / sum(per_rank))
    assert job["communication"]["by_kind"]["all_reduce"]["calls"] == 2
    assert job["missing_ranks"] == []


def test_failing_rank_is_missing_and_group_survives(two_ranks):
    assert two_ranks[1]["failing"]["error"] == "this rank fails"
    job = two_ranks[0]["failing"]["job"]
    assert job["missing_ranks"] == [1]
    assert job["total"]["status"] == "partial"
    assert job["diagnostics"][0]["code"] == "missing_rank"
    assert [result["failing"]["after"] for result in two_ranks] == [1.0, 1.0]


def test_merge_files_offline_equals_gather(two_ranks, tmp_path):
    import torchscan_dispatch

    reports = [result["gather"]["report"] for result in two_ranks]
    assert torchscan_dispatch.merge_rank_reports(reports) == {
        **two_ranks[0]["gather"]["job"]}


def test_merge_refuses_other_jobs(two_ranks):
    import torchscan_dispatch

    first = two_ranks[0]["gather"]["report"]
    other = json.loads(json.dumps(two_ranks[1]["gather"]["report"]))
    other["distributed"]["job_id"] = "another"
    with pytest.raises(ValueError, match="not from one job: a has job id .* but b has job id another"):
        torchscan_dispatch.merge_rank_reports([first, other], ["a", "b"])


def test_compiled_collectives_are_measured_as_in_eager(two_ranks):
    compiled, eager = two_ranks[0]["compiled"]["compiled"], two_ranks[0]["compiled"]["eager"]
    assert compiled["total"]["known_value"] == eager["total"]["known_value"] == 2 * 4 * 16 * 8
    # By hand: all_reduce of a [4, 8] float32 (128 bytes), then all_gather of
    # it over 2 ranks (payload: the [8, 8] result, 256 bytes).
    by_kind = eager["communication"]["by_kind"]
    assert (by_kind["all_reduce"]["calls"], by_kind["all_reduce"]["payload_bytes"]) == (1, 4 * 8 * 4)
    assert (by_kind["all_gather"]["calls"], by_kind["all_gather"]["payload_bytes"]) == (1, 2 * 4 * 8 * 4)
    # The compiled graph's tally measures them from its description.
    communication = compiled["communication"]
    assert communication["status"] == "complete", communication["diagnostics"]
    for field in ("total", "by_kind", "by_group"):
        assert communication[field] == eager["communication"][field], field


# --- MFU ---------------------------------------------------------------------


@pytest.mark.parametrize("rank", [0, 1])
def test_step_flops_equal_flop_counter_mode(two_ranks, rank):
    mfu = two_ranks[rank]["mfu"]
    assert mfu["flops"] == mfu["flop_counter_mode"]
    assert sum(mfu["by_phase"].values()) == mfu["flops"]
    assert mfu["by_phase"]["optimizer"] == 0
    assert mfu["mfu"] == pytest.approx(mfu["flops"] / mfu["seconds"] / 1e12)


def merge_cli() -> str:
    cli = os.environ.get("TORCHSCAN_CLI")
    if not cli:
        pytest.skip("TORCHSCAN_CLI is not set (tools/test sets it to the built //tools:torchscan)")
    return cli


def write_rank_reports(results, check, directory) -> list[str]:
    """Each rank's report of ``check`` as rank<R>.json in ``directory``."""
    paths = []
    for result in results:
        path = directory / f"rank{result['rank']}.json"
        path.write_text(json.dumps(result[check]["report"]))
        paths.append(str(path))
    return paths


def test_cli_merge_equals_in_process_gather(two_ranks, tmp_path):
    cli = merge_cli()
    paths = write_rank_reports(two_ranks, "gather", tmp_path)
    merged = subprocess.run([cli, "merge", *paths, "--json", str(tmp_path / "job.json")],
                            capture_output=True, text=True, timeout=60)
    assert merged.returncode == 0, merged.stderr
    assert json.loads((tmp_path / "job.json").read_text()) == two_ranks[0]["gather"]["job"]
    assert "total FLOPs: 3072 (complete)" in merged.stdout
    refused = subprocess.run([cli, "merge", paths[0], paths[0]], capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2
    assert f"rank 0 appears twice: in {paths[0]} and in {paths[0]}" in refused.stderr


def test_cli_merge_with_a_rank_missing_fails_unless_allowed(two_ranks, tmp_path):
    cli = merge_cli()
    [path] = write_rank_reports(two_ranks[:1], "gather", tmp_path)
    missing = subprocess.run([cli, "merge", str(path), "--json", str(tmp_path / "job.json")],
                             capture_output=True, text=True, timeout=60)  # fmt: skip
    assert missing.returncode == 4
    assert missing.stderr == "torchscan: merge: no report for rank 1 of 2 (--allow-missing merges the ranks present)\n"
    # The partial job report is still written and printed.
    job = json.loads((tmp_path / "job.json").read_text())
    assert (job["missing_ranks"], job["total"]["status"]) == ([1], "partial")
    assert "missing ranks: [1]" in missing.stdout
    allowed = subprocess.run([cli, "merge", str(path), "--allow-missing"], capture_output=True, text=True, timeout=60)
    assert (allowed.returncode, allowed.stderr) == (0, "")
    absent = subprocess.run([cli, "merge", str(path), str(tmp_path / "rank1.json")],
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    assert absent.returncode == 2
    assert absent.stderr.count("\n") == 1 and "rank1.json" in absent.stderr


def test_compiled_step_counts_equal_eager():
    import torch
    from torch import nn
    from torch.utils.flop_counter import FlopCounterMode

    import torchscan_dispatch

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    x = torch.randn(8, 16)

    def step():
        model(x).sum().backward()

    compiled = torch.compile(step)
    compiled()  # compile outside the measurement
    meter = torchscan_dispatch.StepMeter(peak_flops_per_second=1e12)
    with meter.step():
        compiled()
    with FlopCounterMode(display=False) as mode:
        step()
    assert meter.steps[-1].flops == mode.get_total_flops() == 22528


# --- FSDP2 on four ranks -------------------------------------------------------


@pytest.fixture(scope="module")
def four_ranks(tmp_path_factory):
    return run_job(
        tmp_path_factory.mktemp("job4"), 4, ["fsdp", "gather", "subgroup", "fsdp_tp", "mesh3d", "hsdp"]
    )


@pytest.mark.parametrize("rank", [0, 3])
def test_fsdp2_gathers_and_reduce_scatters_every_parameter_byte(four_ranks, rank):
    fsdp = four_ranks[rank]["fsdp"]
    comm = communication(fsdp)
    assert comm["status"] == "complete"
    # Parameters split evenly over 4 ranks: no padding in the flat buffers.
    for kind in ("all_gather", "reduce_scatter"):
        assert comm["by_kind"][kind]["payload_bytes"] == fsdp["parameter_bytes"], kind
        assert list(comm["by_kind"][kind]["by_group_size"]) == ["4"]
    assert comm["by_kind"]["all_gather"]["bus_bytes"] == fsdp["parameter_bytes"] * 3 // 4
    ours = {op: n for op, n in comm["by_operator"].items()}
    assert ours == fsdp["comm_debug"]


@pytest.mark.parametrize("rank", [0, 3])
def test_fsdp2_flops_per_rank(four_ranks, rank):
    batch, dims = 8, (16, 32, 4)
    forward = 2 * batch * (dims[0] * dims[1] + dims[1] * dims[2])
    backward = forward + 2 * batch * dims[1] * dims[2]
    assert four_ranks[rank]["fsdp"]["report"]["total"]["known_value"] == forward + backward


def test_four_rank_job_report(four_ranks):
    job = four_ranks[0]["gather"]["job"]
    per_rank = [result["gather"]["report"]["total"]["value"] for result in four_ranks]
    assert job["ranks"] == [0, 1, 2, 3]
    assert job["total"]["value"] == sum(per_rank)
    assert job["communication"]["by_kind"]["all_reduce"]["by_group_size"]["4"]["calls"] == 4


# --- process groups and device meshes (four ranks) ----------------------------


def group_entry(result: dict, name: str) -> dict:
    groups = result["report"]["distributed"]["groups"]
    (entry,) = [group for group in groups if group["name"] == name]
    return entry


@pytest.mark.parametrize("rank", [0, 1, 2, 3])
def test_rank_outside_a_subgroup_is_measured(four_ranks, rank):
    subgroup = four_ranks[rank]["subgroup"]
    report = subgroup["report"]
    assert report["total"]["value"] == 2 * 4 * 8 * 8
    by_group = report["communication"]["by_group"]
    world = {"size": 4, "calls": 1, "payload_bytes": 128, "bus_bytes": 192}
    assert by_group["0"] == {**world, "by_kind": {"all_reduce": {"calls": 1, "payload_bytes": 128, "bus_bytes": 192}}}
    names = [group["name"] for group in report["distributed"]["groups"]]
    if rank in (0, 2):
        name = subgroup["group_name"]
        assert group_entry(subgroup, name) == {"name": name, "size": 2, "ranks": [0, 2]}
        assert by_group[name]["calls"] == 1 and by_group[name]["payload_bytes"] == 128
        assert sorted(by_group) == sorted(["0", name])
    else:
        # Only the groups this rank is a member of.
        assert names == ["0"] and list(by_group) == ["0"]


# Mlp((16, 32, 16)) with tensor parallelism over 2 ranks: each rank holds
# half of up (16 of 32 output features) and half of down (16 of 32 input
# features); down's bias is replicated.
TP_LOCAL_PARAMETER_BYTES = (16 * 16 + 16 + 16 * 16 + 16) * 4
FULL_PARAMETER_BYTES = (32 * 16 + 32 + 16 * 32 + 16) * 4


def local_shard_flops() -> int:
    batch, shard = 8, 16
    up = 2 * batch * 16 * shard  # x (8x16) @ up's local weight (16 -> 16)
    down = 2 * batch * shard * 16  # the local hidden (8x16) @ down's (16 -> 16)
    forward = up + down
    # down: input and weight gradients; up: the weight gradient only (the
    # batch does not require grad).
    backward = 2 * down + up
    return forward + backward


def check_mesh_collectives(result: dict, expected: dict[str, dict[str, tuple[int, int, int]]],
                           dimensions: dict[str, int]) -> None:
    """`expected`: mesh dimension -> kind -> (calls, payload, bus bytes)."""
    report = result["report"]
    comm = report["communication"]
    assert comm["status"] == "complete"
    assert report["communication"]["by_operator"] == result["comm_debug_ours"]
    groups = result["dimension_groups"]
    by_group = comm["by_group"]
    for dimension, kinds in expected.items():
        name = groups[dimension]
        entry = group_entry(result, name)
        assert entry["mesh_dim"] == {"name": dimension, "index": dimensions[dimension]}
        got = {kind: (tally["calls"], tally["payload_bytes"], tally["bus_bytes"])
               for kind, tally in by_group[name]["by_kind"].items()}
        assert got == kinds, dimension
    # Every collective is on a mesh dimension's group.
    assert sorted(by_group) == sorted(groups[dimension] for dimension in expected)
    # Every mesh dimension's group is named as such.
    for dimension, index in dimensions.items():
        assert group_entry(result, groups[dimension])["mesh_dim"] == {"name": dimension, "index": index}


def with_our_operator_names(result: dict) -> dict:
    # CommDebugMode names _c10d_functional.* "c10d_functional.*".
    result = dict(result)
    result["comm_debug_ours"] = {
        ("_" + op if op.startswith("c10d_functional.") else op): calls
        for op, calls in result["comm_debug"].items()
    }
    return result


@pytest.mark.parametrize("rank", [0, 1, 2, 3])
def test_fsdp2_with_tensor_parallel_on_a_2x2_mesh(four_ranks, rank):
    result = with_our_operator_names(four_ranks[rank]["fsdp_tp"])
    assert result["local_parameter_bytes"] == TP_LOCAL_PARAMETER_BYTES
    # Per rank: the local shards' matmuls; FlopCounterMode counts the DTensor
    # operators globally, the tensor-parallel degree (2) times more.
    # (FSDP2's and DTensor's other operators, e.g. aten.add_, have no FLOP
    # formula: the total is partial, its known value exact.)
    assert result["report"]["total"]["known_value"] == local_shard_flops() == 20480
    assert result["flop_counter_mode"] == 2 * local_shard_flops()
    gathered = TP_LOCAL_PARAMETER_BYTES  # the dp group gathers all of it
    check_mesh_collectives(result, {
        # FSDP2 on dp: one all-gather of the parameters, one reduce-scatter
        # of their gradients; bus bytes (n-1)/n of the full buffer.
        "dp": {"all_gather": (1, gathered, gathered // 2), "reduce_scatter": (1, gathered, gathered // 2)},
        # RowwiseParallel's partial output (8x16 float32) all-reduced on tp.
        "tp": {"all_reduce": (1, 8 * 16 * 4, 8 * 16 * 4)},
    }, {"dp": 0, "tp": 1})


@pytest.mark.parametrize("rank", [0, 3])
def test_3d_mesh_attributes_each_dimension(four_ranks, rank):
    result = with_our_operator_names(four_ranks[rank]["mesh3d"])
    assert result["report"]["total"]["known_value"] == local_shard_flops()
    gathered = TP_LOCAL_PARAMETER_BYTES
    check_mesh_collectives(result, {
        "fsdp": {"all_gather": (1, gathered, gathered // 2), "reduce_scatter": (1, gathered, gathered // 2)},
        "mp": {"all_reduce": (1, 8 * 16 * 4, 8 * 16 * 4)},
    }, {"pp": 0, "fsdp": 1, "mp": 2})
    pp = group_entry(result, result["dimension_groups"]["pp"])
    assert pp["ranks"] == [rank] and pp["size"] == 1


@pytest.mark.parametrize("rank", [0, 1, 2, 3])
def test_hsdp_shards_on_one_dimension_and_replicates_on_the_other(four_ranks, rank):
    result = with_our_operator_names(four_ranks[rank]["hsdp"])
    assert result["report"]["total"]["known_value"] == 2 * local_shard_flops()  # no tensor parallelism
    full = FULL_PARAMETER_BYTES
    check_mesh_collectives(result, {
        "shard": {"all_gather": (1, full, full // 2), "reduce_scatter": (1, full, full // 2)},
        # The reduce-scattered half of the gradients, all-reduced across
        # replicas (2(n-1)/n = 1 for n = 2).
        "replicate": {"all_reduce": (1, full // 2, full // 2)},
    }, {"replicate": 0, "shard": 1})


def test_mesh_job_report_sums_each_group(four_ranks):
    import torchscan_dispatch

    job = four_ranks[0]["fsdp_tp"]["job"]
    reports = [result["fsdp_tp"]["report"] for result in four_ranks]
    assert torchscan_dispatch.merge_rank_reports(reports) == job
    assert job["total"]["known_value"] == 4 * local_shard_flops()
    # Partial from the ranks' uncounted operators, not from missing ranks.
    assert job["total"]["status"] == "partial" and job["missing_ranks"] == []
    assert {entry["status"] for entry in job["per_rank"].values()} == {"partial"}
    by_group = job["communication"]["by_group"]
    groups = {group["name"]: group for group in job["groups"]}
    dp_groups = {result["fsdp_tp"]["dimension_groups"]["dp"] for result in four_ranks}
    tp_groups = {result["fsdp_tp"]["dimension_groups"]["tp"] for result in four_ranks}
    assert [sorted(groups[name]["ranks"]) for name in sorted(dp_groups, key=int)] == [[0, 2], [1, 3]]
    assert [sorted(groups[name]["ranks"]) for name in sorted(tp_groups, key=int)] == [[0, 1], [2, 3]]
    for name in dp_groups:
        assert groups[name]["mesh_dim"] == {"name": "dp", "index": 0}
        # Both member ranks' calls.
        assert by_group[name]["by_kind"]["all_gather"]["calls"] == 2
        assert by_group[name]["payload_bytes"] == 2 * 2 * TP_LOCAL_PARAMETER_BYTES
    for name in tp_groups:
        assert groups[name]["mesh_dim"] == {"name": "tp", "index": 1}
        assert by_group[name]["by_kind"] == {"all_reduce": {"calls": 2, "payload_bytes": 1024, "bus_bytes": 1024}}


def test_cli_merge_of_a_mesh_job_equals_in_process_gather(four_ranks, tmp_path):
    cli = merge_cli()
    paths = write_rank_reports(four_ranks, "fsdp_tp", tmp_path)
    merged = subprocess.run([cli, "merge", *paths, "--json", str(tmp_path / "job.json")],
                            capture_output=True, text=True, timeout=60)
    assert merged.returncode == 0, merged.stderr
    assert json.loads((tmp_path / "job.json").read_text()) == four_ranks[0]["fsdp_tp"]["job"]


# --- the example ---------------------------------------------------------------


def test_example_training_script(tmp_path):
    script = Path(__file__).resolve().parents[2] / "examples" / "distributed_gpt.py"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env.pop("TORCHELASTIC_RUN_ID", None)
    result = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
         "--master-port", str(free_port()), str(script), "--steps", "2", "--width", "32",
         "--length", "16", "--vocab", "64", "--layers", "1", "--peak-tflops", "1",
         "--report", str(tmp_path / "job.json")],
        capture_output=True, text=True, timeout=RANK_TIMEOUT_S, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    for rank in (0, 1):
        assert f"rank {rank} step 1:" in result.stdout
    job = json.loads((tmp_path / "job.json").read_text())
    assert job["ranks"] == [0, 1] and job["world_size"] == 2
    assert job["total"]["known_value"] == sum(entry["known_value"] for entry in job["per_rank"].values())
    # A partial total prints as the lower bound it is, with what is uncounted.
    assert job["total"]["status"] == "partial"
    assert f"{job['total']['known_value']} FLOPs" in result.stdout and "None FLOPs" not in result.stdout
    assert "at least " in result.stdout and "no formula for aten." in result.stdout
    # DDP all-reduces every parameter's gradient once per step on each rank.
    assert job["communication"]["by_kind"]["all_reduce"]["calls"] >= 2
