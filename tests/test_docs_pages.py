"""What the user-facing pages (README, docs/*.rst, the gallery) say and do not say."""

import ast
import re
from pathlib import Path

import numpy as np
import pytest

from skcalbound import NWCalibrationBound

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
    pages = [README, *sorted(DOCS.glob("*.rst")), *gallery]
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
