"""The README quickstart (tests/test_docs.py checks that README shows this output)."""

import numpy as np

from skcalbound import (
    MonotoneCalibrationBound,
    NWCalibrationBound,
    TVCalibrationBound,
    binned_ece,
    calibration_test,
    perturb_scores,
)

rng = np.random.default_rng(0)
s = rng.uniform(size=200_000)  # scores of a binary classifier
y = rng.uniform(size=200_000) < s**2  # E[y|s] = s^2: true CE = 1/6
# Raw scores, assuming E[y|s] is non-decreasing in s: a certified band.
band = MonotoneCalibrationBound(random_state=0).fit(s, y)
lo, up = band.lower_bound_, band.bound_
print(f"certified: {lo:.3f} <= CE <= {up:.3f}  (true CE = {1 / 6:.3f})")
ece = binned_ece(y, s)
print(f"estimate {band.estimate_:.3f}, 15-bin ECE {ece:.3f}")
low, high = band.predict_interval([0.5])  # E[y | s = 0.5] = 0.25
print(f"E[y|s=0.5] in [{low[0]:.3f}, {high[0]:.3f}], for all s at once")

# Without monotonicity: bounded variation, TV(E[y|s]) <= V.
tv = TVCalibrationBound(V=1.0, random_state=0).fit(s, y)
print(f"TV, V=1: {tv.lower_bound_:.3f} <= CE <= {tv.bound_:.3f}")

# Any classifier: perturb its scores; the NW bound certifies the perturbed classifier.
sp = perturb_scores(s, h=2**-6, random_state=0)
nw = NWCalibrationBound(h=2**-6, random_state=0).fit(sp, y)
print(
    f"perturbed (h=2^-6): {nw.lower_bound_:.3f} <= CE <= "
    f"{nw.bound_:.3f}, estimate {nw.estimate_:.3f}"
)

# A test with a finite-sample level: is the perturbed classifier off by more than 0.1?
test = calibration_test(
    y,
    sp,
    h=2**-6,
    tolerance=0.1,
    alternative="greater",
    random_state=0,
)
print(f"CE > 0.1 certified: {test.reject}, p-value {test.pvalue:.1e}")

# A scikit-learn classifier: wrap it, and the NW bound certifies the wrapped one.
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

from skcalbound import SechPerturbedClassifier

X, y = make_classification(n_samples=100_000, flip_y=0.1, random_state=0)
X_fit, y_fit = X[:50_000], y[:50_000]
X_test, y_test = X[50_000:], y[50_000:]
clf = SechPerturbedClassifier(LogisticRegression(), h=2**-6, random_state=0)
clf.fit(X_fit, y_fit)
proba = clf.predict_proba(X_test)  # perturbed, fresh noise per call
nw = NWCalibrationBound(h=clf.h, random_state=0).fit(proba, y_test)
print(
    f"LogisticRegression, perturbed: {nw.lower_bound_:.3f} <= CE <= "
    f"{nw.bound_:.3f}, 15-bin ECE {binned_ece(y_test, proba):.3f}"
)
