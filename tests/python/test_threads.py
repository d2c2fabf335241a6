"""Work on other threads during a measurement: by default it is not counted
and makes the report partial, naming each thread and operator; with
threads="follow" the threads and pool tasks the workload starts are counted.
Expected values are hand computations (mm of [m,k]x[k,n] is 2*m*k*n) or
FlopCounterMode's count of the same work run on one thread."""

import concurrent.futures
import threading

import pytest
import torch
from torch.utils.data import DataLoader, Dataset

import torchscan_dispatch
from conftest import flop_counter_mode_counts
from reliability_support import mm_flops, thread_state
from torchscan_dispatch._native import unseen_thread_watches

M, K, N = 4, 8, 2
A, B = torch.randn(M, K), torch.randn(K, N)
MM = mm_flops(M, K, N)


def other_thread_work(ids):
    """Two matmuls on the calling thread, whose native id goes to ``ids``."""
    ids.add(threading.get_native_id())
    torch.mm(A, B)
    torch.mm(A, B)


def unseen(report):
    return [d for d in report["diagnostics"] if d["code"] == "unseen_work"]


def assert_reports_threads(report, ids):
    """Partial, known value the calling thread's one mm, and one unseen_work
    diagnostic for aten.mm naming every other thread."""
    assert report["total"]["status"] == "partial"
    assert report["total"]["known_value"] == MM
    assert report["by_operator"] == {"aten.mm": MM}
    (diagnostic,) = [d for d in unseen(report) if d["operator"] == "aten.mm"]
    for native_id in ids:
        assert f"on thread {native_id} " in diagnostic["message"]


def assert_counted(report, other_matmuls):
    """Complete and equal to FlopCounterMode's count of the same work run
    on one thread: one mm here and the other threads' ones."""
    calls = 1 + other_matmuls
    expected, _ = flop_counter_mode_counts(lambda: [torch.mm(A, B) for _ in range(calls)])
    assert expected == calls * MM
    assert report["total"] == {**report["total"], "status": "complete", "value": expected}
    assert unseen(report) == []


def with_pool(ids):
    torch.mm(A, B)
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(lambda _: other_thread_work(ids), range(2)))
    return 4


def with_thread(ids):
    torch.mm(A, B)
    thread = threading.Thread(target=other_thread_work, args=(ids,))
    thread.start()
    thread.join()
    return 2


EXISTING_POOL = concurrent.futures.ThreadPoolExecutor(max_workers=1)
EXISTING_POOL.submit(torch.mm, A, B).result()  # its worker exists already


def with_existing_pool(ids):
    torch.mm(A, B)
    EXISTING_POOL.submit(other_thread_work, ids).result()
    return 2


class MatmulDataset(Dataset):
    """Items that each cost two matmuls to make."""

    def __init__(self, ids):
        self.ids = ids

    def __len__(self):
        return 2

    def __getitem__(self, index):
        self.ids.add(threading.get_native_id())
        torch.mm(A, B)
        return torch.mm(A, B)


def iterate_dataloader(ids, on_thread):
    """Iterates a DataLoader, one item per batch, on a prefetching thread or
    on the calling thread. DataLoader itself runs operators that have no
    formula (random_ and item() for its base seed), on whatever thread
    iterates, and makes any report partial."""
    torch.mm(A, B)
    batches = []
    loader = DataLoader(MatmulDataset(ids), batch_size=1, collate_fn=lambda batch: batch[0])
    if on_thread:
        thread = threading.Thread(target=lambda: batches.extend(loader))
        thread.start()
        thread.join()
    else:
        batches.extend(loader)
    assert len(batches) == 2
    return 4


def with_dataloader_thread(ids):
    return iterate_dataloader(ids, on_thread=True)


WORKLOADS = [with_pool, with_thread, with_existing_pool]


@pytest.mark.parametrize("workload", WORKLOADS, ids=lambda w: w.__name__)
def test_other_threads_make_the_report_partial_and_are_named(workload):
    ids = set()
    report = torchscan_dispatch.measure_flops(lambda: workload(ids))
    assert_reports_threads(report, ids)
    assert unseen_thread_watches() == 0


@pytest.mark.parametrize("workload", WORKLOADS, ids=lambda w: w.__name__)
def test_follow_counts_the_threads_the_workload_starts(workload):
    other_matmuls = []
    report = torchscan_dispatch.measure_flops(lambda: other_matmuls.append(workload(set())), threads="follow")
    assert_counted(report, other_matmuls[0])


def test_a_dataloader_thread_makes_the_report_partial_and_is_named():
    ids = set()
    report = torchscan_dispatch.measure_flops(lambda: with_dataloader_thread(ids))
    assert_reports_threads(report, ids)


def test_follow_counts_a_dataloader_thread_as_the_calling_thread():
    threaded = torchscan_dispatch.measure_flops(lambda: with_dataloader_thread(set()), threads="follow")
    inline = torchscan_dispatch.measure_flops(lambda: iterate_dataloader(set(), on_thread=False))
    assert unseen(threaded) == []
    for key in ("total", "by_operator", "diagnostics"):
        assert threaded[key] == inline[key], key
    expected, _ = flop_counter_mode_counts(lambda: iterate_dataloader(set(), on_thread=False))
    assert threaded["by_operator"] == {"aten.mm": expected} == {"aten.mm": 5 * MM}


def test_flop_counter_follows_threads_too():
    with torchscan_dispatch.FlopCounter(threads="follow") as counter:
        other_matmuls = with_pool(set())
    assert_counted(counter.report(), other_matmuls)


def test_a_thread_running_only_views_leaves_the_report_complete():
    def views():
        A.t()
        A.view(K, M)
        A[1:]

    def workload():
        torch.mm(A, B)
        thread = threading.Thread(target=views)
        thread.start()
        thread.join()

    report = torchscan_dispatch.measure_flops(workload)
    assert report["total"] == {**report["total"], "status": "complete", "value": MM}


def test_a_thread_with_its_own_measurement_is_not_unseen():
    inner = []

    def workload():
        torch.mm(A, B)
        thread = threading.Thread(target=lambda: inner.append(torchscan_dispatch.measure_flops(lambda: torch.mm(A, B))))
        thread.start()
        thread.join()

    report = torchscan_dispatch.measure_flops(workload)
    assert report["total"] == {**report["total"], "status": "complete", "value": MM}
    assert inner[0]["total"]["value"] == MM


def test_nothing_stays_installed_after_the_measurement():
    start, submit = threading.Thread.start, concurrent.futures.ThreadPoolExecutor.submit
    torchscan_dispatch.measure_flops(lambda: with_pool(set()), threads="follow")
    assert unseen_thread_watches() == 0
    assert (threading.Thread.start, concurrent.futures.ThreadPoolExecutor.submit) == (start, submit)
    # An unrelated thread's matmuls between measurements reach no report.
    thread = threading.Thread(target=other_thread_work, args=(set(),))
    thread.start()
    thread.join()
    report = torchscan_dispatch.measure_flops(lambda: torch.mm(A, B))
    assert report["total"] == {**report["total"], "status": "complete", "value": MM}
    state = []
    EXISTING_POOL.submit(lambda: state.append(thread_state())).result()
    assert state == [thread_state()]  # the pool's worker does not count


@pytest.mark.parametrize("threads", ["report", "follow"])
def test_exceptions_propagate_and_state_is_restored(threads):
    before = thread_state()
    start = threading.Thread.start

    def workload():
        with_pool(set())
        raise KeyError("from the workload")

    with pytest.raises(KeyError, match="from the workload"):
        torchscan_dispatch.measure_flops(workload, threads=threads)
    assert thread_state() == before
    assert threading.Thread.start is start
    assert unseen_thread_watches() == 0


def test_an_exception_in_a_followed_task_reaches_its_future():
    def workload():
        torch.mm(A, B)
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            with pytest.raises(ValueError, match="task"):
                pool.submit(lambda: (torch.mm(A, B), int("task"))).result()

    report = torchscan_dispatch.measure_flops(workload, threads="follow")
    assert report["total"] == {**report["total"], "status": "complete", "value": 2 * MM}


def test_an_unknown_threads_mode_is_refused():
    with pytest.raises(ValueError, match="threads must be one of"):
        torchscan_dispatch.measure_flops(lambda: None, threads="count")


def test_the_measuring_thread_keeps_the_users_profiler():
    def workload():
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profiler:
            torch.mm(A, B)
            with_thread(set())
        assert "aten::mm" in [event.name for event in profiler.events()]

    report = torchscan_dispatch.measure_flops(workload)
    assert report["total"]["known_value"] == 2 * MM


# The watch's global RecordFunction callback must leave every other
# RecordFunction user as it finds it (docs/design.md, "Work on threads
# without a session"): a profiler sees, call for call, the events it sees
# when nothing is measured, whether it starts before the measurement or
# inside it, on the measuring thread or on another one.


def profiled_work():
    """Operators, one with a formula, and a record_function range."""
    with torch.autograd.profiler.record_function("torchscan_test_range"):
        torch.mm(A, B)
        torch.add(A, A)
    torch.relu(A)


def profiled_events(work):
    """The profiler's events for `work`, by name, counted, in order of name."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profiler:
        work()
    names = [event.name for event in profiler.events()]
    return sorted((name, names.count(name)) for name in set(names))


def on_new_thread(work):
    result = []
    thread = threading.Thread(target=lambda: result.append(work()))
    thread.start()
    thread.join()
    return result[0]


UNMEASURED_EVENTS = profiled_events(profiled_work)


def test_the_unmeasured_profile_has_the_range_and_the_operators():
    names = dict(UNMEASURED_EVENTS)
    assert names["torchscan_test_range"] == 1
    assert names["aten::mm"] == 1
    assert names["aten::add"] == 1


def test_a_profiler_started_inside_a_measurement_sees_the_same_events():
    events = []
    report = torchscan_dispatch.measure_flops(lambda: events.append(profiled_events(profiled_work)))
    assert UNMEASURED_EVENTS == events[0]
    assert report["by_operator"]["aten.mm"] == MM


def test_a_profiler_started_before_a_measurement_sees_the_same_events():
    reports = []
    measured = profiled_events(lambda: reports.append(torchscan_dispatch.measure_flops(profiled_work)))
    unmeasured = profiled_events(lambda: (profiled_work(), reports.append(None)))
    # measure_flops itself runs no operator the profiler records.
    assert unmeasured == measured
    assert reports[0]["by_operator"]["aten.mm"] == MM


def test_another_threads_profiler_sees_the_same_events_during_a_measurement():
    unmeasured = on_new_thread(lambda: profiled_events(profiled_work))
    events = []
    report = torchscan_dispatch.measure_flops(
        lambda: (torch.mm(A, B), events.append(on_new_thread(lambda: profiled_events(profiled_work))))
    )
    assert unmeasured == events[0]
    assert report["total"]["status"] == "partial"  # that thread is unseen
