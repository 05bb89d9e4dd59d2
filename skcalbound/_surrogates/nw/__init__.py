"""The grid Nadaraya–Watson smoother and its certificate's sums (SPEC 4, 10-12)."""

from ._adaptive import AdaptiveStatistics
from ._model import NWGrid
from ._sums import SplitStatistics

__all__ = ["AdaptiveStatistics", "NWGrid", "SplitStatistics"]
