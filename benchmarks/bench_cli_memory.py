"""Peak memory of the command line on a Parquet file larger than it may hold.

Run with ``python benchmarks/bench_cli_memory.py [--rows 1e8] [--chunksize 1e6]``.

Writes a Parquet file of ``--rows`` rows on the fly (row groups of 10**6: beta scores
perturbed with ``h = 2**-6``, labels drawn from the unperturbed scores), then runs
``skcalbound FILE --h 2**-6 --chunksize ROWS --json`` in a subprocess and prints its
wall time, its peak resident memory (``getrusage(RUSAGE_CHILDREN).ru_maxrss``) and
the certified interval. The file alone holds 16 bytes per row (1.6 GB at 10**8 rows,
as float64 scores and int64 labels in memory); the target is a peak under 1.5 GB.
"""

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

GROUP = 10**6


def write(path, rows, seed=0):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from skcalbound import perturb_scores

    schema = pa.schema([("y_prob", pa.float64()), ("y_true", pa.int8())])
    with pq.ParquetWriter(path, schema) as writer:
        for k, start in enumerate(range(0, rows, GROUP)):
            size = min(GROUP, rows - start)
            rng = np.random.default_rng([seed, k])
            p = rng.beta(2, 5, size=size)
            y = (rng.uniform(size=size) < p).astype(np.int8)
            s = perturb_scores(p, 2**-6, random_state=k)
            writer.write_table(pa.table({"y_prob": s, "y_true": y}, schema=schema))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=1e8)
    parser.add_argument("--chunksize", type=float, default=1e6)
    parser.add_argument("--dir", default=None, help="where to write the file (temp)")
    args = parser.parse_args(argv)
    rows, chunksize = int(args.rows), int(args.chunksize)
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        path = Path(folder) / "scores.parquet"
        start = time.perf_counter()
        write(path, rows)
        t_write = time.perf_counter() - start
        entry = "import sys; from skcalbound._cli import main; sys.exit(main())"
        command = [
            sys.executable,
            "-c",
            entry,
            str(path),
            "--h",
            "2**-6",
            "--chunksize",
            str(chunksize),
            "--json",
        ]
        start = time.perf_counter()
        run = subprocess.run(command, capture_output=True, text=True, check=True)
        t_run = time.perf_counter() - start
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        size_mb = path.stat().st_size / 2**20
    nw = json.loads(run.stdout)["results"][0]
    print(
        f"rows {rows:.0e}, file {size_mb:.0f} MB on disk (written in {t_write:.0f} s)"
    )
    print(
        f"skcalbound --h 2**-6 --chunksize {chunksize:.0e}: {t_run:.1f} s, "
        f"peak RSS {peak_mb:.0f} MB (target < 1500 MB: "
        f"{'met' if peak_mb < 1500 else 'NOT met'})"
    )
    print(f"certified CE in [{nw['lower_bound']:.5f}, {nw['bound']:.5f}]")


if __name__ == "__main__":
    main()
