"""`torchscan roofline REPORT.json --device-model NAME` and `torchscan merge
... --device-model NAME`: the real binary on reports measure_flops makes
here, its numbers against hand computations from the device table, and
`python -m torchscan_dispatch roofline` printing and writing the same bytes."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import torchscan_dispatch
from torchscan_dispatch.devices import DEVICES, device_spec
from torchscan_dispatch.roofline import roofline

ROOT = Path(__file__).resolve().parents[2]
CLI = os.environ.get("TORCHSCAN_CLI", str(ROOT / "bazel-bin" / "tools" / "torchscan"))


def cpp_cli(*args):
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, check=False, timeout=300)


def python_cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "torchscan_dispatch", *map(str, args)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "python"), *sys.path])},
    )


# (64, 128) @ (128, 32) in bf16: 2*64*128*32 = 524,288 FLOPs; it reads
# (64*128 + 128*32) * 2 = 24,576 bytes and writes 64*32*2 = 4,096.
MM_FLOPS, MM_BYTES = 2 * 64 * 128 * 32, (64 * 128 + 128 * 32 + 64 * 32) * 2


@pytest.fixture(scope="module")
def report_file(tmp_path_factory):
    torch.manual_seed(0)
    a, b = torch.randn(64, 128).bfloat16(), torch.randn(128, 32).bfloat16()
    report = torchscan_dispatch.measure_flops(lambda: (a @ b).relu())
    path = tmp_path_factory.mktemp("reports") / "step.json"
    path.write_text(json.dumps(report))
    return path


def test_the_listing_gives_the_total_and_the_operators(report_file):
    result = cpp_cli("roofline", report_file, "--device-model", "H100 SXM")
    assert result.returncode == 0, result.stderr
    h100 = device_spec("H100 SXM")
    lines = result.stdout.splitlines()
    assert lines[0] == f"roofline on H100 SXM ({h100.source})"
    # mm: memory-bound on an H100 (18.96 FLOPs per byte, the bf16 ridge at 295.4).
    memory, compute = MM_BYTES / h100.memory_bandwidth, MM_FLOPS / h100.peak_flops["bf16"]
    ridge = h100.peak_flops["bf16"] / h100.memory_bandwidth
    assert (
        f"  aten.mm: lower bound {memory:.4g} s, memory-bound (compute {compute:.4g} s, memory {memory:.4g} s), "
        f"intensity {MM_FLOPS / MM_BYTES:.4g} FLOPs/byte, ridge point {ridge:.4g} FLOPs/byte, complete"
    ) in lines
    assert lines[1].startswith("total: lower bound ")
    assert lines[1].endswith("partial (missing: uncounted_operator: aten.relu)")
    assert lines[2] == "operators by lower bound (2 of 2):"
    assert lines[3].startswith("  aten.mm: ")  # the slowest first
    assert lines[4].startswith("  aten.relu: ") and lines[4].endswith("partial (missing: uncounted_operator: aten.relu)")


def test_json_is_pythons_roofline(report_file, tmp_path):
    path = tmp_path / "roofline.json"
    result = cpp_cli("roofline", report_file, "--device-model", "nvidia l4", "--json", path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("roofline on L4 (")
    written = json.loads(path.read_text())
    expected = roofline(json.loads(report_file.read_text()), "L4").to_json()
    assert written["total"]["seconds"] == pytest.approx(expected["total"]["seconds"], rel=1e-12)
    assert written["by_operator"]["aten.mm"]["bound"] == expected["by_operator"]["aten.mm"]["bound"]
    assert set(written) == set(expected)
    stdout = cpp_cli("roofline", report_file, "--device-model", "L4", "--json", "-")
    assert json.loads(stdout.stdout) == written  # '-': the JSON instead of the listing


def test_both_command_lines_print_and_write_the_same(report_file, tmp_path):
    for device in ("H100 SXM", "B200", "MI300X"):
        cpp = cpp_cli("roofline", report_file, "--device-model", device, "--json", tmp_path / "cpp.json")
        python = python_cli("roofline", report_file, "--device-model", device, "--json", tmp_path / "python.json")
        assert (cpp.returncode, python.returncode) == (0, 0), cpp.stderr + python.stderr
        assert python.stdout == cpp.stdout
        assert (tmp_path / "python.json").read_text() == (tmp_path / "cpp.json").read_text()


def test_an_unknown_device_is_exit_2_and_one_line_naming_the_table(report_file):
    names = ", ".join(spec.name for spec in DEVICES)
    expected = f"torchscan: unknown device model 'H100': the device table (exact names only) has {names}\n"
    for run in (cpp_cli, python_cli):
        result = run("roofline", report_file, "--device-model", "H100")
        assert (result.returncode, result.stdout, result.stderr) == (2, "", expected)


def test_a_crawl_report_is_exit_2_saying_it_has_no_bytes(tmp_path):
    crawl = cpp_cli("--example", "mlp", "--json", tmp_path / "crawl.json")
    assert crawl.returncode == 0, crawl.stderr
    expected = (
        "torchscan: roofline: a crawl report has no bytes moved; measure the workload with measure_flops "
        "for a roofline\n"
    )
    for run in (cpp_cli, python_cli):
        result = run("roofline", tmp_path / "crawl.json", "--device-model", "L4")
        assert (result.returncode, result.stderr) == (2, expected)


def test_without_a_device_model_is_exit_2(report_file):
    for run in (cpp_cli, python_cli):
        result = run("roofline", report_file)
        assert result.returncode == 2
        assert "roofline needs --device-model NAME" in result.stderr


def as_rank(report, rank, world_size=2):
    return {
        **report,
        "distributed": {"job_id": "j", "rank": rank, "world_size": world_size, "backend": "gloo", "groups": []},
    }


@pytest.fixture(scope="module")
def rank_files(tmp_path_factory):
    """Rank 0 ran the mm once, rank 1 four times: rank 1 is the slowest."""
    torch.manual_seed(0)
    a, b = torch.randn(64, 128).bfloat16(), torch.randn(128, 32).bfloat16()
    directory = tmp_path_factory.mktemp("ranks")
    paths = []
    for rank, repeats in enumerate((1, 4)):
        report = torchscan_dispatch.measure_flops(lambda: [a @ b for _ in range(repeats)])  # noqa: B023
        paths.append(directory / f"rank{rank}.json")
        paths[-1].write_text(json.dumps(as_rank(report, rank)))
    return paths


def test_merge_with_a_device_model_adds_each_ranks_lower_bound(rank_files):
    result = cpp_cli("merge", *rank_files, "--device-model", "H100 SXM")
    assert result.returncode == 0, result.stderr
    h100 = device_spec("H100 SXM")
    # Memory-bound: each rank's bytes over the bandwidth.
    rank0, rank1 = MM_BYTES / h100.memory_bandwidth, 4 * MM_BYTES / h100.memory_bandwidth
    assert result.stdout.endswith(
        f"roofline on H100 SXM: rank 0 {rank0:.4g} s, rank 1 {rank1:.4g} s; largest {rank1:.4g} s (rank 1)\n"
    )
    assert cpp_cli("merge", *rank_files).stdout + result.stdout.splitlines(keepends=True)[-1] == result.stdout


def test_merge_with_an_unknown_device_model_fails_first(rank_files):
    result = cpp_cli("merge", *rank_files, "--device-model", "H100")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.startswith("torchscan: unknown device model 'H100'")


def test_the_roofline_of_a_job_report_is_per_rank(rank_files, tmp_path):
    job = tmp_path / "job.json"
    assert cpp_cli("merge", *rank_files, "--json", job).returncode == 0
    h100 = device_spec("H100 SXM")
    rank1 = 4 * MM_BYTES / h100.memory_bandwidth
    for run in (cpp_cli, python_cli):
        result = run("roofline", job, "--device-model", "H100 SXM", "--json", tmp_path / f"{run.__name__}.json")
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        assert lines[1] == f"job: lower bound {rank1:.4g} s (rank 1, the largest: ranks run side by side)"
        assert lines[3].startswith(f"  rank 1: lower bound {rank1:.4g} s, memory-bound")
        written = json.loads((tmp_path / f"{run.__name__}.json").read_text())
        assert written["slowest_rank"] == 1 and written["seconds"] == pytest.approx(rank1, rel=1e-12)
    assert (tmp_path / "cpp_cli.json").read_text() == (tmp_path / "python_cli.json").read_text()


def test_html_is_the_reports_page_on_the_devices_roofline(report_file, tmp_path):
    # The page equals the Python API's to_html with the same device: the
    # command line adds nothing of its own but the title.
    title = f"{report_file} on H100 SXM"
    expected = torchscan_dispatch.to_html(json.loads(report_file.read_text()), title=title, device_model="H100 SXM")
    assert '<section id="roofline"><h2>Roofline on H100 SXM' in expected
    for run in (cpp_cli, python_cli):
        page = tmp_path / f"{run.__name__}.html"
        result = run("roofline", report_file, "--device-model", "H100 SXM", "--html", page)
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith("roofline on H100 SXM")  # the listing still prints
        assert page.read_text() == expected
        to_stdout = run("roofline", report_file, "--device-model", "H100 SXM", "--html", "-")
        assert (to_stdout.returncode, to_stdout.stdout) == (0, expected)


def test_html_of_a_job_report_is_exit_2_one_line(rank_files, tmp_path):
    job = tmp_path / "job.json"
    assert cpp_cli("merge", *rank_files, "--json", job).returncode == 0
    for run in (cpp_cli, python_cli):
        result = run("roofline", job, "--device-model", "L4", "--html", tmp_path / "page.html")
        assert result.returncode == 2
        assert result.stderr.startswith("torchscan: roofline: a job report sums ranks") and result.stderr.count("\n") == 1
        assert not (tmp_path / "page.html").exists()


def test_an_output_roofline_does_not_write_is_refused(report_file, tmp_path):
    for run in (cpp_cli, python_cli):
        result = run("roofline", report_file, "--device-model", "L4", "--folded", tmp_path / "f.txt")
        assert (result.returncode, result.stdout) == (2, "")
        assert result.stderr == "torchscan: roofline does not take --folded (only an analysis and compare do)\n"
        assert not (tmp_path / "f.txt").exists()
