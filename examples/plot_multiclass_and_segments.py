"""
Multiclass models and segments
==============================

Two questions beyond one binary number, on a real scikit-learn model:

* is a **multiclass** model's confidence right (top-label), and is each one-vs-rest
  probability right (class-wise)?
* is a binary model calibrated **on every segment** of the data, not only on
  average?

Both are certified with the binary bounds:
:class:`~skcalbound.MulticlassCalibrationBound` reduces the multiclass problem to binary
ones, and :func:`~skcalbound.bounds_by_group` issues one certificate per segment, all
holding at once by the union bound.

Scores are perturbed with the sech kernel before the NW bound, so that its
smoothness assumption holds by construction; the certificate is then about the
perturbed confidence. ``load_digits`` (1,797 images) is too small for a certificate
that says anything (see the user guide's table of slack by sample size), so the
data are generated: 5 classes, 120,000 samples.
"""

# %%
# A multiclass model, its top-label and class-wise certificates
# --------------------------------------------------------------
import pandas as pd
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

from skcalbound import (
    MulticlassCalibrationBound,
    NWCalibrationBound,
    TVCalibrationBound,
    bounds_by_group,
    perturb_scores,
)

X, y = make_classification(
    n_samples=120_000,
    n_features=20,
    n_informative=8,
    n_classes=5,
    n_clusters_per_class=1,
    flip_y=0.05,
    random_state=0,
)
X_fit, X_eval, y_fit, y_eval = train_test_split(
    X, y, train_size=0.25, random_state=0
)
model = LogisticRegression(max_iter=1000).fit(X_fit, y_fit)
P = model.predict_proba(X_eval)

# TV on the raw probabilities: assumes each reduced calibration
# function has total variation at most 1 (true when it is monotone).
tv = TVCalibrationBound(random_state=0)
top = MulticlassCalibrationBound(tv).fit(P, y_eval)
print(
    "TV, top-label CE in "
    f"[{top.lower_bound_:.3f}, {top.bound_:.3f}]"
)
est = MulticlassCalibrationBound(tv, strategy="classwise")
est.fit(P, y_eval)
print(
    "TV, average class-wise CE in "
    f"[{est.lower_bound_:.3f}, {est.bound_:.3f}], "
    "worst class in "
    f"[{est.worst_lower_bound_:.3f}, {est.worst_bound_:.3f}]"
)
print(est.per_class_.round(4).to_string(index=False))

# %%
# The certified NW recipe for a multiclass model: perturb the *reduced* score (here
# the confidence) with the sech kernel, and bound the perturbed confidence.
h = 2.0**-6
confidence = perturb_scores(P.max(axis=1), h, random_state=0)
correct = model.classes_[P.argmax(axis=1)] == y_eval
nw = NWCalibrationBound(h=h, random_state=0).fit(
    confidence, correct
)
print(
    f"NW, top-label (perturbed confidence, h=2^-6): "
    f"CE in [{nw.lower_bound_:.3f}, {nw.bound_:.3f}]"
)

# %%
# Certificates per segment
# ------------------------
# The same perturbed confidence, by segment: here the quartiles of the first feature,
# a stand-in for country or device. Each interval holds at level 1 - 0.05/G, so all
# of them hold at once with probability 0.95.
segment = pd.qcut(X_eval[:, 0], 4, labels=["Q1", "Q2", "Q3", "Q4"])
table = bounds_by_group(
    correct,
    confidence,
    groups=segment,
    method="nw",
    h=h,
    random_state=0,
    include_overall=True,
)
columns = ["group", "n", "lower_bound", "upper_bound", "estimate"]
print(table[columns].round(4).to_string(index=False))
print(table.attrs["note"])
