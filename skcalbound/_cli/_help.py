"""The help texts of ``skcalbound`` and ``skcalbound verify`` (``--help``)."""

DESCRIPTION = """\
Certified interval [lower, upper] for the calibration error CE = E|s - E[y|s]| of a
binary classifier, from a file with one row per example: the classifier's predicted
probability of the positive class (column --scores) and the true label (column
--labels; two distinct values: 0/1, -1/1 or booleans, where 1 or True is the positive
class, or any two labels with --pos-label naming the positive one).

Each bound's interval holds (both ends at once) with probability at least
--confidence-level under its assumption on the calibration function E[y|s]:
  bound      assumption on E[y|s]                 for
  monotone   non-decreasing in s                  raw scores (the default)
  tv         total variation <= V (--V, 1)        raw scores, E[y|s] not monotone
  nw         bounded derivatives (--h, or --b1    perturbed scores (the tightest)
             and --b2)
  lipschitz  Lipschitz (--h or --L)               perturbed scores (the paper's
                                                  baseline)
Default: monotone, plus nw with --h (or --b1/--b2) and lipschitz with --L (tv
instead of monotone with --guarantee paper). monotone is a certified band
L(s) <= E[y|s] <= U(s) for all scores at once (no folds, no constant to choose). A
monotone E[y|s] is an assumption about the model: when the band crosses (L > U
somewhere) the data reject it and the row warns, but not every non-monotone E[y|s]
makes it cross; if E[y|s] may not be monotone, choose tv before looking at the
data. nw's bounded derivatives hold by construction when the scores were perturbed
with the sech kernel of bandwidth h (skcalbound.perturb_scores or
SechPerturbedClassifier): pass that --h (e.g. --h 2^-6). h states how the scores
were produced; it is not a knob to tune.
The 15-bin ECE is printed next to them for comparison; it is a heuristic, not a bound.
Each interval holds on its own: reporting the smallest of several intervals computed
on the same file is not certified at --confidence-level (compute each at
1 - (1 - P)/k for k bounds to choose among them; the table says so).
--guarantee paper computes the paper's published forms instead (to compare with its
numbers); the nw and lipschitz ones then hold in expectation over the training
labels only, not with probability --confidence-level.

Gate for pipelines: with --max-ce TAU, the command checks that every computed bound
(each method of --bound) has its upper bound strictly below TAU; if so, CE < TAU
holds with probability at least --confidence-level (under each bound's assumption),
and the exit status is 0; otherwise it is 1. A one-line verdict starting with PASS or
FAIL is printed last (on stderr with --json, where the JSON also has a "gate" entry).
To gate on one bound only, compute only that one (--bound nw). The binned ECE is
never gated; a monotone band that crosses never passes.
"""

EPILOG = """\
examples:
  skcalbound predictions.csv
  skcalbound scores.parquet --scores prob --labels label --bound tv nw --h 2^-6
  skcalbound churn.csv --labels churned --pos-label yes --h '2**-6'
  skcalbound predictions.csv --json --plot reliability.png
  skcalbound scores.csv --bound nw --h 0.015625 --max-ce 0.05 || exit 1
  skcalbound scores.csv --json > record.json && skcalbound verify record.json scores.csv

The --json output has each bound's audit record ("certificates": data fingerprint,
parameters, numbers, by bound). skcalbound verify RECORD.json DATA checks that DATA are
the data certified and, for a record made with an int --random-state, refits each bound
and compares the whole certificate; a record it cannot refit exits 3 (fingerprint
checked, bound not recomputed). See skcalbound verify --help; a data file named verify
is given as ./verify.

Exit status: 0 on success (with --max-ce: every upper bound is below TAU); 1 with
--max-ce when some upper bound is not below TAU; 2 for a bad option, file, column or
value."""

VERIFY_DESCRIPTION = """\
Check an audit record against a data file. First, that the file holds the data
certified: the same number of rows, the same SHA-256 fingerprint of the scores and 0/1
labels (read as the main command reads them, in file order: the same rows in another
order do not match) and the same number of positives. Then, when the record's params
can repeat its numbers (an int random_state and an int or default cv, read from the
params, never from the record's "reproducible" flag), refit its estimator with them
and compare the whole certificate with the record: method, guarantee, confidence
level, assumption as given and as used, n, folds, params, bound, lower_bound, estimate
and terms, numbers to a relative 1e-12 (a refit repeats them to the bit on one
machine; 1e-12 leaves room for another machine's rounding only). Not compared: the
creation time, the source, the library version (named when numbers differ) and the
labels' names (the positive class enters through the fingerprint).

A record that cannot be refit (random_state=None, a RandomState instance, a splitter
as cv) is checked as far as it can be: its entries against its params, its terms
(non-negative, adding up to the bound, min(sum, 1)), its lower bound against them, and
its assumption as used and every entry that does not depend on the folds against a
fit with stand-in folds. It is never reported OK: exit status 3 (PARTIAL: fingerprint
matches, bound not recomputed).

RECORD is the JSON output of skcalbound FILE --json or one bare certificate (an
estimator's certificate_ written with json.dump). In the JSON output every certificate
in its "certificates" is checked, and then the report built on them: every bound's
row in "results" must have its certificate and say what it says (bound, lower_bound,
estimate, terms, level, certified; from the refit when there is one), and the binned
ECE, n_samples, positive_label, the note and the --max-ce gate are recomputed from the
data and those rows (the rows' warnings are not compared). A difference is a FAIL.
Records written by the command remember the file's columns and --pos-label, so
skcalbound verify RECORD DATA needs no options; the options below override them (for
a bare certificate the defaults are y_prob, y_true and the record's pos_label)."""

VERIFY_EPILOG = """\
examples:
  skcalbound scores.csv --json > record.json
  skcalbound verify record.json scores.csv
  skcalbound verify certificate.json holdout.parquet --scores prob --labels label

Exit status: 0 when every certificate was recomputed and agrees with the record (one
line starting with OK); 1 when the data differ from the data certified, a recomputed
entry differs from the record, the record contradicts itself, or the report disagrees
with its certificates (a line starting with FAIL names it); 2 for a bad record, file
or option; 3 (PARTIAL) when the data match (fingerprint matches) but some bound could
not be recomputed and nothing failed (one line starting with PARTIAL says what was
checked and why)."""
