"""SPEC 13's eleven events one at a time at delta 0.5 (and 0.1, 0.01), plain-loop fold.

Each check fixes what its event conditions on, draws the rest, runs the reference fold
(``_adaptive_reference.py``, box weights: any label-free weights are allowed) and counts
failures, which must stay within the binomial tolerance. Truths: the true ``eta``,
expectations over training labels from each query's Poisson-binomial count law, over a
score by quadrature of the known density (two rules agree to 1e-6; 1e-4 for cU, fU,
whose integrands jump inside panels). gU, gL: the consequences the proof uses. Folds
m = 240, n = 60: rare event (h-mode), balanced smooth, raw point masses. Default ~6 s:
1010 label draws, 200 training-part, 40 score draws per problem; slow 12060, 6000, 1200.
"""

import functools
import math
import zlib

import numpy as np
import pytest
from _adaptive_reference import (
    BB,
    PILOT_CLIP,
    adaptive_fold,
    continuous_weights,
    lemma2_ucb,
    var_ucb,
)
from _synthetic import DiscreteTies, SechPerturbed, binomial_tolerance
from numpy.polynomial.legendre import leggauss

from skcalbound._sech import sech_derivative_bounds
from skcalbound.datasets import make_overconfident, make_rare_event

M, N = 240, 60  # training and evaluated validation points of a fold
DELTA_FOLD = 0.01  # the other events' shares are of this (they do not enter a check)
SHARE = 0.5  # the tested event's delta
H = 2.0**-6
# Gauss-Legendre orders of the two quadratures of a population mean, and the widest
# panel (the perturbed density varies on the scale H).
RULES, PANEL = (5, 8), H


def point(at, value):
    return DiscreteTies(support=(at,), probs=(1.0,), eta_values=(value,))


def _cases():
    rare = make_rare_event(10, h=H).problem
    smooth = make_overconfident(10).problem
    b1, b2 = sech_derivative_bounds(H)
    return {
        # bandwidths: a few to a few tens of training points per query
        "rare": dict(problem=rare, b1=b1, b2=b2, h=H, bandwidth=0.01),
        "balanced": dict(
            problem=smooth, b1=smooth.b1, b2=smooth.b2, h=None, bandwidth=0.08
        ),
        # every score at one point (eta constant: any b1, b2 holds): one query box
        "point_0.9": dict(
            problem=point(0.9, 0.5), b1=1.0, b2=1.0, h=None, bandwidth=0.1
        ),
        "point_0.02": dict(
            problem=point(0.02, 0.01), b1=1.0, b2=1.0, h=None, bandwidth=0.1
        ),
        # Lemma 2 holds for any pilot that does not see the training labels: one far
        # from eta (it only changes gamma, which the label events read).
        "rare_pilot_0.25": dict(
            problem=rare, b1=b1, b2=b2, h=H, bandwidth=0.01, pilot=0.25
        ),
    }


CASES = _cases()


# -- the fold and its exact expectations --------------------------------------------
def box_weights(train_scores, bandwidth):
    """Equal weights on the training scores within ``bandwidth`` of the query (the
    nearest ones where there are none): the reference's continuous weights with the
    kernel ``(1 - u**2)**t`` at ``t = 1e-300``, which is exactly 1 for ``|u| < 1``."""
    return continuous_weights(train_scores, bandwidth, tempering=1e-300)


def weight_matrix(weights, queries, train_scores, bandwidth):
    """The rows ``weights(s)`` for the queries ``s`` of :func:`box_weights`: computed
    here where a training score is within ``bandwidth`` (every 50th row checked
    against ``weights``), by ``weights`` where none is (the fallback)."""
    queries = np.asarray(queries, dtype=float)
    inside = np.abs((train_scores[None, :] - queries[:, None]) / bandwidth) < 1.0
    W = inside / np.maximum(inside.sum(1), 1)[:, None]
    for row in np.flatnonzero(~inside.any(1)):
        W[row] = weights(queries[row])
    for row in range(0, queries.shape[0], 50):
        assert np.array_equal(W[row], weights(queries[row]))
    return W


def count_law(W, eta):
    """Per row of ``W``: the law of ``eta_hat = sum_i w_i y_i``, ``y_i ~ B(eta_i)``
    independent, as ``(values, probabilities)`` (k + 1 columns for k weights)."""
    k = (W > 0).sum(1)
    width = k.max()
    rates = np.zeros((W.shape[0], width))
    for row, support in enumerate(W > 0):
        rates[row, : k[row]] = eta[support]
    pmf = np.zeros((W.shape[0], width + 1))
    pmf[:, 0] = 1.0
    for j in range(width):  # Poisson-binomial recursion (padding has rate 0)
        p = rates[:, j : j + 1]
        pmf[:, 1:] = pmf[:, 1:] * (1 - p) + pmf[:, :-1] * p
        pmf[:, 0] *= 1 - p[:, 0]
    values = np.arange(width + 1) / np.maximum(k, 1)[:, None]
    return values, pmf


def bias_at(out, x):
    """``b_v(x)`` per query of the reference's output ``out`` (x per query)."""
    k, babs = np.asarray(out["branch"]), np.asarray(out["Babs"])
    R = np.array([0.0 if r is None else r for r in out["R"]])
    return np.where(k == 0, babs, np.where(k == 1, R * x, R * (1 - x)))


def quadrature(train_scores, bandwidth, order):
    """Nodes and weights on [0, 1] with panel edges wherever a query's box changes
    (``s_i +- bandwidth``, midpoints of neighbouring training scores), panels at most
    ``PANEL`` wide."""
    t = np.sort(train_scores)
    edges = np.concatenate([[0, 1], t - bandwidth, t + bandwidth, (t[1:] + t[:-1]) / 2])
    edges = np.unique(np.clip(edges, 0.0, 1.0))
    pieces = np.ceil(np.diff(edges) / PANEL).astype(int)
    edges = np.concatenate(
        [np.linspace(a, b, p + 1)[:-1] for a, b, p in zip(edges, edges[1:], pieces)]
        + [[1.0]]
    )
    x, w = leggauss(order)
    mid, half = (edges[1:] + edges[:-1]) / 2, np.diff(edges) / 2
    return (mid[:, None] + half[:, None] * x).ravel(), (half[:, None] * w).ravel()


def density_and_eta(problem, s):
    """The score density and ``eta`` at ``s`` (one kernel sum when perturbed)."""
    if isinstance(problem, SechPerturbed):
        p, q = problem._p_q(s)
        return p, q / p
    return problem._continuous_pdf(s), problem.eta(s)


def draw(case, n, rng):
    return CASES[case]["problem"].sample(n, rng)


def reference(case, ts, ty, vs, vy, pilot=None):
    c = CASES[case]
    if pilot is None and "pilot" in c:
        pilot = [c["pilot"]] * len(ts)
    weights, fallback = box_weights(ts, c["bandwidth"])
    out = adaptive_fold(
        ts, ty, vs, vy, weights, b1=c["b1"], b2=c["b2"], h=c["h"],
        delta_fold=DELTA_FOLD, is_fallback=fallback, pilot=pilot,
        bandwidth=c["bandwidth"],
    )  # fmt: skip
    return out, weights


class Checks:
    """Per event, draws of ``deviation`` and of the two parts of its term
    ``sqrt(2 l variance) + scale l``: the event at ``delta`` fails where ``deviation >
    factor * term`` with ``l = ln(shift/delta)`` (``factor = 1``: the event itself)."""

    def __init__(self):
        self.parts = {}

    def add(self, event, deviation, variance, scale, shift=1.0):
        """``shift``: ``l = ln(shift / delta)`` (3 for BB)."""
        deviation = np.atleast_1d(deviation)
        rows = self.parts.setdefault(event, [])
        rows.append(np.broadcast_arrays(deviation, variance, scale, shift))

    def failures(self, event, delta, factor=1.0):
        parts = (np.concatenate(x) for x in zip(*self.parts[event]))
        deviation, variance, scale, shift = parts
        ell = np.log(shift / delta)
        return deviation > factor * (np.sqrt(2 * ell * variance) + scale * ell)


# -- events about the training labels, given every score and the validation labels --
def label_events(case, configurations, draws, seed):
    """:class:`Checks` of dU, dL, bU, bL, gU, gL over ``configurations`` draws of the
    scores and validation labels, each with ``draws`` draws of the training labels.

    dU, dL: Lemma 2's ``E S - S < sqrt(2 g l E S)`` for the fold's ``gamma`` (checked
    against the reference's ``lemma2_ucb``). bU, bL: Lemma 3 with the true variance.
    gU, gL: the consequences the proof uses, as ``E_Y sqrt(Q)`` and ``E_Y ||f xi||``
    are not exact: ``E_Y Q <= (sqrt Q + term)**2 + v`` (``Var sqrt Q <= v = sum e
    eta(1 - eta)``) and ``||f xi|| / sqrt(n) <= sqrt(v) + term``.
    """
    problem = CASES[case]["problem"]
    ell = math.log(1.0 / SHARE)
    found = Checks()

    rng = np.random.default_rng(seed)
    for _ in range(configurations):
        ts, ty = draw(case, M, rng)
        vs, vy = draw(case, N, rng)
        eta_t, eta_v = problem.eta(ts), problem.eta(vs)
        out, weights = reference(case, ts, ty, vs, vy)
        W = weight_matrix(weights, vs, ts, CASES[case]["bandwidth"])
        values, pmf = count_law(W, eta_t)
        labels = np.vstack([ty, rng.uniform(size=(draws, M)) < eta_t]).astype(float)
        eta_hat = labels @ W.T  # (draws + 1, N); row 0: the fold's own labels
        eta_tilde = W @ eta_t
        var_t = eta_t * (1 - eta_t)
        c, cp, e = (np.asarray(out[k]) for k in ("c", "c_prime", "e"))
        f = np.asarray(out["f"])

        def residual_bias(x):
            return np.abs(vs - x) + bias_at(out, x)

        rb = residual_bias(eta_hat)
        rb_law = residual_bias(values.T).T  # (N, k + 1)
        # The vectorised statistics are the reference's on the fold's own labels.
        assert rb[0].mean() == pytest.approx(out["a_U"] - out["D_U"], abs=1e-12)
        assert (rb[0] ** 2).mean() == pytest.approx(out["Q"], abs=1e-12)

        # bU (Lemma 3, lower tail): E_Y Z' <= Z' + sqrt(2 l v') + max c' l / 3.
        mean_rb = (pmf * rb_law).sum(1).mean()
        found.add("bU", mean_rb - rb.mean(1), np.dot(cp**2, var_t), cp.max() / 3)

        # bL (Lemma 3, upper tail) on Z = mean_v min(1, |beta_v| + |xi_v|).
        beta = np.abs(eta_tilde - eta_v)
        Z = np.minimum(1, beta + np.abs(eta_hat - eta_tilde)).mean(1)
        EZ = pmf * np.minimum(1, beta[:, None] + np.abs(values - eta_tilde[:, None]))
        found.add("bL", Z - EZ.sum(1).mean(), np.dot(c**2, var_t), c.max() / 3)

        # gU, gL: the consequences above.
        v, d_star = np.dot(e, var_t), math.sqrt(e.max())
        EQ = (pmf * rb_law**2).sum(1).mean()
        gap = math.sqrt(max(EQ - v, 0.0)) - np.sqrt((rb**2).mean(1))
        found.add("gU", gap, v, d_star / 3)
        norm = np.sqrt((f**2 * (eta_hat - eta_tilde) ** 2).mean(1))
        found.add("gL", norm - math.sqrt(v), v, d_star / 3)

        # dU, dL (Lemma 2): S = sum gamma+ y + gamma- (1 - y) is linear in the labels.
        for event, gamma in (("dU", out["gamma_dU"]), ("dL", out["gamma_NB"])):
            gamma = np.asarray(gamma)
            plus, minus = np.maximum(gamma, 0), np.maximum(-gamma, 0)
            S = labels @ plus + (1 - labels) @ minus
            ES = np.dot(plus, eta_t) + np.dot(minus, 1 - eta_t)
            found.add(event, ES - S, np.abs(gamma).max() * ES, 0.0)
            ucb = [lemma2_ucb(gamma, y, ell) for y in labels[:5]]
            term = math.sqrt(2 * ell * np.abs(gamma).max() * ES)
            assert np.array_equal(np.dot(gamma, eta_t) > ucb, (ES - S > term)[:5])
    return found


# -- events about a validation score, given the training part -----------------------
def population(case, ts, order):
    """Nodes, weights (with the score density) and ``eta`` of the quadrature of a
    mean over the score law, for the training scores ``ts`` (atoms: exact)."""
    c = CASES[case]
    if c["problem"].continuous_weight == 0.0:  # atoms: a finite sum
        return c["problem"]._atoms()
    nodes, weights = quadrature(ts, c["bandwidth"], order)
    density, eta = density_and_eta(c["problem"], nodes)
    return nodes, weights * density, eta


def training_events(case, trainings, draws, seed):
    """:class:`Checks` of aL, cL and fL (given ``T``): ``r(s) = |s - eta_hat(s)|`` and
    ``A(s) = |eta_hat(s) - eta(s)|`` are fixed functions; aL is BB's two-sided event,
    cL and fL Maurer's ``E X - mean X < sqrt(2 l E X**2 / n)`` for ``X = A`` and
    ``A**2`` (the F forms of SPEC 13 follow from ``E X**2 <= E X``)."""
    problem = CASES[case]["problem"]
    found = Checks()
    rng = np.random.default_rng(seed)
    for _ in range(trainings):
        ts, ty = draw(case, M, rng)
        bandwidth = CASES[case]["bandwidth"]
        weights = box_weights(ts, bandwidth)[0]
        pop = {}
        for order in RULES:
            nodes, w, eta = population(case, ts, order)
            eta_hat = weight_matrix(weights, nodes, ts, bandwidth) @ ty
            r, A = np.abs(nodes - eta_hat), np.abs(eta_hat - eta)
            pop[order] = [np.dot(w, x) for x in (r, A, A**2, A**4)]
        assert np.allclose(*pop.values(), rtol=0, atol=1e-6), pop
        Er, EA, EA2, EA4 = pop[RULES[-1]]
        vs = np.vstack([draw(case, N, rng)[0] for _ in range(draws)])
        W = weight_matrix(weights, vs.ravel(), ts, bandwidth)
        eta_hat = (W @ ty).reshape(vs.shape)
        r = np.abs(vs - eta_hat)
        A = np.abs(eta_hat - problem.eta(vs.ravel()).reshape(vs.shape))
        out = reference(case, ts, ty, vs[0], np.zeros(N, int))[0]
        assert np.allclose(r[0], out["r"], rtol=0, atol=1e-15)
        # BB(n, delta, var) = sqrt(2 var ln(3/delta) / n) + 3 ln(3/delta) / n.
        found.add("aL", np.abs(r.mean(1) - Er), r.var(1) / N, 3.0 / N, shift=3.0)
        failed = [abs(x.mean() - Er) > BB(N, SHARE, x.var()) for x in r[:5]]
        assert failed == list(found.failures("aL", SHARE)[-draws:][:5])
        found.add("cL", EA - A.mean(1), EA2 / N, 0.0)
        found.add("fL", EA2 - (A**2).mean(1), EA4 / N, 0.0)
    return found


# -- events about a validation score, given the training scores ---------------------
def score_events(case, trainings, draws, seed):
    """:class:`Checks` of cU and fU (given ``S_T``): Maurer's event for ``Gamma(s) =
    min(1, E_Y r'(s))`` and ``chi(s) = min(1, E_Y r'(s)**2)``, with ``r'(s) = |s -
    eta_hat(s)| + b(s; eta_hat(s))`` and the branch the reference picks at ``s``.
    One reference call evaluates every quadrature node and validation draw (the
    pilot, which no per-query quantity reads, fixed at 1/2); the first draw's
    per-query values are checked against a fold of its own (default pilot)."""
    c = CASES[case]
    found = Checks()
    rng = np.random.default_rng(seed)
    for _ in range(trainings):
        ts, ty = draw(case, M, rng)
        eta_t = c["problem"].eta(ts)
        weights = box_weights(ts, c["bandwidth"])[0]
        pops = [population(case, ts, order) for order in RULES]
        vs = np.vstack([draw(case, N, rng)[0] for _ in range(draws)])
        queries = np.concatenate([p[0] for p in pops] + [vs.ravel()])
        out = reference(
            case, ts, ty, queries, np.zeros(queries.shape[0], int), [0.5] * M
        )[0]
        own = reference(case, ts, ty, vs[0], draw(case, N, rng)[1])[0]
        tail = slice(queries.shape[0] - vs.size, queries.shape[0] - vs.size + N)
        for key in ("branch", "Babs", "R", "f"):
            assert own[key] == out[key][tail], key
        values, pmf = count_law(
            weight_matrix(weights, queries, ts, c["bandwidth"]), eta_t
        )
        rb_law = np.abs(queries[:, None] - values) + bias_at(out, values.T).T
        gamma = np.minimum(1.0, (pmf * rb_law).sum(1))
        chi = np.minimum(1.0, (pmf * rb_law**2).sum(1))
        start, moments = 0, []
        for nodes, w, _ in pops:
            part = slice(start, start + nodes.shape[0])
            start += nodes.shape[0]
            moments.append([np.dot(w, x[part]) for x in (gamma, gamma**2, chi, chi**2)])
        assert np.allclose(*moments, rtol=0, atol=1e-4), moments
        EG, EG2, Echi, Echi2 = moments[-1]
        G, X = (x[start:].reshape(vs.shape) for x in (gamma, chi))
        found.add("cU", EG - G.mean(1), EG2 / N, 0.0)
        found.add("fU", Echi - X.mean(1), Echi2 / N, 0.0)
    return found


# -- the tests ------------------------------------------------------------------------
@pytest.mark.parametrize("case", list(CASES))
def test_the_exact_expectations(case):
    """The count law has the mean ``sum w eta`` and variance ``sum w**2 eta(1 - eta)``
    of ``eta_hat``, and the quadrature integrates the score density to 1; in h-mode,
    the relative branch is picked at some queries and not at others."""
    rng = np.random.default_rng(3)
    ts, ty = draw(case, M, rng)
    bandwidth = CASES[case]["bandwidth"]
    weights = box_weights(ts, bandwidth)[0]
    eta = CASES[case]["problem"].eta(ts)
    queries = np.concatenate([draw(case, 50, rng)[0], [0.0, 1.0]])
    W = weight_matrix(weights, queries, ts, bandwidth)
    values, pmf = count_law(W, eta)
    mean = (pmf * values).sum(1)
    assert np.allclose(pmf.sum(1), 1.0, rtol=0, atol=1e-14)
    assert np.allclose(mean, W @ eta, rtol=0, atol=1e-14)
    variance = (pmf * (values - mean[:, None]) ** 2).sum(1)
    assert np.allclose(variance, (W**2) @ (eta * (1 - eta)), rtol=0, atol=1e-14)
    if CASES[case]["h"] is not None:  # the relative branch (f > 1) is in play
        branch = reference(case, ts, ty, queries, np.zeros(52, int))[0]["branch"]
        assert 0.1 < np.mean(np.asarray(branch) > 0) < 1.0
    for order in RULES:
        nodes, w, _ = population(case, ts, order)
        assert np.all((nodes > 0) & (nodes < 1))
        assert w.sum() == pytest.approx(1.0, abs=1e-9)


# Per group of events: the function, its events, and (conditionings, draws each) in
# the default suite and under slow.
GROUPS = {
    "labels": (
        label_events,
        ("dU", "dL", "bU", "bL", "gU", "gL"),
        (10, 100),
        (60, 200),
    ),
    "training": (training_events, ("aL", "cL", "fL"), (2, 100), (30, 200)),
    "scores": (score_events, ("cU", "fU"), (1, 40), (12, 100)),
}
EVENT_GROUP = {e: g for g, (_, events, _, _) in GROUPS.items() for e in events}
# Events whose checks respond to halving the term at n = 60 (aL's BB has a term
# 3 ln(6)/n ~ 0.09, gU's consequence and the transfers cU, fU sit far below theirs).
SHARP = ("dU", "dL", "bU", "bL", "gL", "cL", "fL")


@functools.cache
def checks(group, case, slow):
    function, _, small, large = GROUPS[group]
    conditionings, draws = large if slow else small
    seed = zlib.crc32(repr(("events", group, case, slow)).encode())
    return function(case, conditionings, draws, seed)


def check_event(case, event, slow):
    found = checks(EVENT_GROUP[event], case, slow)
    counts = {}
    for delta in (SHARE, 0.1, 0.01):
        fails = found.failures(event, delta)
        counts[delta] = int(fails.sum())
        tolerance = binomial_tolerance(fails.size, 1.0 - delta)
        assert counts[delta] <= tolerance, (event, delta, counts[delta], fails.size)
    halved = int(found.failures(event, SHARE, factor=0.5).sum())
    print(f"{case} {event}: failures {counts} of {fails.size}; term halved {halved}")
    return counts[SHARE], halved


def label_events_only(case):
    """A case whose other events are not random (every score at one point) or are the
    same as another case's (only the pilot differs)."""
    c = CASES[case]
    return "pilot" in c or c["problem"].continuous_weight == 0.0


CASE_EVENTS = [
    pytest.param(case, event, id=f"{case}-{event}")
    for case in CASES
    for event in EVENT_GROUP
    if EVENT_GROUP[event] == "labels" or not label_events_only(case)
]


@pytest.mark.parametrize("case, event", CASE_EVENTS)
def test_event_holds_at_its_share(case, event):
    """The event's failure count at delta 0.5 (and 0.1, 0.01) is within the binomial
    tolerance of that delta."""
    check_event(case, event, slow=False)


@pytest.mark.slow
@pytest.mark.parametrize("case, event", CASE_EVENTS)
def test_event_holds_at_its_share_slow(case, event):
    check_event(case, event, slow=True)


@pytest.mark.parametrize("case", list(CASES))
def test_halving_a_term_fails_more_often(case):
    """The checks can fail: with its term halved, each sharp event fails at least
    twice as often (plus 5), and some event fails with its full term. (With every
    score at one point, only the training labels are random.)"""
    full_total = 0
    only = label_events_only(case)
    for event in [e for e in SHARP if not only or EVENT_GROUP[e] == "labels"]:
        found = checks(EVENT_GROUP[event], case, False)
        full = int(found.failures(event, SHARE).sum())
        halved = int(found.failures(event, SHARE, factor=0.5).sum())
        full_total += full
        assert halved >= 2 * full + 5, (event, full, halved)
    assert full_total > 0


def test_a_pilot_that_sees_the_training_labels_breaks_dU():
    """SPEC 13: the pilot must not see the training labels. With ``eta0 = y_T``
    (clipped), Lemma 2's event for ``VarUCB(c'**2)`` fails in nearly every draw on the
    balanced problem (its statistic ``S`` is then 0), at share 0.5."""
    problem = CASES["balanced"]["problem"]
    rng = np.random.default_rng(5)
    ell = math.log(1.0 / SHARE)
    fails = []
    for _ in range(3):
        ts, ty = draw("balanced", M, rng)
        vs, vy = draw("balanced", N, rng)
        a = np.asarray(reference("balanced", ts, ty, vs, vy)[0]["c_prime"]) ** 2
        eta = problem.eta(ts)
        for _ in range(20):
            y = (rng.uniform(size=M) < eta).astype(int)
            ucb = var_ucb(a, np.clip(y, PILOT_CLIP, 1 - PILOT_CLIP), y, ell)
            fails.append(np.dot(ucb["gamma"], eta) > lemma2_ucb(ucb["gamma"], y, ell))
            assert ucb["value"] < np.dot(a, eta * (1 - eta))  # VarUCB below the truth
    assert np.mean(fails) > 0.9
