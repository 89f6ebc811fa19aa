"""The end-to-end release experiment behind ``topicslab run`` (spec 01 §5).

Public names:
    run(preset=..., out=..., ...)   run every stage (cached by content); write OUT/report.html
                                    and OUT/results.json (``pipeline``)
    PRESETS, Preset                 named run sizes (``presets``)
    verdict(reid)                   the paper's claim checked on re-identification results
"""

from topicslab.experiment.pipeline import SYNTHETIC_DEVIATION, run, verdict
from topicslab.experiment.presets import PRESETS, Preset

__all__ = ["PRESETS", "SYNTHETIC_DEVIATION", "Preset", "run", "verdict"]
