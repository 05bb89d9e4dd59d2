"""skcalbound.experiments: the quick study, its guarantees, and its command line.

The quick mode (``python -m skcalbound.experiments --quick``: 4 problems, 5 sizes from
10^3 to 10^4, 8 repeats, every bound in both guarantee modes) runs once for the
module; the tests read its files. It takes about a minute, so those tests are marked
``slow``; the default suite checks the files of a small run (2 problems, 2 sizes, one
repeat, small figures).
"""

import inspect
import math
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from joblib import parallel_config
from numpy.testing import assert_allclose
from numpydoc.validate import validate

import skcalbound.experiments
from skcalbound import (
    LipschitzBucketBound,
    NWCalibrationBound,
    TVCalibrationBound,
    VacuousBoundWarning,
)
from skcalbound.datasets import make_calibration_problem
from skcalbound.experiments import reproduce
from skcalbound.experiments.__main__ import main

# The internals under test; users have ``reproduce`` and the command only.
from skcalbound.experiments._auroc import auroc_vs_h
from skcalbound.experiments._report import (
    PAPER_RATES,
    complete_results,
    fit_slopes,
    summarise,
)
from skcalbound.experiments._reproduce import FULL, QUICK, methods_for, parse_problem
from skcalbound.experiments._study import (
    BOUNDS,
    CERTIFIED,
    METHODS,
    make_estimator,
    run_study,
    run_task,
    split_method,
    task_seed,
)

CONFIDENCE_LEVEL = 0.95
DOCS = Path(__file__).resolve().parents[1] / "docs"


def _read_run(out):
    return {
        "dir": out,
        "results": pd.read_csv(out / "results.csv.gz"),
        "summary": pd.read_csv(out / "summary.csv"),
        "slopes": pd.read_csv(out / "slopes.csv"),
        "rates": pd.read_csv(out / "rates.csv"),
        "timing": pd.read_csv(out / "timing.csv"),
        "auroc": pd.read_csv(out / "auroc.csv"),
    }


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("quick")
    assert (
        main(["--quick", "--n-jobs", "2", "--no-progress", "--output-dir", str(out)])
        == 0
    )
    return _read_run(out)


SMALL_PROBLEMS, SMALL_SIZES, SMALL_REPEATS = ("parabola", "oscillating"), (300, 1000), 1


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    out = tmp_path_factory.mktemp("small")
    logged = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", VacuousBoundWarning)
        reproduce(
            SMALL_PROBLEMS,
            SMALL_SIZES,
            SMALL_REPEATS,
            output_dir=out,
            n_jobs=1,
            reconstruction_sizes=(1_000,),
            auroc_samples=10_000,
            progress=False,
            log=logged.append,
        )
    return {**_read_run(out), "logged": logged, "warnings": caught}


def test_settings_are_those_of_the_issue():
    assert FULL.n_repeats == 64
    assert (
        FULL.sizes[0] == 1_000 and FULL.sizes[-1] == 10_000_000 and len(FULL.sizes) == 9
    )
    assert_allclose(np.diff(np.log10(FULL.sizes)), 0.5, atol=1e-3)
    assert len(FULL.problems) >= 4 and "oscillating" in FULL.problems
    assert QUICK.problems == FULL.problems


def check_every_file(run, problems, sizes, n_repeats):
    for name in (
        "results.csv.gz",
        "summary.csv",
        "slopes.csv",
        "rates.csv",
        "timing.csv",
        "figure3_gaps.png",
        "figure5_reconstruction.png",
        "figure2_auroc.png",
        "auroc.csv",
        "doc_coverage.csv",
        "doc_rates.csv",
        "doc_oscillating.csv",
        "doc_timing.csv",
        "report.txt",
    ):
        assert (run["dir"] / name).stat().st_size > 0, name
    results = run["results"]
    expected = len(problems) * len(sizes) * n_repeats * 7
    assert results.shape[0] == expected
    assert set(results["method"]) == {
        "NW",
        "TV",
        "Lip+Bkt",
        "NW (paper)",
        "TV (paper)",
        "Lip+Bkt (paper)",
        "ECE",
    }
    certified = results[results["certified"]]
    assert set(certified["guarantee"]) == {"high_probability", "paper"}
    assert (certified["guarantee"] == "paper").to_numpy().tolist() == (
        certified["method"].str.endswith(" (paper)").to_numpy().tolist()
    )
    assert (
        results.loc[~results["certified"], ["guarantee", "lower_bound"]]
        .isna()
        .all()
        .all()
    )
    assert_allclose(results["gap"], results["value"] - results["true_ce"], atol=1e-15)
    assert_allclose(
        certified["lower_gap"],
        certified["true_ce"] - certified["lower_bound"],
        atol=1e-15,
    )
    assert (certified["lower_bound"] >= 0).all()
    assert list(run["timing"]["problem"]) == [*problems, "TOTAL"]
    coverage = pd.read_csv(run["dir"] / "doc_coverage.csv")
    assert list(coverage.columns) == [
        "problem",
        "method",
        "coverage",
        "coverage_lower",
        "coverage_joint",
    ]
    assert coverage.shape[0] == len(problems) * 6
    oscillating = pd.read_csv(run["dir"] / "doc_oscillating.csv")
    assert list(oscillating.columns) == [
        "n",
        *(f"{m} gap" for m in CERTIFIED),
        "ECE error abs(ECE - CE)",
    ]
    assert oscillating["n"].tolist() == list(sizes)
    assert set(run["auroc"]["problem"]) == set(problems)


def test_small_run_writes_every_file(small):
    check_every_file(small, SMALL_PROBLEMS, SMALL_SIZES, SMALL_REPEATS)


def test_the_report_is_logged_and_written_to_report_txt(small):
    text = (small["dir"] / "report.txt").read_text()
    # Every line logged but the last (where the files are), as logged: the wall time
    # of each problem as it finished, then the report.
    assert text == "\n".join(small["logged"][:-1]) + "\n"
    assert small["logged"][-1] == f"Files in {small['dir'].resolve()}"
    lines = text.splitlines()
    for problem, line in zip(SMALL_PROBLEMS, lines):
        assert re.fullmatch(
            rf"{problem}: \d+\.\d s wall time \(load average \d+\.\d\d -> "
            r"\d+\.\d\d\)",
            line,
        ), line
    report = "\n".join(lines[len(SMALL_PROBLEMS) :])
    assert "Coverage, worst size per method" in report
    assert "Rates next to the paper's Table 1:" in report
    total = small["timing"]["wall_seconds"].iloc[-1]
    assert lines[-1] == f"Wall time: {total:.1f} s in total."


def test_the_reconstruction_figure_does_not_warn_of_its_wide_intervals(small):
    # Its NW and TV fits at n = 1,000 on the parabola have bounds above 0.5: shown
    # in the panel titles, not warned of in the report.
    summary = pd.read_csv(small["dir"] / "summary.csv")
    assert summary.query("n == 1000 and method == 'TV'")["mean_value"].max() > 0.5
    vacuous = [w for w in small["warnings"] if w.category is VacuousBoundWarning]
    assert not vacuous, [str(w.message) for w in vacuous]


@pytest.mark.slow
def test_quick_run_writes_every_file(quick):
    check_every_file(quick, QUICK.problems, QUICK.sizes, QUICK.n_repeats)


@pytest.mark.slow
def test_every_certified_interval_covers_the_truth_at_every_size(quick):
    summary = quick["summary"]
    certified = summary[summary["method"] != "ECE"]
    assert certified.shape[0] == len(QUICK.problems) * len(QUICK.sizes) * 6
    # The high-probability mode certifies both ends, jointly, at every size.
    hp = certified[certified["guarantee"] == "high_probability"]
    assert set(hp["method"]) == {"NW", "TV", "Lip+Bkt"}
    assert hp.shape[0] == len(QUICK.problems) * len(QUICK.sizes) * 3
    for column in ("coverage", "coverage_lower", "coverage_joint"):
        assert (hp[column] >= CONFIDENCE_LEVEL).all(), hp[hp[column] < CONFIDENCE_LEVEL]
    assert hp["coverage_ok"].all()
    # Lower coverage is not met by lower bounds stuck at 0: on the parabola
    # (CE = 0.355) the NW and Lipschitz lower bounds are well above 0 at 10^4.
    at = summary.set_index(["problem", "method", "n"])
    for method in ("NW", "Lip+Bkt"):
        assert at.loc[("parabola", method, QUICK.sizes[-1]), "mean_lower_bound"] > 0.15
    rows = quick["results"][quick["results"]["certified"]]
    assert (rows["value"] <= 1.0).all() and (rows["lower_bound"] <= 1.0).all()
    # The summary's coverages are the repeats' flags.
    flags = (
        rows.astype({"covered": float, "covered_lower": float})
        .groupby(["problem", "method", "n"])[["covered", "covered_lower"]]
        .mean()
    )
    joined = certified.set_index(["problem", "method", "n"]).join(flags)
    assert_allclose(joined["coverage"], joined["covered"])
    assert_allclose(joined["coverage_lower"], joined["covered_lower"])


@pytest.mark.slow
def test_on_the_oscillating_problem_ece_stays_wrong_while_the_bounds_tighten(quick):
    summary = quick["summary"].set_index(["problem", "method", "n"])
    small, large = QUICK.sizes[0], QUICK.sizes[-1]
    ece_small = summary.loc[("oscillating", "ECE", small), "mean_abs_error"]
    ece_large = summary.loc[("oscillating", "ECE", large), "mean_abs_error"]
    assert ece_large >= 0.9 * ece_small  # does not shrink
    assert ece_large > 0.05  # and stays about 0.084 away from CE = 0.0955
    # The high-probability Lipschitz bound pays for its label-concentration and
    # population-transfer terms: 0.216 at 10^4 here, against 0.164 in paper form.
    largest_gap = {
        "NW": 0.2,
        "Lip+Bkt": 0.25,
        "NW (paper)": 0.2,
        "Lip+Bkt (paper)": 0.2,
    }
    for method, limit in largest_gap.items():
        gap_small = summary.loc[("oscillating", method, small), "mean_gap"]
        gap_large = summary.loc[("oscillating", method, large), "mean_gap"]
        assert gap_large < 0.5 * gap_small, method
        assert gap_large < limit, method
    # On the smooth problems ECE's error does shrink: the failure is the oscillation's.
    for problem in ("overconfident", "parabola"):
        assert (
            summary.loc[(problem, "ECE", large), "mean_abs_error"]
            < 0.5 * summary.loc[(problem, "ECE", small), "mean_abs_error"]
        )


@pytest.mark.slow
def test_certified_gaps_shrink_at_a_polynomial_rate(quick):
    slopes = quick["slopes"]
    for problem in ("calibrated", "overconfident", "parabola"):
        for method in BOUNDS:
            slope = slopes[
                (slopes["problem"] == problem) & (slopes["method"] == method)
            ]
            assert float(slope["slope"].iloc[0]) < -0.2, (problem, method)
    rates = quick["rates"].set_index("method")
    assert_allclose(
        rates.loc["NW", ["paper_low", "paper_high", "theory"]], [-0.406, -0.213, -1 / 3]
    )


@pytest.mark.slow
def test_auroc_cost_of_the_perturbation_vanishes_as_h_shrinks(quick):
    auroc = quick["auroc"]
    assert set(auroc["problem"]) == set(QUICK.problems)
    for problem, group in auroc.groupby("problem"):
        loss = group.set_index("log2_h")["auroc_loss"]
        # 10^5 samples: standard error of an AUROC about 0.002.
        assert abs(loss[-10.0]) < 0.01, problem
        if group["auroc_unperturbed"].iloc[0] > 0.6:
            # (The parabola's scores rank no better than chance: nothing to lose.)
            assert loss[-1.0] > 0.05, problem
            assert loss[-1.0] > loss[-4.0] > loss[-8.0] - 0.01, problem
        assert_allclose(
            group["auroc_loss"], group["auroc_unperturbed"] - group["auroc"]
        )


@pytest.mark.parametrize(
    "run", ["small", pytest.param("quick", marks=pytest.mark.slow)]
)
def test_from_results_redraws_the_same_tables(run, request, tmp_path):
    run = request.getfixturevalue(run)
    assert (
        main(
            [
                "--from-results",
                str(run["dir"]),
                "--output-dir",
                str(tmp_path),
                "--no-plots",
            ]
        )
        == 0
    )
    again = pd.read_csv(tmp_path / "summary.csv")
    pd.testing.assert_frame_equal(again, run["summary"])


def test_a_task_is_reproducible_and_independent_of_the_order():
    problem = parse_problem("parabola")
    first = run_task(
        problem, 2_000, 3, methods=("NW", "ECE"), confidence_level=0.9, random_state=11
    )
    second = run_task(
        problem, 2_000, 3, methods=("NW", "ECE"), confidence_level=0.9, random_state=11
    )
    assert [r["value"] for r in first] == [r["value"] for r in second]
    other = run_task(
        problem, 2_000, 4, methods=("NW",), confidence_level=0.9, random_state=11
    )
    assert other[0]["value"] != first[0]["value"]
    serial = run_study(
        problem,
        [2_000],
        5,
        methods=("NW",),
        confidence_level=0.9,
        random_state=11,
        n_jobs=1,
        progress=False,
    )
    assert_allclose(
        serial.loc[serial["repeat"] == 3, "value"], first[0]["value"], rtol=0
    )


def test_a_task_matches_the_public_estimator_on_the_same_data():
    problem = parse_problem("overconfident")
    (row,) = run_task(
        problem, 3_000, 0, methods=("TV",), confidence_level=0.95, random_state=2
    )
    data_seed, fold_seed = task_seed(2, problem.name, 3_000, 0).spawn(2)
    scores, labels = problem.sample(3_000, np.random.default_rng(data_seed))
    # The study's TV is the paper's denoising bound, not the library's default.
    bound = TVCalibrationBound(
        V=1.0, method="denoise", random_state=int(fold_seed.generate_state(1)[0])
    )
    bound.fit(scores, labels)
    assert row["value"] == bound.bound_ and row["lower_bound"] == bound.lower_bound_
    assert row["guarantee"] == "high_probability"
    assert row["covered"] == (row["value"] >= row["true_ce"])
    assert row["covered_lower"] == (row["lower_bound"] <= row["true_ce"])


# A perturbed problem's task under slow (test_perturbed_problem_spec parses its spec).
@pytest.mark.parametrize(
    "problem_spec", ["parabola", pytest.param("atoms:h=2^-6", marks=pytest.mark.slow)]
)
def test_a_task_runs_each_bound_in_both_guarantee_modes(problem_spec):
    # NW and Lipschitz in each mode on the same data: the paper labels are the
    # estimators with guarantee="paper" (for a perturbed problem, b2 from h in that
    # mode), the plain labels those with the default.
    problem = parse_problem(problem_spec)
    methods = ("NW", "NW (paper)", "Lip+Bkt", "Lip+Bkt (paper)")
    rows = run_task(
        problem, 3_000, 1, methods=methods, confidence_level=0.9, random_state=5
    )
    data_seed, fold_seed = task_seed(5, problem.name, 3_000, 1).spawn(2)
    scores, labels = problem.sample(3_000, np.random.default_rng(data_seed))
    state = int(fold_seed.generate_state(1)[0])
    assert [r["method"] for r in rows] == list(methods)
    for row in rows:
        Bound, guarantee = split_method(row["method"])
        assert Bound is (
            NWCalibrationBound
            if row["method"].startswith("NW")
            else LipschitzBucketBound
        )
        if "h" in problem.assumptions:
            constants = {"h": problem.assumptions["h"]}
        elif Bound is NWCalibrationBound:
            constants = {
                "b1": problem.assumptions["b1"],
                "b2": problem.assumptions["b2"],
            }
        else:
            constants = {"L": problem.assumptions["L"]}
        est = Bound(
            **constants, guarantee=guarantee, confidence_level=0.9, random_state=state
        ).fit(scores, labels)
        assert row["guarantee"] == guarantee
        assert (row["value"], row["lower_bound"]) == (est.bound_, est.lower_bound_)
    assert rows[0]["value"] != rows[1]["value"] and rows[2]["value"] != rows[3]["value"]


def test_the_true_ce_of_a_problem_is_computed_once_per_study():
    # A perturbed problem integrates its truth numerically: run_study computes it
    # once and hands it to every task, which reports it unchanged.
    class Counted:
        def __init__(self, problem):
            self.problem, self.name, self.reads = problem, problem.name, 0
            self.assumptions = problem.assumptions

        @property
        def true_ce(self):
            self.reads += 1
            return self.problem.true_ce

        def sample(self, n, rng):
            return self.problem.sample(n, rng)

    counted = Counted(parse_problem("parabola"))
    frame = run_study(
        counted, [300, 500], 3, methods=("ECE",), n_jobs=1, progress=False
    )
    assert counted.reads == 1
    assert (frame["true_ce"] == counted.problem.true_ce).all()
    (row,) = run_task(
        counted.problem,
        300,
        0,
        methods=("ECE",),
        confidence_level=0.9,
        random_state=0,
        true_ce=0.25,
    )
    assert row["true_ce"] == 0.25 and row["gap"] == row["value"] - 0.25


@pytest.mark.parametrize(
    "backend",
    # Processes (joblib's default) cost two interpreter start-ups: under slow.
    ["threading", pytest.param("loky", marks=pytest.mark.slow)],
)
def test_auroc_study_in_parallel_gives_the_same_numbers(backend):
    problems = [parse_problem("overconfident"), parse_problem("calibrated")]
    serial = auroc_vs_h(problems, n_samples=5_000, random_state=3)
    with parallel_config(backend=backend):
        parallel = auroc_vs_h(problems, n_samples=5_000, random_state=3, n_jobs=2)
    pd.testing.assert_frame_equal(parallel, serial, check_exact=True)
    assert serial.shape[0] == 2 * 10
    assert serial["auroc"].nunique() == serial.shape[0]


def test_a_custom_problem_runs_through_the_study():
    from skcalbound.datasets import CustomProblem

    custom = CustomProblem(lambda s: s**2, V=1.0, name="square")
    frame = run_study(
        custom, [500, 1_000], 2, confidence_level=0.9, n_jobs=1, progress=False
    )
    # No b1, b2, L given: no NW, Lip+Bkt; TV in both modes.
    assert set(frame["method"]) == {"TV", "TV (paper)", "ECE"}
    assert_allclose(frame["true_ce"], 1.0 / 6.0, atol=1e-10)


def test_estimators_get_the_problem_constants():
    smooth = make_calibration_problem("parabola", 10).assumptions
    nw = make_estimator("NW", smooth, confidence_level=0.9, random_state=0)
    assert isinstance(nw, NWCalibrationBound)
    assert (nw.b1, nw.b2, nw.h, nw.guarantee) == (3.2, 6.4, None, "high_probability")
    perturbed = make_calibration_problem("discrete", 10, h=2.0**-6).assumptions
    lip = make_estimator("Lip+Bkt", perturbed, confidence_level=0.9, random_state=0)
    assert isinstance(lip, LipschitzBucketBound) and lip.h == 2.0**-6 and lip.L is None
    paper = make_estimator("TV (paper)", smooth, confidence_level=0.9, random_state=0)
    assert isinstance(paper, TVCalibrationBound) and paper.guarantee == "paper"
    assert paper.V == smooth["V"]
    assert (
        make_estimator("NW", {"V": 1.0}, confidence_level=0.9, random_state=0) is None
    )
    assert (
        make_estimator(
            "Lip+Bkt (paper)", {"V": 1.0}, confidence_level=0.9, random_state=0
        )
        is None
    )
    for method in ("KDE", "KDE (paper)"):
        with pytest.raises(ValueError, match=re.escape(f"unknown method '{method}'")):
            make_estimator(method, smooth, confidence_level=0.9, random_state=0)


def test_method_labels_and_modes():
    assert METHODS == (
        "NW",
        "TV",
        "Lip+Bkt",
        "NW (paper)",
        "TV (paper)",
        "Lip+Bkt (paper)",
        "ECE",
    )
    assert [split_method(m) for m in CERTIFIED[:2]] == [
        (NWCalibrationBound, "high_probability"),
        (TVCalibrationBound, "high_probability"),
    ]
    assert split_method("Lip+Bkt (paper)") == (LipschitzBucketBound, "paper")
    assert methods_for(["high_probability"]) == ("NW", "TV", "Lip+Bkt", "ECE")
    assert methods_for(["paper"]) == (
        "NW (paper)",
        "TV (paper)",
        "Lip+Bkt (paper)",
        "ECE",
    )
    assert methods_for(["paper", "high_probability"]) == METHODS


def test_the_labels_are_read_from_one_table(monkeypatch):
    # "NW", "TV", "Lip+Bkt" are the paper's labels (PAPER_LABELS), read when a label
    # is parsed.
    from skcalbound.experiments import _study

    assert BOUNDS == ("NW", "TV", "Lip+Bkt")
    assert tuple(_study.PAPER_LABELS) == tuple(PAPER_RATES)
    monkeypatch.setitem(_study.PAPER_LABELS, LipschitzBucketBound, "LB")
    assert split_method("LB (paper)") == (LipschitzBucketBound, "paper")
    with pytest.raises(ValueError, match=re.escape("unknown method 'Lip+Bkt'")):
        split_method("Lip+Bkt")
    smooth = make_calibration_problem("parabola", 10).assumptions
    lip = make_estimator("LB", smooth, confidence_level=0.9, random_state=0)
    assert isinstance(lip, LipschitzBucketBound) and lip.L == smooth["L"]


def test_the_public_surface_is_reproduce_and_the_command():
    assert skcalbound.experiments.__all__ == ["reproduce"]
    public = {
        name
        for name, value in vars(skcalbound.experiments).items()
        if not name.startswith("_") and not inspect.ismodule(value)
    }
    assert public == {"reproduce"}
    assert skcalbound.experiments.reproduce is reproduce
    assert "python -m skcalbound.experiments" in skcalbound.experiments.__doc__


@pytest.mark.parametrize("name", skcalbound.experiments.__all__)
def test_each_public_name_is_documented(name):
    qualname = f"skcalbound.experiments.{name}"
    # numpydoc-valid, as the names of skcalbound.__all__ (tests/test_public_api.py).
    errors = [
        f"{code}: {message}"
        for code, message in validate(qualname)["errors"]
        if code not in {"GL01", "GL02", "RT02"}
    ]
    assert errors == [], errors
    for section in ("Parameters", "Returns", "See Also", "Examples"):
        assert f"\n{section}\n" in inspect.getdoc(getattr(skcalbound.experiments, name))
    # And rendered in the documentation.
    pages = "".join((DOCS / page).read_text() for page in ("api.rst", "reproduce.rst"))
    directive = rf"^\.\. auto(?:function|class|data):: {re.escape(qualname)}\s*$"
    assert re.search(directive, pages, flags=re.M), qualname


def test_summary_and_slopes_by_hand():
    sizes = [100, 1_000, 10_000]
    rows = [
        {
            "problem": "p",
            "method": "NW",
            "guarantee": "high_probability",
            "n": n,
            "repeat": r,
            "certified": True,
            "value": 0.1 + 0.5 * (n / 100) ** -0.5 * (1 + 0.1 * r),
            "lower_bound": 0.05 * r,
            "true_ce": 0.1,
            "seconds": 0.0,
        }
        for n in sizes
        for r in range(2)
    ]
    frame = pd.DataFrame(rows)

    def flags(frame):
        frame["gap"] = frame["value"] - frame["true_ce"]
        frame["lower_gap"] = frame["true_ce"] - frame["lower_bound"]
        frame["abs_error"] = frame["gap"].abs()
        frame["covered"] = frame["value"] >= frame["true_ce"]
        frame["covered_lower"] = frame["lower_bound"] <= frame["true_ce"]
        frame["covered_both"] = frame["covered"] & frame["covered_lower"]
        return frame

    summary = summarise(flags(frame), 0.95)
    assert_allclose(summary["mean_gap"], [0.525, 0.525 / math.sqrt(10), 0.0525])
    assert_allclose(summary["mean_lower_bound"], 0.025)
    assert_allclose(summary["mean_lower_gap"], 0.075)
    assert summary["coverage_ok"].all()
    slopes = fit_slopes(summary)
    assert_allclose(slopes["slope"], [-0.5], atol=1e-12)
    frame.loc[0, "value"] = 0.05  # one repeat's upper bound below the truth at n = 100
    frame.loc[3, "lower_bound"] = 0.2  # one repeat's lower bound above it at n = 1000
    summary = summarise(flags(frame), 0.95)
    assert summary["coverage"].tolist() == [0.5, 1.0, 1.0]
    assert summary["coverage_lower"].tolist() == [1.0, 0.5, 1.0]
    assert summary["coverage_joint"].tolist() == [0.5, 0.5, 1.0]
    assert summary["coverage_ok"].tolist() == [False, False, True]


def test_results_of_runs_before_the_guarantee_modes_are_the_paper_form():
    # A results.csv.gz written before lower bounds existed (docs/reproduce/): its
    # bounds are the published forms; --from-results must still summarise it.
    old = pd.DataFrame(
        {
            "problem": ["p"] * 4,
            "n": [100] * 4,
            "repeat": [0] * 4,
            "method": ["NW", "TV", "Lip+Bkt", "ECE"],
            "certified": [True, True, True, False],
            "value": [0.3, 0.5, 0.4, 0.12],
            "true_ce": [0.1] * 4,
            "covered": [True, True, True, np.nan],
            "seconds": [0.0] * 4,
        }
    )
    old["gap"] = old["value"] - old["true_ce"]
    old["abs_error"] = old["gap"].abs()
    new = complete_results(old)
    assert new["method"].tolist() == [
        "NW (paper)",
        "TV (paper)",
        "Lip+Bkt (paper)",
        "ECE",
    ]
    assert new["guarantee"].tolist()[:3] == ["paper"] * 3 and pd.isna(
        new["guarantee"][3]
    )
    assert new["lower_bound"].isna().all()
    summary = summarise(new, 0.95).set_index("method")
    assert summary.loc["NW (paper)", "coverage"] == 1.0
    assert np.isnan(summary.loc["NW (paper)", "coverage_lower"])
    assert summary.loc["NW (paper)", "coverage_joint"] == 1.0
    assert complete_results(new) is new  # current layout: unchanged


@pytest.mark.parametrize(
    "spec, match",
    [
        ("square", "unknown problem 'square'"),
        ("atoms:k=2", "expected 'h=<bandwidth>'"),
        ("atoms:h=abc", "bad bandwidth 'abc'"),
        ("atoms:h=-1", "bandwidth must be positive"),
    ],
)
def test_problem_specs_are_checked(spec, match):
    with pytest.raises(ValueError, match=match):
        parse_problem(spec)


def test_perturbed_problem_spec():
    problem = parse_problem("atoms:h=2^-6")
    assert problem.h == 2.0**-6 and problem.name == "atoms_h=2^-6"
    assert problem.ce_integration_error < 1e-5


@pytest.mark.parametrize(
    "argv, match",
    [
        (["--repeats", "0"], "--repeats must be a positive integer"),
        (["--sizes", "5"], "sizes must be at least 10"),
        (["--confidence-level", "1.5"], "confidence-level must lie in"),
        (["--problems", "nope"], "unknown problem 'nope'"),
        (["--from-results", "/nonexistent"], "has no results.csv.gz"),
    ],
)
def test_command_line_errors_are_clear(argv, match, tmp_path):
    with pytest.raises(SystemExit, match=match):
        main([*argv, "--output-dir", str(tmp_path), "--no-progress"])


def test_command_line_runs_the_chosen_guarantee_modes(tmp_path, capsys):
    assert (
        main(
            [
                "--problems",
                "parabola",
                "--sizes",
                "300",
                "--repeats",
                "2",
                "--guarantees",
                "paper",
                "--no-plots",
                "--no-progress",
                "--output-dir",
                str(tmp_path),
            ]
        )
        == 0
    )
    results = pd.read_csv(tmp_path / "results.csv.gz")
    assert set(results["method"]) == {
        "NW (paper)",
        "TV (paper)",
        "Lip+Bkt (paper)",
        "ECE",
    }
    assert "coverage_lower" in capsys.readouterr().out  # the printed coverage table
    with pytest.raises(SystemExit):
        main(["--guarantees", "exact", "--output-dir", str(tmp_path)])
    assert "invalid choice: 'exact'" in capsys.readouterr().err
