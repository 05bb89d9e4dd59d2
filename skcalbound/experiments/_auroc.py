"""AUROC against the perturbation bandwidth (the synthetic counterpart of Figure 2)."""

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score

from skcalbound import perturb_scores

#: Bandwidths of the AUROC study: 2^-1 ... 2^-10.
BANDWIDTHS = tuple(2.0**-k for k in range(1, 11))


def auroc_vs_h(problems, bandwidths=BANDWIDTHS, n_samples=1_000_000, *, random_state=0):
    """AUROC of the perturbed scores for each ``h``, next to the unperturbed AUROC.

    For each problem one sample ``(s, y)`` is drawn; every bandwidth perturbs the same
    scores with :func:`skcalbound.perturb_scores` (fresh noise per ``h``), so the
    differences are those of the perturbation. The standard error of each AUROC is
    about ``0.5 / sqrt(n_samples)``.

    Returns
    -------
    DataFrame
        ``problem, h, log2_h, auroc, auroc_unperturbed, auroc_loss``.
    """
    rows = []
    for index, problem in enumerate(problems):
        seed = np.random.SeedSequence(int(random_state), spawn_key=(index,))
        data_seed, noise_seed = seed.spawn(2)
        scores, labels = problem.sample(int(n_samples), np.random.default_rng(data_seed))
        base = roc_auc_score(labels, scores)
        for h, noise in zip(bandwidths, noise_seed.spawn(len(bandwidths))):
            perturbed = perturb_scores(scores, h, random_state=int(noise.generate_state(1)[0]))
            auroc = roc_auc_score(labels, perturbed)
            rows.append({"problem": problem.name, "h": h, "log2_h": np.log2(h),
                         "auroc": auroc, "auroc_unperturbed": base,
                         "auroc_loss": base - auroc})
    return pd.DataFrame(rows)


def plot_auroc(table, *, ax=None):
    """AUROC loss against ``log2 h``, one line per problem; ``h = 2^-6`` marked."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 3.8), constrained_layout=True)
    for problem, group in table.groupby("problem", sort=False):
        ax.plot(group["log2_h"], group["auroc_loss"], marker="o", ms=3,
                label=f"{problem} (AUROC {group['auroc_unperturbed'].iloc[0]:.3f})")
    ax.axvline(-6, color="0.5", ls=":", lw=1)
    ax.axhline(0, color="0.5", lw=0.8)
    ax.set(xlabel="log2 h", ylabel="AUROC(unperturbed) - AUROC(perturbed)",
           title="AUROC cost of the sech perturbation")
    ax.legend(fontsize="small")
    return ax
