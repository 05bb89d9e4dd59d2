"""The one place that imports scikit-learn's private helpers.

Everything else imports them from here, so a change in scikit-learn's private API is
mended in a single file.
"""

from sklearn.base import _fit_context
from sklearn.utils._available_if import available_if
from sklearn.utils._metadata_requests import _routing_enabled
from sklearn.utils._param_validation import (
    HasMethods,
    Interval,
    StrOptions,
    validate_params,
)

try:  # the scorer class whose instances share predictions (see ``_scorers``)
    from sklearn.metrics._scorer import _Scorer
except ImportError:  # pragma: no cover - the scorers then work without sharing
    _Scorer = None

__all__ = [
    "HasMethods",
    "Interval",
    "StrOptions",
    "_Scorer",
    "_fit_context",
    "_routing_enabled",
    "available_if",
    "validate_params",
]
