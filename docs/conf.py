"""Sphinx configuration for skcalbound.

Minimal for now: API pages from the numpydoc docstrings and the user guide. The
sphinx-gallery of ``examples/plot_*.py`` is added once the examples exist.
"""

import os
import sys

sys.path.insert(0, os.path.abspath(".."))

import skcalbound  # noqa: E402

project = "skcalbound"
author = "skcalbound developers"
copyright = "2026, skcalbound developers"
release = skcalbound.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
]

# One page per public object, generated from docs/api.rst.
autosummary_generate = True
# Document inherited methods (fit, predict, score, get_params, ...), except
# get_metadata_routing, whose docstring links to scikit-learn's own user guide.
autodoc_default_options = {"members": True, "inherited-members": "_MetadataRequester"}

# numpydoc renders Parameters/Attributes; autosummary lists the methods.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
root_doc = "index"
default_role = "literal"

try:
    import pydata_sphinx_theme  # noqa: F401
except ImportError:  # the docs extra installs it; fall back to Sphinx's default
    html_theme = "alabaster"
else:
    html_theme = "pydata_sphinx_theme"
html_title = f"skcalbound {release}"
