"""The gap study: every bound and binned ECE on synthetic problems with known CE.

Built on the public API and the guarantee modes of ``skcalbound._guarantee``. One
*task* is one repeat of one problem at one size: it draws a sample, fits the three
certified bounds in both guarantee modes (the default and the paper's published form,
labelled ``"... (paper)"``) and binned ECE on the same data, and returns one row per
method with the upper and the lower bound. Tasks run in parallel through joblib, each
seeded by its own ``SeedSequence`` keyed by ``(random_state, problem name, n,
repeat)``, so every number is reproducible whatever ``n_jobs`` and problem order.
"""

import time
import warnings
import zlib

import numpy as np
import pandas as pd
from sklearn.utils.parallel import Parallel, delayed

from skcalbound import (
    LipschitzBucketBound,
    NWCalibrationBound,
    TVCalibrationBound,
    VacuousBoundWarning,
    binned_ece,
)

from .._guarantee import GUARANTEES, PAPER

#: The bounds of the study, in the paper's order (Figure 3, Table 1), by the paper's
#: label of each; each is given the constants of a problem's ``assumptions`` that its
#: constructor takes (see :func:`make_estimator`).
PAPER_LABELS = {
    NWCalibrationBound: "NW",
    TVCalibrationBound: "TV",
    LipschitzBucketBound: "Lip+Bkt",
}
BOUND_CLASSES = tuple(PAPER_LABELS)
#: The bounds' labels: ``"NW"``, ``"TV"``, ``"Lip+Bkt"``.
BOUNDS = tuple(PAPER_LABELS.values())
#: The label of a bound in the paper's published form (``guarantee="paper"``).
PAPER_SUFFIX = PAPER.label_suffix
#: Certified methods: each bound in each guarantee mode, its label followed by the
#: mode's suffix (none for ``"high_probability"``, ``PAPER_SUFFIX`` for ``"paper"``).
CERTIFIED = tuple(
    f"{bound}{mode.label_suffix}" for mode in GUARANTEES.values() for bound in BOUNDS
)
#: Method labels of a run: the certified methods and binned ECE.
METHODS = (*CERTIFIED, "ECE")


def split_method(method):
    """``(bound class, guarantee)`` of a certified method label: ``"NW"`` is
    ``(NWCalibrationBound, "high_probability")``, ``"NW (paper)"`` is
    ``(NWCalibrationBound, "paper")``."""
    for mode in GUARANTEES.values():
        for cls, label in PAPER_LABELS.items():
            if method == f"{label}{mode.label_suffix}":
                return cls, mode.name
    raise ValueError(f"unknown method {method!r}; expected one of {CERTIFIED}")


def make_estimator(method, assumptions, *, confidence_level, random_state, cv=5):
    """The unfitted bound ``method`` for a problem's ``assumptions``, or ``None``.

    ``method`` is a label of :data:`CERTIFIED`: a bound's paper label (``"NW"``,
    ``"TV"``, ``"Lip+Bkt"``) with ``guarantee="high_probability"``, or the same
    followed by ``" (paper)"`` with ``guarantee="paper"``. ``assumptions`` are keyed
    by the constructor parameter they feed; the bound gets those it takes. When the
    problem is perturbed and the bound takes ``h``, it gets ``h`` alone (the other
    ``smoothness_params``, ``b1``, ``b2`` or ``L``, then follow in the estimator's
    guarantee mode, as a user would pass them); otherwise it needs every one of its
    ``smoothness_params`` but ``h`` (NW: ``b1`` and ``b2``; Lipschitz: ``L``) and at
    least one constant (TV: ``V``). ``None`` when the constants the bound needs are
    not known. TV is the paper's denoising bound (``method="denoise"``) in both
    modes, not the library's default cell bound: the study reproduces the paper.
    """
    cls, guarantee = split_method(method)
    params = cls().get_params()
    given = {name: value for name, value in assumptions.items() if name in params}
    if "h" in given:
        constants = {"h": given["h"]}
    else:
        constants = given
        needed = [name for name in cls.smoothness_params if name != "h"]
        if not constants or any(name not in constants for name in needed):
            return None
    if "method" in params:  # TV: the paper's denoising bound in both modes
        constants = {**constants, "method": "denoise"}
    return cls(
        **constants,
        confidence_level=confidence_level,
        random_state=random_state,
        cv=cv,
        guarantee=guarantee,
    )


def task_seed(random_state, name, n, repeat):
    """The ``SeedSequence`` of one task: independent across problems, sizes, repeats."""
    return np.random.SeedSequence(
        int(random_state), spawn_key=(zlib.crc32(name.encode()), int(n), int(repeat))
    )


def run_task(
    problem, n, repeat, *, methods, confidence_level, random_state, cv=5, true_ce=None
):
    """One repeat at one size: ``(scores, labels)`` drawn once, all methods fit on them.

    ``true_ce`` is ``problem.true_ce`` when the caller has it (a perturbed or custom
    problem integrates it numerically: :func:`run_study` does so once, not per task).
    Returns a list of row dicts (see :func:`run_study` for the columns).
    """
    data_seed, fold_seed = task_seed(random_state, problem.name, n, repeat).spawn(2)
    start = time.perf_counter()
    scores, labels = problem.sample(int(n), np.random.default_rng(data_seed))
    sample_seconds = time.perf_counter() - start
    fold_state = int(fold_seed.generate_state(1)[0])
    true_ce = float(problem.true_ce if true_ce is None else true_ce)
    rows = []
    for method in methods:
        start = time.perf_counter()
        certified = method != "ECE"
        if not certified:
            value = float(binned_ece(labels, scores, n_bins=15))
            lower, guarantee = np.nan, None
        else:
            estimator = make_estimator(
                method,
                problem.assumptions,
                confidence_level=confidence_level,
                random_state=fold_state,
                cv=cv,
            )
            if estimator is None:
                continue
            with warnings.catch_warnings():
                # Small samples are part of the study: a bound near 1 is a result.
                warnings.simplefilter("ignore", VacuousBoundWarning)
                estimator.fit(scores, labels)
            value, lower = float(estimator.bound_), float(estimator.lower_bound_)
            guarantee = estimator.guarantee
        seconds = time.perf_counter() - start
        rows.append(
            {
                "problem": problem.name,
                "n": int(n),
                "repeat": int(repeat),
                "method": method,
                "certified": certified,
                "guarantee": guarantee,
                "value": value,
                "lower_bound": lower,
                "true_ce": true_ce,
                "gap": value - true_ce,
                "lower_gap": true_ce - lower,
                "abs_error": abs(value - true_ce),
                "covered": (value >= true_ce) if certified else np.nan,
                "covered_lower": (lower <= true_ce) if certified else np.nan,
                "covered_both": (lower <= true_ce <= value) if certified else np.nan,
                "seconds": seconds,
                "sample_seconds": sample_seconds,
            }
        )
    return rows


def run_study(
    problem,
    sizes,
    n_repeats,
    *,
    methods=METHODS,
    confidence_level=0.95,
    random_state=0,
    n_jobs=None,
    cv=5,
    progress=True,
):
    """All repeats of all sizes of one problem, as a tidy DataFrame.

    Parameters
    ----------
    problem : problem object
        Anything with ``name``, ``true_ce``, ``assumptions`` and ``sample(n, rng)``,
        e.g. ``make_calibration_problem(...).problem`` or a ``CustomProblem``.
    sizes : sequence of int
    n_repeats : int
    methods : sequence of str, default=METHODS
    confidence_level : float, default=0.95
    random_state : int, default=0
    n_jobs : int, default=None
        Repeats run in parallel (joblib); the bounds themselves run single-threaded.
    cv : int, default=5
    progress : bool, default=True
        A tqdm progress bar over the tasks.

    Returns
    -------
    DataFrame
        One row per (size, repeat, method): ``problem, n, repeat, method, certified,
        guarantee`` (``"high_probability"`` or ``"paper"``; empty for ECE), ``value``
        (the upper bound ``bound_``, or the ECE), ``lower_bound`` (``lower_bound_``),
        ``true_ce, gap = value - true_ce, lower_gap = true_ce - lower_bound,
        abs_error = |value - true_ce|, covered`` (``value >= true_ce``),
        ``covered_lower`` (``lower_bound <= true_ce``), ``covered_both`` (both; the
        three for certified methods only), ``seconds, sample_seconds``.
    """
    # Largest sizes first: the long tasks start early and the short ones fill the gaps.
    tasks = [(n, r) for n in sorted(sizes, reverse=True) for r in range(n_repeats)]
    # Once per study, not per task: a perturbed or custom problem integrates it.
    true_ce = float(problem.true_ce)
    jobs = Parallel(n_jobs=n_jobs, return_as="generator_unordered")(
        delayed(run_task)(
            problem,
            n,
            r,
            methods=tuple(methods),
            confidence_level=confidence_level,
            random_state=random_state,
            cv=cv,
            true_ce=true_ce,
        )
        for n, r in tasks
    )
    if progress:
        try:
            from tqdm.auto import tqdm
        except ImportError as error:
            raise ImportError(
                "progress bars need tqdm: pip install tqdm "
                "(or skcalbound[experiments]), or pass progress=False (--no-progress)"
            ) from error
        jobs = tqdm(jobs, total=len(tasks), desc=problem.name, unit="fit", leave=True)
    rows = [row for task_rows in jobs for row in task_rows]
    frame = pd.DataFrame(rows)
    return frame.sort_values(["n", "repeat", "method"], kind="stable").reset_index(
        drop=True
    )
