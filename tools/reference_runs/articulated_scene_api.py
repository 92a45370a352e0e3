"""Probe the released engine's scene-level articulated API (documentation only; prints what it finds).

Run with the reference engine's venv, fp64 build (see tests/reference_data/README.md):

    cd tools/reference_runs && SUPERDEX_PRECISION=fp64 PYTHONPATH=/work/ref312-fp64 /work/ref312/bin/python \
        articulated_scene_api.py

tests/test_articulated_scene.py records its output (superdex-physics 1.0.1, 2026-12-05) as constants.
"""
import numpy as np
from _common import box_mesh, init, mesh_shape, reals, vec
sdp = init()
JT = sdp.ArticulatedJointType
shape = mesh_shape(*box_mesh((0.05, 0.2, 0.05)))
scene = sdp.create_scene("api")
p = sdp.ArticulatedActorParams(name="a")
p.world_from_root = sdp.TransformRT(translation=[0, 2, 0])
tys=[(JT.FREE,[0,0,1]),(JT.SPHERICAL,[0,0,1]),(JT.PRISMATIC,[1,0,0]),(JT.REVOLUTE,[0,0,1]),(JT.HARD,[0,0,1])]
p.joints = [sdp.ArticulatedJointParams(type=t, axis=ax, parent_link_from_joint=sdp.TransformRT(translation=[0,-0.3 if i else 0,0])) for i,(t,ax) in enumerate(tys)]
p.joints[3].min_limit=[0,0,-0.5]; p.joints[3].max_limit=[0,0,0.7]
p.joints[3].inertia=0.3
p.links = [sdp.ArticulatedLinkParams(parent_link=i-1, shape=shape, density=1000.0, parent_joint_from_link=sdp.TransformRT(translation=[0,-0.2,0])) for i in range(5)]
print("before", scene.get_num_actors())
a = scene.create_articulated_actor(p)
print("type", type(a), a.get_type(), a.get_name(), scene.get_num_actors())
print([type(x) for x in scene.get_actors()][:3] if hasattr(scene,'get_actors') else None)
n=a.get_num_dofs()
lim=sdp.DynamicArrayReal2(n) if hasattr(sdp,'DynamicArrayReal2') else None
a.get_articulated_dof_limits(lim); print("limits", [vec(x) for x in lim])
print("fric", [ (f.viscous, f.coulomb) for f in a.get_articulated_joint_friction_params()])
print("inertia", list(a.get_articulated_joint_inertia_params()))
q=reals([0.1,0.2,0.3,0.3,-0.2,0.5,0.4,0.1,-0.3,0.05,0.7]); qb=reals(np.array(q)+0.1)
nl=5
tr=reals(np.zeros(nl)); rr=reals(np.zeros(nl))
try:
  a.get_articulated_pose_distance(q,qb,tr,rr); print("dist", list(tr), list(rr))
except Exception as e: print("dist err", e)
for k in (3,4,5,6):
  try:
    tr=reals(np.zeros(k)); rr=reals(np.zeros(k)); a.get_articulated_pose_distance(q,qb,tr,rr); print("dist",k, list(tr), list(rr))
  except Exception as e: print("dist err",k, e)
h=a.get_nested_link_actors()
l=scene.get_actor(h[2]); print("link", l.get_name(), l.get_type(), l.is_nested_link_actor(), l.get_articulated_actor(), a.get_handle() if hasattr(a,'get_handle') else None)
print("link dofs", l.get_num_dofs(), "static", l.is_static())
v=reals(np.arange(n)*0.1); a.set_articulated_joint_velocities(v); o=reals(np.zeros(n)); a.get_articulated_joint_velocities(o); print("vel", list(o))
print("lin vel link2", vec(l.get_linear_velocity()), vec(l.get_angular_velocity()))
a.set_articulated_pose_from_joints(q)
tr=sdp.DynamicArrayTransformRT(nl); a.get_articulated_link_transforms(tr)
q2=reals(np.zeros(n)); 
a.set_articulated_pose_from_joints(q2)
a.set_articulated_pose_from_links(tr); o=reals(np.zeros(n)); a.get_articulated_pose(o); print("from links", list(o))
o=reals(np.zeros(n)); a.get_articulated_joint_velocities(o); print("vel after pose", list(o))
print("has pc", a.has_articulated_pose_controller())
try:
  a.set_articulated_target_pose(q)
except Exception as e: print("target without pc:", type(e).__name__, e)
try:
  a.get_articulated_jacobian()
except Exception as e: print("jac on articulated:", type(e).__name__, e)
try:
  l.set_velocity([1,0,0],[0,0,0]); print("link set_velocity ok")
except Exception as e: print("link set_velocity:", type(e).__name__, e)
try:
  a.set_external_forces_on_dofs([0,3],[1.0,2.0]); print("ext ok")
except Exception as e: print("ext", e)
try:
  scene.destroy_actor(h[1]); print("destroy link ok", scene.get_num_actors())
except Exception as e: print("destroy link:", type(e).__name__, e)
scene.destroy_actor(a.get_handle() if hasattr(a,'get_handle') else a); print("destroy art", scene.get_num_actors())
