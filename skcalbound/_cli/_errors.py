"""The command's one kind of input error: one line on stderr, exit status 2."""

import sys

PROG = "skcalbound"


class CLIError(Exception):
    """A problem with the input: reported on one line, exit status 2."""


def fail(message):
    """Print ``message`` as the command's one-line error; returns exit status 2."""
    print(f"{PROG}: error: {' '.join(str(message).split())}", file=sys.stderr)
    return 2
