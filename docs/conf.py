"""Sphinx configuration for skcalbound.

``make docs`` builds with warnings as errors (``-W``): API pages from the numpydoc
docstrings, the user guide, and the example gallery, whose scripts sphinx-gallery
runs at build time. Outputs shown on the pages (the quickstart, the command line's
``--help`` and a run of it) are produced here, at build time, by running the
repository's own code: no number in the docs is typed by hand.
"""

import contextlib
import io
import os
import re
import runpy
import sys
from pathlib import Path

# One OpenMP thread for the examples (HistGradientBoosting): on a loaded two-core
# machine, OpenMP's spinning threads made one example 7x slower (34 s against 4.6 s).
# Set before anything loads the OpenMP runtime.
os.environ.setdefault("OMP_NUM_THREADS", "1")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

import matplotlib  # noqa: E402

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import skcalbound  # noqa: E402
from skcalbound._cli import main as cli_main  # noqa: E402
from skcalbound._cli._parser import build_parser  # noqa: E402

project = "skcalbound"
author = "skcalbound developers"
copyright = "2026, skcalbound developers"
release = skcalbound.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    # Copies MathJax 3 (bundled in the PyPI package) into _static/mathjax: the pages
    # typeset their formulas without network access, no CDN.
    "sphinx-mathjax-offline",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]
# Relative to _static of the built pages (the extension sets the same value).
mathjax_path = "mathjax/tex-chtml.js"
# \texttt{confidence\_level}: MathJax 3 reads \_ in text mode only with its textmacros
# package (part of the offline copy); without it the backslash was printed.
mathjax3_config = {
    "loader": {"load": ["[tex]/textmacros"]},
    "tex": {"packages": {"[+]": ["textmacros"]}},
}

# One page per public object, generated from docs/api.rst.
autosummary_generate = True
# Document inherited methods (fit, predict, score, get_params, ...), except
# get_metadata_routing, whose docstring links to scikit-learn's own user guide.
autodoc_default_options = {"members": True, "inherited-members": "_MetadataRequester"}

# numpydoc renders Parameters/Attributes; autosummary lists the methods.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# The gallery: every examples/plot_*.py is run and rendered; other scripts there
# (demo.py, quickstart.py) are command-line programs, not gallery pages.
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "ignore_pattern": r"^(?!plot_)",
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "remove_config_comments": True,
    "min_reported_time": 1,
    "abort_on_example_error": True,
    # Each example must stay well under the 30 s budget on two cores.
    "matplotlib_animations": False,
}


# Methods inherited from scikit-learn (``score`` of ClassifierMixin, the
# ``set_*_request`` methods of metadata routing) keep their docstrings, whose
# cross-references point into scikit-learn's own documentation; without network
# access to it they are shown as plain text rather than as broken links.
_SKLEARN_XREF = re.compile(r":(?:ref|term):`([^`<]*?)\s*(?:<[^`>]*>)?`")


def _plain_sklearn_references(app, what, name, obj, options, lines):
    module = getattr(obj, "__module__", None) or ""
    if module.split(".")[0] != "sklearn":
        return
    lines[:] = [
        _SKLEARN_XREF.sub(lambda m: f"*{m.group(1).strip()}*", line) for line in lines
    ]


def setup(app):
    app.connect("autodoc-process-docstring", _plain_sklearn_references)


exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "generated/*.txt"]
root_doc = "index"
default_role = "literal"

html_theme = "pydata_sphinx_theme"
html_title = f"skcalbound {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
}
# The primary (left) sidebar lists a section's sub-pages; these pages have none, and
# an empty sidebar only narrowed the text column (code blocks then scrolled sideways).
_SINGLE_PAGES = (
    "index",
    "getting_started",
    "user_guide",
    "choosing_h",
    "multiclass",
    "cli",
    "reproduce",
)
html_sidebars = {page: [] for page in _SINGLE_PAGES}
html_static_path = ["_static"]
html_css_files = ["skcalbound.css"]


# --------------------------------------------------------------------------------------
# Outputs shown in the pages, produced by the repository's own code at build time
# --------------------------------------------------------------------------------------

GENERATED = HERE / "generated"


def _captured(function):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        function()
    return out.getvalue()


def _write_outputs():
    GENERATED.mkdir(exist_ok=True)
    # The quickstart of README.md and getting_started.rst, as printed.
    quickstart = _captured(
        lambda: runpy.run_path(
            str(ROOT / "examples" / "quickstart.py"), run_name="__main__"
        )
    )
    (GENERATED / "quickstart_output.txt").write_text(quickstart)
    # The command line: --help at a fixed width, and one run on a generated CSV.
    os.environ["COLUMNS"] = "88"
    (GENERATED / "cli_help.txt").write_text(build_parser().format_help())
    rng = np.random.default_rng(0)
    s = rng.uniform(size=100_000)
    y = (rng.uniform(size=s.size) < s**2).astype(int)  # true CE = 1/6
    csv = GENERATED / "predictions.csv"
    pd.DataFrame({"y_prob": s, "y_true": y}).to_csv(csv, index=False)
    cwd = os.getcwd()
    os.chdir(GENERATED)
    gate_argv = ["predictions.csv", "--bound", "monotone", "tv", "--max-ce", "0.22"]
    try:
        run = _captured(lambda: cli_main(["predictions.csv"]))
        gate = _captured(lambda: cli_main(gate_argv))
    finally:
        os.chdir(cwd)
        csv.unlink()
    (GENERATED / "cli_run.txt").write_text(run)
    # The gate's verdict (its last line) on the same file.
    verdict = gate.strip().splitlines()[-1]
    (GENERATED / "cli_gate.txt").write_text(
        "$ skcalbound " + " ".join(gate_argv) + "\n...\n" + verdict + "\n"
    )
    (GENERATED / "cli_by.txt").write_text(_cli_by())
    (GENERATED / "h_table.txt").write_text(_h_table())


def _cli_by():
    """``skcalbound seg.csv --bound nw --h 2^-6 --by device`` on the file that
    snippets/make_segments_csv.py writes (docs/cli.rst shows both)."""
    argv = ["seg.csv", "--bound", "nw", "--h", "2^-6", "--by", "device"]
    cwd = os.getcwd()
    os.chdir(GENERATED)
    try:
        runpy.run_path(str(HERE / "snippets" / "make_segments_csv.py"))
        run = _captured(lambda: cli_main(argv))
    finally:
        os.chdir(cwd)
        (GENERATED / "seg.csv").unlink(missing_ok=True)
    return "$ skcalbound " + " ".join(argv) + "\n" + run


def _h_table():
    """AUROC and NW bound of a perturbed logistic regression for a grid of h."""
    from sklearn.datasets import make_classification
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score

    from skcalbound import NWCalibrationBound, perturb_scores

    X, y = make_classification(
        n_samples=250_000,
        n_features=20,
        n_informative=6,
        n_redundant=4,
        flip_y=0.05,
        class_sep=0.8,
        random_state=0,
    )
    clf = LogisticRegression(max_iter=1000).fit(X[:50_000], y[:50_000])
    p, y_test = clf.predict_proba(X[50_000:])[:, 1], y[50_000:]
    rows = []
    for k in range(3, 9):
        h = 2.0**-k
        s = perturb_scores(p, h, random_state=0)
        nw = NWCalibrationBound(h=h, random_state=0).fit(s, y_test)
        rows.append(
            {
                "h": f"2**-{k}",
                "b1": nw.b1_,
                "b2": nw.b2_,
                "AUROC": roc_auc_score(y_test, s),
                "NW bound": nw.bound_,
                "estimate": nw.estimate_,
                "bias_mean": nw.terms_["bias_mean"],
            }
        )
    table = pd.DataFrame(rows)
    header = f"unperturbed AUROC {roc_auc_score(y_test, p):.4f}\n"
    with pd.option_context("display.float_format", "{:.4f}".format):
        return (
            header
            + table.to_string(
                index=False,
                formatters={
                    "b1": "{:.1f}".format,
                    "b2": "{:.0f}".format,
                },
            )
            + "\n"
        )


_write_outputs()
