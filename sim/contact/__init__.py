"""Contact model of rigid bodies (digest section 5): colliding surface samples against collider SDFs.

Modules, from scalars to assembly:

* ``ramp``: the C^2 penalty ramp (PolyReLU) and the Coulomb regularizers (IPCstepC1, C-infinity).
* ``penalty`` / ``friction``: per-sample energy densities and their derivatives with respect to the sample's
  collider-frame position (penalty) and stage displacement (dissipation), plus the alignment gate.
* ``colliders`` (with ``grid_sdf``, ``mesh_distance``, ``sdf_values``): plane, sphere, box, grid SDF and exact
  mesh fields; ``ColliderType`` and its resolution per shape kind; building colliders from shapes.
* ``params``: ``ContactParams``, ``GridSdfParams``, pair combination, ``ContactEvalConfig``.
* ``potential`` (with ``rigid_assembly``): ``ContactPotential``, the Potential of the Newton solver, with the
  broad phase and the contact queries.
* ``restitution``: Hunt-Crossley calibration of the normal damping.

Nothing is imported here, so that ``sim.params`` can import ``contact.params`` without import cycles.
"""
