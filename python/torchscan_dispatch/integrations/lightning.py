"""A Lightning ``Callback`` that measures every training batch with
``StepMeter`` and logs model FLOPs, hardware FLOPs, MFU and HFU through
``pl_module.log`` (every logger of the Trainer, ``callback_metrics``).

The measured step is one training batch: ``on_train_batch_start`` opens it
before ``training_step``, ``on_train_batch_end`` closes it after the forward
and backward passes, ``optimizer.step()`` (in automatic optimization
Lightning runs the forward and backward passes inside ``optimizer.step``'s
closure), ``zero_grad`` and the step-interval learning-rate schedulers.
With ``accumulate_grad_batches`` > 1 the optimizer step is in the last
batch of each accumulation.
"""

from __future__ import annotations

from typing import Any

import torch

from torchscan_dispatch._imports import prepare_torchvision
from torchscan_dispatch.integrations._metrics import METRIC_NAMES, MeteredSteps

# lightning imports torchmetrics, which imports torchvision (see
# _imports.prepare_torchvision).
prepare_torchvision()

from lightning.pytorch import Callback  # noqa: E402

__all__ = ["METRIC_NAMES", "LightningStepMeterCallback"]


class LightningStepMeterCallback(MeteredSteps, Callback):
    """Logs ``torchscan/*`` metrics (``METRIC_NAMES``) for every training
    batch with ``pl_module.log(..., on_step=True, on_epoch=False)``; the
    Trainer's loggers write them every ``log_every_n_steps``.

    The keywords are ``StepMeter``'s (``peak_flops_per_second``, ``device``,
    ``dtype``, ``synchronize``): without a known peak (a CPU, a device the
    table lacks) ``torchscan/mfu`` and ``torchscan/hfu`` are left out.

    NOTE [Logged dtypes]
    ``pl_module.log`` stores a Python number, and any integer tensor, as a
    float32 tensor: a FLOP count above 2**24 would lose its last digits.
    Every value goes as a float64 tensor instead (kept as float64 for
    ``on_step`` values): counts stay exact up to 2**53.

    A step that never reaches ``on_train_batch_end`` (an exception, which
    Lightning reports through ``on_exception``; a batch the module skips by
    returning -1 from its ``on_train_batch_start``) is dropped and counting
    switched off.
    """

    def close(self) -> None:
        """Ends a step left open (no report, nothing logged)."""
        self._step.abandon("the training batch did not finish")

    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int) -> None:
        self._step.begin()

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        stats = self._step.end()
        if stats is None:
            return
        self.last_step = stats
        self._window.add(stats, trainer.global_step)
        for name, value in self._window.take_metrics().items():
            pl_module.log(name, torch.tensor(value, dtype=torch.float64), on_step=True, on_epoch=False, batch_size=1)

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self.close()

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self.close()
