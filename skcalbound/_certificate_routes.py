"""NW's default records (SPEC 13): per fold the smaller of two routes.

``certificate_`` holds, per fold, the route that gave its bound and both routes'
terms (``folds``); :func:`routes_problems` is what ``skcalbound verify`` checks of them
without a refit. See ``docs/internals/core.rst``.
"""

import math

import numpy as np


def _float(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def fold_routes(folds):
    """Per fold, of a bound whose fold bound is the smaller of two routes (NW's
    default, SPEC 13): the ``route`` taken and both routes' terms; else None."""
    if not all("lower_terms" in fold.extra for fold in folds):
        return None
    table = lambda terms: {str(k): float(v) for k, v in terms.items()}  # noqa: E731
    out = []
    for fold in folds:
        entry = {
            "route": fold.info["route"],
            "upper_terms": table(fold.terms),
            "lower_terms": table(fold.extra["lower_terms"]),
        }
        if "lower_from" in fold.extra:  # Lipschitz: another candidate's lower bound
            entry["lower_from"] = table(fold.extra["lower_from"])
        out.append(entry)
    return out


_UPPER_ROUTE = (
    "validation_mean",
    "bias_mean",
    "label_concentration",
    "population_transfer",
)
_LOWER_ROUTE = (
    "validation_mean",
    "bernstein_residual",
    "smoothing_bound",
    "smoothing_transfer",
)


def _route_bounds(fold, tol):
    """``(U_k, L_k, problems)`` of one recorded fold of SPEC 13: ``U_J`` and ``U_tri``
    its two tables' sums, ``U_k = min(U_J, U_tri)`` by the route it names and ``L_k =
    2 validation_mean - U_tri`` (Lipschitz: the larger of that and another
    candidate's, ``lower_from``)."""
    upper, lower = fold.get("upper_terms"), fold.get("lower_terms")
    if not (
        isinstance(upper, dict)
        and isinstance(lower, dict)
        and tuple(upper) == _UPPER_ROUTE
        and tuple(lower) == _LOWER_ROUTE
        and all(
            _float(v) and math.isfinite(v) for v in [*upper.values(), *lower.values()]
        )
    ):
        return None, None, ["a fold's upper_terms and lower_terms are not SPEC 13's"]
    problems = []
    if any(v < -tol for v in [*upper.values(), *lower.values()]):
        problems.append("a fold's terms are negative")
    if abs(upper["validation_mean"] - lower["validation_mean"]) > tol:
        problems.append("a fold's two tables have different validation_mean")
    u_j, u_tri = math.fsum(upper.values()), math.fsum(lower.values())
    route = fold.get("route")
    if route not in ("jensen", "triangle") or (
        abs(u_j - u_tri) > tol and route != ("jensen" if u_j < u_tri else "triangle")
    ):
        problems.append(
            f"a fold's route is {route!r}, but its Jensen terms add up to {u_j!r} and "
            f"its triangle terms to {u_tri!r}"
        )
    lower_bound = 2.0 * lower["validation_mean"] - u_tri
    if "lower_from" in fold:
        other = fold["lower_from"]
        if not (
            isinstance(other, dict)
            and tuple(other) == _LOWER_ROUTE
            and all(_float(v) and math.isfinite(v) for v in other.values())
        ):
            return None, None, ["a fold's lower_from is not a SPEC 13 triangle table"]
        if any(v < -tol for v in other.values()):
            problems.append("a fold's lower_from terms are negative")
        other_bound = 2.0 * other["validation_mean"] - math.fsum(other.values())
        if other_bound < lower_bound - tol:
            problems.append(
                "a fold's lower_from gives a smaller lower bound than its own route"
            )
        lower_bound = max(lower_bound, other_bound)
    return min(u_j, u_tri), lower_bound, problems


def routes_problems(record, rtol, atol):
    """What a record of NW's default (SPEC 13: per fold the smaller of two routes)
    says against itself: per fold (``folds``) its route and both tables, and
    ``bound = min(1, aggregate of U_k)``, ``lower_bound = max(0, aggregate of L_k)``,
    ``terms`` the aggregate of the Jensen tables (the mean, or the smallest fold's)."""
    folds = record.get("folds")
    if not isinstance(folds, list) or not folds or len(folds) != record.get("n_splits"):
        return [
            "its folds (per fold its route and both tables) are missing or not one "
            "per split"
        ]
    if not all(isinstance(fold, dict) for fold in folds):
        return ["its folds must be JSON objects"]
    scale = [
        abs(v)
        for fold in folds
        for v in (fold.get("upper_terms") or {}).values()
        if _float(v)
    ]
    tol = rtol * (math.fsum(scale) + 1.0) + atol
    uppers, lowers, problems = [], [], []
    for fold in folds:
        u, low, found = _route_bounds(fold, tol)
        if u is None:
            return found
        uppers.append(u)
        lowers.append(low)
        problems.extend(found)
    if record.get("aggregate") == "min":
        best = int(np.argmin(uppers))
        raw, floor = uppers[best], max(lowers)
        terms = folds[best]["upper_terms"]
    else:
        raw, floor = math.fsum(uppers) / len(folds), math.fsum(lowers) / len(folds)
        terms = {
            k: math.fsum(f["upper_terms"][k] for f in folds) / len(folds)
            for k in _UPPER_ROUTE
        }
    recorded = record["terms"]
    if set(recorded) != set(_UPPER_ROUTE) or any(
        abs(recorded[k] - terms[k]) > tol for k in _UPPER_ROUTE
    ):
        problems.append("its terms are not the aggregate of its folds' Jensen terms")
    for name, value, expected in (
        ("bound", record["bound"], min(raw, 1.0)),
        ("lower_bound", record["lower_bound"], max(floor, 0.0)),
    ):
        if abs(value - expected) > tol:
            problems.append(f"its {name} is {value!r}; its folds make it {expected!r}")
    return problems
