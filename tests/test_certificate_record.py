"""``certificate_``: the audit record of every fitted bound estimator.

It must be plain JSON data equal to itself after a round trip, carry the estimator's
numbers exactly, fingerprint the data as the module docstring of ``_certificate``
says (recomputed here independently), and say when a refit cannot repeat it.
"""

import hashlib
import json
import math
import warnings

import numpy as np
import pytest
from sklearn.model_selection import KFold

import skcalbound
from skcalbound import (
    LipschitzBucketBound,
    MonotoneCalibrationBound,
    NWCalibrationBound,
    TVCalibrationBound,
)
from skcalbound._certificate import (
    certificate_differences,
    consistency_problems,
    refit_obstacles,
)

H = 2.0**-6
NOISE = ("adaptive", "worst_case")  # NW's default (SPEC 13) and section 10


def _data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    s = rng.uniform(0.05, 0.95, size=n)
    y = (rng.uniform(size=n) < s).astype(int)
    return s, y


def _recipe(scores, labels01):
    """The documented recipe, written out independently."""
    raw = np.asarray(scores, dtype=np.float64).astype("<f8").tobytes()
    raw += np.asarray(labels01).astype(np.uint8).tobytes()
    return hashlib.sha256(raw).hexdigest()


ESTIMATORS = [
    lambda **kw: TVCalibrationBound(V=1.0, method="denoise", **kw),
    lambda **kw: NWCalibrationBound(h=H, **kw),
    lambda **kw: NWCalibrationBound(b1=2.0, b2=5.0, **kw),
    lambda **kw: LipschitzBucketBound(h=H, **kw),
    lambda **kw: LipschitzBucketBound(L=3.0, **kw),
    lambda **kw: NWCalibrationBound(h=H, noise="worst_case", **kw),
]


def _fit(make, X=None, y=None, **kw):
    if X is None:
        X, y = _data()
    with warnings.catch_warnings():  # small samples: vacuous-bound warnings
        warnings.simplefilter("ignore")
        return make(random_state=kw.pop("random_state", 0), **kw).fit(X, y)


def _plain_json_types(value):
    if isinstance(value, dict):
        return all(
            isinstance(k, str) and _plain_json_types(v) for k, v in value.items()
        )
    if isinstance(value, list):
        return all(_plain_json_types(v) for v in value)
    return value is None or type(value) in (str, int, float, bool)


@pytest.mark.parametrize("guarantee", ["high_probability", "paper"])
@pytest.mark.parametrize("make", ESTIMATORS)
def test_certificate_round_trips_and_holds_the_estimators_numbers(make, guarantee):
    s, y = _data()
    est = _fit(make, s, y, guarantee=guarantee)
    cert = est.certificate_
    assert _plain_json_types(cert)
    assert json.loads(json.dumps(cert)) == cert
    assert cert["record"] == "skcalbound.certificate"
    assert cert["library"] == "skcalbound"
    assert cert["version"] == skcalbound.__version__
    assert cert["method"] == type(est).__name__
    assert cert["guarantee"] == guarantee
    assert cert["confidence_level"] == 0.95
    assert cert["bound"] == est.bound_ and cert["lower_bound"] == est.lower_bound_
    assert cert["estimate"] == est.estimate_
    assert cert["terms"] == {k: float(v) for k, v in est.terms_.items()}
    assert cert["n_samples"] == 600 and cert["n_positive"] == int(y.sum())
    assert cert["classes"] == [0, 1] and cert["pos_label"] is None
    assert cert["cv"] == 5 and cert["aggregate"] == "mean"
    assert cert["random_state"] == 0 and cert["n_splits"] == est.n_splits_ == 5
    assert cert["params"] == est.get_params(deep=False)
    assert cert["reproducible"] is True and cert["not_reproducible"] == []
    assert cert["fingerprint"]["algorithm"] == "sha256"
    assert cert["fingerprint"]["digest"] == _recipe(s, y)
    assert cert["created"].endswith("+00:00")


@pytest.mark.parametrize("offset", [-1, 0])
def test_fingerprint_of_a_larger_sample_is_the_recipe(offset):
    # 2**16 rows: where the fit used to start hashing in a thread beside the fit.
    n = 2**16 + offset
    s, y = _data(n, seed=3)
    cert = _fit(ESTIMATORS[4], s, y).certificate_
    assert cert["n_samples"] == n
    assert cert["fingerprint"]["digest"] == _recipe(s, y)


def test_assumption_constants_given_and_used():
    tv = _fit(ESTIMATORS[0]).certificate_["assumption"]
    assert tv == {"V": 1.0}
    nw_h = _fit(ESTIMATORS[1])
    assert nw_h.certificate_["assumption"] == {
        "h": H,
        "b1": None,
        "b2": None,
        "b1_": nw_h.b1_,
        "b2_": nw_h.b2_,
    }
    assert nw_h.b1_ > 0
    nw_b = _fit(ESTIMATORS[2]).certificate_["assumption"]
    assert nw_b == {"h": None, "b1": 2.0, "b2": 5.0, "b1_": 2.0, "b2_": 5.0}
    lip_h = _fit(ESTIMATORS[3])
    assert lip_h.certificate_["assumption"] == {"h": H, "L": None, "L_": lip_h.L_}
    lip_l = _fit(ESTIMATORS[4]).certificate_["assumption"]
    assert lip_l == {"h": None, "L": 3.0, "L_": 3.0}


def test_fingerprint_changes_with_one_label_or_one_score():
    s, y = _data()
    base = _fit(ESTIMATORS[0], s, y).certificate_["fingerprint"]["digest"]
    y2 = y.copy()
    y2[17] = 1 - y2[17]
    flipped = _fit(ESTIMATORS[0], s, y2).certificate_["fingerprint"]["digest"]
    s2 = s.copy()
    s2[17] = np.nextafter(s2[17], 1.0)
    nudged = _fit(ESTIMATORS[0], s2, y).certificate_["fingerprint"]["digest"]
    assert len({base, flipped, nudged}) == 3
    assert flipped == _recipe(s, y2) and nudged == _recipe(s2, y)


def test_fingerprint_is_of_the_validated_data():
    # Text labels with pos_label, two-column predict_proba, float32: the data as used.
    s, y = _data()
    names = np.where(y == 1, "yes", "no")
    proba = np.column_stack([1.0 - s, s])
    a = _fit(ESTIMATORS[0], s, y).certificate_
    b = _fit(ESTIMATORS[0], s.reshape(-1, 1), names, pos_label="yes").certificate_
    assert b["fingerprint"] == a["fingerprint"]
    assert b["pos_label"] == "yes" and b["classes"] == ["no", "yes"]
    c = _fit(ESTIMATORS[0], proba, y).certificate_
    assert c["fingerprint"]["digest"] == _recipe(proba[:, 1], y)
    # Labels "no" positive: the 0/1 labels flip, so does the fingerprint.
    d = _fit(ESTIMATORS[0], s, names, pos_label="no").certificate_
    assert d["fingerprint"]["digest"] == _recipe(s, 1 - y)


def test_non_reproducible_fits_are_flagged():
    rs = _fit(ESTIMATORS[0], random_state=np.random.RandomState(0)).certificate_
    assert rs["reproducible"] is False
    assert rs["random_state"].startswith("RandomState(")
    assert rs["params_as_repr"] == ["random_state"]
    assert "RandomState instance" in rs["not_reproducible"][0]
    assert json.loads(json.dumps(rs)) == rs
    splitter = _fit(ESTIMATORS[1], cv=KFold(3)).certificate_
    assert splitter["reproducible"] is False
    assert splitter["cv"] == repr(KFold(3)) and splitter["params_as_repr"] == ["cv"]
    assert any("cv is KFold" in r for r in splitter["not_reproducible"])
    assert splitter["n_splits"] == 3
    none = _fit(ESTIMATORS[0], random_state=None).certificate_
    assert none["reproducible"] is False and none["random_state"] is None
    assert "random_state=None" in none["not_reproducible"][0]


def test_reproducible_record_refits_to_the_same_numbers():
    s, y = _data()
    cert = _fit(ESTIMATORS[3], s, y).certificate_
    again = _fit(lambda **kw: LipschitzBucketBound(**{**cert["params"], **kw}), s, y)
    for key in ("bound", "lower_bound", "estimate", "terms", "fingerprint"):
        assert again.certificate_[key] == cert[key], key


# What ``skcalbound verify`` checks without a refit must hold for every genuine record:
# otherwise a genuine record would FAIL. (The lower-bound rule is exact for TV and NW
# aggregated by the mean: a bound changing how it makes its lower bound fails here.)
@pytest.mark.parametrize("aggregate", ["mean", "min"])
@pytest.mark.parametrize("guarantee", ["high_probability", "paper"])
@pytest.mark.parametrize("make", ESTIMATORS)
def test_genuine_records_are_consistent(make, guarantee, aggregate):
    s, y = _data(400, seed=5)
    draws = [{}, {"random_state": None}, {"random_state": np.random.RandomState(1)}]
    for draw in [*draws, {"cv": KFold(3, shuffle=True, random_state=2)}]:
        kw = {"random_state": 0, **draw}
        cert = _fit(make, s, y, guarantee=guarantee, aggregate=aggregate, **kw)
        cert = json.loads(json.dumps(cert.certificate_))
        obstacles = refit_obstacles(cert)
        assert cert["reproducible"] is (not obstacles) is (draw == {})
        assert consistency_problems(cert, obstacles) == []


def test_lower_bound_rule_is_exact_for_tv_and_nw_by_the_mean():
    s, y = _data(400, seed=6)
    for make, noise in [(ESTIMATORS[0], None), *((ESTIMATORS[1], n) for n in NOISE)]:
        cert = _fit(make, s, y, **({"noise": noise} if noise else {})).certificate_
        raised = dict(cert, lower_bound=cert["lower_bound"] + 1e-9)
        (problem,) = consistency_problems(raised, [])
        assert problem.startswith(f"its lower_bound is {raised['lower_bound']!r}; ")
        if noise == "adaptive":  # per fold 2 * validation_mean - its triangle route
            assert "its folds make it " in problem
        else:
            assert (
                "its terms make it max(0, 2 * validation_mean - sum of terms) = "
                in problem
            )
    # Lipschitz's SPEC 13 form: per fold the largest of its own candidate's and
    # lower_from's (another candidate's) 2 * validation_mean - triangle route.
    cert = _fit(ESTIMATORS[3], s, y, noise="adaptive").certificate_
    raised = dict(cert, lower_bound=cert["lower_bound"] + 1e-9)
    (problem,) = consistency_problems(raised, [])
    assert "its folds make it " in problem
    # Lipschitz's default (its best candidate's) and aggregate="min" (the best
    # fold's): at least.
    for cert in (
        _fit(ESTIMATORS[3], s, y).certificate_,
        _fit(ESTIMATORS[0], s, y, aggregate="min").certificate_,
    ):
        assert consistency_problems(dict(cert, lower_bound=0.5), []) == []
        (problem,) = consistency_problems(dict(cert, lower_bound=1.5), [])
        assert "make it at least max(0, 2 * validation_mean" in problem
        assert problem.endswith(", and at most 1")


def test_refit_obstacles_come_from_the_params_only():
    cert = _fit(ESTIMATORS[0]).certificate_
    assert refit_obstacles(cert) == []
    flagged = dict(cert, reproducible=False, not_reproducible=["random_state=None"])
    assert refit_obstacles(flagged) == []  # the flag is not read
    none = dict(cert, params={**cert["params"], "random_state": None})
    assert refit_obstacles(none) == [
        "random_state=None: the fit's random draws (the folds, the order of tied "
        "scores, the estimate's cross-fitting) came from fresh randomness"
    ]
    splitter = dict(cert, params={**cert["params"], "cv": "KFold(n_splits=3)"})
    assert refit_obstacles(splitter) == [
        "cv is not an int (KFold(n_splits=3), stored as its repr): its splits are not "
        "recorded"
    ]
    # Names in params_as_repr can only make a record non-refittable.
    other = dict(cert, params_as_repr=["V"])
    assert refit_obstacles(other) == ["parameters stored as repr: V"]


def test_certificate_differences_compare_all_but_the_named_entries():
    s, y = _data()
    cert = _fit(ESTIMATORS[1], s, y).certificate_
    again = _fit(ESTIMATORS[1], s, y).certificate_
    edited = json.loads(json.dumps(cert))
    edited.update(created="2000-01-01", source={"file": "x"}, version="0.0.1")
    edited.update(pos_label="yes", classes=["no", "yes"])
    assert certificate_differences(edited, again) == []
    edited["terms"]["bias"] = 0.0  # a term the refit does not have
    edited["assumption"]["b2_"] *= 1 + 2e-12
    edited["bound"] *= 1 + 0.5e-12  # within the tolerance
    edited["n_splits"] = 4
    assert [f for f, _, _ in certificate_differences(edited, again)] == [
        "assumption.b2_",
        "n_splits",
        "terms.bias",
    ]
    assert ("terms.bias", 0.0, "(absent)") in certificate_differences(edited, again)
    # With stand-in folds the numbers and the draw's parameters are not compared.
    drawn = dict(cert, bound=0.5, random_state=None, reproducible=False)
    assert certificate_differences(drawn, again, drawn=False) == []


def _point_mass(n=5000):
    """Scores all 0.9, eta = 1/2: NW's default takes the triangle route in every
    fold (its bound below the sum of the Jensen terms)."""
    rng = np.random.default_rng(0)
    return np.full(n, 0.9), (rng.random(n) < 0.5).astype(int)


@pytest.mark.parametrize("aggregate", ["mean", "min"])
def test_record_of_the_triangle_route_is_consistent_and_forgeries_are_not(aggregate):
    s, y = _point_mass()
    est = _fit(
        lambda **kw: NWCalibrationBound(b1=1.0, b2=1.0, **kw), s, y, aggregate=aggregate
    )
    assert (est.fold_results_["route"] == "triangle").all()
    total = math.fsum(est.terms_.values())
    assert est.bound_ < total - 0.005  # the worst-case rule would be wrong here
    cert = json.loads(json.dumps(est.certificate_))
    assert [fold["route"] for fold in cert["folds"]] == ["triangle"] * 5
    for fold, row in zip(cert["folds"], est.fold_results_.itertuples()):
        assert fold["upper_terms"]["bias_mean"] == row.bias_mean
        assert fold["lower_terms"]["smoothing_bound"] == row.smoothing_bound
    assert consistency_problems(cert, []) == []

    def forged(edit):
        record = json.loads(json.dumps(cert))
        edit(record)
        return consistency_problems(record, [])

    # The bound of the worst-case rule (min(1, sum of terms)), a fold's route or a
    # term of either table edited, the folds removed: each contradicts the record.
    assert any(
        "its bound is" in p for p in forged(lambda r: r.update(bound=min(total, 1.0)))
    )
    assert any(
        "route is 'jensen'" in p
        for p in forged(lambda r: r["folds"][0].update(route="jensen"))
    )
    assert forged(lambda r: r["folds"][1]["lower_terms"].update(smoothing_bound=0.0))
    cheaper = {"label_concentration": 0.0, "population_transfer": 0.0}
    assert any(
        "route is 'triangle'" in p
        for p in forged(lambda r: r["folds"][2]["upper_terms"].update(cheaper))
    )
    terms = cert["terms"]
    (problem,) = forged(
        lambda r: r["terms"].update(bias_mean=terms["bias_mean"] + 0.01)
    )
    assert problem == "its terms are not the aggregate of its folds' Jensen terms"
    (problem,) = forged(lambda r: r.pop("folds"))
    assert problem.startswith("its folds (per fold its route and both tables)")
    (problem,) = forged(lambda r: r.update(folds=r["folds"][:4]))
    assert "not one per split" in problem


def test_record_of_the_worst_case_form_has_no_folds():
    s, y = _point_mass(2000)
    make = lambda **kw: NWCalibrationBound(b1=1.0, b2=1.0, noise="worst_case", **kw)  # noqa: E731
    cert = _fit(make, s, y).certificate_
    assert "folds" not in cert and cert["params"]["noise"] == "worst_case"
    assert consistency_problems(cert, []) == []


def test_lipschitz_adaptive_lower_bound_from_another_candidate_is_checked():
    """Lipschitz with noise="adaptive": a fold's lower bound can come from another
    evaluated candidate (``lower_from``, its triangle table); verify recomputes it,
    and refuses a lower_from that is not such a table or gives less than the fold's
    own route."""
    from skcalbound.datasets import make_overconfident

    data = make_overconfident(20_000, h=2**-6, random_state=0)
    est = LipschitzBucketBound(h=2**-6, noise="adaptive", random_state=0)
    cert = est.fit(data.scores, data.labels).certificate_
    assert consistency_problems(cert, []) == []
    folds = cert["folds"]
    k = next(i for i, fold in enumerate(folds) if "lower_from" in fold)
    fold = folds[k]
    own = 2 * fold["lower_terms"]["validation_mean"] - math.fsum(
        fold["lower_terms"].values()
    )
    other = 2 * fold["lower_from"]["validation_mean"] - math.fsum(
        fold["lower_from"].values()
    )
    assert other > own  # the other candidate's lower bound is the fold's
    rows = est.fold_results_
    assert rows["lower_bound"].iloc[k] == pytest.approx(other, rel=1e-12)
    assert (rows["lower_n_buckets"].iloc[k], rows["lower_shift"].iloc[k]) != (
        rows["n_buckets"].iloc[k],
        rows["shift"].iloc[k],
    )
    # A lower_from raised in its validation_mean moves the lower bound above 0.
    forged = json.loads(json.dumps(cert))
    forged["folds"][k]["lower_from"]["validation_mean"] += 5.0
    (problem,) = consistency_problems(forged, [])
    assert problem.startswith("its lower_bound is ")
    # Not a triangle table, or weaker than the fold's own route: refused.
    bad = json.loads(json.dumps(cert))
    bad["folds"][k]["lower_from"] = {"validation_mean": 0.1}
    assert consistency_problems(bad, []) == [
        "a fold's lower_from is not a SPEC 13 triangle table"
    ]
    weak = json.loads(json.dumps(cert))
    weak["folds"][k]["lower_from"] = dict(
        fold["lower_terms"], smoothing_bound=fold["lower_terms"]["smoothing_bound"] + 1
    )
    assert "a fold's lower_from gives a smaller lower bound than its own route" in (
        consistency_problems(weak, [])
    )


def test_a_crossing_band_is_recorded_and_a_record_hiding_it_is_inconsistent():
    """eta(s) = 1 - s: the band crosses and lower_bound > bound. The record says
    assumption.monotonicity_rejected_ True (False for a monotone eta); set to False,
    the record contradicts itself (only a crossing gives lower > bound), and a refit
    finds the edit."""
    s, _ = _data(n=3000, seed=1)
    rng = np.random.default_rng(2)
    y_down = (rng.uniform(size=s.size) < 1 - s).astype(int)
    y_up = (rng.uniform(size=s.size) < s).astype(int)
    make = MonotoneCalibrationBound
    up = _fit(make, s, y_up).certificate_
    assert up["assumption"] == {"monotonicity_rejected_": False}
    crossed = _fit(make, s, y_down)
    record = crossed.certificate_
    assert record["assumption"] == {"monotonicity_rejected_": True}
    assert record["lower_bound"] > record["bound"]
    assert consistency_problems(record, []) == []
    hidden = json.loads(json.dumps(record))
    hidden["assumption"]["monotonicity_rejected_"] = False
    assert consistency_problems(hidden, []) == [
        f"its lower_bound {record['lower_bound']!r} is above its bound "
        f"{record['bound']!r}, which only a crossing band gives, but its "
        "assumption.monotonicity_rejected_ is False, not True"
    ]
    assert certificate_differences(hidden, record) == [
        ("assumption.monotonicity_rejected_", False, True)
    ]
