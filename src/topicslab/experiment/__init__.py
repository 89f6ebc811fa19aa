"""The end-to-end release experiment behind ``topicslab run`` (Dick et al. §6, App. C).

Public names:
    run(preset=..., out=..., ...)   run every stage (cached by content); write OUT/report.html
                                    and OUT/results.json (``pipeline``)
    PRESETS, Preset                 named run sizes (``presets``)
    verdict(reid, fidelity)         the release verdict: the fidelity gaps within tolerance,
                                    the paper's one-std rule as its second line
    one_std_rule(reid)              the paper's claim checked on re-identification results
"""

from topicslab.experiment.pipeline import SYNTHETIC_DEVIATION, one_std_rule, run, verdict
from topicslab.experiment.presets import PRESETS, Preset

__all__ = ["PRESETS", "SYNTHETIC_DEVIATION", "Preset", "one_std_rule", "run", "verdict"]
