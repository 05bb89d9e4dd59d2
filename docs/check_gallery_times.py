"""Fail if a gallery example took longer than its budget in the last docs build.

``make docs`` runs this after Sphinx: sphinx-gallery writes the running time of
every example to ``docs/sg_execution_times.rst``; each must stay under 30 s on the
two-core machines the project builds on.
"""

import re
import sys
from pathlib import Path

BUDGET_SECONDS = 30.0
TIMES = Path(__file__).resolve().parent / "sg_execution_times.rst"


def example_times(text):
    """``{example file: seconds}`` from sphinx-gallery's execution-times table."""
    pattern = re.compile(r"\(``([^`]+)``\)\s*\n\s*- (\d+):(\d+(?:\.\d+)?)")
    return {
        Path(name).name: 60 * int(minutes) + float(seconds)
        for name, minutes, seconds in pattern.findall(text)
    }


def main():
    if not TIMES.is_file():
        print(f"{TIMES} is missing: build the docs first (make docs)", file=sys.stderr)
        return 1
    times = example_times(TIMES.read_text())
    if not times:
        print(f"no example times found in {TIMES}", file=sys.stderr)
        return 1
    slow = {name: t for name, t in times.items() if t > BUDGET_SECONDS}
    for name, seconds in sorted(times.items()):
        print(f"{seconds:8.1f} s  {name}")
    if slow:
        for name, seconds in slow.items():
            print(
                f"error: examples/{name} ran for {seconds:.1f} s; every gallery "
                f"example must run in under {BUDGET_SECONDS:.0f} s",
                file=sys.stderr,
            )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
