"""The ``skcalbound`` command: certified calibration bounds for scores in a file.

``skcalbound FILE ...`` fits the requested bounds on a CSV or Parquet file and
prints each certified interval (table or JSON, optionally a plot and a ``--max-ce``
gate); ``skcalbound verify RECORD FILE`` checks an audit record. Exit status 2 for
bad input. Modules: ``_parser``, ``_read``, ``_bounds``, ``_main``, ``_by``,
``_report``, ``_verify`` (docs/internals/cli.rst).
"""

import os
import sys

from ._parser import VERIFY, parse_args


def main(argv=None):
    """Run the command; returns the exit status."""
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
        if args.command == VERIFY:
            from ._verify import verify

            return verify(args)
        from ._main import certify

        return certify(args)
    except BrokenPipeError:
        # The reader closed the pipe (``skcalbound f.csv | head``): stop quietly.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


__all__ = ["main"]
