"""Certified upper bounds on the calibration error of binary classifiers."""

from ._binned_ece import binned_ece
from ._lipschitz_bound import LipschitzBucketBound, lipschitz_bucket_bound
from ._nw_bound import NWCalibrationBound, nw_bound
from ._sech_perturbed import perturb_scores
from ._tv_bound import TVCalibrationBound, tv_bound

__version__ = "0.1.0.dev0"

__all__ = [
    "LipschitzBucketBound",
    "NWCalibrationBound",
    "TVCalibrationBound",
    "binned_ece",
    "lipschitz_bucket_bound",
    "nw_bound",
    "perturb_scores",
    "tv_bound",
]
