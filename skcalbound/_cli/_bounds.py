"""Which bounds the command computes, and their estimators built from the options.

The classes come from ``skcalbound._registry``; what the command needs to know of
a bound (its assumption parameters, whether it takes ``guarantee`` or cross-fits,
whether it runs on chunks) is asked of the class or the estimator.
"""

from .._registry import BY_NAME
from ._errors import CLIError
from ._parser import GUARANTEES

# The default bound: the first of these that has --guarantee's form (the band has
# no paper form); then one bound per assumption option given (see --help).
DEFAULT_BOUNDS = ("monotone", "tv")
ADDED_BY_OPTIONS = {"nw": ("h", "b1", "b2"), "lipschitz": ("L",)}


def _takes_guarantee(cls, guarantee):
    """Whether ``cls`` computes the form ``guarantee`` (a class without the
    parameter computes the default one only)."""
    return guarantee == GUARANTEES[0] or "guarantee" in cls().get_params()


def bound_names(args):
    """The bounds to compute: --bound, or the default bound plus those the
    assumption options name."""
    if args.bound is not None:
        return list(dict.fromkeys(args.bound))
    default = next(
        name
        for name in DEFAULT_BOUNDS
        if _takes_guarantee(BY_NAME[name], args.guarantee)
    )
    added = [
        name
        for name, options in ADDED_BY_OPTIONS.items()
        if any(getattr(args, option) is not None for option in options)
    ]
    return [default, *added]


def estimators(args, names=None):
    """The estimator of each bound name (default: ``bound_names(args)``), its
    assumption from the options of the parameters it states it with
    (``assumption_params``), and the common options it takes. A bound that does not
    cross-fit by default (``cv=None``: one band on all rows) keeps its ``cv``; one
    without a ``guarantee`` parameter refuses another guarantee than the default."""
    common = dict(
        confidence_level=args.confidence_level,
        guarantee=args.guarantee,
        noise=args.noise,
        cv=args.cv,
        aggregate=args.aggregate,
        random_state=args.random_state,
    )
    found = {}
    names = bound_names(args) if names is None else names
    _check_used(args, names)
    for name in names:
        cls = BY_NAME[name]
        if not _takes_guarantee(cls, args.guarantee):
            raise CLIError(
                f"--guarantee {args.guarantee}: {name} has no paper form (the paper "
                "has no calibration band); compute it without --guarantee, or use "
                "--bound tv nw lipschitz"
            )
        defaults = cls().get_params()
        skip = {"cv", "aggregate"} if defaults.get("cv", 0) is None else set()
        if args.noise is None:  # each bound's own default
            skip.add("noise")
        params = {k: v for k, v in common.items() if k in defaults and k not in skip}
        found[name] = cls(
            **{p: getattr(args, p) for p in cls.assumption_params}, **params
        )
    return found


# The options that state an assumption or a form, with None as their default (not
# given); ``--V`` has a default, 1, and is not checked.
_OPTIONAL = ("h", "b1", "b2", "L", "noise")


def _check_used(args, names):
    """CLIError for an option given that none of the bounds ``names`` reads
    (``--bound tv --h 2^-6``: the perturbation is an assumption of nw and
    lipschitz, and likely the reason the user ran the command)."""
    read = {p for name in names for p in BY_NAME[name]._get_param_names()}
    for option in _OPTIONAL:
        if getattr(args, option) is not None and option not in read:
            users = [
                n for n, cls in BY_NAME.items() if option in cls._get_param_names()
            ]
            # The bound the option adds without --bound (nw for --noise too).
            added = [n for n, given in ADDED_BY_OPTIONS.items() if option in given]
            raise CLIError(
                f"--{option} is not used by {', '.join(names)}: it is read by "
                f"{' and '.join(users)}; add --bound {(added or ['nw'])[0]}, or drop "
                f"--{option}"
            )


def mergeable(est):
    """Whether a bound runs on chunks (its statistics merge by addition), not on
    the sorted sample."""
    try:
        return est._method().mergeable
    except (ValueError, TypeError):  # a bad option: the fit in memory says it
        return False
