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


def bound_name(estimator):
    """The ``name`` of a bound estimator, or a TypeError naming what was given."""
    if not isinstance(estimator, BOUNDS):
        expected = ", ".join(cls.__name__ for cls in BOUNDS)
        raise TypeError(
            f"Expected a bound estimator ({expected}); got {type(estimator).__name__}."
        )
    return type(estimator).name
