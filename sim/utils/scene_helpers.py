"""``superdex.physics.utils.scene_helpers`` equivalents: ``create_ground_plane`` and ``find_actor``.

Same names, arguments, defaults and errors as the released helpers: the ground plane is a static actor named
"StaticPlane" on layer "Environment" with a PLANE collider; ``find_actor`` matches a case-sensitive shell-style
pattern and raises ValueError for no match or several.
"""

from __future__ import annotations

import copy
import fnmatch

from ..contact.colliders import ColliderType
from ..contact.params import ContactParams
from ..shapes import create_plane_shape


def create_ground_plane(scene, normal=None, offset: float = 0.0, contact_params: ContactParams | None = None):
    """A static ground plane ``normal . x = offset`` (default normal +Y) with ``contact_params`` (default
    ContactParams())."""
    if scene is None:
        raise ValueError("There is no scene.")
    if contact_params is not None and not isinstance(contact_params, ContactParams):
        raise TypeError(f"contact_params must be ContactParams or None, got {type(contact_params).__name__}")
    shape = create_plane_shape([0.0, 1.0, 0.0] if normal is None else normal, offset)
    return scene.create_rigid_actor(
        is_static=True,
        layer="Environment",
        name="StaticPlane",
        shape=shape,
        collider_type=ColliderType.PLANE,
        contact=copy.deepcopy(contact_params) if contact_params is not None else ContactParams(),
    )


def find_actor(scene, pattern: str):
    """The one actor whose name matches ``pattern`` (case-sensitive, ``*`` and ``?`` wildcards)."""
    if scene is None:
        raise ValueError("There is no scene.")
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a string, got {pattern!r}")
    found = [a for a in scene.get_actors() if fnmatch.fnmatchcase(a.get_name(), pattern)]
    if len(found) > 1:
        raise ValueError(f'Scene contains multiple actors matching pattern "{pattern}".')
    if not found:
        raise ValueError(f'No actor found matching pattern "{pattern}".')
    return found[0]
