"""``python -m skcalbound``: the ``skcalbound`` command.

Python imports the package (and so scikit-learn) before running this module; the
``skcalbound`` console script (``skcalbound_cli.main``) answers ``--version``
without that import.
"""

import sys

from ._cli import main

if __name__ == "__main__":
    sys.exit(main())
