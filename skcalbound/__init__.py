"""Certified upper bounds on the calibration error of binary classifiers."""

from ._binned_ece import binned_ece
from ._calibration_test import calibration_test
from ._display import CalibrationBoundDisplay
from ._lipschitz_bound import LipschitzBucketBound, lipschitz_bucket_bound
from ._nw_bound import NWCalibrationBound, nw_bound
from ._perturbed_metrics import perturbed_brier_score_loss, perturbed_log_loss
from ._scorers import largest_h_within_tolerance, make_bound_scorer, make_perturbation_scorer
from ._sech_perturbed import SechPerturbedClassifier, perturb_scores
from ._tv_bound import TVCalibrationBound, tv_bound
from ._validation import VacuousBoundWarning

__version__ = "0.1.0.dev0"

__all__ = [
    "CalibrationBoundDisplay",
    "LipschitzBucketBound",
    "NWCalibrationBound",
    "SechPerturbedClassifier",
    "TVCalibrationBound",
    "VacuousBoundWarning",
    "binned_ece",
    "calibration_test",
    "largest_h_within_tolerance",
    "lipschitz_bucket_bound",
    "make_bound_scorer",
    "make_perturbation_scorer",
    "nw_bound",
    "perturb_scores",
    "perturbed_brier_score_loss",
    "perturbed_log_loss",
    "tv_bound",
]
