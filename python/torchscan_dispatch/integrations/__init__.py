"""StepMeter where trainers already log: callbacks for the Hugging Face
``transformers.Trainer`` and for Lightning.

::

    from torchscan_dispatch.integrations import TrainerStepMeterCallback

    callback = TrainerStepMeterCallback.attach(trainer, peak_flops_per_second=312e12)
    trainer.train()  # every log now has torchscan/model_flops, torchscan/mfu, ...

    from torchscan_dispatch.integrations import LightningStepMeterCallback

    trainer = lightning.pytorch.Trainer(callbacks=[LightningStepMeterCallback()])

Each training step (the optimizer step included) is one ``StepMeter`` step;
the callbacks log its metrics (``METRIC_NAMES``) to the trainer's own
loggers. Neither ``transformers`` nor ``lightning`` is imported until one of
the two names is: ``import torchscan_dispatch`` never imports them.
"""

from __future__ import annotations

from typing import Any

from torchscan_dispatch.integrations._metrics import METRIC_NAMES

__all__ = ["METRIC_NAMES", "LightningStepMeterCallback", "TrainerStepMeterCallback"]

# Name -> the module that defines it; imported on first access.
_LAZY = {
    "TrainerStepMeterCallback": "torchscan_dispatch.integrations.transformers",
    "LightningStepMeterCallback": "torchscan_dispatch.integrations.lightning",
}


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value
