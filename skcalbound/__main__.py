"""``python -m skcalbound``: the ``skcalbound`` command."""

import sys

from ._cli import main

if __name__ == "__main__":
    sys.exit(main())
