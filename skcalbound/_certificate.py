"""The audit record of a fitted bound: ``certificate_``, and how to check it.

Every fitted bound estimator (:class:`TVCalibrationBound`, :class:`NWCalibrationBound`,
:class:`LipschitzBucketBound`) has a ``certificate_``: a plain dict of ``str``,
``int``, ``float``, ``bool``, ``None``, lists and dicts (no numpy types), so that
``json.loads(json.dumps(est.certificate_)) == est.certificate_``. Its floats are
exactly the estimator's (``bound`` is ``bound_``, and so on).

Keys
----
``record`` (``"skcalbound.certificate"``), ``record_version`` (1), ``library``,
``version`` (``skcalbound.__version__``), ``created`` (UTC, ISO 8601; never compared
by a verification), ``method`` (the class name), ``guarantee``, ``confidence_level``,
``assumption`` (the assumption constants as given, ``V``, ``h``, ``b1``, ``b2``,
``L``, and those used, ``b1_``, ``b2_``, ``L_``), ``n_samples``, ``n_positive``,
``pos_label``, ``classes``, ``cv``, ``aggregate``, ``random_state``, ``n_splits``,
``params`` (``get_params(deep=False)``; a value that is not JSON is stored as its
``repr`` and its name listed in ``params_as_repr``), ``reproducible`` and
``not_reproducible`` (the reasons a refit cannot repeat the numbers: ``random_state``
``None`` or a ``RandomState`` instance, ``cv`` a splitter or iterable rather than an
int or ``None``, a parameter stored as ``repr``), ``bound``, ``lower_bound``,
``estimate``, ``terms`` and ``fingerprint``.

The fingerprint
---------------
``fingerprint`` is ``{"algorithm": "sha256", "recipe": FINGERPRINT_RECIPE, "digest":
HEX}`` where ``HEX`` is the SHA-256 hex digest of the data *as the estimator used
them*, after validation and in data order (before any sorting):

1. the positive-class scores as float64, little-endian, 8 bytes each
   (``np.asarray(scores, dtype="<f8").tobytes()``), followed by
2. the labels as one byte each, 1 for the positive class and 0 otherwise
   (``np.asarray(labels == pos_label, dtype=np.uint8).tobytes()``).

So ``hashlib.sha256(s.astype("<f8").tobytes() + y01.astype("u1").tobytes())
.hexdigest()`` recomputes it. The two buffers are hashed in place (no copies for
float64 scores), which costs about 0.045 s per 10**7 scores (measured on two
virtual cores).
"""

import hashlib
import math
from datetime import datetime, timezone
from numbers import Integral

import numpy as np

from ._validation import check_scores_labels

RECORD = "skcalbound.certificate"
RECORD_VERSION = 1
FINGERPRINT_RECIPE = (
    "sha256 of the validated positive-class scores as float64 little-endian bytes in "
    "data order, followed by the 0/1 labels (1 = positive class) as uint8 bytes"
)
# The assumption constants as given (constructor parameters) and as used (fitted).
_GIVEN = ("V", "h", "b1", "b2", "L")
_USED = ("b1_", "b2_", "L_")
# What a verification recomputes and compares, to a relative tolerance.
COMPARED = ("bound", "lower_bound", "estimate")
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


def build_certificate(estimator, scores, labels, *, summary=None):
    """The ``certificate_`` dict of a just-fitted bound ``estimator``.

    ``scores`` and ``labels`` are the validated arrays ``fit`` used, in data order
    (float64 scores, uint8 0/1 labels). Data not in one place (``fit_chunks``, Dask)
    gives ``summary = (n_samples, n_positive, digest or None)`` instead.
    """
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
    if summary is None:
        summary = (
            scores.shape[0],
            np.count_nonzero(labels),
            data_fingerprint(scores, labels),
        )
    n_samples, n_positive, digest = summary
    if digest is None:
        reasons.append("the data were not read in order, so they have no fingerprint")
    if random_state is None:
        reasons.append("random_state=None: the folds were drawn from fresh randomness")
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
    return {
        "record": RECORD,
        "record_version": RECORD_VERSION,
        "library": "skcalbound",
        "version": __version__,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "method": type(estimator).__name__,
        "guarantee": params["guarantee"],
        "confidence_level": params["confidence_level"],
        "assumption": assumption,
        "n_samples": int(n_samples),
        "n_positive": int(n_positive),
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
    numbers = [record[key] for key in COMPARED] + list(record["terms"].values())
    if not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in numbers
    ):
        return "its bound, lower_bound, estimate and terms must be numbers"
    if not isinstance(record["n_samples"], int):
        return "its n_samples must be an integer"
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
            f"differs (certified {recorded[:16]}..., here {digest[:16]}...){positives}"
        )
    return None


def _differs(recorded, recomputed, rtol):
    return abs(recorded - recomputed) > rtol * max(abs(recorded), abs(recomputed))


def number_differences(record, certificate, rtol=1e-12):
    """``(field, recorded, recomputed)`` for every compared number that differs by
    more than ``rtol`` (relative); ``terms.NAME`` for the terms, ``None`` for a term
    present on one side only."""
    found = [
        (key, record[key], certificate[key])
        for key in COMPARED
        if _differs(record[key], certificate[key], rtol)
    ]
    recorded, recomputed = record["terms"], certificate["terms"]
    for name in dict.fromkeys([*recorded, *recomputed]):
        a, b = recorded.get(name), recomputed.get(name)
        if a is None or b is None or _differs(a, b, rtol):
            found.append((f"terms.{name}", a, b))
    return found
