import numpy as np
import pandas as pd

from skcalbound import perturb_scores

rng = np.random.default_rng(0)
n = 200_000
s0 = rng.beta(2, 5, size=n)
device = rng.choice(["mobile", "desktop", "tablet"], size=n, p=[0.6, 0.3, 0.1])
y = rng.uniform(size=n) < np.where(device == "tablet", s0**0.7, s0)
pd.DataFrame(
    {
        "y_prob": perturb_scores(s0, 2**-6, random_state=0),
        "y_true": y.astype(int),
        "device": device,
    }
).to_csv("seg.csv", index=False)
