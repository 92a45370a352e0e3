import numpy as np, sys, time
import superdex_gym.sim as mochi
eps, delta, vf, q16, dt, T = [float(x) for x in sys.argv[1:7]]
scene = mochi.create_scene("tower"); scene.set_gravity([0, 0, -9.8])
def cp(): return mochi.ContactParams(penalty_smoothing_half_distance=eps, penalty_threshold_default=delta, friction_falloff_vel=vf)
scene.create_rigid_actor(name="table", shape=mochi.create_box_mesh_shape([0.4, 0.4, 0.2]), is_static=True, contact=cp(),
    collider_type=mochi.ColliderType.BOX, world_from_local=mochi.TransformRT(translation=[0, 0, -0.2]))
h = 0.02; cubes = []
for k in range(3):
    kw = dict(boundary_element_type=mochi.ActorBoundaryElementType.P1Q16) if q16 else {}
    cubes.append(scene.create_rigid_actor(name=f"c{k}", shape=mochi.create_box_mesh_shape([h]*3), mass=0.064, contact=cp(),
        collider_type=mochi.ColliderType.BOX, world_from_local=mochi.TransformRT(translation=[0.01*k, 0, h + 2*h*k]), **kw))
p0 = scene.get_actor_translations(cubes)[0].copy()
t = time.time()
for i in range(int(round(T/dt))): scene.step(dt)
p1 = scene.get_actor_translations(cubes)[0]
print(sys.argv[1:], "drift mm", np.round(1e3*np.linalg.norm(p1-p0, axis=1), 3), f"{time.time()-t:.1f}s")
