"""The bound estimators, in one place: what ``method=`` and ``--bound`` accept.

Every consumer (scorers, ``calibration_test``, ``bounds_by_group``, the display, the
command line) finds a bound here by its ``name``; a new bound is one more entry of
:data:`BOUNDS`.
"""

from ._compat import StrOptions
from ._lipschitz_bound import LipschitzBucketBound
from ._monotone_bound import MonotoneCalibrationBound
from ._nw_bound import NWCalibrationBound
from ._tv_bound import TVCalibrationBound

#: The bound estimators, in the order tables and choices list them.
BOUNDS = (
    MonotoneCalibrationBound,
    LipschitzBucketBound,
    NWCalibrationBound,
    TVCalibrationBound,
)
#: ``{name: class}``.
BY_NAME = {cls.name: cls for cls in BOUNDS}
#: The ``StrOptions`` of a ``method`` parameter naming a bound.
BOUND_NAMES = StrOptions(set(BY_NAME))


def bound_class(name):
    """The bound class called ``name``, or a ValueError listing the names."""
    try:
        return BY_NAME[name]
    except (KeyError, TypeError):
        expected = ", ".join(map(repr, BY_NAME))
        raise ValueError(
            f"Unknown bound {name!r}; expected one of {expected}."
        ) from None


def bound_and_params(method, params, caller):
    """``(name, class, params)`` of ``method``: a bound's name, or an unfitted bound
    estimator whose parameters (all but ``confidence_level`` and ``pos_label``,
    which ``caller`` takes itself) are used, updated by ``params``. A TypeError
    names a parameter the class does not take."""
    if isinstance(method, str):
        name, cls = method, BY_NAME[method]
    else:
        name, cls = bound_name(method), type(method)
        given = method.get_params(deep=False)
        for own in ("confidence_level", "pos_label"):
            given.pop(own, None)
        params = {**given, **params}
    valid = set(cls().get_params()) - {"confidence_level", "pos_label"}
    unknown = sorted(set(params) - valid)
    if unknown:
        raise TypeError(
            f"{caller}(method={name!r}) got parameters {unknown} that "
            f"{cls.__name__} does not take; valid ones: {sorted(valid)}."
        )
    return name, cls, params


def bound_name(estimator):
    """The ``name`` of a bound estimator, or a TypeError naming what was given."""
    if not isinstance(estimator, BOUNDS):
        expected = ", ".join(cls.__name__ for cls in BOUNDS)
        raise TypeError(
            f"Expected a bound estimator ({expected}); got {type(estimator).__name__}."
        )
    return type(estimator).name
