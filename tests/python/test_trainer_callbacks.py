"""The trainer callbacks (torchscan_dispatch.integrations) in real trainers:
a transformers Trainer and a Lightning Trainer, each three steps on a CPU.

Every logged FLOP count is checked against FlopCounterMode's count of one
identical step (forward, backward and optimizer step) run by the test on a
copy of the model; MFU and HFU against their arithmetic with the given peak;
host safety by training with and without the callback (the same losses and
weights, bit for bit) and by an exception inside a step."""

import copy
import csv
import logging
import subprocess
import sys

import pytest
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.flop_counter import FlopCounterMode

import torchscan_dispatch
from reliability_support import thread_state
from torchscan_dispatch._imports import prepare_torchvision
from torchscan_dispatch.integrations import _metrics
from torchscan_dispatch.mfu import StepStats

PEAK = 1e12  # FLOP/s, given: a CPU has no table entry


def fcm(workload) -> int:
    """FlopCounterMode's total of `workload` run by itself."""
    with FlopCounterMode(display=False) as mode:
        workload()
    return mode.get_total_flops()


def assert_rates(logged: dict, peak: float) -> None:
    """MFU, HFU and FLOP/s from the logged counts and time, by hand."""
    seconds = logged["torchscan/step_seconds"]
    assert seconds > 0
    assert logged["torchscan/achieved_flops_per_second"] == logged["torchscan/hardware_flops"] / seconds
    assert logged["torchscan/mfu"] == logged["torchscan/model_flops"] / seconds / peak
    assert logged["torchscan/hfu"] == logged["torchscan/hardware_flops"] / seconds / peak


# --- The metrics themselves, from hand-built steps -----------------------------------


def test_metrics_of_one_step_are_its_values_and_of_several_their_means():
    one = StepStats(
        index=0,
        flops=1000,
        model_flops=800,
        recomputed_flops=200,
        mask_aware_flops=600,
        seconds=0.5,
        peak_flops_per_second=4e3,
    )
    two = StepStats(index=1, flops=3000, model_flops=3000, mask_aware_flops=3000, seconds=1.5, peak_flops_per_second=4e3)
    assert _metrics.metrics([one]) == {
        "torchscan/model_flops": 800,
        "torchscan/hardware_flops": 1000,
        "torchscan/recomputed_flops": 200,
        "torchscan/mask_aware_flops": 600,
        "torchscan/step_seconds": 0.5,
        "torchscan/achieved_flops_per_second": 2000.0,
        "torchscan/mfu": 0.4,  # 800 / 0.5 / 4000
        "torchscan/hfu": 0.5,
        "torchscan/complete": 1,
    }
    both = _metrics.metrics([one, two])
    assert both["torchscan/model_flops"] == (800 + 3000) / 2
    assert both["torchscan/hardware_flops"] == 2000
    assert both["torchscan/mask_aware_flops"] == (600 + 3000) / 2
    assert both["torchscan/step_seconds"] == 1.0
    # Rates over the summed time, not means of rates.
    assert both["torchscan/mfu"] == 3800 / 2.0 / 4e3
    assert _metrics.metrics([]) == {}


def test_no_peak_leaves_mfu_out_and_the_mask_aware_count_is_logged():
    stats = StepStats(index=0, flops=10, model_flops=10, mask_aware_flops=6, seconds=1.0, peak_flops_per_second=None)
    logged = _metrics.metrics([stats])
    assert "torchscan/mfu" not in logged and "torchscan/hfu" not in logged
    assert logged["torchscan/mask_aware_flops"] == 6
    assert set(logged) <= set(_metrics.METRIC_NAMES)


@torch.library.custom_op("tsd_callbacks_test::mystery", mutates_args=())
def _mystery(x: torch.Tensor) -> torch.Tensor:
    return x * 2


def test_a_partial_step_is_a_lower_bound_with_its_operator_named_once(caplog):
    meter = torchscan_dispatch.StepMeter(peak_flops_per_second=PEAK)
    step, window = _metrics.OpenStep(meter), _metrics.StepWindow()
    a, b = torch.randn(4, 8), torch.randn(8, 3)
    with caplog.at_level(logging.WARNING, logger="torchscan_dispatch.integrations"):
        for number in (1, 2):
            step.begin()
            _mystery(a @ b)
            window.add(step.end(), number)
    logged = window.take_metrics()
    assert logged["torchscan/complete"] == 0
    assert logged["torchscan/model_flops"] == 2 * 4 * 8 * 3  # the known part: the mm
    assert window.uncounted_operators == ["tsd_callbacks_test.mystery"]
    warnings = [r.getMessage() for r in caplog.records if "lower bound" in r.getMessage()]
    assert warnings == ["torchscan: the FLOPs of training step 1 are a lower bound (partial): "
                        "no count for tsd_callbacks_test.mystery"]  # fmt: skip
    assert meter.steps == []  # not kept


def test_an_abandoned_step_switches_counting_off():
    before = thread_state()
    step = _metrics.OpenStep(torchscan_dispatch.StepMeter())
    step.begin()
    step.abandon("test")
    assert not step.is_open and step.end() is None
    assert thread_state() == before
    a, b = torch.randn(4, 8), torch.randn(8, 3)
    assert torchscan_dispatch.measure_flops(lambda: a @ b)["total"]["value"] == 2 * 4 * 8 * 3


def test_importing_the_package_and_integrations_imports_no_trainer():
    code = (
        "import sys, torchscan_dispatch, torchscan_dispatch.integrations as i\n"
        "assert i.METRIC_NAMES[0] == 'torchscan/model_flops'\n"
        "print(sorted(m for m in ('transformers', 'lightning', 'accelerate') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


# --- transformers.Trainer ---------------------------------------------------------


@pytest.fixture(scope="module")
def transformers():
    prepare_torchvision()
    return pytest.importorskip("transformers")


SEQUENCE, BATCH = 8, 2


def gpt2(transformers):
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=64, n_positions=16, n_embd=32, n_layer=2, n_head=2)
    # Eager attention: matmuls that FlopCounterMode counts (it counts
    # nothing for the CPU flash attention that SDPA would pick).
    return transformers.GPT2LMHeadModel._from_config(config, attn_implementation="eager")


def token_dataset():
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(0, 64, (4 * BATCH, SEQUENCE), generator=generator)
    return [{"input_ids": row, "labels": row} for row in ids]


class Recorder:
    """A callback after the metrics callback: what a report_to integration sees."""

    def __init__(self, transformers):
        recorder = self

        class _Recorder(transformers.TrainerCallback):
            def on_log(self, args, state, control, logs=None, **kwargs):
                recorder.logs.append(dict(logs))

        self.logs, self.callback = [], _Recorder()


def hf_trainer(transformers, tmp_path, model, callbacks=(), **options):
    arguments = transformers.TrainingArguments(
        output_dir=str(tmp_path), per_device_train_batch_size=BATCH, logging_steps=1,
        report_to=[], use_cpu=True, save_strategy="no", disable_tqdm=True, seed=0, dataloader_num_workers=0,
        **{"max_steps": 3, **options},
    )  # fmt: skip
    return transformers.Trainer(model=model, args=arguments, train_dataset=token_dataset(), callbacks=list(callbacks))


def hf_step_flops(model, micro_batches=1) -> int:
    """One training step as the Trainer runs it (forward and backward of each
    micro-batch, AdamW step, zero_grad) on a copy of the model, under
    FlopCounterMode."""
    model = copy.deepcopy(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)
    ids = token_dataset()[0]["input_ids"].repeat(BATCH, 1)

    def step():
        for _ in range(micro_batches):
            model(input_ids=ids, labels=ids).loss.backward()
        optimizer.step()
        optimizer.zero_grad()

    return fcm(step)


def assert_lower_bound_named_once(callback, caplog, elementwise):
    """A real training step runs elementwise operators, which have no formula
    under the default method: the count is partial, its known part the
    counted matrix products, and what was not counted is named once."""
    assert set(elementwise) <= set(callback.uncounted_operators)
    assert not {"aten.mm", "aten.addmm", "aten.bmm"} & set(callback.uncounted_operators)
    warnings = [r.getMessage() for r in caplog.records if "lower bound" in r.getMessage()]
    assert len(warnings) == 1 and warnings[0].startswith("torchscan: the FLOPs of training step 1 ")
    assert all(name in warnings[0] for name in callback.uncounted_operators)


def test_transformers_trainer_logs_exact_step_flops_and_mfu(transformers, tmp_path, caplog):
    from torchscan_dispatch.integrations import TrainerStepMeterCallback

    model = gpt2(transformers)
    expected = hf_step_flops(model)
    recorder = Recorder(transformers)
    trainer = hf_trainer(transformers, tmp_path, model, [recorder.callback])
    callback = TrainerStepMeterCallback.attach(trainer, peak_flops_per_second=PEAK)
    assert trainer.callback_handler.callbacks[0] is callback  # before every reporter
    trainer.train()

    steps = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert [entry["step"] for entry in steps] == [1, 2, 3]
    for entry in steps:
        assert entry["torchscan/model_flops"] == expected
        assert entry["torchscan/hardware_flops"] == expected  # nothing recomputed
        assert entry["torchscan/recomputed_flops"] == 0
        assert entry["torchscan/complete"] == 0  # a lower bound: see below
        assert_rates(entry, PEAK)
    # A later callback (a report_to integration) saw the same values.
    seen = [logs for logs in recorder.logs if "loss" in logs]
    assert [{k: v for k, v in logs.items() if k.startswith("torchscan/")} for logs in seen] == [
        {k: v for k, v in entry.items() if k.startswith("torchscan/")} for entry in steps
    ]
    assert steps[-1]["torchscan/mfu"] == callback.last_step.mfu
    assert_lower_bound_named_once(callback, caplog, ["aten.native_layer_norm", "aten._softmax", "aten.tanh"])


def test_transformers_trainer_step_spans_every_accumulated_micro_batch(transformers, tmp_path):
    from torchscan_dispatch.integrations import TrainerStepMeterCallback

    model = gpt2(transformers)
    expected = hf_step_flops(model, micro_batches=2)
    assert expected != hf_step_flops(model)
    trainer = hf_trainer(transformers, tmp_path, model, max_steps=2, gradient_accumulation_steps=2)
    TrainerStepMeterCallback.attach(trainer)
    trainer.train()
    steps = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert [entry["torchscan/model_flops"] for entry in steps] == [expected, expected]


def test_transformers_metrics_go_to_training_logs_not_evaluation_logs(transformers):
    from torchscan_dispatch.integrations import TrainerStepMeterCallback

    callback = TrainerStepMeterCallback()
    callback._window.add(StepStats(index=0, flops=10, model_flops=10, seconds=1.0), 1)
    state = transformers.TrainerState()
    evaluation = {"eval_loss": 1.0}
    callback.on_log(None, state, None, logs=evaluation)
    assert evaluation == {"eval_loss": 1.0}
    training = {"loss": 1.0}
    callback.on_log(None, state, None, logs=training)
    assert training["torchscan/model_flops"] == 10
    again = {"loss": 1.0}
    callback.on_log(None, state, None, logs=again)  # no step since the last log
    assert again == {"loss": 1.0}


def test_transformers_trainer_losses_and_weights_are_unchanged_by_the_callback(transformers, tmp_path):
    from torchscan_dispatch.integrations import TrainerStepMeterCallback

    runs = []
    for measured in (False, True):
        model = gpt2(transformers)
        trainer = hf_trainer(transformers, tmp_path / str(measured), model)
        if measured:
            TrainerStepMeterCallback.attach(trainer)
        trainer.train()
        losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
        runs.append((losses, [p.detach().clone() for p in model.parameters()]))
    (plain_losses, plain_weights), (measured_losses, measured_weights) = runs
    assert measured_losses == plain_losses and len(plain_losses) == 3
    assert all(torch.equal(a, b) for a, b in zip(plain_weights, measured_weights, strict=True))


def test_transformers_trainer_exception_in_a_step_propagates_and_ends_counting(transformers, tmp_path):
    from torchscan_dispatch.integrations import TrainerStepMeterCallback

    model = gpt2(transformers)
    error = RuntimeError("the second forward fails")
    calls = []

    def fail_on_second_call(module, args, kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise error

    model.register_forward_pre_hook(fail_on_second_call, with_kwargs=True)
    trainer = hf_trainer(transformers, tmp_path, model)
    callback = TrainerStepMeterCallback.attach(trainer)
    before = thread_state()
    with pytest.raises(RuntimeError) as raised:
        trainer.train()
    assert raised.value is error
    assert thread_state() == before
    assert callback.last_step is not None and callback.last_step.model_flops > 0  # the first step
    a, b = torch.randn(4, 8), torch.randn(8, 3)
    assert torchscan_dispatch.measure_flops(lambda: a @ b)["total"]["value"] == 2 * 4 * 8 * 3


# --- Lightning --------------------------------------------------------------------


@pytest.fixture(scope="module")
def pl():
    prepare_torchvision()
    return pytest.importorskip("lightning.pytorch")


def tiny_module(pl, fail_at=None):
    class Tiny(pl.LightningModule):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
            self.losses = []

        def training_step(self, batch, batch_idx):
            if batch_idx == fail_at:
                raise error
            x, y = batch
            loss = F.mse_loss(self.net(x), y)
            self.losses.append(loss.detach().clone())
            return loss

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    error = RuntimeError(f"batch {fail_at} fails")
    return Tiny(), error


def batches():
    generator = torch.Generator().manual_seed(2)
    data = torch.utils.data.TensorDataset(torch.randn(24, 16, generator=generator), torch.randn(24, 4, generator=generator))
    return torch.utils.data.DataLoader(data, batch_size=8)


def pl_trainer(pl, tmp_path, callbacks=()):
    from lightning.pytorch.loggers import CSVLogger

    return pl.Trainer(
        accelerator="cpu", devices=1, max_steps=3, logger=CSVLogger(str(tmp_path)), log_every_n_steps=1,
        callbacks=list(callbacks), enable_checkpointing=False, enable_progress_bar=False,
        enable_model_summary=False,
    )  # fmt: skip


def test_lightning_trainer_logs_exact_step_flops_and_mfu(pl, tmp_path, caplog):
    from torchscan_dispatch.integrations import LightningStepMeterCallback

    module, _ = tiny_module(pl)
    reference = copy.deepcopy(module.net)
    optimizer = torch.optim.SGD(reference.parameters(), lr=0.1)
    x, y = next(iter(batches()))

    def step():
        F.mse_loss(reference(x), y).backward()
        optimizer.step()
        optimizer.zero_grad()

    expected = fcm(step)
    callback = LightningStepMeterCallback(peak_flops_per_second=PEAK)
    trainer = pl_trainer(pl, tmp_path, [callback])
    trainer.fit(module, batches())

    with open(trainer.logger.experiment.metrics_file_path, newline="") as file:
        rows = [row for row in csv.DictReader(file) if row.get("torchscan/model_flops")]
    assert [int(row["step"]) for row in rows] == [0, 1, 2]
    for row in rows:
        logged = {name: float(value) for name, value in row.items() if name.startswith("torchscan/") and value}
        assert logged["torchscan/model_flops"] == expected
        assert logged["torchscan/hardware_flops"] == expected
        assert logged["torchscan/complete"] == 0
        assert_rates(logged, PEAK)
    assert float(rows[-1]["torchscan/mfu"]) == callback.last_step.mfu
    # float64, not the float32 Lightning makes of a Python number.
    assert trainer.callback_metrics["torchscan/model_flops"].dtype == torch.float64
    assert trainer.callback_metrics["torchscan/model_flops"].item() == expected
    assert_lower_bound_named_once(callback, caplog, ["aten.relu", "aten.mse_loss"])


def test_lightning_losses_and_weights_are_unchanged_by_the_callback(pl, tmp_path):
    from torchscan_dispatch.integrations import LightningStepMeterCallback

    runs = []
    for measured in (False, True):
        module, _ = tiny_module(pl)
        callbacks = [LightningStepMeterCallback()] if measured else []
        pl_trainer(pl, tmp_path / str(measured), callbacks).fit(module, batches())
        runs.append((module.losses, [p.detach().clone() for p in module.parameters()]))
    (plain_losses, plain_weights), (measured_losses, measured_weights) = runs
    assert len(plain_losses) == 3
    assert all(torch.equal(a, b) for a, b in zip(plain_losses, measured_losses, strict=True))
    assert all(torch.equal(a, b) for a, b in zip(plain_weights, measured_weights, strict=True))


def test_lightning_exception_in_a_step_propagates_and_ends_counting(pl, tmp_path):
    from torchscan_dispatch.integrations import LightningStepMeterCallback

    module, error = tiny_module(pl, fail_at=1)
    callback = LightningStepMeterCallback()
    before = thread_state()
    with pytest.raises(RuntimeError) as raised:
        pl_trainer(pl, tmp_path, [callback]).fit(module, batches())
    assert raised.value is error
    assert thread_state() == before
    assert callback.last_step is not None and callback.last_step.model_flops > 0  # batch 0
