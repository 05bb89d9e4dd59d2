"""Surrogate calibration functions fitted on training scores and labels only."""
