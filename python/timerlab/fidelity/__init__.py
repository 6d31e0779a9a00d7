"""timerlab.fidelity: how closely timerlab agrees with what a real kernel recorded.

* ``wheel.py`` — the timer wheel alone: every timer_start's bucket and every
  expiry's collection clock, recomputed from the trace's own events
  (:func:`wheel_replay`);
* ``validate.py`` — the whole simulator: a trace replayed under the kernel's
  own policy, compared item by item with what the kernel did
  (:func:`validate`);
* ``items.py`` — validate's items built from what it compared, in one
  window or several; ``windows.py`` — traces larger than memory validated in
  windows of time (a large text through a temporary store);
* ``races.py`` — which idle CPUs held the migrator duty for each global
  timer, in the trace and in the simulation (races settled by wake order);
* ``report.py`` — what validate found (:class:`FidelityReport`);
* ``predict.py`` — another kernel predicted from a trace and checked against
  that kernel's real run (:func:`predict`), on the rates of ``rates.py``.

Not here: reading traces (:mod:`timerlab.trace`), turning them into a
simulation (:mod:`timerlab.replay`). Nothing here changes a model to fit a
trace: it only measures.
"""
from .predict import Prediction, predict
from .report import FidelityItem, FidelityReport
from .validate import VALIDATE_STAGES, validate
from .wheel import WheelReplay, base_of_flags, wheel_placement, wheel_replay

__all__ = ["validate", "FidelityReport", "FidelityItem", "predict", "Prediction", "wheel_replay", "wheel_placement",
           "base_of_flags", "WheelReplay", "VALIDATE_STAGES"]
