"""The paper is cited with its right first author and arXiv number.

"Measuring Uncertainty Calibration" is by Ciosek et al. (ICLR 2026, arXiv:2512.13872);
an earlier version of the docs named Gruber as the first author.
"""

from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


def _text(path):
    # Whitespace collapsed, so that a citation wrapped across lines still matches.
    return " ".join(path.read_text(encoding="utf-8").split())


@pytest.mark.parametrize("name", ["README.md", "docs/index.rst"])
def test_front_pages_cite_ciosek_et_al_with_the_arxiv_number(name):
    text = _text(ROOT / name)
    assert "Ciosek et al." in text
    assert "arXiv:2512.13872" in text


def _cited_files():
    return [
        ROOT / "README.md",
        *sorted((ROOT / "docs").glob("*.rst")),
        *sorted((ROOT / "skcalbound").rglob("*.py")),
        *sorted((ROOT / "examples").glob("*.py")),
    ]


def test_the_files_to_search_are_there():
    # Guards the next test against passing because it searched nothing.
    files = _cited_files()
    assert (ROOT / "README.md").is_file()
    assert ROOT / "docs" / "index.rst" in files
    assert ROOT / "skcalbound" / "_tv_bound.py" in files
    assert any(p.parent.name == "examples" for p in files)
    assert all(p.is_file() for p in files)


def test_no_file_names_the_wrong_first_author():
    offenders = [
        str(path.relative_to(ROOT))
        for path in _cited_files()
        if "Gruber" in path.read_text(encoding="utf-8")
    ]
    assert offenders == []
