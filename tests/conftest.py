"""Shared seeded fixtures (synthetic problems live in ``tests/_synthetic.py``)."""

from collections import namedtuple

import numpy as np
import pytest
from _synthetic import PowerMiscalibrated

Sample = namedtuple("Sample", ["scores", "labels", "true_ce", "V"])


@pytest.fixture
def rng():
    """A fresh generator with a fixed seed for every test."""
    return np.random.default_rng(20240607)


@pytest.fixture
def miscalibrated_sample():
    """2000 draws of ``s ~ U(0, 1)``, ``eta(s) = s**2``: ``CE = 1/6``, ``V = 1``."""
    problem = PowerMiscalibrated(k=2.0, name="square")
    scores, labels = problem.sample(2000, np.random.default_rng(7))
    return Sample(scores, labels, problem.true_ce, problem.V)
