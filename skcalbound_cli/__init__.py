"""Entry point of the ``skcalbound`` command (``[project.scripts]`` in pyproject.toml).

It lives outside the ``skcalbound`` package on purpose: importing anything inside that
package runs ``skcalbound/__init__.py``, which imports scikit-learn (about a second).
``skcalbound --version`` is answered here from the installed package's metadata,
without that import; every other command line goes to ``skcalbound._cli.main``.
"""

import sys

__all__ = ["main"]


def _asks_for_version(argv):
    """Whether argparse would act on ``--version`` (or a prefix of it, which
    argparse accepts) before ``-h``/``--help``; options end at ``--``."""
    for arg in argv:
        if arg == "--":
            return False
        if arg == "-h" or (len(arg) > 3 and "--help".startswith(arg)):
            return False
        if len(arg) >= 3 and "--version".startswith(arg):
            return True
    return False


def main(argv=None):
    """Run the ``skcalbound`` command; returns the exit status."""
    args = sys.argv[1:] if argv is None else list(argv)
    if _asks_for_version(args):
        from importlib.metadata import PackageNotFoundError, version

        try:
            print(f"skcalbound {version('skcalbound')}")
            return 0
        except PackageNotFoundError:  # a source tree that is not installed
            pass
    from skcalbound._cli import main as run

    return run(args)
