"""Lipschitz bucketing on mergeable per-cell statistics.

See ``docs/internals/buckets.rst``.
"""
