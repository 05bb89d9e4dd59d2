"""
Certified calibration for data that does not fit in memory
==========================================================

:class:`~skcalbound.NWCalibrationBound` certifies scores it never holds at once: its
certificate is two passes of per-cell sums, so it reads the data chunk by chunk
(:meth:`~skcalbound.NWCalibrationBound.fit_chunks`) or from Dask, and gives the numbers
of the in-memory fit. Here a miscalibrated classifier's scores are generated chunk by
chunk (a stand-in for Parquet row groups), perturbed with the sech kernel so that the
bound's assumption holds, and certified as the chunks accumulate.
"""

# %%
# Chunks that are never all in memory
# -----------------------------------
# ``chunks(k)`` returns a function that yields the first ``k`` chunks, the same rows
# on every call (the bound reads them twice).
import matplotlib.pyplot as plt
import numpy as np

from skcalbound import (
    NWCalibrationBound,
    TVCalibrationBound,
    perturb_scores,
)

H = 2**-6
SIZE = 100_000


def chunks(k):
    def read():
        for j in range(k):
            rng = np.random.default_rng([1, j])
            p = rng.beta(2, 5, size=SIZE)
            y = (
                rng.uniform(size=SIZE) < p**1.2
            )  # overconfident: true E[y|p] < p
            yield y, perturb_scores(p, H, random_state=j)

    return read


est = NWCalibrationBound(h=H, random_state=0).fit_chunks(chunks(10))
print(
    f"{est.certificate_['n_samples']} scores: CE in "
    f"[{est.lower_bound_:.4f}, {est.bound_:.4f}]"
)

# %%
# The same numbers in memory and on Dask
# --------------------------------------
# The folds are drawn row by row from ``random_state`` and the row index, so the
# chunking does not matter.
import dask.array as da

y = np.concatenate([c[0] for c in chunks(10)()])
s = np.concatenate([c[1] for c in chunks(10)()])
in_memory = NWCalibrationBound(h=H, random_state=0).fit(s, y)
on_dask = NWCalibrationBound(h=H, random_state=0).fit(
    da.from_array(s, chunks=250_000),
    da.from_array(y, chunks=250_000),
)
print(
    f"in memory - chunks: {in_memory.bound_ - est.bound_:.1e}; "
    f"Dask - chunks: {on_dask.bound_ - est.bound_:.1e}"
)

# %%
# TV needs the whole sorted sample, and says so:
try:
    TVCalibrationBound().fit_chunks(chunks(1))
except ValueError as exc:
    print(str(exc).split(";")[0])

# %%
# The interval as the chunks accumulate
# -------------------------------------
counts = [1, 2, 4, 8, 16]
intervals = [
    NWCalibrationBound(h=H, random_state=0).fit_chunks(chunks(k))
    for k in counts
]
n = [k * SIZE for k in counts]
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.fill_between(
    n,
    [e.lower_bound_ for e in intervals],
    [e.bound_ for e in intervals],
    alpha=0.3,
    label="certified interval (95%)",
)
ax.plot(
    n,
    [e.estimate_ for e in intervals],
    marker="o",
    label="estimate",
)
ax.set_xscale("log")
ax.set_xlabel("rows read (in chunks of 100,000)")
ax.set_ylabel("calibration error")
ax.legend(loc="upper right")
fig.tight_layout()
for k, e in zip(counts, intervals):
    interval = f"[{e.lower_bound_:.4f}, {e.bound_:.4f}]"
    print(f"{k * SIZE:>9} rows: {interval}")
