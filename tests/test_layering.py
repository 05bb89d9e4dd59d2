"""Where code lives and which way data flows (STYLE.md section 1), read from the source.

The package's import graph is built once with ``ast`` (every import statement,
including those inside functions; relative imports resolved; a package's
``__init__`` is the package; imports under ``if TYPE_CHECKING:`` do not run and are
left out). Each rule is one test whose message lists every offender.
"""

import ast
import functools
from pathlib import Path

import skcalbound

PACKAGE_DIR = Path(skcalbound.__file__).resolve().parent
PACKAGE = "skcalbound"

# The data flow: a module of a stage never imports (even through other modules) a
# module of a later stage. A stage is the first name under the package, a module or a
# folder: ``skcalbound._surrogates.nw._kernel`` is in ``_surrogates``.
STAGES = ("_validation", "_splitting", "_surrogates", "_terms", "_result")
# Above the stages: the one fold loop and the one two-pass driver.
WIRING = ("_base", "_passes")
# Estimator modules (those defining a public estimator) come next, found from the
# source; consumers, the modules built on the estimators (scorers, plots, the command
# line, the registry, experiments), are those that import an estimator module.
# Pure math: arrays and floats in and out; no scikit-learn, no randomness, no printing.
PURE = ("_surrogates", "_terms", "_sech")
MAX_LINES = 700
MAX_PAPER_COMPARISONS = 3

PROX_TV_HOME = f"{PACKAGE}._surrogates._tv"
COMPAT = f"{PACKAGE}._compat"
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


# --------------------------------------------------------------------------------------
# The graph
# --------------------------------------------------------------------------------------


class Module:
    """One parsed module: its name, path, text, tree and whether it is a package."""

    def __init__(self, name, path, source=None):
        self.name = name
        self.path = path
        self.source = path.read_text() if source is None else source
        self.tree = ast.parse(self.source)
        self.is_package = path.name == "__init__.py"


def _module_name(path):
    parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node):
    """``if TYPE_CHECKING:`` (under any alias ending in ``TYPE_CHECKING``)."""
    test = node.test
    name = getattr(test, "id", None) or getattr(test, "attr", None) or ""
    return name.endswith("TYPE_CHECKING")


def _walk_runtime(tree):
    """``ast.walk`` without the bodies of ``if TYPE_CHECKING:``."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, ast.If) and _is_type_checking(node):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))


def _resolve(module, node):
    """The absolute module an ``ImportFrom`` names."""
    if not node.level:
        return node.module
    package = module.name if module.is_package else module.name.rpartition(".")[0]
    base = package.split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _raw_imports(module, known, *, runtime=True):
    """``(imported module, imported name or None, line)`` for every import of
    ``module``; ``from a import b`` also yields ``("a.b", None)`` when ``a.b`` is a
    module of ``known``."""
    walk = _walk_runtime if runtime else ast.walk
    found = []
    for node in walk(module.tree):
        if isinstance(node, ast.Import):
            found.extend((alias.name, None, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, node)
            for alias in node.names:
                found.append((target, alias.name, node.lineno))
                if f"{target}.{alias.name}" in known:
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


def _owner(name, known):
    """The module of ``known`` that ``name`` (a dotted module path) lies in."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


class Graph:
    """The modules of the package and the package modules each one imports."""

    def __init__(self, modules):
        self.modules = modules
        self.imports = {
            name: _raw_imports(module, modules) for name, module in modules.items()
        }
        # What a package re-exports, read from all its imports (including those
        # under TYPE_CHECKING, which is where a lazy ``__init__`` lists them):
        # ``from skcalbound import NWCalibrationBound`` depends on ``_nw_bound``.
        self.exports = {
            name: {
                alias: _owner(target, modules)
                for target, alias, _ in _raw_imports(module, modules, runtime=False)
                if alias is not None and _owner(target, modules) not in {None, name}
            }
            for name, module in modules.items()
            if module.is_package
        }
        # ``from a import b``, ``b`` a module: the edge is to ``a.b`` (listed
        # apart). A module's own packages run before it: no edge to them.
        self.edges = {name: {} for name in modules}
        for name, found in self.imports.items():
            for target, alias, line in found:
                owner = _owner(target, modules)
                if owner is None or f"{target}.{alias}" in modules:
                    continue
                if alias is not None and target == owner:
                    owner = self.exports.get(owner, {}).get(alias, owner)
                if owner != name and not name.startswith(f"{owner}."):
                    self.edges[name].setdefault(owner, line)

    def path(self, start, goal):
        """The shortest import chain from ``start`` to ``goal`` (or None)."""
        previous = {start: None}
        todo = [start]
        while todo:
            following = []
            for node in todo:
                for nxt in sorted(self.edges[node]):
                    if nxt == goal:
                        chain = [goal, node]
                        while previous[chain[-1]] is not None:
                            chain.append(previous[chain[-1]])
                        return chain[::-1]
                    if nxt not in previous:
                        previous[nxt] = node
                        following.append(nxt)
            todo = following
        return None

    def reachable(self, start):
        seen, todo = set(), [start]
        while todo:
            for nxt in self.edges[todo.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    def cycles(self):
        """The strongly connected components with more than one module (Tarjan)."""
        index, low, stack, on_stack, found = {}, {}, [], set(), []

        def visit(node):
            index[node] = low[node] = len(index)
            stack.append(node)
            on_stack.add(node)
            for nxt in self.edges[node]:
                if nxt not in index:
                    visit(nxt)
                    low[node] = min(low[node], low[nxt])
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))

        for node in sorted(self.modules):
            if node not in index:
                visit(node)
        return found


@functools.cache
def graph():
    modules = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        if "__pycache__" not in path.parts:
            modules[_module_name(path)] = Module(_module_name(path), path)
    return Graph(modules)


def _group(module, names):
    """The entry of ``names`` that ``module`` belongs to (``skcalbound._surrogates._tv``
    -> ``_surrogates``), or None."""
    parts = module.split(".")
    if parts[0] != PACKAGE or len(parts) < 2:
        return None
    return parts[1] if parts[1] in names else None


def _public_classes(g):
    """Names re-exported by the package's ``__init__`` that some module defines as a
    class."""
    return set(g.exports.get(PACKAGE, {}))


def _estimator_classes(g):
    """``{(module, class)}`` of the public estimators: a public class whose bases
    lead, by name, to ``BaseEstimator``."""
    bases = {}
    for name, module in g.modules.items():
        for node in ast.walk(module.tree):
            if isinstance(node, ast.ClassDef):
                bases[(name, node.name)] = {
                    getattr(base, "id", None) or getattr(base, "attr", None)
                    for base in node.bases
                }
    by_class = {}
    for (module, cls), names in bases.items():
        by_class.setdefault(cls, set()).update(names)

    @functools.cache
    def derives(cls):
        names = by_class.get(cls, set())
        return "BaseEstimator" in names or any(
            n != cls and n in by_class and derives(n) for n in names
        )

    public = _public_classes(g)
    return {(m, c) for (m, c) in bases if c in public and derives(c)}


def _estimator_modules(g):
    return {module for module, _ in _estimator_classes(g)}


def _rank(g, module, estimators):
    """The layer of ``module``: 1-5 the stages, 6 the wiring, 7 the estimators, 8 the
    consumers (modules that import an estimator module), None for helpers."""
    stage = _group(module, STAGES)
    if stage is not None:
        return STAGES.index(stage) + 1
    if _group(module, WIRING) is not None:
        return len(STAGES) + 1
    if module in estimators:
        return len(STAGES) + 2
    if g.reachable(module) & estimators:
        return len(STAGES) + 3
    return None


LAYER_NAMES = {
    **{i + 1: f"stage {s}" for i, s in enumerate(STAGES)},
    len(STAGES) + 1: "wiring",
    len(STAGES) + 2: "estimator",
    len(STAGES) + 3: "consumer",
}


def _chain(g, start, goal):
    return " -> ".join(g.path(start, goal))


def _offenders(title, offenders):
    return f"{title}:\n  " + "\n  ".join(offenders)


# --------------------------------------------------------------------------------------
# The parser itself, and guards against vacuous passes
# --------------------------------------------------------------------------------------


def _graph_of(sources):
    """A graph of made-up modules ``{name: source}`` (``name/`` for a package)."""
    modules = {}
    for name, source in sources.items():
        is_package = name.endswith("/")
        name = name.rstrip("/")
        path = Path(*name.split("."), "__init__.py" if is_package else "")
        if not is_package:
            path = path.with_suffix(".py")
        modules[name] = Module(name, path, source)
    return Graph(modules)


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
    module = Module("skcalbound._surrogates._tv", Path("_tv.py"), source)
    known = {"skcalbound._terms", "skcalbound._surrogates._step"}
    found = {(m, n) for m, n, _ in _raw_imports(module, known)}
    assert ("numpy", None) in found
    assert ("skcalbound", "_terms") in found
    assert ("skcalbound._terms", None) in found
    assert ("skcalbound._compat", "Interval") in found
    assert ("skcalbound._surrogates._step", "StepFunction") in found
    assert ("prox_tv", None) in found
    assert ("sklearn.base", None) in found
    init = Module("skcalbound", Path("__init__.py"), "from ._tv_bound import X\n")
    assert ("skcalbound._tv_bound", "X") in {
        (m, n) for m, n, _ in _raw_imports(init, set())
    }


def test_the_graph_sees_packages_reexports_cycles_and_type_checking():
    g = _graph_of(
        {
            "p/": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n"
                "    from ._a import A\n"
            ),
            "p._a": "from . import _b\n",
            "p._b": "def f():\n    from p._c.x import g\n",
            "p._c/": "",
            "p._c.x": "from p import A\nfrom p import __version__\n",
        }
    )
    assert g.edges["p"] == {}  # TYPE_CHECKING imports do not run
    assert g.exports["p"] == {"A": "p._a"}
    assert set(g.edges["p._a"]) == {"p._b"}
    assert set(g.edges["p._b"]) == {"p._c.x"}  # inside a function
    # The re-export resolved; the module's own package ``p`` is no edge.
    assert set(g.edges["p._c.x"]) == {"p._a"}
    assert g.cycles() == [["p._a", "p._b", "p._c.x"]]
    assert g.path("p._a", "p._c.x") == ["p._a", "p._b", "p._c.x"]


def test_the_package_layout_is_seen():
    # Guards against vacuous passes: the modules the rules talk about are found.
    g = graph()
    for module in [PACKAGE, COMPAT, PROX_TV_HOME] + [
        f"{PACKAGE}.{name}" for name in ("_validation", "_terms", "_result", "_base")
    ]:
        assert module in g.modules, module
    assert ("prox_tv", None) in {(m, n) for m, n, _ in g.imports[PROX_TV_HOME]}
    estimators = _estimator_modules(g)
    assert {f"{PACKAGE}._tv_bound", f"{PACKAGE}._sech_perturbed"} <= estimators
    assert f"{PACKAGE}._base" not in estimators  # _BaseCalibrationBound is private
    ranks = {m: _rank(g, m, estimators) for m in g.modules}
    assert {m for m, r in ranks.items() if r == 8} >= {
        f"{PACKAGE}._registry",
        f"{PACKAGE}._scorers",
        f"{PACKAGE}.experiments._study",
    }
    for layer in range(1, 8):
        assert layer in ranks.values(), LAYER_NAMES[layer]


# --------------------------------------------------------------------------------------
# The rules
# --------------------------------------------------------------------------------------


def test_no_import_cycle():
    g = graph()
    cycles = g.cycles()
    assert not cycles, _offenders(
        "import cycles",
        [_chain(g, c[0], c[0]) for c in cycles],
    )


def test_surrogates_import_nothing_of_the_package_outside_surrogates():
    g = graph()
    offenders = [
        f"{module} imports {target} (line {line})"
        for module in sorted(g.modules)
        if _group(module, ["_surrogates"])
        for target, line in sorted(g.edges[module].items())
        if not _group(target, ["_surrogates"])
    ]
    assert not offenders, _offenders("_surrogates imports outside itself", offenders)


def _against_the_flow(g):
    """Stages, in order, then the wiring, the estimator modules and the consumers: a
    module never reaches, through any chain of imports, a module of a later layer;
    an estimator module reaches no estimator module (its own included)."""
    estimators = _estimator_modules(g)
    ranks = {module: _rank(g, module, estimators) for module in g.modules}
    offenders = []
    for module in sorted(g.modules):
        rank = ranks[module]
        if rank is None:
            continue
        for target in sorted(g.reachable(module)):
            other = ranks[target]
            if other is None:
                continue
            if other > rank or (other == rank and target in estimators):
                offenders.append(
                    f"{module} ({LAYER_NAMES[rank]}) reaches {target} "
                    f"({LAYER_NAMES[other]}): {_chain(g, module, target)}"
                )
    return offenders


def test_the_data_flow_rule_can_fail():
    g = _graph_of(
        {
            "skcalbound/": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n"
                "    from ._a_bound import ABound\n"
                "    from ._b_bound import BBound\n"
            ),
            "skcalbound._base": "from sklearn.base import BaseEstimator\n"
            "class _Base(BaseEstimator): ...\n",
            "skcalbound._terms": "from ._helper import f\n",
            "skcalbound._helper": "from ._result import R\n",
            "skcalbound._result": "",
            "skcalbound._a_bound": "from ._base import _Base\n"
            "from ._registry import BOUNDS\n"
            "class ABound(_Base): ...\n",
            "skcalbound._b_bound": "from ._base import _Base\n"
            "class BBound(_Base): ...\n",
            "skcalbound._registry": "from ._b_bound import BBound\n",
        }
    )
    assert _estimator_modules(g) == {"skcalbound._a_bound", "skcalbound._b_bound"}
    assert _against_the_flow(g) == [
        "skcalbound._a_bound (estimator) reaches skcalbound._b_bound (estimator): "
        "skcalbound._a_bound -> skcalbound._registry -> skcalbound._b_bound",
        "skcalbound._a_bound (estimator) reaches skcalbound._registry (consumer): "
        "skcalbound._a_bound -> skcalbound._registry",
        "skcalbound._terms (stage _terms) reaches skcalbound._result (stage _result): "
        "skcalbound._terms -> skcalbound._helper -> skcalbound._result",
    ]


def test_no_module_imports_a_later_stage():
    g = graph()
    offenders = _against_the_flow(g)
    assert not offenders, _offenders("imports against the data flow", offenders)


def test_every_estimator_module_holds_one_public_estimator_named_after_it():
    # One public estimator per module (STYLE.md section 1).
    by_module = {}
    for module, cls in _estimator_classes(graph()):
        by_module.setdefault(module, []).append(cls)
    assert by_module
    offenders = [
        f"{module}: {sorted(names)}"
        for module, names in sorted(by_module.items())
        if len(names) != 1 or not module.split(".")[-1].startswith("_")
    ]
    assert not offenders, _offenders("estimator modules", offenders)


def test_no_module_is_over_the_line_limit():
    g = graph()
    offenders = [
        f"{name}: {n} lines"
        for name, module in sorted(g.modules.items())
        if (n := len(module.source.splitlines())) > MAX_LINES
    ]
    assert not offenders, _offenders(f"modules over {MAX_LINES} lines", offenders)


def test_no_subclasses_scan():
    # Bounds are listed in skcalbound._registry, not found by ``__subclasses__()``.
    g = graph()
    offenders = [
        f"{name}, line {node.lineno}"
        for name, module in sorted(g.modules.items())
        for node in ast.walk(module.tree)
        if (isinstance(node, ast.Attribute) and node.attr == "__subclasses__")
        or (isinstance(node, ast.Constant) and node.value == "__subclasses__")
    ]
    assert not offenders, _offenders("__subclasses__ used", offenders)


def _compares_paper(node):
    return isinstance(node, ast.Compare) and any(
        isinstance(leaf, ast.Constant) and leaf.value == "paper"
        for operand in [node.left, *node.comparators]
        for leaf in ast.walk(operand)
    )


def test_paper_is_compared_in_few_modules():
    # The guarantee is decided in one place, not by ``guarantee == "paper"`` in each
    # consumer.
    g = graph()
    found = {
        name: sorted(
            node.lineno for node in ast.walk(module.tree) if _compares_paper(node)
        )
        for name, module in sorted(g.modules.items())
    }
    found = {name: lines for name, lines in found.items() if lines}
    assert len(found) <= MAX_PAPER_COMPARISONS, _offenders(
        f'"paper" compared in {len(found)} modules (at most {MAX_PAPER_COMPARISONS})',
        [f"{name}, lines {lines}" for name, lines in found.items()],
    )


def test_prox_tv_is_imported_only_in_the_tv_surrogate():
    g = graph()
    offenders = [
        f"{module}, line {line}"
        for module, found in sorted(g.imports.items())
        if module != PROX_TV_HOME
        for imported, _, line in found
        if imported.split(".")[0] == "prox_tv"
    ]
    assert not offenders, _offenders("prox_tv imported", offenders)


def _is_private_sklearn(imported, name):
    if imported.split(".")[0] != "sklearn":
        return False
    if imported in PRIVATE_SKLEARN_MODULES:
        return True
    if any(part.startswith("_") for part in imported.split(".")):
        return True  # any private scikit-learn module
    return name is not None and (name in PRIVATE_SKLEARN_NAMES or name.startswith("_"))


def test_private_sklearn_helpers_come_through_compat():
    g = graph()
    private = {n for m, n, _ in g.imports[COMPAT] if _is_private_sklearn(m, n)}
    assert {"_fit_context", "Interval", "StrOptions", "validate_params"} <= private
    offenders = [
        f"{module} imports {name or ''} from {imported}, line {line}"
        for module, found in sorted(g.imports.items())
        if module != COMPAT
        for imported, name, line in found
        if _is_private_sklearn(imported, name)
    ]
    assert not offenders, _offenders("private scikit-learn helpers", offenders)


def test_pure_math_imports_no_sklearn_draws_no_random_numbers_and_prints_nothing():
    g = graph()
    offenders = []
    for module in sorted(g.modules):
        if _group(module, PURE) is None:
            continue
        for imported, name, line in g.imports[module]:
            parts = imported.split(".")
            if (
                parts[0] in {"sklearn", "random"}
                or "random" in parts[1:]
                or name in {"random", "default_rng", "RandomState"}
            ):
                offenders.append(f"{module} imports {name or imported}, line {line}")
        for node in ast.walk(g.modules[module].tree):
            if isinstance(node, ast.Attribute) and node.attr in {
                "random",
                "default_rng",
            }:
                offenders.append(f"{module} draws random numbers, line {node.lineno}")
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print":
                offenders.append(f"{module} prints, line {node.lineno}")
    assert not offenders, _offenders("impure math", offenders)
