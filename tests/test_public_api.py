"""The public API: ``__all__``, its documentation, and numpydoc-valid docstrings.

Everything is driven by ``skcalbound.__all__``, so names added later are checked
without touching this file.
"""

import inspect
import io
import re
from pathlib import Path

import docutils.core
import pytest
from docutils import nodes
from docutils.parsers.rst import Directive, directives, roles
from numpydoc.docscrape import NumpyDocString
from numpydoc.docscrape_sphinx import SphinxDocString
from numpydoc.validate import validate

import skcalbound
from skcalbound import (
    LipschitzBucketBound,
    NWCalibrationBound,
    TVCalibrationBound,
    lipschitz_bucket_bound,
    nw_bound,
    tv_bound,
)

DOCS = Path(__file__).resolve().parents[1] / "docs"

# numpydoc codes we do not enforce (STYLE.md section 8).
IGNORED = {"GL01", "GL02", "RT02"}
IGNORED_ON_METHODS = IGNORED | {"ES01", "SA01", "EX01"}
# Public methods are validated when skcalbound defines them; those inherited from
# scikit-learn (get_params, ClassifierMixin.score, set_*_request) are scikit-learn's.

# Docstrings known to fail, reported to their owners. The tests xfail on exactly these
# errors, fail on any other, and fail once the docstring is fixed (delete the entry).
KNOWN_NUMPYDOC_FAILURES = {}
KNOWN_RST_FAILURES = {}

# Parameters shared by several public objects: same wording and default everywhere.
SHARED_PARAMETERS = ("cv", "confidence_level", "n_jobs", "aggregate", "random_state")


def _public_objects():
    return [(name, getattr(skcalbound, name)) for name in skcalbound.__all__]


def _validation_targets():
    """``(qualified name, is_method)`` for every public class, function and method."""
    targets = []
    for name, obj in _public_objects():
        targets.append((f"skcalbound.{name}", False))
        if inspect.isclass(obj):
            for method in _public_methods(obj):
                targets.append((f"skcalbound.{name}.{method}", True))
    return targets


def _public_methods(cls):
    """Names of the public methods of ``cls`` that skcalbound documents."""
    methods = []
    for method in sorted(dir(cls)):
        if method.startswith("_") or not callable(getattr(cls, method, None)):
            continue
        function = inspect.unwrap(getattr(cls, method))
        module = getattr(function, "__module__", "") or ""
        if module.split(".")[0] == "skcalbound":
            methods.append(method)
    return methods


def _resolve(qualname):
    obj = skcalbound
    for part in qualname.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


# --------------------------------------------------------------------------------------
# __all__
# --------------------------------------------------------------------------------------


def test_all_names_exist():
    assert skcalbound.__all__, "skcalbound.__all__ is empty"
    for name in skcalbound.__all__:
        assert hasattr(skcalbound, name), name


def test_all_is_sorted_and_unique():
    assert list(skcalbound.__all__) == sorted(set(skcalbound.__all__))


def test_all_lists_every_public_name():
    # Anything reachable without a leading underscore is a promise to users.
    public = {
        name
        for name, value in vars(skcalbound).items()
        if not name.startswith("_") and not inspect.ismodule(value)
    }
    assert public == set(skcalbound.__all__)


def test_public_objects_say_they_come_from_skcalbound():
    for name, obj in _public_objects():
        if inspect.isclass(obj) or inspect.isfunction(obj):
            module = obj.__module__
            assert module.startswith("skcalbound._"), (name, module)
            assert obj.__name__ == name


# --------------------------------------------------------------------------------------
# docs/api.rst and the user guide
# --------------------------------------------------------------------------------------


def _documented_names(text):
    """Names in ``autosummary`` blocks and ``auto*::`` directives of an .rst file."""
    names = set(
        re.findall(
            r"^\.\. auto(?:class|function|data)::\s+(?:skcalbound\.)?(\S+)",
            text,
            flags=re.M,
        )
    )
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip().startswith(".. autosummary::"):
            i += 1
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith(" ")):
                entry = lines[i].strip()
                if entry and not entry.startswith(":"):
                    names.add(entry.lstrip("~").removeprefix("skcalbound."))
                i += 1
        else:
            i += 1
    return names


def test_api_rst_documents_exactly_the_public_names():
    documented = _documented_names((DOCS / "api.rst").read_text())
    assert documented == set(skcalbound.__all__)


def test_documented_names_parser():
    text = (
        ".. autoclass:: skcalbound.A\n\n.. autosummary::\n   :toctree: generated/\n\n"
        "   B\n   ~skcalbound.c\n\nText\n\n.. autofunction:: d\n"
    )
    assert _documented_names(text) == {"A", "B", "c", "d"}


def test_user_guide_links_in_docstrings_resolve():
    labels = set()
    for rst in DOCS.glob("*.rst"):
        labels |= set(re.findall(r"^\.\. _([\w-]+):\s*$", rst.read_text(), flags=re.M))
    assert "tv_bound" in labels
    for qualname, _ in _validation_targets():
        doc = inspect.getdoc(_resolve(qualname)) or ""
        for target in re.findall(r":ref:`[^`<]*<([\w-]+)>`", doc):
            assert target in labels, (qualname, target)


# --------------------------------------------------------------------------------------
# numpydoc
# --------------------------------------------------------------------------------------


def _xfail_known(qualname, errors, known, is_known):
    """Fail on unknown errors; xfail on known ones; fail if a known one is fixed."""
    unknown = [e for e in errors if not is_known(e)]
    assert not unknown, "\n".join(f"{qualname}: {e}" for e in unknown)
    if qualname in known:
        assert errors, f"{qualname} is fixed: delete its entry from the known failures"
        pytest.xfail(f"known, reported: {errors}")


def test_validation_targets_include_the_display_methods():
    # Guards against vacuous passes: methods beyond fit/predict/score are found too.
    targets = {q for q, _ in _validation_targets()}
    for method in ("plot", "from_estimator", "from_predictions", "from_bound"):
        assert f"skcalbound.CalibrationBoundDisplay.{method}" in targets
    assert "skcalbound.TVCalibrationBound.fit" in targets
    assert "skcalbound.TVCalibrationBound.predict" in targets
    assert "skcalbound.TVCalibrationBound.score" in targets
    assert "skcalbound.TVCalibrationBound.get_params" not in targets  # sklearn's


def test_known_failures_are_public_objects():
    targets = {q for q, _ in _validation_targets()}
    assert set(KNOWN_NUMPYDOC_FAILURES) <= targets
    assert set(KNOWN_RST_FAILURES) <= targets


@pytest.mark.parametrize(
    "qualname, is_method",
    _validation_targets(),
    ids=[q for q, _ in _validation_targets()],
)
def test_numpydoc_validation(qualname, is_method):
    ignored = IGNORED_ON_METHODS if is_method else IGNORED
    errors = [
        f"{code}: {msg}"
        for code, msg in validate(qualname)["errors"]
        if code not in ignored
    ]
    known = KNOWN_NUMPYDOC_FAILURES.get(qualname, set())
    _xfail_known(
        qualname, errors, KNOWN_NUMPYDOC_FAILURES, lambda e: e.split(":")[0] in known
    )


class _Ignored(Directive):
    """Stand-in for Sphinx-only directives (seealso, only, ...)."""

    has_content = True
    optional_arguments = 10
    final_argument_whitespace = True
    option_spec = None

    def run(self):
        return []


def _literal_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    return [nodes.literal(rawtext, text)], []


for _role in (
    "class",
    "func",
    "meth",
    "attr",
    "obj",
    "ref",
    "mod",
    "term",
    "data",
    "exc",
    "doc",
):
    roles.register_local_role(_role, _literal_role)
for _directive in (
    "seealso",
    "only",
    "versionadded",
    "versionchanged",
    "deprecated",
    "plot",
    "autosummary",
):
    directives.register_directive(_directive, _Ignored)


def _rst_errors(docstring):
    """Errors of numpydoc's reST rendering of ``docstring``, parsed by docutils."""
    rendered = str(SphinxDocString(docstring, config={}))
    stream = io.StringIO()
    docutils.core.publish_doctree(
        rendered,
        settings_overrides={
            "report_level": 3,
            "halt_level": 5,
            "warning_stream": stream,
        },
    )
    return re.findall(r"\((?:ERROR|SEVERE)/\d\) (.*)", stream.getvalue())


def test_rst_errors_are_detected():
    good = (
        "Summary.\n\nAttributes\n----------\nx_ : ndarray of shape (`n_x_`,)\n    X.\n"
    )
    assert _rst_errors(good) == []
    bad = good.replace("(`n_x_`,)", "(n_x_,)")
    assert _rst_errors(bad) == ['Unknown target name: "n_x".']


@pytest.mark.parametrize("qualname", [q for q, _ in _validation_targets()])
def test_docstring_renders_as_valid_rst(qualname):
    # What Sphinx builds from the docstring; errors here are errors in the HTML docs.
    errors = _rst_errors(inspect.getdoc(_resolve(qualname)))
    pattern = KNOWN_RST_FAILURES.get(qualname)
    _xfail_known(
        qualname,
        errors,
        KNOWN_RST_FAILURES,
        lambda e: bool(pattern and re.search(pattern, e)),
    )


# --------------------------------------------------------------------------------------
# Shared parameters: identical wording and defaults everywhere
# --------------------------------------------------------------------------------------


def _documented_parameters(obj):
    doc = NumpyDocString(inspect.getdoc(obj))
    return {
        p.name: (p.type, " ".join(" ".join(p.desc).split())) for p in doc["Parameters"]
    }


def _owners_of(param):
    """Estimators and functions taking ``param`` (not result containers)."""
    owners = []
    for name, obj in _public_objects():
        if not (
            inspect.isfunction(obj) or (inspect.isclass(obj) and hasattr(obj, "fit"))
        ):
            continue
        signature = inspect.signature(obj)
        if param in signature.parameters:
            owners.append((name, obj, signature.parameters[param].default))
    return owners


# The monotone band does not cross-fit by default (cv=None: one band on all rows;
# SPEC section 14), so its ``cv`` has another default and says what None means.
ONE_BAND_BY_DEFAULT = {"MonotoneCalibrationBound", "monotone_bound"}


@pytest.mark.parametrize("param", SHARED_PARAMETERS)
def test_shared_parameters_have_identical_docs_and_defaults(param):
    # Shared by the bounds (everything that cross-fits); ``random_state`` of, say,
    # ``perturb_scores`` seeds something else and is documented as such.
    owners = [
        owner
        for owner in _owners_of(param)
        if "cv" in inspect.signature(owner[1]).parameters
        and not (param == "cv" and owner[0] in ONE_BAND_BY_DEFAULT)
    ]
    # Today TVCalibrationBound and tv_bound; later every bound and its function.
    assert len(owners) >= 2, [name for name, _, _ in owners]
    docs = {}
    for name, obj, default in owners:
        documented = _documented_parameters(obj)
        assert param in documented, f"{name} does not document {param!r}"
        docs[name] = documented[param]
        assert f"default={default!r}" in documented[param][0], (
            name,
            documented[param][0],
        )
    reference_name, reference = next(iter(docs.items()))
    for name, doc in docs.items():
        assert doc == reference, (
            f"{param!r} is documented differently in {name} and {reference_name}:\n"
            f"{doc}\n{reference}"
        )
    defaults = {default for _, _, default in owners}
    assert len(defaults) == 1, (param, defaults)


# Each bound's function documents its parameters as the estimator does.
FUNCTION_OF = {
    "TVCalibrationBound": "tv_bound",
    "NWCalibrationBound": "nw_bound",
    "LipschitzBucketBound": "lipschitz_bucket_bound",
}


def test_guarantee_is_documented_with_the_same_options_and_default_everywhere():
    # What "guarantee" promises differs between the bounds (TV's published form holds
    # with high probability too; NW's and Lipschitz's only in expectation over the
    # training labels), so the wording is compared per bound, estimator against
    # function; the type line and the default are the same everywhere.
    owners = [
        owner
        for owner in _owners_of("guarantee")
        if "cv" in inspect.signature(owner[1]).parameters
    ]
    assert {name for name, _, _ in owners} == set(FUNCTION_OF) | set(
        FUNCTION_OF.values()
    )
    docs = {}
    for name, obj, default in owners:
        assert default == "high_probability", name
        documented = _documented_parameters(obj)
        assert "guarantee" in documented, name
        type_line, text = documented["guarantee"]
        assert (
            type_line == "{'high_probability', 'paper'}, default='high_probability'"
        ), (name, type_line)
        assert "confidence_level" in text, (name, text)
        docs[name] = documented["guarantee"]
    for estimator, function in FUNCTION_OF.items():
        assert docs[function] == docs[estimator], (estimator, function)
    # The published NW and Lipschitz forms say that they hold in expectation only.
    for name in ("NWCalibrationBound", "LipschitzBucketBound"):
        assert "in expectation" in docs[name][1], name


def test_every_signature_parameter_is_documented_in_order():
    for name, obj in _public_objects():
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        if inspect.isclass(obj) and issubclass(obj, Warning):
            continue  # a warning category: no parameters of its own
        signature = [p for p in inspect.signature(obj).parameters if p != "self"]
        # numpydoc writes variadic parameters as ``**params``.
        documented = [p.lstrip("*") for p in _documented_parameters(obj)]
        if f"skcalbound.{name}" in KNOWN_NUMPYDOC_FAILURES and not documented:
            continue  # reported by the numpydoc test above
        assert documented == signature, name


# --------------------------------------------------------------------------------------
# The assumption constants are not tuning knobs, and the docstrings say so.
# --------------------------------------------------------------------------------------
def test_docstrings_say_assumptions_are_not_knobs():
    for obj in (
        TVCalibrationBound,
        NWCalibrationBound,
        LipschitzBucketBound,
        tv_bound,
        nw_bound,
        lipschitz_bucket_bound,
    ):
        doc = " ".join(obj.__doc__.split())
        n_params = {
            "TVCalibrationBound": 1,
            "tv_bound": 1,
            "NWCalibrationBound": 3,
            "nw_bound": 3,
        }.get(obj.__name__, 2)
        phrase = (
            "**An assumption about how the scores were produced, not a tuning "
            "knob: never choose it from the data**"
        )
        assert doc.count(phrase) == n_params, obj.__name__
