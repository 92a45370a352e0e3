"""Helpers of the reference's ``superdex.physics.utils`` that rigid-body scripts call (``scene_helpers``)."""

from . import scene_helpers  # noqa: F401
