"""AUROC against the perturbation bandwidth (the synthetic counterpart of Figure 2)."""

import numpy as np
import pandas as pd
from joblib import effective_n_jobs
from sklearn.metrics import roc_auc_score
from sklearn.utils.parallel import Parallel, delayed

from skcalbound import perturb_scores

#: Bandwidths of the AUROC study: 2^-1 ... 2^-10.
BANDWIDTHS = tuple(2.0**-k for k in range(1, 11))


def _aurocs(problem, n_samples, data_seed, perturbations):
    """AUROC of one problem's sample for each ``(h, noise seed)`` of ``perturbations``
    (``h = None``: the unperturbed scores). The sample is drawn from ``data_seed``, so
    every part of a problem's bandwidths sees the same scores and labels."""
    scores, labels = problem.sample(int(n_samples), np.random.default_rng(data_seed))
    out = []
    for h, noise in perturbations:
        seen = (
            scores
            if h is None
            else perturb_scores(scores, h, random_state=int(noise.generate_state(1)[0]))
        )
        out.append(roc_auc_score(labels, seen))
    return out


def auroc_vs_h(
    problems, bandwidths=BANDWIDTHS, n_samples=1_000_000, *, random_state=0, n_jobs=None
):
    """AUROC of the perturbed scores for each ``h``, next to the unperturbed AUROC.

    For each problem one sample ``(s, y)`` is drawn; every bandwidth perturbs the same
    scores with :func:`skcalbound.perturb_scores` (fresh noise per ``h``), so the
    differences are those of the perturbation. The standard error of each AUROC is
    about ``0.5 / sqrt(n_samples)``. With ``n_jobs``, each problem's bandwidths are
    cut into ``n_jobs`` parts run in parallel (each part draws the problem's sample
    again from its seed): the same numbers as one by one.

    Returns
    -------
    DataFrame
        ``problem, h, log2_h, auroc, auroc_unperturbed, auroc_loss``.
    """
    parts = max(1, effective_n_jobs(n_jobs))
    tasks = []
    for index, problem in enumerate(problems):
        seed = np.random.SeedSequence(int(random_state), spawn_key=(index,))
        data_seed, noise_seed = seed.spawn(2)
        jobs = [(None, None), *zip(bandwidths, noise_seed.spawn(len(bandwidths)))]
        for part in np.array_split(np.arange(len(jobs)), min(parts, len(jobs))):
            tasks.append((index, problem, data_seed, [jobs[k] for k in part]))
    values = Parallel(n_jobs=n_jobs)(
        delayed(_aurocs)(problem, n_samples, data_seed, perturbations)
        for _, problem, data_seed, perturbations in tasks
    )
    aurocs = {}
    for (index, _, _, _), part in zip(tasks, values):
        aurocs.setdefault(index, []).extend(part)
    rows = []
    for index, problem in enumerate(problems):
        base, *perturbed = aurocs[index]
        for h, auroc in zip(bandwidths, perturbed):
            rows.append(
                {
                    "problem": problem.name,
                    "h": h,
                    "log2_h": np.log2(h),
                    "auroc": auroc,
                    "auroc_unperturbed": base,
                    "auroc_loss": base - auroc,
                }
            )
    return pd.DataFrame(rows)


def plot_auroc(table, *, ax=None):
    """AUROC loss against ``log2 h``, one line per problem; ``h = 2^-6`` marked."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 3.8), constrained_layout=True)
    for problem, group in table.groupby("problem", sort=False):
        ax.plot(
            group["log2_h"],
            group["auroc_loss"],
            marker="o",
            ms=3,
            label=f"{problem} (AUROC {group['auroc_unperturbed'].iloc[0]:.3f})",
        )
    ax.axvline(-6, color="0.5", ls=":", lw=1)
    ax.axhline(0, color="0.5", lw=0.8)
    ax.set(
        xlabel="log2 h",
        ylabel="AUROC(unperturbed) - AUROC(perturbed)",
        title="AUROC cost of the sech perturbation",
    )
    ax.legend(fontsize="small")
    return ax
