"""The documentation: what the pages (README, docs/*.rst, the gallery) say and do not
say, that their examples run and print what they show, that the gallery's code fits its
column at 1280 px, and that the paper is cited with its right first author and arXiv
number.
"""

import ast
import builtins
import contextlib
import doctest
import io
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from skcalbound import NWCalibrationBound

# --------------------------------------------------------------------------------------
# What the user-facing pages (README, docs/*.rst, the gallery) say and do not say.
# --------------------------------------------------------------------------------------
ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"


def _pyproject():
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _flat(text):
    """Text with runs of whitespace (line breaks included) made single spaces."""
    return " ".join(text.split())


def _section(text, title):
    """The reST section under ``title`` (up to the next label or section title)."""
    underline = "=" * len(title)
    body = text.split(f"{title}\n{underline}\n")[1]
    return body.split("\n.. _")[0]


def _user_facing_pages():
    gallery = sorted((ROOT / "examples").glob("plot_*.py"))
    # contributing.rst (and docs/internals/) are for people working on a clone,
    # who have the tests: they may name them.
    rst = [p for p in sorted(DOCS.glob("*.rst")) if p.name != "contributing.rst"]
    pages = [README, *rst, *gallery]
    assert len(pages) >= 9
    return pages


# --------------------------------------------------------------------------------------
# The assumption parameters are stated, never tuned
# --------------------------------------------------------------------------------------

ASSUMPTION_SENTENCE = (
    "**The parameters h, V, L, b1 and b2 state an assumption about how the scores were "
    "produced (for h: the bandwidth of the sech perturbation the scores went through) "
    "and must never be tuned on the data.**"
)


def test_user_guide_says_in_bold_that_assumptions_are_not_tuned():
    guide = _flat((DOCS / "user_guide.rst").read_text())
    assert ASSUMPTION_SENTENCE in guide
    # What a search on ``score`` may tune, and the perturbation's h, right after it.
    after = guide.split(ASSUMPTION_SENTENCE)[1][:1800]
    for needed in (
        "``bandwidth``",
        "``tempering``",
        "``cv``",
        "*perturbation*",
        "SechPerturbedClassifier",
        "changes the classifier",
    ):
        assert needed in after, needed


def test_tunable_parameters_named_in_the_guide_exist():
    params = NWCalibrationBound().get_params()
    for name in ("bandwidth", "tempering", "cv", "h", "b1", "b2"):
        assert name in params, name


def test_readme_says_in_bold_that_assumptions_are_not_tuned():
    readme = _flat(README.read_text())
    sentence = (
        "**`h`, `V`, `L`, `b1` and `b2` state an assumption about how the scores were "
        "produced (for `h`: the bandwidth of the sech perturbation the scores went "
        "through); never tune them on the data.**"
    )
    assert sentence in readme


# --------------------------------------------------------------------------------------
# No references to files users do not have
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("page", _user_facing_pages(), ids=lambda p: p.name)
def test_no_reference_to_the_specification_or_test_files(page):
    text = page.read_text()
    assert "SPEC" not in text
    assert not re.search(r"\btests/", text), re.findall(r"[^\n]*\btests/[^\n]*", text)


# --------------------------------------------------------------------------------------
# Formulas render offline
# --------------------------------------------------------------------------------------


def _conf_assignments():
    tree = ast.parse((DOCS / "conf.py").read_text())
    values = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                try:
                    values[target.id] = ast.literal_eval(node.value)
                except ValueError:
                    pass
    return values


def test_conf_serves_mathjax_from_the_built_pages():
    conf = _conf_assignments()
    assert "sphinx.ext.mathjax" in conf["extensions"]
    assert "sphinx-mathjax-offline" in conf["extensions"]
    path = conf["mathjax_path"]
    assert not re.match(r"^(https?:)?//", path), path  # relative to _static, no CDN
    assert path == "mathjax/tex-chtml.js"
    # \texttt{confidence\_level} needs MathJax 3's textmacros to typeset \_.
    assert "[tex]/textmacros" in conf["mathjax3_config"]["loader"]["load"]
    assert "textmacros" in conf["mathjax3_config"]["tex"]["packages"]["[+]"]
    extras = _pyproject()["project"]["optional-dependencies"]
    assert any(req.startswith("sphinx-mathjax-offline") for req in extras["docs"])


def test_the_offline_mathjax_package_ships_the_configured_file():
    import importlib.util

    spec = importlib.util.find_spec("sphinx-mathjax-offline")
    if spec is None:
        pytest.skip("the docs extra is not installed (make docs installs it)")
    static = Path(spec.origin).parent / "static"
    assert (static / _conf_assignments()["mathjax_path"]).is_file()
    extensions = static / "mathjax" / "input" / "tex" / "extensions"
    assert (extensions / "textmacros.js").is_file()


def test_code_blocks_wrap_inside_the_column():
    conf = _conf_assignments()
    assert "_static" in conf["html_static_path"]
    css = (DOCS / "_static" / conf["html_css_files"][0]).read_text()
    assert re.search(r"white-space:\s*pre-wrap", css)


# --------------------------------------------------------------------------------------
# The first hour: the README's commands after `make demo`
# --------------------------------------------------------------------------------------


def _bash_blocks(text):
    return re.findall(r"```bash\n(.*?)```", text, flags=re.S)


def test_readme_first_hour_uses_the_virtual_environment():
    readme = README.read_text()
    first_hour = _bash_blocks(readme)[1]
    commands = [line.split("#")[0].strip() for line in first_hour.splitlines()]
    assert commands[0] == ". .venv/bin/activate"
    for command in commands[1:]:
        program, *args = command.split()
        assert program in {"python", "skcalbound"}, command
        if program == "python":
            assert (ROOT / args[0]).is_file(), args[0]
    intro = _flat(readme.split("```bash")[2])
    assert "`.venv/bin/python`" in intro and "`.venv/bin/skcalbound`" in intro


# --------------------------------------------------------------------------------------
# The positive class, the slack table, the choice of h
# --------------------------------------------------------------------------------------


def test_pos_label_explained_in_quickstart_and_user_guide():
    readme = README.read_text()
    quickstart = readme.split("## Quickstart")[1].split("\n## ")[0]
    assert "pos_label" in quickstart
    assert "predict_proba" in quickstart
    guide = (DOCS / "user_guide.rst").read_text()
    assert "**The positive class.**" in guide
    assert 'pos_label="churn"' in guide


def test_readme_choosing_h_puts_the_tolerance_rule_first():
    section = README.read_text().split("## Choosing `h`")[1].split("\n## ")[0]
    code = section.split("```python")[1].split("```")[0]
    assert "refit=largest_h_within_tolerance(" in code
    assert 'refit="nw' not in code  # the smallest-bound rule is not offered as equal
    assert "blurs" in section
    assert "python examples/plot_choose_h.py" in section
    assert "GridSearchCV over 9 values of h x 3 folds:" in section


def test_pytest_reports_failures_and_errors_only():
    options = _pyproject()["tool"]["pytest"]["ini_options"]["addopts"]
    assert "-rfE" in options.split()
    assert "-ra" not in options.split()


def _slack_table():
    """The medians of docs/tables/slack.txt (written by benchmarks/bench_slack.py
    --output), by size: {"1e4": {"TV slack": 0.3532, ...}, ...}."""
    text = (DOCS / "tables" / "slack.txt").read_text()
    lines = text.splitlines()
    header = lines.index(
        next(line for line in lines if line.lstrip().startswith("runs"))
    )
    columns = ["runs", "TV slack", "TV width", "NW slack", "NW width"]
    rows = {}
    for line in lines[header + 2 :]:
        if not line.strip():
            break
        size, *values = line.split()
        rows[size] = dict(zip(columns, map(float, values[: len(columns)])))
    return rows


def test_user_guide_includes_the_slack_table_the_script_wrote():
    # The table is the script's own output (no hand-pasted copy that drifts: its TV
    # column was once off in the 4th decimal).
    guide = (DOCS / "user_guide.rst").read_text()
    assert ".. literalinclude:: tables/slack.txt" in guide
    text = (DOCS / "tables" / "slack.txt").read_text()
    assert text.startswith("$ python benchmarks/bench_slack.py")
    rows = _slack_table()
    assert list(rows) == ["1e3", "1e4", "1e5", "1e6", "1e7"]
    tv_slack = [row["TV slack"] for row in rows.values()]
    nw_slack = [row["NW slack"] for row in rows.values()]
    # Slack shrinks with n, NW's below TV's from 10^4 labels on (at 10^3 NW is
    # vacuous, 0.58, and TV's default cell bound 0.44), and the last row is
    # informative.
    assert tv_slack == sorted(tv_slack, reverse=True)
    assert nw_slack == sorted(nw_slack, reverse=True)
    assert all(nw < tv for nw, tv in zip(nw_slack[1:], tv_slack[1:]))
    assert nw_slack[-1] < 0.01


def test_user_guide_tv_cells_table_and_its_range_are_the_script_s():
    # The TV width table was hand-pasted from a run no command reproduced.
    guide = (DOCS / "user_guide.rst").read_text()
    assert ".. literalinclude:: tables/tv_cells.txt" in guide
    text = (DOCS / "tables" / "tv_cells.txt").read_text()
    assert text.startswith("$ python benchmarks/bench_tv_cells.py")
    low, high, narrower, cells = re.search(
        r"from ([0-9.]+) to ([0-9.]+) \(narrower on (\d+) of (\d+) cells\)", text
    ).groups()
    assert narrower == cells == "21"
    assert (
        f"The cells interval is narrower on every one ({low} to {high} times the "
        "denoising width)." in " ".join(guide.split())
    )


def test_readme_slack_numbers_are_the_tables():
    rows = _slack_table()
    found = re.search(
        r"is ([0-9.]+) at 10\^4 labels,\s+([0-9.]+) at 10\^5 and ([0-9.]+) at 10\^7; "
        r"TV's on the raw\s+scores is ([0-9.]+), ([0-9.]+) and ([0-9.]+)",
        README.read_text(),
    )
    assert found, "the README's sentence on slack by sample size was not found"
    for quoted, (size, column) in zip(
        found.groups(),
        [
            ("1e4", "NW slack"),
            ("1e5", "NW slack"),
            ("1e7", "NW slack"),
            ("1e4", "TV slack"),
            ("1e5", "TV slack"),
            ("1e7", "TV slack"),
        ],
    ):
        decimals = len(quoted.split(".")[1])
        assert float(quoted) == round(rows[size][column], decimals), (size, column)


def test_choosing_h_quotes_the_b2_the_default_uses():
    # The page once quoted Corollary 4's 3 tanh^2/(2h^2) as the b2 in use, while the
    # default (guarantee="high_probability") uses a third of it.
    from skcalbound._sech import sech_derivative_bounds

    page = (DOCS / "choosing_h.rst").read_text()
    shown = re.search(r"b_2\(h\) = \\frac\{(\d*)\\tanh\^2\(1/h\)\}\{2h\^2\}", page)
    assert shown, "the b2 formula was not found on choosing_h.rst"
    factor = float(shown.group(1) or 1) / 2
    for h in (2.0**-2, 2.0**-6, 2.0**-10):
        b2 = sech_derivative_bounds(h)[1]
        assert b2 == pytest.approx(factor * np.tanh(1 / h) ** 2 / h**2, rel=1e-12)


def test_multiclass_page_shows_no_hand_pasted_output():
    # Its pasted table had drifted from what the example prints; the gallery page
    # shows the output of the run made when the documentation is built.
    page = (DOCS / "multiclass.rst").read_text()
    assert ".. code-block:: text" not in page
    assert ":ref:`sphx_glr_auto_examples_plot_multiclass_and_segments.py`" in page


# --------------------------------------------------------------------------------------
# The worked examples of the user guide run and print what the page shows.
# --------------------------------------------------------------------------------------


def test_user_guide_examples():
    result = doctest.testfile(
        str(ROOT / "docs" / "user_guide.rst"),
        module_relative=False,
        optionflags=doctest.NORMALIZE_WHITESPACE,
    )
    assert result.attempted >= 10
    assert result.failed == 0


def test_user_guide_explains_what_is_certified():
    text = (ROOT / "docs" / "user_guide.rst").read_text()
    section = text.split("What exactly is certified\n=========================")[1]
    section = section.split("\n.. _")[0]
    for needed in (
        'guarantee="high_probability"',
        'guarantee="paper"',
        "McDiarmid",
        "Maurer",
        "lower_bound_",
        "calibration_test",
        # The default NW certificate's own steps (variance-adaptive).
        'noise="worst_case"',
        "pilot",
        "Bernstein–Freedman",
        "Jensen",
        'fold_results_["route"]',
    ):
        assert needed in section, needed


def test_large_data_examples():
    # Chunks, the in-memory fit and Dask give the same certificate
    # (docs/large_data.rst).
    result = doctest.testfile(
        str(ROOT / "docs" / "large_data.rst"),
        module_relative=False,
        optionflags=doctest.NORMALIZE_WHITESPACE,
    )
    assert result.attempted >= 8
    assert result.failed == 0


# --------------------------------------------------------------------------------------
# Every README block that shows its output prints exactly that output, and the
# installation it describes imports skcalbound from any folder.
# --------------------------------------------------------------------------------------


def _blocks(text, lang):
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def _fenced(text):
    """``(language, body, prose before the fence)`` for every fenced block."""
    found = re.finditer(r"```(\w*)\n(.*?)```", text, flags=re.S)
    blocks, end = [], 0
    for match in found:
        blocks.append((match.group(1), match.group(2), text[end : match.start()]))
        end = match.end()
    return blocks


def _python_with_output():
    """Each Python block of the README with the output it shows: the ``text`` block
    that follows it when the prose between them starts with "prints", else None."""
    blocks = _fenced((ROOT / "README.md").read_text())
    for k, (lang, code, _) in enumerate(blocks):
        if lang != "python":
            continue
        shown = None
        if k + 1 < len(blocks):
            next_lang, body, prose = blocks[k + 1]
            if next_lang == "text" and prose.strip().startswith("prints"):
                shown = body
        yield code, shown


def _run(code):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    return out.getvalue()


_PYTHON_BLOCKS = list(_python_with_output())


@pytest.mark.parametrize(
    "code, shown", _PYTHON_BLOCKS, ids=[f"block{k}" for k in range(len(_PYTHON_BLOCKS))]
)
def test_every_readme_block_prints_what_it_shows(code, shown):
    # A block followed by "prints" and a text block prints exactly that text; a
    # ``print(...)  # output`` line prints the start of its comment.
    inline = [
        line.split("  # ", 1)[1]
        for line in code.splitlines()
        if line.startswith("print(") and "  # " in line
    ]
    if shown is None and not inline:
        pytest.skip("the block shows no output")
    printed = _run(code)
    if shown is not None:
        assert printed == shown
    lines = printed.splitlines()
    assert len(lines) >= len(inline)
    for comment, line in zip(inline, lines[-len(inline) :] if inline else []):
        assert comment.startswith(line), (line, comment)


def test_readme_shows_no_machine_dependent_digest():
    # A fingerprint digest hashes float64 bytes: a different libm (perturb_scores'
    # transcendental functions) gives another digest, so the README shows none.
    readme = (ROOT / "README.md").read_text()
    assert not re.search(r"^[0-9a-f]{16,64}$", readme, flags=re.M)


def test_readme_opens_with_the_two_commands():
    readme = (ROOT / "README.md").read_text()
    first = _blocks(readme, "bash")[0].splitlines()
    assert [line.split("#")[0].strip() for line in first] == ["make demo", "make test"]


def test_quickstart_script_is_the_readme_block():
    readme = (ROOT / "README.md").read_text()
    script = (ROOT / "examples" / "quickstart.py").read_text()
    assert _blocks(readme, "python")[0].strip() in script


def _undefined_names(code):
    """Names a code block reads but neither imports nor assigns."""
    tree = ast.parse(code)
    defined = set(dir(builtins))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = (alias.asname or alias.name for alias in node.names)
            defined |= {name.split(".")[0] for name in names}
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            defined.add(node.id)
        elif isinstance(node, ast.arg):
            defined.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defined.add(node.name)
    used = {
        node.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
    }
    return used - defined


def test_readme_python_blocks_run_as_written():
    # Every Python block can be pasted as it is: it defines or imports what it uses.
    blocks = _blocks((ROOT / "README.md").read_text(), "python")
    assert len(blocks) >= 2
    for block in blocks:
        assert _undefined_names(block) == set(), block[:200]


def test_a_folder_named_skcalbound_does_not_shadow_the_package(tmp_path):
    # A clone is a folder named skcalbound without __init__.py: Python started in its
    # parent folder found it as an empty namespace package before the editable
    # install's finder (make install now puts the clone's root on sys.path).
    (tmp_path / "skcalbound").mkdir()
    run = subprocess.run(
        [sys.executable, "-c", "import skcalbound; print(skcalbound.__file__)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    found = run.stdout.strip()
    assert found != "None", "skcalbound imported as an empty namespace package"
    assert Path(found).name == "__init__.py"
    assert Path(found).parent.parent != tmp_path


# --------------------------------------------------------------------------------------
# The gallery's code fits its column at 1280 px: no code line wraps.
#
# docs/_static/skcalbound.css wraps a code line longer than the column (instead of a
# horizontal scrollbar), so a line that is too long breaks mid-expression. The width of
# a gallery page's code column at a 1280 px window, from the CSS of pydata-sphinx-theme
# 0.24 (the gallery pages keep both sidebars):
#
# - window 1280 px less a 15 px scrollbar: 1265 px; the primary sidebar takes 25% of
#   it (316.25 px), the secondary sidebar 17rem = 272 px (both shown from 1200 px);
# - the article container: 1265 - 316.25 - 272 = 676.75 px (under its 60em maximum),
#   less its padding of 1rem a side and the article's padding-left of 2rem: 612.75 px;
# - the ``pre`` block: less its padding of 1rem a side and 1 px borders: 578.75 px.
#
# Code is set at 0.875em = 14 px in the theme's monospace stack (ui-monospace,
# Cascadia Code, Source Code Pro, Menlo, Consolas, DejaVu Sans Mono, monospace). DejaVu
# Sans Mono, the face of the stack on a Debian machine, advances 1233/2048 em = 8.43 px
# per character at 14 px (read from the font file with matplotlib's FT2Font):
# 578.75 / 8.43 = 68.7, so at most 68 characters fit a line.
# --------------------------------------------------------------------------------------
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


# --------------------------------------------------------------------------------------
# The paper is cited with its right first author and arXiv number.
#
# "Measuring Uncertainty Calibration" is by Ciosek et al. (ICLR 2026, arXiv:2512.13872);
# an earlier version of the docs named Gruber as the first author.
# --------------------------------------------------------------------------------------


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
