"""Grid primitives of the Nadaraya–Watson smoother (SPEC sections 4 and 12).

Inputs are assumed validated.

The weights. Scores are binned on ``G`` equal bins of [0, 1] (``G`` a power of two,
so that ``s * G`` and every bin edge are exact). A training point in bin ``b`` gets,
from a query in bin ``q``, the weight ``ker(q - b) / A0(q)`` with
``ker(k) = (1 - (k / (G h'))**2) ** tempering`` for ``|k| < G h'`` and zero beyond:
the tempered Epanechnikov kernel at bin offsets, with any tempering served exactly. If
no training point receives weight, the query falls back to equal weights on the
nearest training score(s). These weights depend on training *scores* only, which is
all Lemma 6 asks. Per-bin moments (count, positives, and the sums of offsets ``t = s -
c_b`` and ``t**2`` from bin centres ``c_b``, :class:`BinStats`) turn every per-query-bin
sum into a short convolution over bins (``_nw_hp``, ``_nw_grid``).
"""

import math

import numpy as np


def bin_centres(n_bins):
    return (np.arange(n_bins) + 0.5) / n_bins


def _kernel(n_bins, bandwidth, tempering):
    """Offsets ``k / G`` and kernel values for ``k = -K..K`` (0 where ``|u| >= 1``)."""
    half = min(int(math.floor(bandwidth * n_bins)), n_bins - 1)
    k = np.arange(-half, half + 1, dtype=float)
    u = k / (n_bins * bandwidth)
    ker = np.maximum(1.0 - u * u, 0.0)
    if tempering != 1.0:
        ker = ker**tempering
    ker[np.abs(u) >= 1.0] = 0.0
    # Values below 1e-100 (only with an extreme tempering) count as zero: any weights
    # of the training scores are allowed, and then every nonzero A0 is >= 1e-100, so
    # A0**2 and the squared weights stay normal doubles and sum w**2 is never 0/0.
    ker[ker < 1e-100] = 0.0
    return k / n_bins, ker
