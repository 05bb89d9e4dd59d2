"""The audit record of a fitted bound: ``certificate_``, and how to check it.

``certificate_`` is a plain JSON dict (``json.loads(json.dumps(est.certificate_)) ==
est.certificate_``) whose floats are exactly the estimator's, with a SHA-256
``fingerprint`` of the data as the estimator used them: the validated positive-class
scores as float64 little-endian bytes in data order, then the 0/1 labels as uint8
(``hashlib.sha256(s.astype("<f8").tobytes() + y01.astype("u1").tobytes())``).
Its keys, the recipe and the checks: ``docs/internals/core.rst``.
"""

import hashlib
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from numbers import Integral

import numpy as np

from ._certificate_routes import fold_routes, routes_problems
from ._guarantee import GUARANTEES, HIGH_PROBABILITY
from ._validation import check_scores_labels

RECORD = "skcalbound.certificate"
RECORD_VERSION = 1
FINGERPRINT_RECIPE = (
    "sha256 of the validated positive-class scores as float64 little-endian bytes in "
    "data order, followed by the 0/1 labels (1 = positive class) as uint8 bytes"
)
# The assumption constants as given (constructor parameters) and as used (fitted).
_GIVEN = ("V", "h", "b1", "b2", "L")
_USED = ("b1_", "b2_", "L_", "monotonicity_rejected_")
NUMBERS = ("bound", "lower_bound", "estimate")
REQUIRED = (
    "record",
    "method",
    "n_samples",
    "params",
    "reproducible",
    "bound",
    "lower_bound",
    "estimate",
    "terms",
    "fingerprint",
)


def data_fingerprint(scores, labels):
    """SHA-256 hex digest of ``scores`` (float64 little-endian) then ``labels``
    (uint8 0/1), by the recipe of the module docstring; inputs assumed validated."""
    digest = hashlib.sha256()
    digest.update(np.ascontiguousarray(scores, dtype="<f8").data)
    digest.update(np.ascontiguousarray(labels, dtype=np.uint8).data)
    return digest.hexdigest()


def fingerprint_of(estimator, X, y):
    """``(n_samples, n_positive, digest)`` of ``(X, y)`` validated as ``estimator``'s
    ``fit`` validates them (it sets ``n_features_in_`` on ``estimator``, as ``fit``
    would)."""
    scores, labels, _ = check_scores_labels(estimator, X, y, estimator.pos_label)
    return (
        int(scores.shape[0]),
        int(np.count_nonzero(labels)),
        data_fingerprint(scores, labels),
    )


def _json_value(value):
    """``(value as plain JSON data, True)``, or ``(None, False)`` if it is not."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (bool, str)):
        return value, True
    if isinstance(value, Integral):
        return int(value), True
    if isinstance(value, float):
        return (value, True) if math.isfinite(value) else (None, False)
    if isinstance(value, (list, tuple)):
        items = [_json_value(v) for v in value]
        if all(ok for _, ok in items):
            return [v for v, _ in items], True
        return None, False
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        items = {k: _json_value(v) for k, v in value.items()}
        if all(ok for _, ok in items.values()):
            return {k: v for k, (v, _) in items.items()}, True
    return None, False


def _plain(value):
    """``value`` as JSON data, or its ``repr`` when it is not."""
    plain, ok = _json_value(value)
    return plain if ok else repr(value)


def _now():
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True)
class DataSummary:
    """What a fit keeps of its data for the audit record: ``n_samples``,
    ``n_positive``, ``digest`` (the SHA-256 hex digest of the module docstring's
    recipe, or None for data not read in order) and ``created`` (the UTC time of the
    fit, ISO 8601)."""

    n_samples: int
    n_positive: int
    digest: object = None
    created: str = field(default_factory=_now)

    @classmethod
    def of_arrays(cls, scores, labels):
        """The summary of validated arrays in data order (float64 scores, uint8 0/1
        labels)."""
        n_positive = int(np.count_nonzero(labels))
        return cls(int(scores.shape[0]), n_positive, data_fingerprint(scores, labels))


# Not every bound has folds (TV's cell bound, the band): what random_state=None
# leaves to fresh randomness is any of the fit's draws.
_FRESH = (
    "random_state=None: the fit's random draws (the folds, the order of tied "
    "scores, the estimate's cross-fitting) came from fresh randomness"
)


def build_certificate(estimator, data):
    """The ``certificate_`` dict of a fitted bound ``estimator`` whose data ``fit``
    summarised as ``data`` (a :class:`DataSummary`)."""
    from . import __version__

    params, as_repr = {}, []
    for name, value in estimator.get_params(deep=False).items():
        plain, ok = _json_value(value)
        if not ok:
            plain = repr(value)
            as_repr.append(name)
        params[name] = plain
    reasons = []
    random_state = estimator.random_state
    digest = data.digest
    if digest is None:
        reasons.append("the data were not read in order, so they have no fingerprint")
    if random_state is None:
        reasons.append(_FRESH)
    elif not isinstance(random_state, Integral):
        reasons.append(
            f"random_state is a {type(random_state).__name__} instance, not an int: "
            "its state when fit was called is not recorded"
        )
    cv = estimator.cv
    if cv is not None and not isinstance(cv, Integral):
        reasons.append(
            f"cv is {type(cv).__name__}, not an int: its splits are not recorded"
        )
    others = [name for name in as_repr if name not in ("random_state", "cv")]
    if others:
        reasons.append(
            f"parameters not JSON data (stored as repr): {', '.join(others)}"
        )
    assumption = {name: params[name] for name in _GIVEN if name in params}
    for name in _USED:
        if hasattr(estimator, name):
            assumption[name] = _plain(getattr(estimator, name))
    routes = fold_routes(estimator.result_.folds)
    return {
        "record": RECORD,
        "record_version": RECORD_VERSION,
        "library": "skcalbound",
        "version": __version__,
        "created": data.created,
        "method": type(estimator).__name__,
        "guarantee": params.get("guarantee", "high_probability"),
        "confidence_level": params["confidence_level"],
        "assumption": assumption,
        "n_samples": int(data.n_samples),
        "n_positive": int(data.n_positive),
        "pos_label": params["pos_label"],
        "classes": [_plain(c) for c in estimator.classes_],
        "cv": params["cv"],
        "aggregate": params["aggregate"],
        "random_state": params["random_state"],
        "n_splits": int(estimator.n_splits_),
        "params": params,
        "params_as_repr": as_repr,
        "reproducible": not reasons,
        "not_reproducible": reasons,
        "bound": float(estimator.bound_),
        "lower_bound": float(estimator.lower_bound_),
        "estimate": float(estimator.estimate_),
        "terms": {str(k): float(v) for k, v in estimator.terms_.items()},
        **({"folds": routes} if routes else {}),
        "fingerprint": None
        if digest is None
        else {
            "algorithm": "sha256",
            "recipe": FINGERPRINT_RECIPE,
            "digest": digest,
        },
    }


def record_problem(record):
    """Why ``record`` is not a certificate this module can check, or ``None``."""
    if not isinstance(record, dict):
        return f"expected a JSON object, got {type(record).__name__}"
    if record.get("record") != RECORD:
        return f'no "record": "{RECORD}" entry'
    missing = [key for key in REQUIRED if key not in record]
    if missing:
        return f"missing entries: {', '.join(missing)}"
    fingerprint = record["fingerprint"]
    if not (
        isinstance(fingerprint, dict)
        and fingerprint.get("algorithm") == "sha256"
        and isinstance(fingerprint.get("digest"), str)
    ):
        return 'its fingerprint is not {"algorithm": "sha256", "digest": ...}'
    if not isinstance(record["params"], dict) or not isinstance(record["terms"], dict):
        return "its params and terms must be JSON objects"
    numbers = [record[key] for key in NUMBERS] + list(record["terms"].values())
    if not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in numbers
    ):
        return "its bound, lower_bound, estimate and terms must be numbers"
    if not isinstance(record["n_samples"], int):
        return "its n_samples must be an integer"
    as_repr = record.get("params_as_repr", [])
    if not (isinstance(as_repr, list) and all(isinstance(n, str) for n in as_repr)):
        return "its params_as_repr must be a list of parameter names"
    return None


def data_difference(record, n_samples, n_positive, digest):
    """How the data differ from those ``record`` certifies, or ``None``."""
    recorded_n = record["n_samples"]
    if n_samples != recorded_n:
        return (
            f"the data differ from the data certified: {n_samples} rows here, "
            f"{recorded_n} certified"
        )
    recorded = record["fingerprint"]["digest"]
    if digest != recorded:
        positives = ""
        if "n_positive" in record and record["n_positive"] != n_positive:
            positives = (
                f"; {n_positive} positive labels here, {record['n_positive']} certified"
            )
        return (
            f"the data differ from the data certified: same number of rows "
            f"({n_samples}) but the SHA-256 fingerprint of the scores and labels "
            f"differs (certified {recorded[:16]}..., here {digest[:16]}...)"
            f"{positives}; "
            "the fingerprint depends on the row order: the same rows in another order "
            "(a warehouse export without ORDER BY) do not match"
        )
    if record.get("n_positive") != n_positive:
        return (
            f"the data match the fingerprint but the record says "
            f"n_positive={record.get('n_positive')!r}; the data hold {n_positive}"
        )
    return None


# Verification (``skcalbound verify``). Same code and data give the same bits; 1e-12
# relative leaves room for another machine's last-digit rounding (libm, SIMD sums,
# about 1e-16 per operation) and none for a change a reader could see (a bound is read
# to 2-6 digits). Numbers are at most about 1, so a difference below 1e-15 is rounding.
RTOL, ATOL = 1e-12, 1e-15
# Never compared with a refit: when and from which file the record was made, the
# library version (named when numbers differ), and the labels' names: verify reads
# the labels as 0/1, so the positive class enters through the fingerprint.
_NOT_COMPARED = ("created", "source", "version", "pos_label", "classes")
# Numbers that depend on the draw of the folds, and the draw's parameters.
_DRAWN = ("bound", "lower_bound", "estimate", "terms", "folds")
_DRAW = ("random_state", "cv", "params_as_repr", "reproducible", "not_reproducible")
# Bounds whose fold lower bound is 2 * validation_mean - (fold bound) (``FoldResult``;
# Lipschitz takes the best candidate's, at least that).
_LOWER_FROM_TERMS = ("TVCalibrationBound", "NWCalibrationBound")
_ABSENT = "(absent)"


def refit_obstacles(record):
    """Why a refit cannot repeat ``record``'s numbers, read from its ``params`` (never
    from its ``reproducible`` flag); empty when it can: ``random_state`` an int and
    ``cv`` an int or ``None``, and no parameter stored as ``repr``."""
    params = record["params"]
    reasons = []
    random_state, cv = params.get("random_state"), params.get("cv")
    if random_state is None:
        reasons.append(_FRESH)
    elif not isinstance(random_state, int):
        reasons.append(
            f"random_state is not an int ({random_state}, stored as its repr): its "
            "state when fit was called is not recorded"
        )
    if cv is not None and not isinstance(cv, int):
        reasons.append(
            f"cv is not an int ({cv}, stored as its repr): its splits are not recorded"
        )
    as_repr = record.get("params_as_repr") or []
    others = [name for name in as_repr if name not in ("random_state", "cv")]
    if others:
        reasons.append(f"parameters stored as repr: {', '.join(map(str, others))}")
    return reasons


def stand_in_params(record):
    """``record``'s params with a stand-in for what cannot be refit (``random_state``
    0, ``cv`` the recorded number of splits), for the checks that do not depend on
    the folds; ``pos_label`` ``None`` (verify reads the labels as 0/1)."""
    params = dict(record["params"], pos_label=None)
    if not isinstance(params.get("random_state"), int):
        params["random_state"] = 0
    if params.get("cv") is not None and not isinstance(params["cv"], int):
        params["cv"] = record.get("n_splits")
    return params


def _float(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _walk(recorded, recomputed, path, skip, found):
    if isinstance(recorded, dict) and isinstance(recomputed, dict):
        for key in dict.fromkeys([*recomputed, *recorded]):
            name = f"{path}.{key}" if path else str(key)
            if name not in skip:
                a, b = recorded.get(key, _ABSENT), recomputed.get(key, _ABSENT)
                _walk(a, b, name, skip, found)
    elif (
        isinstance(recorded, list)
        and isinstance(recomputed, list)
        and len(recorded) == len(recomputed)
    ):
        for k, (a, b) in enumerate(zip(recorded, recomputed)):
            _walk(a, b, f"{path}[{k}]", skip, found)
    elif (
        _float(recorded)
        and _float(recomputed)
        and float in (type(recorded), type(recomputed))
    ):
        if abs(recorded - recomputed) > max(
            RTOL * max(abs(recorded), abs(recomputed)), ATOL
        ):
            found.append((path, recorded, recomputed))
    elif type(recorded) is not type(recomputed) or recorded != recomputed:
        found.append((path, recorded, recomputed))


def record_differences(recorded, expected, path=""):
    """``(field, recorded, expected)`` for each entry of ``expected`` that
    ``recorded`` (a part of a record) states otherwise, numbers to ``RTOL``
    (``"(absent)"`` for an entry it lacks)."""
    found = []
    _walk({k: recorded.get(k, _ABSENT) for k in expected}, expected, path, (), found)
    return found


def certificate_differences(record, refit, *, drawn=True):
    """``(field, recorded, recomputed)`` for each entry of ``record`` that differs
    from ``refit``'s certificate (numbers to ``RTOL`` relative), in the order of the
    certificate's keys (``terms.NAME``, ``assumption.b1_``; ``"(absent)"`` for an
    entry on one side only). ``drawn=False``: a refit with stand-in folds, so the
    numbers and the draw's parameters are not compared."""
    skip = {*_NOT_COMPARED, "params.pos_label"}
    if not drawn:
        skip.update([*_DRAWN, *_DRAW, "params.random_state", "params.cv"])
    found = []
    _walk(record, refit, "", skip, found)
    return found


_CELLS_TERMS = ("cells_upper", "transfer_upper", "oscillation", "cells_lower")


def _cells_problems(record):
    """What a ``TVCalibrationBound(method="cells")`` record says against itself
    (SPEC 14.5): ``bound = min(1, cells_upper + transfer_upper + oscillation)`` and
    ``lower_bound = max(0, cells_lower + transfer_lower - oscillation)``, the first
    four non-negative."""
    terms = record["terms"]
    needed = (*_CELLS_TERMS, "transfer_lower")
    missing = [name for name in needed if name not in terms]
    if missing:
        return [f"its terms have no {', '.join(missing)}"]
    values = [record["bound"], record["lower_bound"], *terms.values()]
    if not all(math.isfinite(v) for v in values):
        return ["it holds a number that is not finite"]
    t, problems = terms, []
    tol = RTOL * math.fsum(abs(t[name]) for name in needed) + ATOL
    negative = [name for name in _CELLS_TERMS if t[name] < -tol]
    if negative:
        problems.append(f"its terms {', '.join(negative)} are negative")
    upper = min(1.0, t["cells_upper"] + t["transfer_upper"] + t["oscillation"])
    lower = max(0.0, t["cells_lower"] + t["transfer_lower"] - t["oscillation"])
    for name, value, expected in (
        ("bound", record["bound"], upper),
        ("lower_bound", record["lower_bound"], lower),
    ):
        if abs(value - expected) > tol:
            problems.append(f"its {name} is {value!r}; its terms make it {expected!r}")
    return problems


_BAND_TERMS = (
    "band_upper",
    "transfer_upper",
    "band_lower",
    "transfer_lower",
    "mean_band_width",
    "n_windows",
)


def _band_problems(record):
    """What a ``MonotoneCalibrationBound`` record says against itself (SPEC 14).

    With one band (``cv`` None): ``bound = min(1, band_upper + transfer_upper)`` and
    ``lower_bound = max(0, band_lower + transfer_lower)``; ``band_lower >= 0`` (a mean
    of distances to the band), ``transfer_upper >= 0`` and ``transfer_lower <= 0``
    (the sliding maximum of the gap envelopes over ``j - K .. j + K - 1`` includes
    the gaps on both sides of ``x_j``, whose ``G+`` are at least the band's
    ``max(x_j - L, U - x_j)``; the sliding minimum of ``G-`` at most its
    ``dist(x_j, [L, U])``), and ``n_windows`` the size of step 2's family for
    ``n_samples`` rows. Cross-fitted (SPEC 14.2): ``bound = min(1, validation_mean +
    maurer_pontil)``, both non-negative, and a lower bound in ``[0, 1]``, at most
    the bound when the folds are aggregated by their mean (each fold's is at most
    its upper bound, ``dist(x, [L, U]) <= max(x - L, U - x)``).
    """
    terms = record["terms"]
    values = [record["bound"], record["lower_bound"], *terms.values()]
    if not all(math.isfinite(v) for v in values):
        return ["it holds a number that is not finite"]
    bound, lower, problems = record["bound"], record["lower_bound"], []
    if "band_upper" not in terms:  # cross-fitted
        needed = ("validation_mean", "maurer_pontil")
        missing = [name for name in needed if name not in terms]
        if missing or len(terms) != len(needed):
            return [f"its terms are {sorted(terms)}, not {list(needed)}"]
        tol = RTOL * math.fsum(abs(v) for v in terms.values()) + ATOL
        negative = [name for name in needed if terms[name] < -tol]
        if negative:
            problems.append(f"its terms {', '.join(negative)} are negative")
        upper = min(1.0, math.fsum(terms.values()))
        if abs(bound - upper) > tol:
            problems.append(f"its bound is {bound!r}; its terms make it {upper!r}")
        ceiling = bound if record.get("aggregate") == "mean" else 1.0
        if not 0.0 <= lower <= ceiling + tol:
            problems.append(f"its lower_bound {lower!r} is not in [0, {ceiling!r}]")
        return problems
    missing = [name for name in _BAND_TERMS if name not in terms]
    if missing:
        return [f"its terms have no {', '.join(missing)}"]
    t = terms
    tol = RTOL * math.fsum(abs(t[name]) for name in _BAND_TERMS[:4]) + ATOL
    signs = (
        ("band_lower", t["band_lower"] < -tol),
        ("transfer_upper", t["transfer_upper"] < -tol),
        ("transfer_lower", t["transfer_lower"] > tol),
    )
    wrong = [name for name, bad in signs if bad]
    if wrong:
        problems.append(
            f"its terms {', '.join(wrong)} have the wrong sign (band_lower and "
            "transfer_upper are at least 0, transfer_lower at most 0)"
        )
    upper = min(1.0, t["band_upper"] + t["transfer_upper"])
    floor = max(0.0, t["band_lower"] + t["transfer_lower"])
    for name, value, expected in (
        ("bound", bound, upper),
        ("lower_bound", lower, floor),
    ):
        if abs(value - expected) > tol:
            problems.append(f"its {name} is {value!r}; its terms make it {expected!r}")
    # A band with L <= U everywhere allows at each gap a smallest |x - eta| at most
    # its largest (G- <= G+), so that lower <= bound: only a crossing band gives
    # more, and a crossing is recorded.
    rejected = (record.get("assumption") or {}).get("monotonicity_rejected_")
    if lower > bound + tol and rejected is not True:
        problems.append(
            f"its lower_bound {lower!r} is above its bound {bound!r}, which only a "
            "crossing band gives, but its assumption.monotonicity_rejected_ is "
            f"{rejected!r}, not True"
        )
    n = record["n_samples"]
    if n >= 1:
        from ._surrogates._band import window_lengths, window_starts

        count = sum(window_starts(n, ell).shape[0] for ell in window_lengths(n))
        if t["n_windows"] != count:
            problems.append(
                f"its n_windows is {t['n_windows']!r}; {n} rows have {count} windows"
            )
    return problems


def consistency_problems(record, obstacles):
    """What ``record`` says against itself, checked without a refit: its entries
    against its params, and what its terms imply (SPEC sections 2 and 11): every
    term is non-negative (a mean, a square root, ``F(a) - a``) and they add up to the
    unclipped bound, so ``bound = min(sum, 1)``; the lower bound is ``max(0, 2 *
    validation_mean - sum)`` for TV and NW aggregated by the mean, at least that
    otherwise (the fold chosen by ``"min"``, Lipschitz's best candidate), and at
    most 1. ``obstacles``: :func:`refit_obstacles` of the record.
    ``MonotoneCalibrationBound`` records: :func:`_band_problems`."""
    params, problems = record["params"], []
    # A bound without a guarantee parameter is recorded as certified, as
    # build_certificate does.
    defaults = {"guarantee": "high_probability"}
    for key in ("guarantee", "confidence_level", "aggregate", "cv", "random_state"):
        said = params.get(key, defaults.get(key, _ABSENT))
        if record.get(key, _ABSENT) != said:
            problems.append(
                f"its {key} is {record.get(key, _ABSENT)!r} but its params say {said!r}"
            )
    assumption = record.get("assumption") or {}
    for name in _GIVEN:
        if name in params and assumption.get(name, _ABSENT) != params[name]:
            problems.append(
                f"its assumption.{name} is {assumption.get(name, _ABSENT)!r} but its "
                f"params say {params[name]!r}"
            )
    if record.get("reproducible") is not False and obstacles:
        problems.append(
            f"it says reproducible: {record.get('reproducible')!r}, but its params "
            f"cannot repeat the folds ({obstacles[0]})"
        )
    terms = record["terms"]
    if record["method"] == "MonotoneCalibrationBound":
        return [*problems, *_band_problems(record)]
    # TV's method="auto" is its guarantee mode's method (the default mode's for a
    # value that names none).
    tv_method = params.get("method")
    if tv_method == "auto":
        tv_method = GUARANTEES.get(params.get("guarantee"), HIGH_PROBABILITY).tv_method
    if tv_method == "cells":
        return [*problems, *_cells_problems(record)]
    if "folds" in record or (
        record["method"] == "NWCalibrationBound"
        and params.get("noise") == "adaptive"
        and params.get("guarantee", "high_probability") != "paper"
    ):
        return [*problems, *routes_problems(record, RTOL, ATOL)]
    if "validation_mean" not in terms:
        return [*problems, "its terms have no validation_mean"]
    values = [
        record["bound"],
        record["lower_bound"],
        record["estimate"],
        *terms.values(),
    ]
    if not all(math.isfinite(v) for v in values):
        return [*problems, "it holds a number that is not finite"]
    total = math.fsum(terms.values())
    tol = RTOL * math.fsum(abs(v) for v in terms.values()) + ATOL
    negative = [name for name, v in terms.items() if v < -tol]
    if negative:
        problems.append(f"its terms {', '.join(negative)} are negative")
    bound, lower = record["bound"], record["lower_bound"]
    if abs(bound - min(total, 1.0)) > tol:
        problems.append(
            f"its terms add up to {total!r}, so its bound is min({total!r}, 1), but "
            f"its bound is {bound!r}"
        )
    floor = max(0.0, 2.0 * terms["validation_mean"] - total)
    exact = record["method"] in _LOWER_FROM_TERMS and record.get("aggregate") == "mean"
    if (exact and abs(lower - floor) > tol) or not floor - tol <= lower <= 1.0:
        relation = "" if exact else "at least "
        problems.append(
            f"its lower_bound is {lower!r}; its terms make it {relation}max(0, 2 * "
            f"validation_mean - sum of terms) = {floor!r}"
            + ("" if exact else ", and at most 1")
        )
    return problems
