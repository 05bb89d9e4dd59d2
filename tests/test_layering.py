"""Where code lives and which way data flows (STYLE.md section 1), read from the source.

Imports are parsed with ``ast``, so these tests see every import statement, including
those inside functions, without running the modules.
"""

import ast
import inspect
from pathlib import Path

import pytest

import skcalbound

PACKAGE_DIR = Path(skcalbound.__file__).resolve().parent
PACKAGE = "skcalbound"

# The data flow: a module of a stage never imports a module of a later stage.
STAGES = ["_validation", "_splitting", "_surrogates", "_terms", "_result"]
# Pure math: arrays and floats in and out; no scikit-learn, no randomness, no printing.
PURE = ["_terms", "_surrogates", "_sech"]
# Higher than every stage: the wiring (``_base``) and the estimators.
WIRING = ["_base"]
# Above the estimators: modules built on the public estimators (scorers, plots, the
# command line), which may import estimator modules as ``__init__`` does; no
# estimator module imports them.
CONSUMERS = [
    "_scorers",
    "_display",
    "_cli",
    "_calibration_test",
    "_groups",
    "_registry",
    "__main__",
]

PROX_TV_HOME = "skcalbound._surrogates._tv"
COMPAT = "skcalbound._compat"
PRIVATE_SKLEARN_NAMES = {
    "_fit_context",
    "Interval",
    "StrOptions",
    "HasMethods",
    "validate_params",
    "_estimator_has",
    "available_if",
}
PRIVATE_SKLEARN_MODULES = {
    "sklearn.utils._param_validation",
    "sklearn.utils._available_if",
}


def _module_name(path):
    parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _all_modules():
    return {
        _module_name(path): path
        for path in sorted(PACKAGE_DIR.rglob("*.py"))
        if "__pycache__" not in path.parts
    }


MODULES = _all_modules()


def _imports(module, source):
    """``(imported module, imported name or None, line)`` for every import.

    ``from a import b`` yields ``("a", "b")``, and also ``("a.b", None)`` when ``a.b``
    is a module of this package (``from . import _tv``). Relative imports are resolved.
    """
    is_package = MODULES.get(module, Path()).name == "__init__.py"
    package = module if is_package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.append((alias.name, None, node.lineno))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            for alias in node.names:
                found.append((target, alias.name, node.lineno))
                if f"{target}.{alias.name}" in MODULES:
                    found.append((f"{target}.{alias.name}", None, node.lineno))
        elif isinstance(node, ast.Call):
            # importlib.import_module("x") / __import__("x") with a literal name.
            func = node.func
            name = getattr(func, "attr", None) or getattr(func, "id", None)
            if (
                name in {"import_module", "__import__"}
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                found.append((node.args[0].value, None, node.lineno))
    return found


class _Imports(dict):
    """``IMPORTS[module]``: the imports of ``module``, parsed on first use (parsing
    every module when this file is collected cost ~0.8 s on each pytest-xdist
    worker)."""

    def __missing__(self, module):
        self[module] = found = _imports(module, MODULES[module].read_text())
        return found


IMPORTS = _Imports()


def _group(module, names):
    """The entry of ``names`` that ``module`` belongs to (``_surrogates._tv`` ->
    ``_surrogates``)."""
    parts = module.split(".")
    if parts[0] != PACKAGE or len(parts) < 2:
        return None
    return parts[1] if parts[1] in names else None


def _estimator_modules():
    modules = set()
    for name in skcalbound.__all__:
        obj = getattr(skcalbound, name)
        if inspect.isclass(obj) and hasattr(obj, "fit"):
            modules.add(obj.__module__)
    return modules


# --------------------------------------------------------------------------------------
# The parser itself
# --------------------------------------------------------------------------------------


def test_import_parser_resolves_relative_imports():
    source = (
        "import numpy as np\n"
        "from .. import _terms\n"
        "from .._compat import Interval\n"
        "from ._step import StepFunction\n"
        "def f():\n"
        "    import prox_tv\n"
        "    importlib.import_module('sklearn.base')\n"
    )
    found = {(m, n) for m, n, _ in _imports("skcalbound._surrogates._tv", source)}
    assert ("numpy", None) in found
    assert ("skcalbound", "_terms") in found
    assert ("skcalbound._terms", None) in found
    assert ("skcalbound._compat", "Interval") in found
    assert ("skcalbound._surrogates._step", "StepFunction") in found
    assert ("prox_tv", None) in found
    assert ("sklearn.base", None) in found
    init = {(m, n) for m, n, _ in _imports("skcalbound", "from ._tv_bound import X\n")}
    assert ("skcalbound._tv_bound", "X") in init


def test_the_package_layout_is_seen():
    # Guards against vacuous passes: the modules the rules talk about are found.
    for module in [
        "skcalbound",
        COMPAT,
        PROX_TV_HOME,
        "skcalbound._validation",
        "skcalbound._terms",
        "skcalbound._result",
        "skcalbound._base",
    ]:
        assert module in MODULES, module
    assert ("prox_tv", None) in {(m, n) for m, n, _ in IMPORTS[PROX_TV_HOME]}
    assert "skcalbound._tv_bound" in _estimator_modules()


# --------------------------------------------------------------------------------------
# The rules
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("module", sorted(MODULES))
def test_prox_tv_is_imported_only_in_the_tv_surrogate(module):
    if module == PROX_TV_HOME:
        return
    offending = [line for m, _, line in IMPORTS[module] if m.split(".")[0] == "prox_tv"]
    assert not offending, f"{module} imports prox_tv (lines {offending})"


def _is_private_sklearn(imported, name):
    if imported.split(".")[0] != "sklearn":
        return False
    if imported in PRIVATE_SKLEARN_MODULES:
        return True
    if any(part.startswith("_") for part in imported.split(".")):
        return True  # any private scikit-learn module
    return name is not None and (name in PRIVATE_SKLEARN_NAMES or name.startswith("_"))


@pytest.mark.parametrize("module", sorted(MODULES))
def test_private_sklearn_helpers_come_through_compat(module):
    if module == COMPAT:
        return
    offending = [
        (m, n, line) for m, n, line in IMPORTS[module] if _is_private_sklearn(m, n)
    ]
    assert not offending, f"{module} imports private scikit-learn helpers: {offending}"


def test_compat_is_where_the_private_helpers_are():
    private = {n for m, n, _ in IMPORTS[COMPAT] if _is_private_sklearn(m, n)}
    assert {"_fit_context", "Interval", "StrOptions", "validate_params"} <= private


@pytest.mark.parametrize("module", sorted(MODULES))
def test_stages_never_import_a_later_stage(module):
    stage = _group(module, STAGES)
    if stage is None:
        return
    rank = STAGES.index(stage)
    for imported, _, line in IMPORTS[module]:
        other = _group(imported, STAGES)
        if other is not None:
            assert STAGES.index(other) <= rank, (
                f"{module} (stage {stage}) imports {imported} (later stage {other}), "
                f"line {line}"
            )
        assert _group(imported, WIRING) is None, (
            f"{module} (stage {stage}) imports the wiring {imported}, line {line}"
        )
        assert imported not in _estimator_modules(), (module, imported, line)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_pure_math_modules_import_no_sklearn_and_draw_no_random_numbers(module):
    if _group(module, PURE) is None:
        return
    source = MODULES[module].read_text()
    for imported, name, line in IMPORTS[module]:
        top = imported.split(".")[0]
        assert top != "sklearn", f"{module} imports {imported} (line {line})"
        assert top != "random" and "random" not in imported.split(".")[1:], (
            module,
            imported,
            line,
        )
        assert name not in {"random", "default_rng", "RandomState"}, (
            module,
            name,
            line,
        )
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in {"random", "default_rng"}:
            pytest.fail(f"{module} draws random numbers (line {node.lineno})")
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print":
            pytest.fail(f"{module} prints (line {node.lineno})")


@pytest.mark.parametrize("module", sorted(MODULES))
def test_estimator_modules_are_imported_only_by_the_package_init(module):
    if module == PACKAGE or _group(module, CONSUMERS) is not None:
        return
    estimator_modules = _estimator_modules()
    offending = [
        (imported, line)
        for imported, _, line in IMPORTS[module]
        if imported in estimator_modules and imported != module
    ]
    assert not offending, f"{module} imports estimator modules {offending}"


def test_every_estimator_module_holds_one_public_estimator_named_after_it():
    # One public estimator per module, named after it (STYLE.md section 1).
    by_module = {}
    for name in skcalbound.__all__:
        obj = getattr(skcalbound, name)
        if inspect.isclass(obj) and hasattr(obj, "fit"):
            by_module.setdefault(obj.__module__, []).append(name)
    assert by_module
    for module, names in by_module.items():
        assert len(names) == 1, (module, names)
        assert module.split(".")[-1].startswith("_"), module


@pytest.mark.parametrize("module", sorted(MODULES))
def test_consumers_are_imported_only_by_the_package_init_and_each_other(module):
    if module == PACKAGE or _group(module, CONSUMERS) is not None:
        return
    offending = [
        (imported, line)
        for imported, _, line in IMPORTS[module]
        if _group(imported, CONSUMERS) is not None
    ]
    assert not offending, f"{module} imports consumer modules {offending}"
