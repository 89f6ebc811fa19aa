"""``python -m topicslab``: the same command as the ``topicslab`` console script."""

from __future__ import annotations

import sys

from topicslab._main import main

if __name__ == "__main__":
    sys.argv[0] = "topicslab"
    main()
