"""Peak memory of the paths that read a Parquet file larger than they may hold.

Run with ``python benchmarks/bench_cli_memory.py [--rows 2e7 4e7] [--chunksize N]
[--dir /tmp]``.

For each ``--rows``, writes a Parquet file of that many rows in ``--dir`` (row groups
of 10**6: beta scores perturbed with ``h = 2**-6``, labels drawn from the unperturbed
scores; removed afterwards), then runs each path in a fresh subprocess and prints a
table of its wall time, its peak resident memory and its NW bound:

- ``command line``: ``skcalbound FILE --bound nw --h 2**-6 --json``, without
  ``--chunksize`` (it streams by default; with ``--chunksize N``, also a run with it);
- ``dask``: ``df = dd.read_parquet(FILE); nw_bound(df["y_true"], df["y_prob"], h=2**-6,
  random_state=0)``, the way a data engineer writes it;
- ``in memory``: the two columns read whole with pyarrow and
  ``NWCalibrationBound(h=2**-6, random_state=0).fit``, the reference the others must
  equal (``diff``: the relative difference of the bound from it, or, when larger,
  the absolute difference of the lower bound, which the command line also prints).

Each subprocess reports its own peak, ``getrusage(RUSAGE_SELF).ru_maxrss`` (Linux:
KiB), read when its work is done (imports included). The file holds 9 bytes a row
(float64 scores, int8 labels); the target for the streaming paths is a peak under
700 MB whatever the number of rows.
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

GROUP = 10**6
TARGET_MB = 700

# Each script prints one JSON line on stdout, then exits; the peak is its own.
_PEAK = (
    "import resource, sys\n"
    "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
)
_CLI = (
    "import sys\n"
    "from skcalbound._cli import main\n"
    "status = main(sys.argv[1:])\n"
    "assert status == 0, status\n"
)
_DASK = (
    "import json, sys\n"
    "import dask.dataframe as dd\n"
    "from skcalbound import nw_bound\n"
    "df = dd.read_parquet(sys.argv[1])\n"
    "bound = nw_bound(df['y_true'], df['y_prob'], h=2**-6, random_state=0)\n"
    "print(json.dumps({'bound': bound}))\n"
)
_MEMORY = (
    "import json, sys\n"
    "import pyarrow.parquet as pq\n"
    "from skcalbound import NWCalibrationBound\n"
    "table = pq.read_table(sys.argv[1], columns=['y_prob', 'y_true'])\n"
    "s, y = (table.column(c).to_numpy() for c in ('y_prob', 'y_true'))\n"
    "del table\n"
    "est = NWCalibrationBound(h=2**-6, random_state=0).fit(s, y)\n"
    "print(json.dumps({'bound': est.bound_, 'lower_bound': est.lower_bound_}))\n"
)


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


def measure(script, *argv):
    """``(seconds, peak MB, result dict)`` of ``script`` in a fresh interpreter."""
    start = time.perf_counter()
    run = subprocess.run(
        [sys.executable, "-c", script + _PEAK, *map(str, argv)],
        capture_output=True,
        text=True,
        check=True,
    )
    seconds = time.perf_counter() - start
    peak_mb = int(run.stderr.strip().splitlines()[-1]) / 1024
    result = json.loads(run.stdout)
    if "results" in result:  # the command line's report: its NW row
        result = result["results"][0]
    return seconds, peak_mb, result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, nargs="+", default=[2e7, 4e7])
    parser.add_argument(
        "--chunksize", type=float, default=None, help="also run --chunksize N"
    )
    parser.add_argument("--dir", default=None, help="where to write the files (temp)")
    args = parser.parse_args(argv)
    cli = ["--bound", "nw", "--h", "2**-6", "--json"]
    lines = []
    for rows in map(int, args.rows):
        with tempfile.TemporaryDirectory(dir=args.dir) as folder:
            path = Path(folder) / "scores.parquet"
            start = time.perf_counter()
            write(path, rows)
            print(
                f"{rows:.0e} rows: {path.stat().st_size / 2**20:.0f} MB on disk, "
                f"written in {time.perf_counter() - start:.0f} s",
                flush=True,
            )
            runs = [("command line", _CLI, path, *cli)]
            if args.chunksize is not None:
                chunk = ["--chunksize", int(args.chunksize)]
                runs.append(
                    (f"command line --chunksize {chunk[1]}", _CLI, path, *cli, *chunk)
                )
            runs += [("dask", _DASK, path), ("in memory", _MEMORY, path)]
            measured = {name: measure(script, *argv) for name, script, *argv in runs}
        reference = measured["in memory"][2]
        for name, (seconds, peak_mb, result) in measured.items():
            diff = abs(result["bound"] - reference["bound"]) / reference["bound"]
            if "lower_bound" in result:
                diff = max(diff, abs(result["lower_bound"] - reference["lower_bound"]))
            target = (
                "" if name == "in memory" else ("yes" if peak_mb < TARGET_MB else "NO")
            )
            lines.append(
                f"{rows:>9.0e}  {name:<32} {seconds:>7.1f} {peak_mb:>9.0f}  "
                f"{target:^9} {result['bound']:.12f} {diff:>9.1e}"
            )
    print(
        f"\n{'rows':>9}  {'path':<32} {'time s':>7} {'peak MB':>9}  "
        f"{f'< {TARGET_MB} MB':^9} {'NW bound':<14} {'diff':>9}"
    )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
