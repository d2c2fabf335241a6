"""A ``transformers.TrainerCallback`` that measures every training step with
``StepMeter`` and adds model FLOPs, hardware FLOPs, MFU and HFU to the
Trainer's own logs (every ``report_to`` integration, ``log_history``).

The measured step is the Trainer's optimizer step: ``on_step_begin`` opens
it before the first micro-batch's forward pass, ``on_step_end`` closes it
after every micro-batch's forward and backward passes (gradient
accumulation), gradient clipping, ``optimizer.step()``, the learning-rate
scheduler and ``zero_grad``. Batch loading (before ``on_step_begin``) and
logging, evaluation and saving (after ``on_step_end``) are outside it.
"""

from __future__ import annotations

import functools
from typing import Any

from torchscan_dispatch._imports import prepare_torchvision
from torchscan_dispatch.integrations._metrics import METRIC_NAMES, MeteredSteps

# transformers imports torchvision, whose PyPI (CUDA) build cannot load
# beside a CPU torch without this.
prepare_torchvision()

from transformers import TrainerCallback  # noqa: E402

__all__ = ["METRIC_NAMES", "TrainerStepMeterCallback"]


class TrainerStepMeterCallback(MeteredSteps, TrainerCallback):
    """Logs ``torchscan/*`` metrics (``METRIC_NAMES``) with every training log
    of a ``transformers.Trainer``.

    The keywords are ``StepMeter``'s (``peak_flops_per_second``, ``device``,
    ``dtype``, ``synchronize``): without a known peak (a CPU, a device the
    table lacks) ``torchscan/mfu`` and ``torchscan/hfu`` are left out. A log
    covers the optimizer steps since the previous one (``logging_steps``):
    FLOPs and seconds are means per step, rates are over their summed time.

    ``on_log`` adds the metrics to the ``logs`` it is given (and to the
    matching ``state.log_history`` entry). Callbacks called before this one
    (the ``report_to`` integrations, when this one was passed in
    ``callbacks=``) have already seen ``logs``: ``attach(trainer)`` puts the
    callback first instead, so every integration sees the metrics.

    A step that never reaches ``on_step_end`` (an exception out of
    ``trainer.train()``) is dropped, and counting switched off, by the
    ``train()`` wrapper ``attach`` installs, by ``on_train_begin`` and
    ``on_train_end``, or by ``close()``.
    """

    @classmethod
    def attach(cls, trainer: Any, **meter_options: Any) -> TrainerStepMeterCallback:
        """A new callback, first in ``trainer``'s callbacks (before the
        ``report_to`` integrations, which then log its metrics), and
        ``trainer.train`` wrapped so that an exception out of it ends an open
        step (it propagates unchanged)."""
        handler = getattr(trainer, "callback_handler", None)
        if handler is None:
            raise TypeError(f"attach expects a transformers.Trainer, got {type(trainer).__name__}")
        if any(isinstance(existing, cls) for existing in handler.callbacks):
            raise ValueError(f"this Trainer already has a {cls.__name__}")
        callback = cls(**meter_options)
        handler.callbacks.insert(0, callback)
        train = trainer.train

        @functools.wraps(train)
        def train_and_close(*args: Any, **kwargs: Any) -> Any:
            try:
                return train(*args, **kwargs)
            finally:
                callback.close()

        trainer.train = train_and_close
        return callback

    def close(self) -> None:
        """Ends a step left open (no report, nothing logged)."""
        self._step.abandon("the training step did not finish")

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        # A previous train() that raised (accelerate's find_executable_batch_size
        # retries after an out-of-memory error, calling on_train_begin again).
        self.close()
        self._window.steps.clear()

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._step.begin()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        stats = self._step.end()
        if stats is not None:
            self.last_step = stats
            self._window.add(stats, state.global_step)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.close()

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        # Only training logs: not an evaluation's (eval_loss, ...), which
        # comes between two training logs when evaluation is more frequent.
        if logs is None or not self._window.steps or any(key.startswith("eval_") for key in logs):
            return
        before = dict(logs)
        metrics = self._window.take_metrics()
        logs.update(metrics)
        # NOTE [log_history]
        # Trainer.log appends a copy of ``logs`` (with "step") to
        # state.log_history before it calls on_log; that copy is what
        # trainer_state.json keeps, so it gets the metrics too.
        history = state.log_history
        if history and history[-1].get("step") == state.global_step:
            last = history[-1]
            if all(last.get(key) == value for key, value in before.items()):
                last.update(metrics)
