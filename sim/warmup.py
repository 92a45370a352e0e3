"""Compile every kernel of the default solver path now instead of at first use.

Kernels compile on first use and load from numba's on-disk cache afterwards (sim/jit.py). A process that is about
to fork workers which all step scenes (pytest-xdist, SubprocVecEnv, Ray) calls `compile_kernels` once first, so
the workers load the cache instead of each compiling the same kernels at the same time.
"""

from __future__ import annotations

import math
import time

from .step import fused
from .contact.colliders import ColliderType
from .context import create_scene
from .experimental import enable_newton_euler_inertia
from .params import InitialGuess
from .shapes import create_box_mesh_shape, create_icosphere_shape, create_plane_shape
from .transforms import TransformRT


def compile_kernels() -> float:
    """Step a small scene that reaches every default-path kernel (contact on the plane, box, sphere and grid-SDF
    colliders, pivot position and rotation constraints, both rotational-inertia forms, gravity, DoF loads and
    offset forces, the contact depth of the free-finger envs' initial guess, and the step's own: SO(3) exp / log,
    convergence weights, the static actors' selection, the fused step's kernels, the tunnelling ratio next to a static box that turns between
    the steps) and return the seconds it took: ~25-30 s from a cold cache (the compiled Newton's callees in two child
    processes meanwhile, `kernels.newton.compile_callees_elsewhere`), under 1 s from a warm one."""
    start = time.perf_counter()
    scene = create_scene("compile-kernels")
    solver = scene.get_solver_params()  # the free-finger envs' start: it asks the contact depth kernel
    solver.non_linear_solver.initial_guess = InitialGuess.CONSTANT_VELOCITY_AND_TARGETS_OUTSIDE
    scene.set_solver_params(solver)
    scene.create_rigid_actor(name="ground", shape=create_plane_shape(), is_static=True)
    box = create_box_mesh_shape([0.05, 0.05, 0.05])
    held = scene.create_rigid_actor(name="box", shape=box, density=1000.0, collider_type=ColliderType.BOX)
    sphere = scene.create_rigid_actor(name="sphere", shape=create_icosphere_shape(0.05, 1), density=1000.0,
                                      collider_type=ColliderType.SPHERE)
    grid = scene.create_rigid_actor(name="grid", shape=box, density=1000.0, collider_type=ColliderType.SDF)
    spinning = scene.create_rigid_actor(name="spinning", shape=box, density=1000.0)
    enable_newton_euler_inertia(spinning)
    for actor, x in ((held, 0.0), (sphere, 0.08), (grid, -0.08), (spinning, 0.3)):
        actor.set_velocity([x, -0.1, 0.0], [1.0, 2.0, 3.0])
    scene.create_rigid_pivot_position_constraint(actor=held, target_position=[0.0, 0.1, 0.0])
    scene.create_rigid_pivot_rotation_constraint(actor=held)
    sphere.set_external_forces_on_dofs([0, 1, 2], [0.1, 0.0, 0.0])
    grid.add_external_force_at_local_position([0.0, 0.1, 0.0], [0.05, 0.0, 0.0])
    # A static box far from the others: the tunnelling ratio's kernel needs a non-plane static collider, and
    # turning it between the steps takes the moved-statics branch (lie.log_so3's kernel).
    post = scene.create_rigid_actor(name="post", shape=box, is_static=True, collider_type=ColliderType.BOX,
                                    world_from_local=TransformRT(translation=[2.0, 0.0, 0.0]))
    # First on the per-stage step (the path of scenes outside the fused step's scope, e.g. on the numpy Newton):
    # its static selection and SO(3) log kernels.
    was = fused.FUSED_STEP
    fused.FUSED_STEP = False
    try:
        for half_turn in (0.0, 0.05):  # quaternion (x, y, z, w) of a turn by 2 * half_turn rad about y
            post.set_root_transform(TransformRT(translation=[2.0, 0.0, 0.0],
                                                rotation=[0.0, math.sin(half_turn), 0.0, math.cos(half_turn)]))
            scene.step(0.01)
    finally:
        fused.FUSED_STEP = was
    # Then the fused step (sim/step/fused.py), with both of the default-path envs' initial guesses.
    scene.step(0.01)
    solver.non_linear_solver.initial_guess = InitialGuess.CONSTANT_VELOCITY_AND_TARGETS
    scene.set_solver_params(solver)
    scene.step(0.01)
    return time.perf_counter() - start
