"""``CalibrationBoundDisplay``: the class and its ``plot`` (``_reliability``), the
artists it draws (``_artists``) and the constructors that fit a bound first
(``_constructors``). See ``docs/internals/display.rst``."""

from ._reliability import CalibrationBoundDisplay

__all__ = ["CalibrationBoundDisplay"]
