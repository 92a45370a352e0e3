import numpy as np, sys, dataclasses
import superdex_gym.sim as mochi
from superdex_gym.sim.scene import Scene
from superdex_gym.envs.core import config as cfgmod
from superdex_gym.envs.robots import floating_gripper as fg
opt = eval(sys.argv[1]); kw = eval(sys.argv[2]) if len(sys.argv) > 2 else {}
orig = Scene.create_rigid_actor
def patched(self, params=None, **k):
    if k.get("name") == "cube" and opt.get("q16", True): k["boundary_element_type"] = mochi.ActorBoundaryElementType.P1Q16
    if k.get("name") in ("cube", "table", "finger_left", "finger_right") and opt.get("tower"):
        c = mochi.ContactParams(**vars(k.get("contact") or mochi.ContactParams()))
        c.penalty_smoothing_half_distance, c.penalty_threshold_default, c.friction_falloff_vel = opt["tower"]
        k["contact"] = c
    return orig(self, params, **k)
Scene.create_rigid_actor = patched
oa = cfgmod.WorldConfig.apply
def apply(self, scene):
    oa(self, scene)
    sp = scene.get_solver_params()
    ex = sp.non_linear_solver.experimental_eval if hasattr(sp.non_linear_solver, "experimental_eval") else sp.experimental_eval
    if opt.get("explicit"): ex.explicit_normals = True
    if opt.get("exact_fric"): ex.fitted_saturation_hessian.contact_friction = False
    if opt.get("abs_tol"): sp.non_linear_solver.abs_tol = opt["abs_tol"]
    scene.set_solver_params(sp)
cfgmod.WorldConfig.apply = apply
if "kf" in opt:
    fg.GripperConfig.finger_drive_stiffness = opt["kf"]
    fields = {f.name: f for f in dataclasses.fields(fg.GripperConfig)}
    fields["finger_drive_stiffness"].default = opt["kf"]
    fg.GripperConfig.__init__.__defaults__  # noqa
    om = fg.FloatingGripper.make_config
    fg.FloatingGripper.make_config = staticmethod(lambda **a: dataclasses.replace(om(**a), finger_drive_stiffness=opt["kf"]))
import superdex_gym.grasp as g
src = open(g.__file__).read().replace('"hold_over_free_cost": float(np.median(hold_time) / np.median(free_time)),', '"hold_over_free_cost": float(np.median(hold_time) / np.median(free_time)), "conv_w": np.mean(converged, axis=0),')
ns = {"__name__": "x"}
exec(compile(src.replace("from .envs", "from superdex_gym.envs").replace("from .sim", "from superdex_gym.sim"), "g", "exec"), ns)
r = ns["measure_picks"](kw.pop("picks", 20), **kw)
print(np.round(r.pop("conv_w"), 2)); print(opt, {k: round(v, 4) if isinstance(v, float) else v for k, v in r.items()})
