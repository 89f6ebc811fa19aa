"""``python -m topicslab``: the same command as the ``topicslab`` console script."""

from __future__ import annotations

import sys

try:
    from topicslab._main import main
except KeyboardInterrupt:
    # a Ctrl-C in the hundredths of a second the import takes printed Python's traceback (the
    # import is where ``topicslab._main`` begins to catch it, as every later Ctrl-C is)
    sys.stderr.write("interrupted: topicslab stopped while starting; nothing written\n")
    raise SystemExit(130) from None

if __name__ == "__main__":
    sys.argv[0] = "topicslab"
    main()
