"""``experimental`` namespace of the reference API (digest 2.5, 5.3; issue 18).

Island sleeping: `SleepParams` and ``get/set_sleep_params`` hold and validate the reference's parameters (same
defaults and rules), but no island sleeps here: a step solves every world whole. Why that waits for the numba
port, with measurements: docs/api_parity.md. Newton-Euler terms (``create_newton_euler_terms``) are for
articulated robots, which this engine does not have: as the released engine does for a rigid actor, creating
them raises `Error`.
"""

from __future__ import annotations

import copy
import math
import warnings
from dataclasses import dataclass

from . import actor_queries
from .actor import RigidActor
from .contact import restitution
from .geometry_types import Error, InvalidArgumentError
from .params import LineSearchType, QueryType
from .scene import Scene


def _check_actor(actor, name: str = "actor"):
    if not isinstance(actor, RigidActor):
        raise TypeError(f"{name} must be a RigidActor, got {type(actor).__name__}")
    actor._row()
    return actor


def _check_scene(scene, name: str = "scene"):
    if not isinstance(scene, Scene):
        raise TypeError(f"{name} must be a Scene, got {type(scene).__name__}")
    return scene


def calibrate_normal_viscous_damping_coefficient(cor: float, impact_velocity: float) -> float:
    """Normal viscous damping [s/m] giving coefficient of restitution ``cor`` at ``impact_velocity`` [m/s]."""
    return restitution.calibrate_normal_viscous_damping_coefficient(cor, impact_velocity)


def effective_coefficient_of_restitution(normal_viscous_damping_coefficient: float, impact_velocity: float) -> float:
    """Coefficient of restitution of a normal damping [s/m] at ``impact_velocity`` [m/s]."""
    return restitution.effective_coefficient_of_restitution(normal_viscous_damping_coefficient, impact_velocity)


def enable_newton_euler_inertia(actor, enable: bool = True) -> None:
    """Use the experimental Newton-Euler rotational residual for ``actor`` instead of the incremental potential."""
    _check_actor(actor)
    if actor.is_static():
        raise ValueError(f"enable_newton_euler_inertia: actor {actor.get_name()!r} is static")
    actor._record.newton_euler = bool(enable)
    actor._scene._mark_dirty()


def is_newton_euler_inertia_enabled(actor) -> bool:
    return bool(actor._record.newton_euler)


# --- island sleeping (parameters only) ---------------------------------------------------------------------------


@dataclass
class SleepParams:
    """[Experimental] Island sleeping parameters (the reference's fields and defaults).

    can_sleep: whether islands may sleep. min_steps_before_sleep: consecutive rest steps before an island sleeps
    (>= 2). sleep_threshold: how strictly a step is judged at rest, in (0, 1] (1: only if the solver had nothing
    to do). Held and validated here; islands never sleep in this engine (module docstring)."""

    can_sleep: bool = False
    min_steps_before_sleep: int = 20
    sleep_threshold: float = 0.5

    def validate(self) -> "SleepParams":
        if not isinstance(self.can_sleep, bool):
            raise InvalidArgumentError(f"SleepParams.can_sleep must be a bool, got {self.can_sleep!r}")
        steps = self.min_steps_before_sleep
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 2:
            raise InvalidArgumentError(f"SleepParams.min_steps_before_sleep must be an integer >= 2, got {steps!r}")
        try:
            threshold = float(self.sleep_threshold)
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"SleepParams.sleep_threshold must be a number, got {self.sleep_threshold!r}") \
                from None
        if not (math.isfinite(threshold) and 0.0 < threshold <= 1.0):
            raise InvalidArgumentError(f"SleepParams.sleep_threshold must be in (0, 1], got {self.sleep_threshold!r}")
        return self


def get_sleep_params(scene) -> SleepParams:
    """[Experimental] The scene's sleep parameters (a copy)."""
    _check_scene(scene)
    return copy.deepcopy(scene._sleep_params) if scene._sleep_params is not None else SleepParams()


def set_sleep_params(scene, params: SleepParams) -> None:
    """[Experimental] Set the scene's sleep parameters (validated first; the scene is unchanged on error)."""
    _check_scene(scene)
    if not isinstance(params, SleepParams):
        raise TypeError(f"params must be a SleepParams, got {type(params).__name__}")
    params = copy.deepcopy(params).validate()
    if params.can_sleep:
        warnings.warn("island sleeping is not implemented in this engine: islands stay awake and every step solves "
                      "them (same motion, no speed-up; docs/api_parity.md)", stacklevel=2)
    scene._sleep_params = params


# --- solver settings, batched contact force, state transfer -----------------------------------------------------


def apply_improved_convergence_settings(scene) -> None:
    """The released engine's preset: explicit contact normals with the Armijo line search (a merit-based line
    search needs the dissipation to come from an exact potential, contact docs), and the incremental-potential
    rotational inertia for every actor (Newton-Euler inertia off)."""
    _check_scene(scene)
    params = scene.get_solver_params()
    params.experimental_eval.explicit_normals = True
    params.experimental_eval.implicit_normal_force_for_dissipation = False
    params.non_linear_solver.line_search_type = LineSearchType.ARMIJO
    scene.set_solver_params(params)
    for actor in scene.get_actors():
        if actor._record.newton_euler:
            actor._record.newton_euler = False
            scene._mark_dirty()


def get_contact_force_world_batch(actors, colliders, world: int = 0) -> float:
    """Sum over ``actors`` a and ``colliders`` b (a != b) of |contact force on a from b| [N] in the last step.

    Every actor needs QueryType.TOTAL_CONTACT_FORCE registered (raises `Error` otherwise, as the released
    engine); all must belong to one scene."""
    actors, colliders = list(actors), list(colliders)
    for i, a in enumerate(actors):
        _check_actor(a, f"actors[{i}]")
    for i, b in enumerate(colliders):
        _check_actor(b, f"colliders[{i}]")
    scenes = {id(x._scene) for x in actors + colliders}
    if len(scenes) > 1:
        raise InvalidArgumentError("actors and colliders must all belong to one scene")
    if not actors or not colliders:
        return 0.0
    scene = actors[0]._scene
    for a in actors:
        a._require(QueryType.TOTAL_CONTACT_FORCE, "get_contact_force_world_batch")
    return actor_queries.contact_force_batch(scene, actors, colliders, scene._check_world(world))


def restore_state_from_scene(scene_to, scene_from, handle_from) -> None:
    """Restore into ``scene_to`` the state captured from ``scene_from`` under ``handle_from``. The scenes must
    have the same composition: as many actors, static where the other's are, the same number of worlds, and
    (here) no constraints. The scene is unchanged when this raises."""
    _check_scene(scene_to, "scene_to")
    _check_scene(scene_from, "scene_from")
    try:
        layout, state, status, _ = scene_from._store._get(handle_from)
    except KeyError:
        raise InvalidArgumentError(f"handle_from {handle_from!r} is not a state captured from scene_from "
                                   f"{scene_from.get_name()!r}") from None
    if len(layout) != scene_to.get_num_actors():
        raise Error(f"cannot restore: the captured state has {len(layout)} actors, scene_to has "
                    f"{scene_to.get_num_actors()}")
    from_static = [scene_from._actors[h].is_static() if h in scene_from._actors else None for h in layout]
    to_static = [r.is_static for r in scene_to._records]
    if any(f is not None and f != t for f, t in zip(from_static, to_static)):
        raise Error("cannot restore: static and dynamic actors differ between the scenes")
    if state.num_worlds != scene_to.num_worlds:
        raise Error(f"cannot restore: the captured state has {state.num_worlds} worlds, scene_to has "
                    f"{scene_to.num_worlds}")
    if scene_to.get_num_constraints() or scene_from.get_num_constraints():
        raise Error("restore_state_from_scene does not support scenes with constraints here")
    store = scene_to._store
    store.restore_snapshot((store._layout(), state, status, store._extra_capture()), worlds=None)


# --- Newton-Euler terms (articulated robots only) and point-cloud colliders (shells and rods only) ----------------


class NewtonEulerTerms:
    """[Experimental] Newton-Euler terms of an articulated robot; none exist here (no articulated actors)."""

    def compute(self, dt, q, dq, out_m, out_c, out_j, out_jt_f) -> None:
        raise Error("NewtonEulerTerms need an articulated actor, which this engine does not have")


def create_newton_euler_terms(robot) -> NewtonEulerTerms:
    """Raises `Error`: the released engine accepts only articulated bodies, and this engine has rigid actors."""
    raise Error(f"create_newton_euler_terms: {robot!r} is null or not an articulated body")


def destroy_newton_euler_terms(newton_euler_terms) -> None:
    if newton_euler_terms is not None and not isinstance(newton_euler_terms, NewtonEulerTerms):
        raise TypeError(f"newton_euler_terms must be NewtonEulerTerms or None, got {newton_euler_terms!r}")


def is_valid_newton_euler_terms(newton_euler_terms) -> bool:
    return False


@dataclass
class PointCloudColliderParams:
    """[Experimental] Point-cloud collider settings (the reference's fields and defaults); point-cloud colliders
    are for shells and rods, so rigid actors here never use them."""

    collider_segment_element_type: object = None
    collider_triangle_element_type: object = None
    radius: float = 0.01
    self_contact: bool = False
    self_contact_exclusion_ratio: float = 1.5
    spatial_hash_load_factor: float = 0.0625
