"""
=============================================
Reliability curves with a certified bound
=============================================

:class:`~skcalbound.CalibrationBoundDisplay` draws the surrogate calibration function
that a bound estimator fits, the diagonal of perfect calibration, a histogram of the
scores (grey) and, in the legend under the axes, the certified interval for the
calibration error.

We train two scikit-learn classifiers on generated data and look at their
calibration on held-out data twice: on the raw probabilities with the TV bound
(which assumes only a monotone calibration function), and on probabilities perturbed
with the sech kernel with the NW bound (which assumes nothing about the classifier).
"""

# %%
# Two classifiers and held-out data
# ---------------------------------
# Gaussian naive Bayes is typically over-confident; logistic regression is close to
# calibrated. The bound is computed on data the classifier has not seen.
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import GaussianNB

X, y = make_classification(
    n_samples=250_000,
    n_features=20,
    n_informative=6,
    n_redundant=4,
    flip_y=0.05,
    class_sep=0.8,
    random_state=0,
)
X_train, X_test, y_train, y_test = train_test_split(
    X, y, train_size=50_000, random_state=0
)
classifiers = {
    "GaussianNB": GaussianNB().fit(X_train, y_train),
    "LogisticRegression": LogisticRegression(max_iter=1000).fit(
        X_train, y_train
    ),
}

# %%
# Raw probabilities: the TV bound
# -------------------------------
# ``from_estimator`` fits the bound on ``predict_proba(X_test)[:, 1]``, here the
# paper's denoising bound (``method="denoise"``; TV's default cell bound draws its
# block means, unhatched, and :class:`~skcalbound.MonotoneCalibrationBound` gives
# a certified band, see
# :ref:`sphx_glr_auto_examples_plot_monotone_band.py`). The curve
# is the TV-denoised surrogate the bound is computed from, a step function, and
# **not a recalibration map**: the denoising pulls it towards a constant, so it is
# flat below its first jump and above its last even for perfectly calibrated
# scores. Those two ranges are hatched; read them as the denoising's flattening,
# not as the model's over-confidence. The TV bound has no pointwise band (its
# denoising term bounds an average error over the scores, not the error at any one
# score), so only the bound appears in the legend.
import matplotlib.pyplot as plt

from skcalbound import CalibrationBoundDisplay, binned_ece

fig, axes = plt.subplots(
    1, 2, figsize=(12, 7), sharey=True, layout="constrained"
)
for ax, (name, clf) in zip(axes, classifiers.items()):
    disp = CalibrationBoundDisplay.from_estimator(
        clf,
        X_test,
        y_test,
        bound="tv",
        bound_params={"method": "denoise", "random_state": 0},
        ax=ax,
    )
    p = clf.predict_proba(X_test)[:, 1]
    ece = binned_ece(y_test, p)
    ax.set_title(f"{name}: 15-bin ECE {ece:.3f} (not a bound)")
    print(
        f"{name:>18}: TV bound {disp.bound:.3f}, "
        f"estimate {disp.estimator_.estimate_:.3f}"
    )

# %%
# Perturbed probabilities: the NW bound and its band
# --------------------------------------------------
# Perturbing each probability with the sech kernel of bandwidth ``h`` makes the
# calibration function of the *perturbed* classifier smooth with known derivative
# bounds, whatever the classifier. The NW bound then certifies the perturbed
# classifier, here with less slack than TV.
#
# The shaded band is :math:`\hat\eta \pm \tilde g`, the kernel smoother's error
# bound at each score (Lemma 6 of the paper): its bias, from the derivative bounds
# that ``h`` implies, plus its label noise, a bound on the *expected* error of the
# surrogate at that score. It is not a confidence band: narrow where the scores
# are dense, wide where the smoother has few points. Its average over the scores is
# the ``smoothing_mean`` term of the bound's worst-case form (``noise="worst_case"``).
from sklearn.metrics import roc_auc_score

from skcalbound import perturb_scores

h = 2**-6
fig, axes = plt.subplots(
    1, 2, figsize=(12, 7), sharey=True, layout="constrained"
)
for ax, (name, clf) in zip(axes, classifiers.items()):
    p = clf.predict_proba(X_test)[:, 1]
    s = perturb_scores(p, h, random_state=0)
    disp = CalibrationBoundDisplay.from_predictions(
        y_test,
        s,
        bound="nw",
        bound_params={"h": h, "random_state": 0},
        ax=ax,
        name=name,
    )
    before, after = (
        roc_auc_score(y_test, p),
        roc_auc_score(y_test, s),
    )
    ax.set_title(
        f"perturbed, h=2^-6: AUROC {before:.4f} -> {after:.4f}"
    )
    print(f"{name}: NW bound {disp.bound:.3f}, the sum of")
    for term, value in disp.estimator_.terms_.items():
        print(f"    {term:<20} {value:.4f}")

# %%
# An already fitted bound
# -----------------------
# ``from_bound`` draws a bound estimator you fitted yourself. Here the Lipschitz
# bucketing baseline next to the NW bound on the same perturbed scores of the
# logistic regression: the bucket means are a noisier surrogate than the kernel
# smoother, and the Lipschitz interval is wider. (Several displays can also share
# one axes; side by side, their curves and bands do not hide one another.)
from skcalbound import LipschitzBucketBound, NWCalibrationBound

s = perturb_scores(
    classifiers["LogisticRegression"].predict_proba(X_test)[:, 1],
    h,
    random_state=0,
)
nw = NWCalibrationBound(h=h, random_state=0).fit(s, y_test)
lip = LipschitzBucketBound(h=h, random_state=0).fit(s, y_test)
fig, axes = plt.subplots(
    1, 2, figsize=(12, 7), sharey=True, layout="constrained"
)
CalibrationBoundDisplay.from_bound(
    lip, s, ax=axes[0], name="LogisticRegression"
)
CalibrationBoundDisplay.from_bound(
    nw, s, ax=axes[1], name="LogisticRegression"
)
print(
    f"Lipschitz bucketing bound {lip.bound_:.3f}, "
    f"NW bound {nw.bound_:.3f}"
)
plt.show()
