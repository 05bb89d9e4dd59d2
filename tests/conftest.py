"""Shared seeded fixtures (synthetic problems live in ``tests/_synthetic.py``)."""

import os
from collections import namedtuple

import numpy as np
import pytest
from threadpoolctl import threadpool_limits


def pytest_configure(config):
    # With pytest-xdist, each worker's BLAS would start a thread per core, and on a
    # busy core a threaded np.dot of 10**4 numbers waits ~8 ms instead of taking
    # ~4 us (measured here with both cores in use): one core's worth of threads per
    # worker, as scikit-learn's conftest does.
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if workers is not None:
        # threadpoolctl limits the libraries already loaded: scikit-learn's import
        # loads SciPy's OpenBLAS (numpy has its own) and OpenMP.
        import sklearn  # noqa: F401

        threadpool_limits(max(1, (os.cpu_count() or 1) // int(workers)))
    # Many tests bound small samples on purpose (tests/test_validation.py checks the
    # warning). This filter names a class, so pytest imports it, and with it
    # skcalbound._validation and scikit-learn (~1.6 s of CPU), when it reads the
    # filter: it is added here, where tests run, and not in pyproject.toml, where
    # pytest-xdist's controller, which runs none, read it before starting the workers.
    controller = not hasattr(config, "workerinput") and config.getoption(
        "numprocesses", default=None
    )
    if not controller:
        config.addinivalue_line(
            "filterwarnings", "ignore::skcalbound.VacuousBoundWarning"
        )
        # The package's other warnings are errors unless a test expects them
        # (pytest.warns): a warning nobody asked for is a bug in the test or the code.
        for category in ("BelowChanceWarning", "MonotonicityWarning"):
            config.addinivalue_line("filterwarnings", f"error::skcalbound.{category}")
        config.addinivalue_line(
            "filterwarnings", "error:TVCalibrationBound's cell bound:UserWarning"
        )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_makereport(item, call):
    """The report of an expected failure reported by ``pytest.xfail`` (the common
    checks' listed failures, tests/_estimator_checks.py), without its formatted
    traceback: pytest formats one for every failure, parsing the source of each
    frame, and prints none for an xfail (the common checks of test_common.py and
    test_multiclass.py took 8.3 s with it, 4.9 s without, in one process). pytest's
    own wrapper still turns the report into an xfail (or, for a strict xfail that
    passed, a failure); every other report is pytest's."""
    excinfo = call.excinfo
    if excinfo is None or not excinfo.errisinstance(pytest.xfail.Exception):
        return None
    return pytest.TestReport(
        item.nodeid,
        item.location,
        dict.fromkeys(item.keywords, 1),
        "failed",
        f"XFailed: {excinfo.value}",
        call.when,
        duration=call.duration,
        start=call.start,
        stop=call.stop,
        user_properties=item.user_properties,
    )


Sample = namedtuple("Sample", ["scores", "labels", "true_ce", "V"])


@pytest.fixture
def rng():
    """A fresh generator with a fixed seed for every test."""
    return np.random.default_rng(20240607)


@pytest.fixture
def miscalibrated_sample():
    """2000 draws of ``s ~ U(0, 1)``, ``eta(s) = s**2``: ``CE = 1/6``, ``V = 1``."""
    # Imported here, not at the top: pytest-xdist's controller process loads this file
    # too, before it starts the workers, and never runs a test; _synthetic imports
    # scikit-learn and SciPy (~1.5 s of CPU).
    from _synthetic import PowerMiscalibrated

    problem = PowerMiscalibrated(k=2.0, name="square")
    scores, labels = problem.sample(2000, np.random.default_rng(7))
    return Sample(scores, labels, problem.true_ce, problem.V)


@pytest.fixture(scope="module")
def calibrated_churn():
    """P(churn) from a calibrated model, and the labels as words (tests/test_warnings.py
    and the command line's report of the warning, tests/test_cli.py)."""
    from _synthetic import calibrated_scores

    s, y = calibrated_scores(n=3000, seed=1)
    return s, y, np.where(y == 1, "churn", "stay")


@pytest.fixture(scope="module")
def overconfident():
    """20,000 overconfident scores (h = 2**-5): the NW and TV bounds of the two
    guarantees compared (tests/test_nw_bound.py, tests/test_tv_bound.py)."""
    from skcalbound.datasets import make_overconfident

    data = make_overconfident(20_000, h=2.0**-5, random_state=0)
    return data.scores, data.labels
