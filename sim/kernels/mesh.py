"""The exact signed distance to a closed triangle mesh for the contact kernels (collider kind MESH): one sample
against every triangle of its mesh, brute force, O(triangles) per sample, allocating nothing
(sim/contact/mesh_distance.py and `colliders.MeshCollider.evaluate` are the numpy oracle).

* Closest point: Ericson's Voronoi-region walk on each triangle, with `closest_points_on_triangles`'s arithmetic
  (its products, sums and groupings, its region order vertex A, vertex B, edge AB, vertex C, edge AC, edge BC,
  face: the first region whose test holds), and the first triangle of least squared distance (``np.argmin``).
  Distances, closest points and gradients are therefore the oracle's to the bit.
* Sign: the generalized winding number, the sum of the triangles' signed solid angles (Van Oosterom & Strackee)
  over 4 pi, inside when it exceeds 1/2. The terms are the oracle's, but they are summed in triangle order where
  numpy's ``np.sum`` sums pairwise (8 interleaved partial sums per block of 128, blocks halved recursively), so the
  two winding numbers differ by round-off: with t_i = 2 atan2(...) in [-2 pi, 2 pi] and u = 2^-53,
      |w_kernel - w_numpy| <= (gamma(T - 1) + gamma(T - 1) + 8 u) sum_i |t_i| / (4 pi),  gamma(k) = k u / (1 - k u)
  (each summation's error bound, gamma(T - 1) sum |t_i| for both orders, plus 4 ulp per atan2 for a numpy built
  with a vector atan2). Off the surface w is 0 or 1 up to round-off (a closed surface subtends 0 or 4 pi), so the
  sign, hence phi and G, can differ only for points on the surface to round-off, where |w - 1/2| falls within that
  bound (at most 1.7e-13 at the test points, tests/test_mesh_kernel.py, which checks it per point).

The mesh is packed into the contact kernels' float table (`ContactColliderArrays.grid_values`, after the grids'
values): ``MESH_ROW`` floats per triangle, its corners A, B, C and its unit outward face normal (the collider's
own, the gradient on the surface); `pack_mesh` builds them.

The contact kernels call `mesh_sdf` by address (`jit.address_call`, as newton_stage calls the potentials), the
address in the collider's ``grid_dims[cl, 1]`` (`mesh_sdf_address`, written by `ContactPotential` in the process
that evaluates it): linked by name into the contact kernels (`contact_geometry._sdf_of` is inlined into each), it
added ~2.5 s to their cold compile in every process, MESH scenes or not; by address it is compiled only when a
potential with a mesh collider is built.
"""

from __future__ import annotations

import math

import numpy as np
from numba import types

from ..jit import address_call, kernel, wrapper_address

MESH = 4  # the contact kernels' collider kind (contact_geometry's PLANE, SPHERE, BOX, GRID are 0-3)
MESH_ROW = 12  # floats per triangle in the packed table: A, B, C, unit face normal
_ON_SURFACE_M = 1e-12  # MeshCollider.evaluate: within it of the surface, G is the closest face's normal
_FOUR_PI = 4.0 * np.pi


def pack_mesh(vertices: np.ndarray, triangles: np.ndarray, face_normals: np.ndarray) -> np.ndarray:
    """(T * MESH_ROW,) float64: per triangle its corners A, B, C (vertices[triangles[t]]) and its unit normal."""
    corners = np.asarray(vertices, dtype=np.float64)[np.asarray(triangles, dtype=np.int64)]  # (T, 3, 3)
    table = np.concatenate([corners.reshape(-1, 9), np.asarray(face_normals, dtype=np.float64).reshape(-1, 3)],
                           axis=1)
    return np.ascontiguousarray(table).reshape(-1)


@kernel(no_cpython_wrapper=True, _nrt=False)
def mesh_sdf(y0, y1, y2, want_grad, values, start, num_triangles, out, at):
    """`MeshCollider.evaluate` at (y0, y1, y2) for the mesh of ``num_triangles`` triangles packed in ``values``
    from ``start`` (`pack_mesh`): (phi, dphi/dy) into out[at:at + 4], the gradient zero unless asked. phi is the exact
    signed distance (negative inside); G the unit vector from the closest surface point, sign-corrected, or the
    closest triangle's normal within 1e-12 m of the surface."""
    best_d2 = np.inf
    best = start
    q0 = q1 = q2 = 0.0
    winding = 0.0
    for t in range(num_triangles):
        o = start + MESH_ROW * t
        a0, a1, a2 = values[o], values[o + 1], values[o + 2]
        b0, b1, b2 = values[o + 3], values[o + 4], values[o + 5]
        c0, c1, c2 = values[o + 6], values[o + 7], values[o + 8]
        # Closest point (closest_points_on_triangles; its einsum dots sum components 0, 2, then 1).
        ab0, ab1, ab2 = b0 - a0, b1 - a1, b2 - a2
        ac0, ac1, ac2 = c0 - a0, c1 - a1, c2 - a2
        ap0, ap1, ap2 = y0 - a0, y1 - a1, y2 - a2
        bp0, bp1, bp2 = y0 - b0, y1 - b1, y2 - b2
        cp0, cp1, cp2 = y0 - c0, y1 - c1, y2 - c2
        d1 = (ab0 * ap0 + ab2 * ap2) + ab1 * ap1
        d2 = (ac0 * ap0 + ac2 * ap2) + ac1 * ap1
        d3 = (ab0 * bp0 + ab2 * bp2) + ab1 * bp1
        d4 = (ac0 * bp0 + ac2 * bp2) + ac1 * bp1
        d5 = (ab0 * cp0 + ab2 * cp2) + ab1 * cp1
        d6 = (ac0 * cp0 + ac2 * cp2) + ac1 * cp1
        vc = d1 * d4 - d3 * d2
        vb = d5 * d2 - d1 * d6
        va = d3 * d6 - d5 * d4
        if d1 <= 0.0 and d2 <= 0.0:  # vertex A
            v, w = 0.0, 0.0
        elif d3 >= 0.0 and d4 <= d3:  # vertex B
            v, w = 1.0, 0.0
        elif vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:  # edge AB
            v, w = d1 / (d1 - d3), 0.0
        elif d6 >= 0.0 and d5 <= d6:  # vertex C
            v, w = 0.0, 1.0
        elif vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:  # edge AC
            v, w = 0.0, d2 / (d2 - d6)
        elif va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:  # edge BC
            s_bc = (d4 - d3) / ((d4 - d3) + (d5 - d6))
            v, w = 1.0 - s_bc, s_bc
        else:  # face
            inv = 1.0 / ((va + vb) + vc)
            v, w = vb * inv, vc * inv
        x0 = (a0 + v * ab0) + w * ac0
        x1 = (a1 + v * ab1) + w * ac1
        x2 = (a2 + v * ab2) + w * ac2
        e0, e1, e2 = x0 - y0, x1 - y1, x2 - y2
        dist2 = (e0 * e0 + e1 * e1) + e2 * e2
        if dist2 < best_d2:  # the first least, as np.argmin
            best_d2, best = dist2, o
            q0, q1, q2 = x0, x1, x2
        # Winding number term (winding_number): 2 atan2(pa . (pb x pc), |pa||pb||pc| + (pa.pb)|pc| + ...).
        pa0, pa1, pa2 = a0 - y0, a1 - y1, a2 - y2
        pb0, pb1, pb2 = b0 - y0, b1 - y1, b2 - y2
        pc0, pc1, pc2 = c0 - y0, c1 - y1, c2 - y2
        la = np.sqrt((pa0 * pa0 + pa1 * pa1) + pa2 * pa2)
        lb = np.sqrt((pb0 * pb0 + pb1 * pb1) + pb2 * pb2)
        lc = np.sqrt((pc0 * pc0 + pc1 * pc1) + pc2 * pc2)
        x0, x1, x2 = pb1 * pc2 - pb2 * pc1, pb2 * pc0 - pb0 * pc2, pb0 * pc1 - pb1 * pc0
        numerator = (pa0 * x0 + pa2 * x2) + pa1 * x1
        dab = (pa0 * pb0 + pa2 * pb2) + pa1 * pb1
        dbc = (pb0 * pc0 + pb2 * pc2) + pb1 * pc1
        dca = (pc0 * pa0 + pc2 * pa2) + pc1 * pa1
        denominator = (((la * lb) * lc + dab * lc) + dbc * la) + dca * lb
        winding += 2.0 * math.atan2(numerator, denominator)
    dist = np.sqrt(best_d2)
    inside = winding / _FOUR_PI > 0.5
    phi = -dist if inside else dist
    out[at] = phi
    if not want_grad:
        out[at + 1], out[at + 2], out[at + 3] = 0.0, 0.0, 0.0
    elif dist <= _ON_SURFACE_M:
        out[at + 1], out[at + 2], out[at + 3] = values[best + 9], values[best + 10], values[best + 11]
    else:
        sign = -1.0 if phi < 0.0 else 1.0
        out[at + 1] = sign * ((y0 - q0) / dist)
        out[at + 2] = sign * ((y1 - q1) / dist)
        out[at + 3] = sign * ((y2 - q2) / dist)


_F1 = types.Array(types.float64, 1, "C")
_MESH_SDF_SIGNATURE = types.none(types.float64, types.float64, types.float64, types.boolean, _F1, types.int64,
                                 types.int64, _F1, types.int64)
call_mesh_sdf = address_call(mesh_sdf, _MESH_SDF_SIGNATURE)  # call_mesh_sdf(address, *mesh_sdf's arguments)
_address = [0]


def mesh_sdf_address() -> int:
    """The address of `mesh_sdf`'s C-callable wrapper in this process, compiling it (or loading it from the cache)
    on first use. Valid for the life of the process; < 2^53, so that it travels exactly as a float64 (the
    contact kernels' collider parameters, `contact_geometry._collider_params`)."""
    if _address[0] == 0:
        address = wrapper_address(mesh_sdf, _MESH_SDF_SIGNATURE)
        if not 0 < address < 2 ** 53:
            raise RuntimeError(f"mesh_sdf's address {address:#x} does not fit a float64 exactly")
        _address[0] = address
    return _address[0]
