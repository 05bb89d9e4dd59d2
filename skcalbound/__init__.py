"""Certified upper bounds on the calibration error of binary classifiers."""

# The public names load on first use (PEP 562): ``import skcalbound`` alone imports
# neither scikit-learn nor SciPy, so that ``skcalbound --version`` answers at once.
# ``from skcalbound import X`` and ``skcalbound.X`` work as with eager imports.
import importlib as _importlib
from typing import TYPE_CHECKING as _TYPE_CHECKING

__version__ = "0.1.0.dev0"

# Public name -> the private module that defines it.
_MODULES = {
    "BelowChanceWarning": "_warnings",
    "CalibrationBoundDisplay": "_display",
    "LipschitzBucketBound": "_lipschitz_bound",
    "MonotoneCalibrationBound": "_monotone_bound",
    "MonotonicityWarning": "_warnings",
    "MulticlassCalibrationBound": "_multiclass",
    "NWCalibrationBound": "_nw_bound",
    "SechPerturbedClassifier": "_sech_perturbed",
    "TVCalibrationBound": "_tv_bound",
    "VacuousBoundWarning": "_warnings",
    "binned_ece": "_binned_ece",
    "bounds_by_group": "_groups",
    "calibration_test": "_calibration_test",
    "largest_h_within_tolerance": "_scorers",
    "lipschitz_bucket_bound": "_lipschitz_bound",
    "make_bound_scorer": "_scorers",
    "make_perturbation_scorer": "_scorers",
    "monotone_bound": "_monotone_bound",
    "nw_bound": "_nw_bound",
    "perturb_scores": "_sech_perturbed",
    "perturbed_brier_score_loss": "_perturbed_metrics",
    "perturbed_log_loss": "_perturbed_metrics",
    "tv_bound": "_tv_bound",
}
# Public submodules, imported on first attribute access too.
_SUBMODULES = ("datasets", "experiments")

__all__ = sorted(_MODULES)

if _TYPE_CHECKING:  # what static tools and IDEs see
    from ._binned_ece import binned_ece
    from ._calibration_test import calibration_test
    from ._display import CalibrationBoundDisplay
    from ._groups import bounds_by_group
    from ._lipschitz_bound import LipschitzBucketBound, lipschitz_bucket_bound
    from ._monotone_bound import MonotoneCalibrationBound, monotone_bound
    from ._multiclass import MulticlassCalibrationBound
    from ._nw_bound import NWCalibrationBound, nw_bound
    from ._perturbed_metrics import perturbed_brier_score_loss, perturbed_log_loss
    from ._scorers import (
        largest_h_within_tolerance,
        make_bound_scorer,
        make_perturbation_scorer,
    )
    from ._sech_perturbed import SechPerturbedClassifier, perturb_scores
    from ._tv_bound import TVCalibrationBound, tv_bound
    from ._warnings import BelowChanceWarning, MonotonicityWarning, VacuousBoundWarning


def __getattr__(name):
    if name in _MODULES:
        value = getattr(_importlib.import_module(f".{_MODULES[name]}", __name__), name)
        globals()[name] = value  # later lookups skip this function
        return value
    if name in _SUBMODULES:
        return _importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted({*globals(), *__all__, *_SUBMODULES})
