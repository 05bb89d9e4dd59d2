"""Running one of scikit-learn's common checks inside ``parametrize_with_checks``.

``parametrize_with_checks(..., xfail_strict=True)`` marks the expected failures as
strict xfails. When such a check raises, pytest formats its traceback for the xfail
report: scikit-learn's frames cost about 0.2 s a check, most of the common checks'
time. :func:`run_check` reports the expected failure itself with ``pytest.xfail``,
called outside the ``except`` clause so that no traceback is chained to it, and
``tests/conftest.py`` reports a ``pytest.xfail`` without formatting the traceback of
its own frames. A listed check that passes still fails the test (the mark is strict).
"""

from unittest import SkipTest

import pytest


def check_name(check):
    """The name of a check as scikit-learn yields it:
    ``partial(check_function, name)``."""
    return check.func.__name__


def run_check(estimator, check, expected_failed_checks, must_pass=()):
    """``check(estimator)``; an expected failure (``expected_failed_checks`` maps a
    check's name to its reason) is reported as an xfail, and a check named in
    ``must_pass`` that skips fails."""
    name = check_name(check)
    reason = expected_failed_checks.get(name)
    try:
        check(estimator)
    except SkipTest as exc:
        if name in must_pass:
            pytest.fail(f"{name} must run and pass, but was skipped: {exc}")
        raise
    except Exception:
        if reason is None:
            raise
    else:
        return
    pytest.xfail(reason)
