"""Any problem seen through the sech perturbation (SPEC section 6, paper eq. (7))."""

import dataclasses
import math
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

import numpy as np
from scipy import optimize

from .._sech import _gd_inplace, _sech_inplace, sech_derivative_bounds, sech_normalizer
from ._exact import (
    checked_truth,
    gauss_legendre_panels,
    graded_edges,
    panel_edges,
    unbounded_points,
)
from ._problems import (
    CalibratedBeta,
    CalibrationProblem,
    DiscreteTies,
    PiecewiseLinear,
    PowerMiscalibrated,
    RareEvent,
)
from ._smooth import Oscillating, Parabola, SmoothSine

# Inner and outer rules of the two refinements of SechPerturbed.true_ce:
# (panel width in units of min(h, the base problem's resolution), nodes per panel).
PERTURBED_RULES = ((1.0, 16), (0.5, 24))


#: Rows per block of :meth:`SechPerturbed.sample_with_original`.
SAMPLE_BLOCK = 1 << 14

#: Kernel values per block of :meth:`SechPerturbed._p_q` (the kernel and a work
#: buffer, 512 KiB each).
KERNEL_BLOCK = 1 << 16

#: Base problems whose truth through the perturbation is shared between equal
#: definitions (:func:`_truth_key`): frozen dataclasses of this package whose every
#: field is a number, a string or a tuple of them. Subclasses (which may override
#: ``eta``) and user-defined problems such as ``CustomProblem`` are left out.
CACHEABLE_BASES = (
    CalibratedBeta,
    DiscreteTies,
    Oscillating,
    Parabola,
    PiecewiseLinear,
    PowerMiscalibrated,
    RareEvent,
    SmoothSine,
)

#: Most truths kept by the process-wide cache (each a few floats and two short
#: arrays of roots); the least recently used goes first.
TRUTH_CACHE_SIZE = 256

_TRUTH_CACHE = OrderedDict()
_TRUTH_LOCK = threading.Lock()


class _PerturbedTruth(NamedTuple):
    """What ``SechPerturbed`` integrates once: the CE, its error, the roots per rule."""

    true_ce: float
    ce_integration_error: float
    sign_changes: tuple  # of read-only float arrays, one per PERTURBED_RULES entry


def _exact_key(value):
    """``value`` as a hashable key that tells apart every value that could compute
    differently (``0.0`` and ``-0.0``, ``1`` and ``1.0``), or ``TypeError``."""
    kind = type(value)
    if kind is tuple:
        return ("tuple", tuple(_exact_key(item) for item in value))
    if kind in (float, np.float64):
        return (kind.__name__, float(value).hex())
    if kind in (int, bool, str) or value is None:
        return (kind.__name__, value)
    raise TypeError(f"not an immutable scalar or tuple: {kind.__name__}")


def _truth_key(problem):
    """The key of ``problem``'s truth in the process-wide cache, or ``None``.

    Only a plain :class:`SechPerturbed` of a base of exactly one of the classes in
    :data:`CACHEABLE_BASES` gets a key: its truth is then a pure function of the base's
    class and field values, ``h`` and :data:`PERTURBED_RULES`, all immutable. The
    perturbed problem's ``name`` and ``assumption_names`` play no part in it.
    """
    base = problem.base
    if type(problem) is not SechPerturbed or type(base) not in CACHEABLE_BASES:
        return None
    try:
        fields = tuple(
            (f.name, _exact_key(getattr(base, f.name)))
            for f in dataclasses.fields(base)
        )
        return (
            type(base),
            fields,
            _exact_key(problem.h),
            _exact_key(tuple(tuple(rule) for rule in PERTURBED_RULES)),
        )
    except TypeError:
        return None


def _sech_inverse_cdf_inplace(u, s_orig, h):
    """``sech_inverse_cdf(u, s_orig, h)`` into ``u``, bit for bit, for a float ``h``.

    The same floating-point operations in the same order as :func:`sech_inverse_cdf`
    (``gd(x) = 2 arctan(tanh(x / 2))``, ``gd_inverse(t) = 2 artanh(clip(tan(t / 2)))``)
    on one-dimensional float arrays, in place, without its temporaries. The ``nan``
    of ``gd_inverse`` outside ``|theta| <= pi/2 + 1e-12`` never fires here: ``theta``
    is clipped to ``[gd(a), gd(b)]`` and ``|gd| <= 2 arctan(1)``.
    """
    h = float(h)
    lower = np.negative(s_orig)
    lower /= h
    lower *= 0.5
    np.tanh(lower, out=lower)
    np.arctan(lower, out=lower)
    lower *= 2.0
    upper = np.subtract(1.0, s_orig)
    upper /= h
    upper *= 0.5
    np.tanh(upper, out=upper)
    np.arctan(upper, out=upper)
    upper *= 2.0
    theta = u
    # theta = clip(lower + u (upper - lower), lower, upper)
    theta *= upper - lower
    theta += lower
    np.maximum(theta, lower, out=theta)
    np.minimum(theta, upper, out=theta)
    theta *= 0.5
    np.tan(theta, out=theta)
    np.clip(theta, -1.0, 1.0, out=theta)
    with np.errstate(divide="ignore"):
        np.arctanh(theta, out=theta)
    theta *= 2.0
    theta *= h
    theta += s_orig
    np.clip(theta, 0.0, 1.0, out=theta)
    return theta


@dataclass(frozen=True)
class SechPerturbed(CalibrationProblem):
    """A classifier whose scores went through the sech perturbation (SPEC section 6).

    The unperturbed score ``s_orig`` and its calibration function ``eta_orig`` are those
    of ``base`` (any problem of this module: atoms plus a continuous part with a
    density, ``eta_orig`` possibly with jumps). A sample draws ``s_orig`` from ``base``,
    the label ``y ~ Bernoulli(eta_orig(s_orig))`` from the *unperturbed* score, and the
    perturbed score ``s = sech_inverse_cdf(u, s_orig, h)`` with fresh ``u ~ U(0, 1)``,
    exactly the generative process of Appendix D. The problem is about ``(s, y)``.

    Truth (paper eq. (7) / (21)): with ``k(s | so) = sech((s - so)/h) / Z(so, h)``,
    ``p(s) = int k(s|so) dP(so)`` (the density of ``s``) and
    ``q(s) = int eta_orig(so) k(s|so) dP(so)`` (the density of ``s`` with ``y = 1``),
    ``eta(s) = q(s) / p(s)`` and ``CE = int_0^1 |s p(s) - q(s)| ds``.

    - Atoms enter ``p`` and ``q`` as exact finite sums.
    - The continuous part is integrated by composite Gauss-Legendre with panel edges at
      every breakpoint of the base (jumps and kinks of ``eta_orig`` and of the density)
      and panels no wider than ``min(h, resolution)`` (``resolution`` is the finest
      feature of ``eta_orig``, e.g. a quarter period of an oscillation): the integrand
      is analytic on each panel, with singularities of ``sech`` and ``1 / Z`` at
      distance ``pi h / 2`` from the real axis, so an ``n``-node rule errs by
      ``~ 6.4^(-2n)``. Where the base's density is unbounded (a Beta law's end with
      ``a < 1`` or ``b < 1``) it is not analytic there, and the panel next to that
      point is cut geometrically towards it (pieces ``w / 8^j``), on which the rule
      converges again.
    - The outer integral uses the same kind of rule over ``s``, with extra edges at the
      sign changes of ``s p(s) - q(s)`` (found on the nodes and refined by ``brentq``),
      where ``|.|`` has a kink.

    ``true_ce`` is the finer of two refinements (``PERTURBED_RULES``);
    ``ce_integration_error`` is ``max(|CE_coarse - CE_fine|, |int p - 1|)`` over both,
    an estimate of the integration error; :attr:`true_ce` raises ``ArithmeticError``
    rather than return a value whose estimate is not below ``1e-5``. Both, and the
    roots of ``sign_changes``, are integrated once per instance; with a base of this
    package (``CACHEABLE_BASES``, fields of numbers, strings and tuples) once per
    process for every equal definition, through a cache keyed by the base's class and
    fields and ``h``.

    Assumptions (Corollary 3 and the sharp second-derivative bound of SPEC section 12,
    whatever ``base`` is): ``b1 = tanh(1/h) / (2h)``, ``b2 = tanh(1/h)^2 / (2 h^2)``
    (Corollary 4 states three times this), ``L = b1``, and ``h`` itself; ``V = b1``
    because ``TV(eta) = int_0^1 |eta'| <= sup |eta'|`` (valid, but loose: the TV bound
    is not the method of choice for perturbed scores). ``assumption_names`` picks which
    of them :attr:`assumptions` reports (``V`` only on request).
    """

    base: CalibrationProblem = field(default_factory=PiecewiseLinear)
    h: float = 2.0**-6
    name: str = "sech_perturbed"
    assumption_names: tuple = ("h", "b1", "b2", "L")

    def __post_init__(self):
        if not self.h > 0:
            raise ValueError(f"h must be positive; got {self.h}")
        if isinstance(self.base, SechPerturbed):
            raise ValueError("base must be an unperturbed problem")
        unknown = set(self.assumption_names) - {"h", "b1", "b2", "L", "V"}
        if unknown:
            raise ValueError(
                f"unknown assumption names {sorted(unknown)}; use h, b1, b2, L, V"
            )

    # -- assumptions ---------------------------------------------------------------
    @property
    def assumptions(self):
        """The constants of ``assumption_names`` among ``h, b1, b2, L, V``."""
        b1, b2 = sech_derivative_bounds(self.h)
        constants = {
            "h": float(self.h),
            "b1": float(b1),
            "b2": float(b2),
            "L": float(b1),
            "V": float(b1),
        }
        return {name: constants[name] for name in self.assumption_names}

    # -- sampling ------------------------------------------------------------------
    def sample_with_original(self, n, rng):
        """``(s, y, s_orig)``: perturbed scores, labels from ``s_orig``, and ``s_orig``.

        The numbers are those of ``labels = rng.uniform(size=n) < base.eta(s_orig)``
        and ``scores = sech_inverse_cdf(rng.uniform(size=n), s_orig, h)``, bit for bit;
        both are computed by blocks of ``SAMPLE_BLOCK`` rows, whose temporaries stay
        in the cache.
        """
        s_orig = np.asarray(self.base.sample_scores(n, rng), dtype=float)
        label_draws = rng.uniform(size=n)
        scores = rng.uniform(size=n)
        labels = np.empty(n, dtype=np.int64)
        for start in range(0, n, SAMPLE_BLOCK):
            block = slice(start, start + SAMPLE_BLOCK)
            np.less(
                label_draws[block],
                self.base.eta(s_orig[block]),
                out=labels[block],
                casting="unsafe",
            )
            _sech_inverse_cdf_inplace(scores[block], s_orig[block], self.h)
        return scores, labels, s_orig

    def sample(self, n, rng):
        """Draw ``(scores, labels)``; labels depend on the unperturbed score."""
        scores, labels, _ = self.sample_with_original(n, rng)
        return scores, labels

    def sample_scores(self, n, rng):
        return self.sample(n, rng)[0]

    # -- densities -----------------------------------------------------------------
    @property
    def _panel_scale(self):
        return min(self.h, self.base._resolution)

    @cached_property
    def _inner_rules(self):
        """Per rule: nodes ``so``, weights ``w(so) / Z(so, h)`` and ``eta_orig(so)``.

        Panels next to a point where the base's density is unbounded (a Beta law's
        end with ``a < 1`` or ``b < 1``) are graded geometrically towards it
        (:func:`~skcalbound.datasets._exact.graded_edges`); elsewhere the panels are
        those of ``panel_edges``.
        """
        singular = (
            unbounded_points(self.base._continuous_pdf, self.base._breakpoints())
            if self.base.continuous_weight > 0.0
            else []
        )
        rules = []
        for width, order in PERTURBED_RULES:
            if self.base.continuous_weight == 0.0:
                rules.append((np.empty(0), np.empty(0), np.empty(0)))
                continue
            edges = panel_edges(self.base._breakpoints(), width * self._panel_scale)
            nodes, weights = gauss_legendre_panels(
                graded_edges(edges, singular, self.base._continuous_pdf), order
            )
            weights = (
                self.base.continuous_weight
                * weights
                * self.base._continuous_pdf(nodes)
                / sech_normalizer(nodes, self.h)
            )
            # Nodes are interior to the panels, never at a breakpoint, so never at an
            # atom.
            rules.append((nodes, weights, self.base.eta(nodes)))
        return tuple(rules)

    def _atoms(self):
        x, p, e = self.base._atoms()
        return x, p / sech_normalizer(x, self.h), e

    def _p_q(self, s, rule=0, *, cumulative=False):
        """``(p(s), q(s))``; with ``cumulative=True`` their integrals on ``[0, s]``.

        ``p = k_c @ w_c + k_a @ w_a`` and ``q = k_c @ (w_c eta_c) + k_a @ (w_a eta_a)``
        with the kernel ``k = sech((s - so) / h)``, or its integral over ``[0, s]``,
        ``h (gd((s - so) / h) - gd(-so / h))``, between the scores ``s`` and the
        centres ``so`` (``c``: the inner nodes, ``a``: the atoms). The kernel is formed
        in place, with the floating-point operations of :func:`sech` and :func:`gd`, by
        blocks of scores of about ``KERNEL_BLOCK`` values that stay in the cache.
        """
        s = np.atleast_1d(np.asarray(s, dtype=float))
        nodes, weights, eta_nodes = self._inner_rules[rule]
        x, weight_atoms, eta_atoms = self._atoms()
        h = self.h
        weights_q, weight_atoms_q = weights * eta_nodes, weight_atoms * eta_atoms
        rows = max(1, KERNEL_BLOCK // max(nodes.shape[0], x.shape[0], 1))
        rows = min(rows, max(s.shape[0], 1))
        buffers = {
            "nodes": (
                np.empty((rows, nodes.shape[0])),
                np.empty((rows, nodes.shape[0])),
            ),
            "atoms": (np.empty((rows, x.shape[0])), np.empty((rows, x.shape[0]))),
        }
        # gd(-so / h): the antiderivative at s = 0.
        at_zero = (
            {"nodes": _gd_inplace(-nodes / h), "atoms": _gd_inplace(-x / h)}
            if cumulative
            else None
        )

        def unnormalised(block, centres, which):
            buffer, work = buffers[which]
            k = np.subtract(block, centres, out=buffer[: block.shape[0]])
            k /= h
            if cumulative:
                _gd_inplace(k)
                k -= at_zero[which]
                k *= h
            else:
                _sech_inplace(k, work[: block.shape[0]])
            return k

        p, q = np.empty_like(s), np.empty_like(s)
        for start in range(0, s.shape[0], rows):
            block = s[start : start + rows, None]
            k_c = unnormalised(block, nodes, "nodes")
            k_a = unnormalised(block, x, "atoms")
            p[start : start + rows] = k_c @ weights + k_a @ weight_atoms
            q[start : start + rows] = k_c @ weights_q + k_a @ weight_atoms_q
        return p, q

    def density(self, s):
        """``p(s)``, the density of the perturbed score on [0, 1]."""
        return self._p_q(s)[0]

    def positive_density(self, s):
        """``q(s) = p(s) eta(s)``: joint density of perturbed score and ``y = 1``."""
        return self._p_q(s)[1]

    def cdf(self, s):
        """``P(perturbed score <= s)``, from the exact kernel CDF.

        The kernel CDF is Lemma 7's antiderivative.
        """
        return np.clip(self._p_q(np.clip(s, 0.0, 1.0), cumulative=True)[0], 0.0, 1.0)

    def eta(self, s):
        """Calibration function of the perturbed classifier, eq. (7): ``q(s)/p(s)``."""
        p, q = self._p_q(s)
        return q / p

    def gap(self, s, rule=0):
        """``s p(s) - q(s)``, whose integral of the absolute value is the CE."""
        s = np.atleast_1d(np.asarray(s, dtype=float))
        p, q = self._p_q(s, rule)
        return s * p - q

    # -- the calibration error -----------------------------------------------------
    def _outer_edges(self, rule, extra=()):
        width, _ = PERTURBED_RULES[rule]
        breakpoints = np.concatenate(
            [self.base._breakpoints(), np.asarray(extra, dtype=float)]
        )
        return panel_edges(breakpoints, width * self.h)

    def sign_changes(self, rule=0):
        """Roots of ``s p(s) - q(s)`` in (0, 1): the kinks of the CE integrand.

        For the built-in problems (:func:`_truth_key`) a copy of the roots found once
        with the truth; otherwise computed on each call.
        """
        if _truth_key(self) is not None:
            return self._truth.sign_changes[rule].copy()
        return self._find_sign_changes(rule)

    def _find_sign_changes(self, rule):
        _, order = PERTURBED_RULES[rule]
        edges = self._outer_edges(rule)
        grid = np.unique(
            np.concatenate([edges, gauss_legendre_panels(edges, order)[0]])
        )
        values = self.gap(grid, rule)
        roots = list(grid[1:-1][values[1:-1] == 0.0])

        def gap_at(t):
            return self.gap(t, rule)[0]

        for i in np.flatnonzero(values[:-1] * values[1:] < 0):
            a, b = grid[i], grid[i + 1]
            fa, fb = gap_at(a), gap_at(b)
            if fa * fb < 0:
                roots.append(optimize.brentq(gap_at, a, b, xtol=1e-15, rtol=1e-15))
            else:
                # A root at rounding level: the blocked and the one-point evaluation of
                # the gap disagree in its last bits; the smaller end is the root.
                roots.append(a if abs(fa) <= abs(fb) else b)
        return np.sort(np.asarray(roots, dtype=float))

    def _ce_by_rule(self, rule, roots):
        """``(int |s p - q|, int p)`` by rule ``rule``, with edges at ``roots``."""
        _, order = PERTURBED_RULES[rule]
        nodes, weights = gauss_legendre_panels(self._outer_edges(rule, roots), order)
        p, q = self._p_q(nodes, rule)
        return float(weights @ np.abs(nodes * p - q)), float(weights @ p)

    def _integrate_truth(self):
        """The CE by both rules of ``PERTURBED_RULES`` and its error estimate."""
        roots = [self._find_sign_changes(rule) for rule in range(len(PERTURBED_RULES))]
        (ce_coarse, mass_coarse), (ce_fine, mass_fine) = (
            self._ce_by_rule(rule, roots[rule]) for rule in range(len(PERTURBED_RULES))
        )
        error = max(
            abs(ce_coarse - ce_fine), abs(mass_coarse - 1.0), abs(mass_fine - 1.0)
        )
        for r in roots:
            r.flags.writeable = False
        return _PerturbedTruth(ce_fine, error, tuple(roots))

    @cached_property
    def _truth(self):
        """The truth of this problem: integrated once per process and definition.

        A problem with a :func:`_truth_key` (a built-in base, immutable fields) shares
        it with every equal definition through a process-wide least-recently-used
        cache, so that repeated generator calls (``make_*(..., h=h)``,
        ``get_problem(name, h)``) integrate it once; any other problem integrates it
        once per instance.
        """
        key = _truth_key(self)
        if key is None:
            return self._integrate_truth()
        with _TRUTH_LOCK:
            truth = _TRUTH_CACHE.get(key)
            if truth is not None:
                _TRUTH_CACHE.move_to_end(key)
                return truth
        truth = self._integrate_truth()
        with _TRUTH_LOCK:
            _TRUTH_CACHE[key] = truth
            while len(_TRUTH_CACHE) > TRUTH_CACHE_SIZE:
                _TRUTH_CACHE.popitem(last=False)
        return truth

    @property
    def _ce_quadrature(self):
        return self._truth.true_ce, self._truth.ce_integration_error

    @property
    def true_ce(self):
        """The calibration error; ``ArithmeticError`` if :attr:`ce_integration_error`
        is not below ``1e-5`` (``MAX_INTEGRATION_ERROR``)."""
        truth = self._truth
        return checked_truth(truth.true_ce, truth.ce_integration_error, self.name)

    @property
    def ce_integration_error(self):
        """Estimated error of :attr:`true_ce` (two refinements, and ``int p = 1``)."""
        return self._truth.ce_integration_error


def perturbed_name(base, h):
    """``"<base>_h=2^-6"`` for powers of two, else ``"<base>_h=0.03"``."""
    exponent = math.log2(h)
    label = f"2^{exponent:g}" if exponent == round(exponent) else f"{h:g}"
    return f"{base.name}_h={label}"
