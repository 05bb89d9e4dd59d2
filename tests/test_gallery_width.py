"""The gallery's code fits its column at 1280 px: no code line wraps.

docs/_static/skcalbound.css wraps a code line longer than the column (instead of a
horizontal scrollbar), so a line that is too long breaks mid-expression. The width of
a gallery page's code column at a 1280 px window, from the CSS of pydata-sphinx-theme
0.24 (the gallery pages keep both sidebars):

- window 1280 px less a 15 px scrollbar: 1265 px; the primary sidebar takes 25% of
  it (316.25 px), the secondary sidebar 17rem = 272 px (both shown from 1200 px);
- the article container: 1265 - 316.25 - 272 = 676.75 px (under its 60em maximum),
  less its padding of 1rem a side and the article's padding-left of 2rem: 612.75 px;
- the ``pre`` block: less its padding of 1rem a side and 1 px borders: 578.75 px.

Code is set at 0.875em = 14 px in the theme's monospace stack (ui-monospace,
Cascadia Code, Source Code Pro, Menlo, Consolas, DejaVu Sans Mono, monospace). DejaVu
Sans Mono, the face of the stack on a Debian machine, advances 1233/2048 em = 8.43 px
per character at 14 px (read from the font file with matplotlib's FT2Font):
578.75 / 8.43 = 68.7, so at most 68 characters fit a line.
"""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GALLERY = sorted((ROOT / "examples").glob("plot_*.py"))
MAX_CODE_WIDTH = 68

# sphinx-gallery's block splitter: "# %%" or a line of 20 or more "#".
_SPLITTER = re.compile(r"^(# ?%%|#{20,})")


def gallery_code_lines(path):
    """``(line number, line)`` of the lines sphinx-gallery renders as code.

    After the module docstring, a splitter line starts a text block: its comment
    lines are rendered as text, and the code block starts at its first line that is
    not a comment (comments after that are code).
    """
    text = path.read_text()
    lines = text.splitlines()
    docstring = ast.parse(text).body[0]
    in_text = False
    code = []
    for number in range(docstring.end_lineno + 1, len(lines) + 1):
        line = lines[number - 1]
        if _SPLITTER.match(line):
            in_text = True
        elif in_text and line.startswith("#"):
            continue
        else:
            in_text = False
            code.append((number, line))
    return code


def test_the_splitter_finds_text_and_code(tmp_path):
    example = tmp_path / "plot_x.py"
    example.write_text(
        '"""Title\n=====\n"""\n\n# %%\n# Text\n# more text\nx = 1\n# a code comment\n'
        "\n# %%\n# Text\ny = 2\n"
    )
    assert gallery_code_lines(example) == [
        (4, ""),
        (8, "x = 1"),
        (9, "# a code comment"),
        (10, ""),
        (13, "y = 2"),
    ]


@pytest.mark.parametrize("path", GALLERY, ids=lambda path: path.name)
def test_gallery_code_lines_fit_the_column_at_1280px(path):
    too_long = [
        f"{path.name}:{number} ({len(line)} characters): {line.strip()}"
        for number, line in gallery_code_lines(path)
        if len(line) > MAX_CODE_WIDTH
    ]
    assert not too_long, (
        f"gallery code lines longer than {MAX_CODE_WIDTH} characters wrap at "
        "1280 px:\n" + "\n".join(too_long)
    )


def test_there_is_a_gallery():
    assert len(GALLERY) >= 5
