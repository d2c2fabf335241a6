"""What both trainer callbacks share: a StepMeter step opened in one hook and
closed in another, and the metrics logged for the steps since the last log.

Trainer-free: neither transformers nor lightning is imported here.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Sequence
from typing import Any

from torchscan_dispatch.mfu import StepMeter, StepStats

logger = logging.getLogger("torchscan_dispatch.integrations")

PREFIX = "torchscan/"

# Every name a callback logs (a name whose value is unknown is left out:
# ``mfu`` and ``hfu`` without a peak).
METRIC_NAMES = (
    # Per step, averaged over the steps since the last log (exact integers
    # when a log covers one step): the model FLOPs (recomputation left out),
    # everything that ran (hardware FLOPs), and the part recomputed.
    "torchscan/model_flops",
    "torchscan/hardware_flops",
    "torchscan/recomputed_flops",
    # Hardware FLOPs with each attention call charged for the (query, key)
    # pairs its mask allows (StepStats.mask_aware_flops).
    "torchscan/mask_aware_flops",
    "torchscan/step_seconds",
    # Hardware FLOPs per second of step time.
    "torchscan/achieved_flops_per_second",
    # Model and hardware FLOPs over step time and the peak.
    "torchscan/mfu",
    "torchscan/hfu",
    # 1 when every step's count is complete; 0 when a count is partial and
    # the FLOPs (and MFU, HFU) are lower bounds: the operators that were not
    # counted are named once in a warning (logger
    # "torchscan_dispatch.integrations") and in the callback's
    # ``uncounted_operators``.
    "torchscan/complete",
)


class _Abandoned(Exception):
    """Ends a step that its closing hook never reached (a trainer exception, a
    skipped batch): no report, nothing logged."""


class OpenStep:
    """A ``StepMeter.step()`` entered in one trainer hook and left in another
    on the same thread (the trainers call their step hooks on the thread that
    trains)."""

    def __init__(self, meter: StepMeter) -> None:
        self.meter = meter
        self._context: contextlib.AbstractContextManager[StepStats] | None = None

    @property
    def is_open(self) -> bool:
        return self._context is not None

    def begin(self) -> None:
        self.abandon("a new step began before the previous one ended")
        context = self.meter.step()
        context.__enter__()
        self._context = context

    def end(self) -> StepStats | None:
        """The finished step's stats; None when no step was open."""
        context, self._context = self._context, None
        if context is None:
            return None
        context.__exit__(None, None, None)
        stats = self.meter.steps.pop()
        # NOTE [Steps are not kept]
        # StepMeter keeps every step it measured (with its report) for a
        # loop that reads meter.steps; a callback reads each step once, so a
        # long training run must not keep them all.
        self.meter.steps.clear()
        return stats

    def abandon(self, why: str) -> None:
        """Ends an open step without a report: counting stops, the step is
        dropped. Nothing when no step is open."""
        context, self._context = self._context, None
        if context is None:
            return
        error = _Abandoned(why)
        # The step's generator sees the exception, switches counting off and
        # re-raises it; __exit__ then answers False (not handled) instead.
        context.__exit__(type(error), error, None)


def _uncounted(stats: StepStats) -> list[str]:
    """The operators a partial step's report names as not counted."""
    names = set()
    for diagnostic in stats.report.get("diagnostics", ()):
        operator = diagnostic.get("operator")
        if operator and diagnostic.get("metric", "flops") == "flops":
            names.add(operator)
    return sorted(names)


class StepWindow:
    """The steps since the last log, and the metrics to log for them."""

    def __init__(self) -> None:
        self.steps: list[StepStats] = []
        # Every operator a partial step did not count, in first-seen order.
        self.uncounted_operators: list[str] = []
        self._warned_unnamed = False

    def add(self, stats: StepStats, step_number: int) -> None:
        self.steps.append(stats)
        if stats.complete:
            return
        named = _uncounted(stats)
        new = [name for name in named if name not in self.uncounted_operators]
        # Once per operator, not once per step.
        if new:
            self.uncounted_operators.extend(new)
            why = f"no count for {', '.join(new)}"
        elif not named and not self._warned_unnamed:
            self._warned_unnamed = True
            why = "see the step's report diagnostics"
        else:
            return
        logger.warning("torchscan: the FLOPs of training step %d are a lower bound (partial): %s", step_number, why)

    def take_metrics(self) -> dict[str, float | int]:
        """The metrics of the steps since the last call (empty when none)."""
        steps, self.steps = self.steps, []
        return metrics(steps)


def _mean(values: Iterable[int], count: int) -> float | int:
    total = sum(values)
    return total if count == 1 else total / count


def metrics(steps: Sequence[StepStats]) -> dict[str, float | int]:
    """The logged metrics of ``steps``: FLOPs and seconds per step (means),
    rates over their summed time (so a log of one step has exactly that
    step's StepStats values)."""
    if not steps:
        return {}
    count = len(steps)
    model = sum(s.model_flops for s in steps)
    hardware = sum(s.flops for s in steps)
    seconds = sum(s.seconds for s in steps)
    out: dict[str, float | int] = {
        PREFIX + "model_flops": _mean((s.model_flops for s in steps), count),
        PREFIX + "hardware_flops": _mean((s.flops for s in steps), count),
        PREFIX + "recomputed_flops": _mean((s.recomputed_flops for s in steps), count),
        PREFIX + "mask_aware_flops": _mean((s.mask_aware_flops for s in steps), count),
    }
    out[PREFIX + "step_seconds"] = seconds / count
    if seconds > 0:
        # The same arithmetic as StepStats: hardware / seconds / peak.
        out[PREFIX + "achieved_flops_per_second"] = hardware / seconds
        peak = steps[-1].peak_flops_per_second
        if peak:
            out[PREFIX + "mfu"] = model / seconds / peak
            out[PREFIX + "hfu"] = hardware / seconds / peak
    out[PREFIX + "complete"] = int(all(s.complete for s in steps))
    return out



class MeteredSteps:
    """What both trainer callbacks hold: the meter, the step open between
    their begin and end hooks, the logging window, and the last step."""

    def __init__(self, **meter_options: Any) -> None:
        self.meter = StepMeter(**meter_options)
        self._step = OpenStep(self.meter)
        self._window = StepWindow()
        # The last step measured (None before the first).
        self.last_step: StepStats | None = None

    @property
    def uncounted_operators(self) -> list[str]:
        """Every operator that a partial step did not count, first seen first."""
        return list(self._window.uncounted_operators)
