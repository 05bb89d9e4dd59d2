"""Rewrite the outputs the README shows from a run of its own code blocks.

``python docs/update_readme.py`` runs every Python block of README.md that is followed
by "prints" and a ``text`` block (as ``tests/test_docs.py`` does) and replaces that
text block with what the block printed, so that the README's outputs come from a run.
The test fails when they drift; this script is how to bring them back.
"""

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
_FENCE = re.compile(r"```(\w*)\n(.*?)```", flags=re.S)


def _printed(code):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    return out.getvalue()


def main():
    text = README.read_text()
    fences = list(_FENCE.finditer(text))
    pieces, end = [], 0
    for k, fence in enumerate(fences[:-1]):
        following = fences[k + 1]
        prose = text[fence.end() : following.start()]
        if not (
            fence.group(1) == "python"
            and following.group(1) == "text"
            and prose.strip().startswith("prints")
        ):
            continue
        printed = _printed(fence.group(2))
        pieces += [text[end : following.start(2)], printed]
        end = following.end(2)
        print(f"README block {k}: {len(printed.splitlines())} lines")
    README.write_text("".join(pieces) + text[end:])


if __name__ == "__main__":
    main()
