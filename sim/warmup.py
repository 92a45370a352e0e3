"""Compile every kernel of the default solver path now instead of at first use.

Kernels compile on first use and load from numba's on-disk cache afterwards (sim/jit.py). A process that is about
to fork workers which all step scenes (pytest-xdist, SubprocVecEnv, Ray) calls `compile_kernels` once first, so
the workers load the cache instead of each compiling the same kernels at the same time.
"""

from __future__ import annotations

import time


def compile_kernels() -> float:
    """Step a small scene that reaches every default-path kernel (contact on the plane, box, sphere and grid-SDF
    colliders, pivot position and rotation constraints, both rotational-inertia forms, gravity, DoF loads and
    offset forces) and return the seconds it took: ~20 s from a cold cache, under 1 s from a warm one."""
    from . import (ColliderType, InitialGuess, create_box_mesh_shape, create_icosphere_shape, create_plane_shape,
                   create_scene)
    from .experimental import enable_newton_euler_inertia

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
    for _ in range(2):
        scene.step(0.01)
    return time.perf_counter() - start
