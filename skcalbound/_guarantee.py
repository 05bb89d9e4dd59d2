"""The two values of the bounds' ``guarantee`` parameter and what each one changes.

Every module asks :func:`guarantee_of` for a :class:`Guarantee` and reads the field
named for what it needs; none compares the parameter's string. Pure: no imports of
the package, so the math modules may use it too.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Guarantee:
    """What one ``guarantee`` mode changes in the bounds (SPEC sections 9-12).

    Attributes
    ----------
    name : str
        The parameter's value, ``'high_probability'`` or ``'paper'``.
    published : bool
        Whether the bounds are the paper's published forms (to reproduce its
        numbers) rather than the certificates at ``confidence_level``; TV's cell
        bound, not in the paper, is refused then.
    tv_method : {'cells', 'denoise'}
        What ``TVCalibrationBound(method='auto')`` computes: the cell bound, or the
        paper's denoising bound.
    lemma6 : {'expanded', 'published'}
        The form of Lemma 6's smoothing bound the NW and Lipschitz surrogates
        compute: expanded at the query (``b1 |sum_i w_i d_i|``) or as published
        (``b1 sum_i w_i |d_i|``).
    corollary2_hoeffding : bool
        Whether TV keeps Corollary 2's redundant Hoeffding term, the fold's
        ``delta`` then split into four equal shares rather than three.
    b2_constant : float
        ``c`` in the bound ``b2 = c tanh(1/h)**2 / h**2`` on the perturbed
        calibration function's second derivative: the sharp 1/2, or Corollary 4's 3/2.
    label_suffix : str
        What the experiments append to a bound's label in this mode.
    """

    name: str
    published: bool
    tv_method: str
    lemma6: str
    corollary2_hoeffding: bool
    b2_constant: float
    label_suffix: str

    def in_expectation_only(self, bound):
        """Whether ``bound`` (a bound class or instance) holds in this mode only in
        expectation over the training labels, not with probability at least
        ``confidence_level``: the published Proposition 2 (its class says
        ``paper_in_expectation``); TV's published Proposition 1 has no such gap."""
        return self.published and bool(getattr(bound, "paper_in_expectation", False))


HIGH_PROBABILITY = Guarantee(
    name="high_probability",
    published=False,
    tv_method="cells",
    lemma6="expanded",
    corollary2_hoeffding=False,
    b2_constant=0.5,
    label_suffix="",
)
PAPER = Guarantee(
    name="paper",
    published=True,
    tv_method="denoise",
    lemma6="published",
    corollary2_hoeffding=True,
    b2_constant=1.5,
    label_suffix=" (paper)",
)
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
