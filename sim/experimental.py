"""``experimental`` namespace of the reference API (digest 2.5, 5.3)."""

from __future__ import annotations

from .contact.restitution import calibrate_normal_viscous_damping_coefficient, effective_coefficient_of_restitution  # noqa: F401


def enable_newton_euler_inertia(actor, enable: bool = True) -> None:
    """Use the experimental Newton-Euler rotational residual for ``actor`` instead of the incremental potential."""
    from .actor import RigidActor

    if not isinstance(actor, RigidActor):
        raise TypeError(f"expected a RigidActor, got {type(actor).__name__}")
    actor._row()
    if actor.is_static():
        raise ValueError(f"enable_newton_euler_inertia: actor {actor.get_name()!r} is static")
    actor._record.newton_euler = bool(enable)
    actor._scene._mark_dirty()


def is_newton_euler_inertia_enabled(actor) -> bool:
    return bool(actor._record.newton_euler)
