"""``python -m topicslab.population``: re-run the calibration (see ``calibrate.py``)."""

from topicslab.population.calibrate import main

main()
