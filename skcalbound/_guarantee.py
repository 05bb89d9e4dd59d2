"""The two values of the bounds' ``guarantee`` parameter and what each one changes.

Every module asks :func:`guarantee_of` for a :class:`Guarantee` and reads the field
named for what it needs; none compares the parameter's string. Pure: no imports of
the package, so the math modules may use it too.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Guarantee:
    """One ``guarantee`` mode and what it changes in the bounds (SPEC sections 9-12).

    Attributes
    ----------
    name : str
        The parameter's value, ``'high_probability'`` or ``'paper'``.
    published : bool
        Whether the bounds are the paper's published forms (to reproduce its
        numbers) rather than the certificates at ``confidence_level``; TV's cell
        bound, not in the paper, is refused then. Every other field follows.
    """

    name: str
    published: bool

    @property
    def tv_method(self):
        """What ``TVCalibrationBound(method='auto')`` computes: the paper's
        denoising bound (``'denoise'``) or the cell bound (``'cells'``)."""
        return "denoise" if self.published else "cells"

    @property
    def lemma6(self):
        """The form of Lemma 6's smoothing bound the NW and Lipschitz surrogates
        compute: ``'published'`` (``b1 sum_i w_i |d_i|``) or ``'expanded'`` at the
        query (``b1 |sum_i w_i d_i|``)."""
        return "published" if self.published else "expanded"

    @property
    def corollary2_hoeffding(self):
        """Whether TV keeps Corollary 2's redundant Hoeffding term, the fold's
        ``delta`` then split into four equal shares rather than three."""
        return self.published

    @property
    def b2_constant(self):
        """``c`` in the bound ``b2 = c tanh(1/h)**2 / h**2`` on the second derivative
        of the perturbed calibration function: Corollary 4's 3/2, or the sharp 1/2."""
        return 1.5 if self.published else 0.5

    @property
    def label_suffix(self):
        """What the experiments append to a bound's label in this mode."""
        return " (paper)" if self.published else ""

    def in_expectation_only(self, bound):
        """Whether ``bound`` (a bound class or instance) holds in this mode only in
        expectation over the training labels, not with probability at least
        ``confidence_level``: the published Proposition 2 (its class says
        ``paper_in_expectation``); TV's published Proposition 1 has no such gap."""
        return self.published and bool(getattr(bound, "paper_in_expectation", False))


HIGH_PROBABILITY = Guarantee("high_probability", published=False)
PAPER = Guarantee("paper", published=True)
#: The modes by name, the default first: the ``StrOptions`` of ``guarantee``.
GUARANTEES = {mode.name: mode for mode in (HIGH_PROBABILITY, PAPER)}


def guarantee_of(name):
    """The :class:`Guarantee` named ``name``; a ValueError for any other value."""
    mode = GUARANTEES.get(name) if isinstance(name, str) else None
    if mode is None:
        raise ValueError(
            f"guarantee must be {' or '.join(map(repr, GUARANTEES))}; got {name!r}"
        )
    return mode
