"""The batched compiled rasterizer: every world's frame (rgb, depth, segmentation) in one kernel call.

It draws what the numpy `Renderer` draws (``renderer.py``, ``raster.py``, ``shading.py``), step for step and with
the same arithmetic, so a frame equals the numpy renderer's to within rounding (``docs/pixels.md``, "Fidelity";
``tests/test_pixels.py`` measures it):

* opaque triangles of the actors, posed per world, back faces culled, cut at the near plane, z-buffered by the
  span rasterizer of ``raster.py`` (same edge functions in float64, same top-left fill rule, same float32
  nearness ``q = 1 / depth`` and the same tie rule: the larger face index wins);
* flat shading ``albedo * (ambient(n) + diffuse * max(0, -n . l) * visibility)``, the table's checker albedo at
  each pixel's world position, and the orthographic shadow map fitted to the shadow casters with its bilinear
  percentage-closer lookup (``shading.ShadowMap``);
* translucent goal markers blended far to near over the opaque image (each marker is a closed convex mesh, so a
  pixel sees at most one front fragment of each).

Per-world inputs (actor poses, colours, light direction, camera pose, marker centres) let domain randomization
change any of them per world; the meshes are shared. Worlds are drawn one after another in a fixed order, so the
bytes of a world's frame do not depend on the other worlds.
"""

from __future__ import annotations

import numpy as np

from superdex_gym.sim.jit import inner_kernel, kernel

# Triangle flags (`render_worlds`' ``tri_flags``).
PATTERNED = 1  # albedo from the checker pattern at the pixel's world position
CASTS_SHADOW = 2
RECEIVES_SHADOW = 4

_MIN_TWICE_AREA_PX2 = 1e-9  # raster.py's degenerate-triangle threshold
_SHADOW_MARGIN_TEXELS = 2  # shading.ShadowMap._MARGIN_TEXELS


@inner_kernel
def _raster_triangle(x0, y0, x1, y1, x2, y2, q0, q1, q2, tri_id, width, height, zq, zid):
    """Z-buffer one triangle (screen corners, nearness per corner) into ``zq`` / ``zid`` (flat, width * height):
    a fragment wins where its float32 nearness is larger, or equal with a larger id (raster.resolve_nearest's key).
    The spans are raster._spans' formulas, one row at a time."""
    twice_area = (x1 - x0) * (y2 - y0) - (x2 - x0) * (y1 - y0)
    x_min, x_max = min(min(x0, x1), x2), max(max(x0, x1), x2)
    y_min, y_max = min(min(y0, y1), y2), max(max(y0, y1), y2)
    row_first = max(np.ceil(y_min - 0.5), 0.0)
    row_last = min(np.floor(y_max - 0.5), height - 1.0)
    if not (abs(twice_area) > _MIN_TWICE_AREA_PX2 and row_last >= row_first and x_max >= 0.5
            and x_min <= width - 0.5 and np.isfinite(twice_area)):
        return
    a0, b0, c0 = y1 - y2, x2 - x1, x1 * y2 - x2 * y1
    a1, b1, c1 = y2 - y0, x0 - x2, x2 * y0 - x0 * y2
    a2, b2, c2 = y0 - y1, x1 - x0, x0 * y1 - x1 * y0
    inv_area = 1.0 / twice_area
    p = (a0 * q0 + a1 * q1 + a2 * q2) * inv_area
    qq = (b0 * q0 + b1 * q1 + b2 * q2) * inv_area
    r = (c0 * q0 + c1 * q1 + c2 * q2) * inv_area
    sign = 1.0 if twice_area > 0 else -1.0
    a0, b0, c0, a1, b1, c1, a2, b2, c2 = (a0 * sign, b0 * sign, c0 * sign, a1 * sign, b1 * sign, c1 * sign,
                                          a2 * sign, b2 * sign, c2 * sign)
    q_step = np.float32(p)
    row = row_first
    while row <= row_last:
        y_centre = row + 0.5
        lo, hi, blocked = x_min, x_max, False
        for k in range(3):
            a, b, c = (a0, b0, c0) if k == 0 else ((a1, b1, c1) if k == 1 else (a2, b2, c2))
            rest = b * y_centre + c
            if a > 0:
                lo = max(lo, -rest / a)
            elif a < 0:
                hi = min(hi, -rest / a)
            elif rest < 0 or (rest == 0 and b < 0):
                blocked = True
        col_first = max(np.ceil(lo - 0.5), 0.0)
        col_last = min(np.ceil(hi - 0.5) - 1.0, width - 1.0)
        count = int(col_last - col_first + 1)
        if count > 0 and not blocked:
            q_first = np.float32(p * (col_first + 0.5) + qq * (row + 0.5) + r)
            start = int(row) * width + int(col_first)
            step64 = np.float64(q_step)
            for i in range(count):
                q = np.float32(step64 * i) + q_first
                pix = start + i
                if q > zq[pix] or (q == zq[pix] and tri_id > zid[pix]):
                    zq[pix] = q
                    zid[pix] = tri_id
        row += 1.0


@inner_kernel
def _view_triangle(c, eye, rot, out):
    """Camera coordinates (3, 3) of world corners ``c`` (3, 3): camera.world_to_camera's sum order."""
    for k in range(3):
        d0, d1, d2 = c[k, 0] - eye[0], c[k, 1] - eye[1], c[k, 2] - eye[2]
        for j in range(3):
            out[k, j] = d0 * rot[j, 0] + d1 * rot[j, 1] + d2 * rot[j, 2]


@inner_kernel
def _raster_view_triangle(v, tri_id, focal, near, width, height, zq, zid, clipped):
    """Cut a camera-space triangle ``v`` (3, 3) at the near plane (raster.clip_triangles_near: one corner in front
    gives one triangle, two give two), project it and z-buffer it."""
    n_front = 0
    for k in range(3):
        if -v[k, 2] >= near:
            n_front += 1
    if n_front == 0:
        return
    pieces = 1
    if n_front == 3:
        for k in range(3):
            for j in range(3):
                clipped[0, k, j] = v[k, j]
    else:
        # rotate the corners so the lone one (front when one, behind when two) comes first, as raster.py does
        first = 0
        for k in range(3):
            if (-v[k, 2] >= near) == (n_front == 1):
                first = k
                break
        if n_front == 2:
            first = (first + 1) % 3  # raster.py's (argmin(in_front) + 1) % 3: a, b in front, c behind
        ia, ib, ic = first, (first + 1) % 3, (first + 2) % 3
        if n_front == 1:
            for j in range(3):
                clipped[0, 0, j] = v[ia, j]
            _cut(v, ia, ib, near, clipped, 0, 1)
            _cut(v, ia, ic, near, clipped, 0, 2)
        else:
            pieces = 2
            for j in range(3):
                clipped[0, 0, j] = v[ia, j]
                clipped[0, 1, j] = v[ib, j]
                clipped[1, 0, j] = v[ia, j]
            _cut(v, ib, ic, near, clipped, 0, 2)
            _cut(v, ib, ic, near, clipped, 1, 1)
            _cut(v, ia, ic, near, clipped, 1, 2)
    for t in range(pieces):
        d0, d1, d2 = -clipped[t, 0, 2], -clipped[t, 1, 2], -clipped[t, 2, 2]
        _raster_triangle(0.5 * width + focal * clipped[t, 0, 0] / d0, 0.5 * height - focal * clipped[t, 0, 1] / d0,
                         0.5 * width + focal * clipped[t, 1, 0] / d1, 0.5 * height - focal * clipped[t, 1, 1] / d1,
                         0.5 * width + focal * clipped[t, 2, 0] / d2, 0.5 * height - focal * clipped[t, 2, 1] / d2,
                         1.0 / d0, 1.0 / d1, 1.0 / d2, tri_id, width, height, zq, zid)


@inner_kernel
def _cut(v, i_in, i_out, near, out, t, corner):
    """The point of segment v[i_in] -> v[i_out] at depth ``near`` into out[t, corner]."""
    d_in, d_out = -v[i_in, 2], -v[i_out, 2]
    s = (d_in - near) / (d_in - d_out)
    for j in range(3):
        out[t, corner, j] = v[i_in, j] + s * (v[i_out, j] - v[i_in, j])


@inner_kernel
def _pack(r, g, b):
    """The packed colour of float32 r, g, b (renderer._pack_rgb: clip to [0, 1], x 255, + 0.5, truncate)."""
    r = min(max(r, np.float32(0.0)), np.float32(1.0)) * np.float32(255.0) + np.float32(0.5)
    g = min(max(g, np.float32(0.0)), np.float32(1.0)) * np.float32(255.0) + np.float32(0.5)
    b = min(max(b, np.float32(0.0)), np.float32(1.0)) * np.float32(255.0) + np.float32(0.5)
    return np.uint32(r) | (np.uint32(g) << np.uint32(8)) | (np.uint32(b) << np.uint32(16))


@inner_kernel
def _face_cross(corners, t):
    """(c1 - c0) x (c2 - c0) of triangle t of ``corners`` (T, 3, 3), from scalars (array slices would allocate)."""
    c = corners
    e10, e11, e12 = c[t, 1, 0] - c[t, 0, 0], c[t, 1, 1] - c[t, 0, 1], c[t, 1, 2] - c[t, 0, 2]
    e20, e21, e22 = c[t, 2, 0] - c[t, 0, 0], c[t, 2, 1] - c[t, 0, 1], c[t, 2, 2] - c[t, 0, 2]
    return e11 * e22 - e12 * e21, e12 * e20 - e10 * e22, e10 * e21 - e11 * e20


@inner_kernel
def _faces_eye(corners, normals, t, eye):
    """Whether triangle t turns its front to ``eye`` (renderer._project's back-face test)."""
    return (normals[t, 0] * (eye[0] - corners[t, 0, 0]) + normals[t, 1] * (eye[1] - corners[t, 0, 1])
            + normals[t, 2] * (eye[2] - corners[t, 0, 2])) > 0.0


@inner_kernel
def _pose_faces(tri_local, tri_actor, pos, rot, corners, normals):
    """World corners (T, 3, 3) and unit normals (T, 3) of the local triangles under one world's actor poses."""
    for t in range(tri_local.shape[0]):
        a = tri_actor[t]
        for k in range(3):
            for j in range(3):
                corners[t, k, j] = (tri_local[t, k, 0] * rot[a, j, 0] + tri_local[t, k, 1] * rot[a, j, 1]
                                    + tri_local[t, k, 2] * rot[a, j, 2]) + pos[a, j]
        n0, n1, n2 = _face_cross(corners, t)
        length = np.sqrt(n0 * n0 + n1 * n1 + n2 * n2)
        if length > 0:
            normals[t, 0], normals[t, 1], normals[t, 2] = n0 / length, n1 / length, n2 / length
        else:
            normals[t, 0], normals[t, 1], normals[t, 2] = 0.0, 0.0, 0.0


@inner_kernel
def _shadow_map(corners, tri_flags, light, size, bias_texels, smap, sid, scratch, params):
    """shading.ShadowMap for one world: the casters' faces turned toward the light, orthographic along ``light``,
    fitted to their extent, into ``smap`` (size * size occluder light depths, inf where none). ``params`` gets the
    float32 lookup maps: 3 x 3 linear then 3 offsets. Returns False when nothing casts a shadow."""
    lx, ly, lz = light[0], light[1], light[2]
    if abs(lz) > 0.9:
        hx, hy, hz = 1.0, 0.0, 0.0
    else:
        hx, hy, hz = 0.0, 0.0, 1.0
    e1x, e1y, e1z = hy * lz - hz * ly, hz * lx - hx * lz, hx * ly - hy * lx
    n = np.sqrt(e1x * e1x + e1y * e1y + e1z * e1z)
    e1x, e1y, e1z = e1x / n, e1y / n, e1z / n
    e2x, e2y, e2z = ly * e1z - lz * e1y, lz * e1x - lx * e1z, lx * e1y - ly * e1x
    count = 0
    lo0 = lo1 = lo2 = np.inf
    hi0 = hi1 = hi2 = -np.inf
    for t in range(corners.shape[0]):
        if not (tri_flags[t] & CASTS_SHADOW):
            continue
        n0, n1, n2 = _face_cross(corners, t)
        if not (n0 * lx + n1 * ly + n2 * lz < 0.0):
            continue
        for k in range(3):
            px, py, pz = corners[t, k, 0], corners[t, k, 1], corners[t, k, 2]
            a = px * e1x + py * e1y + pz * e1z
            b = px * e2x + py * e2y + pz * e2z
            c = px * lx + py * ly + pz * lz
            scratch[count, k, 0], scratch[count, k, 1], scratch[count, k, 2] = a, b, c
            lo0, lo1, lo2 = min(lo0, a), min(lo1, b), min(lo2, c)
            hi0, hi1, hi2 = max(hi0, a), max(hi1, b), max(hi2, c)
        count += 1
    if count == 0:
        return False
    margin = _SHADOW_MARGIN_TEXELS
    texel = max(max(hi0 - lo0, hi1 - lo1), 1e-6) / (size - 2 * margin)
    o0, o1 = lo0 - margin * texel, lo1 - margin * texel
    offset = hi2 + 1.0
    smap[:] = 0.0
    sid[:] = -1
    for t in range(count):
        _raster_triangle((scratch[t, 0, 0] - o0) / texel, (scratch[t, 0, 1] - o1) / texel,
                         (scratch[t, 1, 0] - o0) / texel, (scratch[t, 1, 1] - o1) / texel,
                         (scratch[t, 2, 0] - o0) / texel, (scratch[t, 2, 1] - o1) / texel,
                         offset - scratch[t, 0, 2], offset - scratch[t, 1, 2], offset - scratch[t, 2, 2],
                         t, size, size, smap, sid)
    for i in range(size * size):
        # a Python float minus a float32 array is float32 arithmetic in numpy (NEP 50): the oracle's occluder depths
        smap[i] = np.float32(offset) - smap[i] if smap[i] > 0.0 else np.float32(np.inf)
    bias = bias_texels * texel + 1e-5
    params[0], params[1], params[2] = np.float32(e1x / texel), np.float32(e1y / texel), np.float32(e1z / texel)
    params[3], params[4], params[5] = np.float32(e2x / texel), np.float32(e2y / texel), np.float32(e2z / texel)
    params[6], params[7], params[8] = np.float32(lx), np.float32(ly), np.float32(lz)
    params[9], params[10], params[11] = np.float32(-o0 / texel - 0.5), np.float32(-o1 / texel - 0.5), np.float32(-bias)
    return True


@inner_kernel
def _visibility(x, y, z, smap, size, m):
    """Sun visibility in [0, 1] at float32 world x, y, z (shading.ShadowMap.visibility_at, 2 x 2 bilinear PCF)."""
    tx = x * m[0] + y * m[1] + z * m[2] + m[9]
    ty = x * m[3] + y * m[4] + z * m[5] + m[10]
    if tx < 1.0 or ty < 1.0 or tx >= size - 2 or ty >= size - 2:
        return 1.0  # its 2 x 2 texels lie in the map's empty border (two texels wide): lit, as the lookup would say
    light_depth = x * m[6] + y * m[7] + z * m[8] + m[11]
    top = np.float32(size - 1.001)
    tx = min(max(tx, np.float32(0.0)), top)
    ty = min(max(ty, np.float32(0.0)), top)
    col, row = np.int32(tx), np.int32(ty)
    # float32 - int32 promotes to float64 in numpy, so the oracle's weights are float64
    fx, fy = np.float64(tx) - col, np.float64(ty) - row
    base = row * size + col
    lit00 = 1.0 if light_depth <= smap[base] else 0.0
    lit10 = 1.0 if light_depth <= smap[base + 1] else 0.0
    lit01 = 1.0 if light_depth <= smap[base + size] else 0.0
    lit11 = 1.0 if light_depth <= smap[base + size + 1] else 0.0
    lower = lit00 + fx * (lit10 - lit00)
    upper = lit01 + fx * (lit11 - lit01)
    return lower + fy * (upper - lower)


@kernel
def render_worlds(tri_local, tri_actor, tri_flags, tri_seg, actor_pos, actor_rot, actor_albedo,
                  mk_local, mk_index, mk_radius, mk_centre, mk_albedo, mk_alpha,
                  checker_colors, checker_cell, checker_origin, light, background,
                  cam_eye, cam_rot, focal, near, far, ray_right, ray_up, shading, shadow_size, shadows,
                  want_rgb, empty_depth, rgb, depth, seg):
    """Draw world w's frame for every w into ``rgb`` (W, H, Wd, 3) uint8, ``depth`` (W, H, Wd) float32 [m] (far
    ``empty_depth`` where nothing opaque) and ``seg`` (W, H, Wd) int32 (``tri_seg`` of the visible face, 0 where none).

    Meshes: ``tri_local`` (T, 3, 3) corners in their actor's frame, ``tri_actor`` (T,), ``tri_flags`` (T,)
    (PATTERNED | CASTS_SHADOW | RECEIVES_SHADOW), ``tri_seg`` (T,) int32; markers ``mk_local`` (Tm, 3, 3) about
    their centre, ``mk_index`` (Tm,) marker of each, ``mk_radius`` (M,) [m] a radius holding each marker. Per
    world: ``actor_pos`` (W, A, 3), ``actor_rot`` (W, A, 3,
    3), ``actor_albedo`` (W, A, 3), ``mk_centre`` (W, M, 3), ``mk_albedo`` (W, M, 3), ``checker_colors`` (W, 2, 3),
    ``light`` (W, 3) unit travel direction, ``background`` (W, 3), ``cam_eye`` (W, 3), ``cam_rot`` (W, 3, 3)
    camera-from-world rows. Shared: ``mk_alpha`` (M,) float32, ``checker_cell`` [m], ``checker_origin`` (3,),
    ``focal`` [px], ``near``, ``far`` [m], ``ray_right`` / ``ray_up`` (H * Wd,) float32 camera.pixel_ray_slopes,
    ``shading`` (sky, ground, diffuse, bias texels), ``shadow_size`` texels, ``shadows``; ``want_rgb`` False skips
    the shading (depth and segmentation only)."""
    num_worlds, height, width = depth.shape[0], depth.shape[1], depth.shape[2]
    n_pix = height * width
    n_tri, n_mk_tri, n_mk = tri_local.shape[0], mk_local.shape[0], mk_centre.shape[1]
    sky, ground, diffuse_k, bias_texels = shading[0], shading[1], shading[2], shading[3]
    corners = np.empty((n_tri, 3, 3))
    normals = np.empty((n_tri, 3))
    view = np.empty((3, 3))
    clipped = np.empty((2, 3, 3))
    zq = np.empty(n_pix, dtype=np.float32)
    zid = np.empty(n_pix, dtype=np.int64)
    face_ambient = np.empty(n_tri)
    face_diffuse = np.empty(n_tri)
    face_sunlit = np.empty(n_tri, dtype=np.uint32)
    smap = np.empty(shadow_size * shadow_size, dtype=np.float32)
    sid = np.empty(shadow_size * shadow_size, dtype=np.int64)
    scratch = np.empty((n_tri, 3, 3))
    smap_params = np.empty(12, dtype=np.float32)
    mk_corners = np.empty((n_mk_tri, 3, 3))
    mk_normals = np.empty((n_mk_tri, 3))
    mk_rot = np.zeros((max(n_mk, 1), 3, 3))
    for m in range(n_mk):
        for j in range(3):
            mk_rot[m, j, j] = 1.0
    mk_actor = mk_index.copy()
    mq = np.empty((max(n_mk, 1), n_pix), dtype=np.float32)
    mid = np.empty((max(n_mk, 1), n_pix), dtype=np.int64)
    boxes = np.empty((max(n_mk, 1), 4), dtype=np.int64)
    order = np.empty(max(n_mk, 1), dtype=np.int64)
    q_far = np.float32(1.0 / far)
    inv255 = np.float32(255.0)
    for w in range(num_worlds):
        eye, rot = cam_eye[w], cam_rot[w]
        lx, ly, lz = light[w, 0], light[w, 1], light[w, 2]
        _pose_faces(tri_local, tri_actor, actor_pos[w], actor_rot[w], corners, normals)
        zq[:] = 0.0
        zid[:] = -1
        for t in range(n_tri):
            if not _faces_eye(corners, normals, t, eye):
                continue  # back face
            _view_triangle(corners[t], eye, rot, view)
            _raster_view_triangle(view, t, focal, near, width, height, zq, zid, clipped)
        if want_rgb:
            # flat lighting per face (renderer._Faces.build) and the shadow map, before the pixel pass
            for t in range(n_tri):
                amb = ground + (sky - ground) * 0.5 * (1.0 + normals[t, 2])
                dif = diffuse_k * max(0.0, -(normals[t, 0] * lx + normals[t, 1] * ly + normals[t, 2] * lz))
                face_ambient[t], face_diffuse[t] = amb, dif
                a = tri_actor[t]
                light32 = np.float32(amb + dif)
                face_sunlit[t] = _pack(np.float32(actor_albedo[w, a, 0]) * light32,
                                       np.float32(actor_albedo[w, a, 1]) * light32,
                                       np.float32(actor_albedo[w, a, 2]) * light32)
            have_shadow = shadows and _shadow_map(corners, tri_flags, light[w], shadow_size, bias_texels, smap, sid,
                                                  scratch, smap_params)
        else:
            have_shadow = False
        ex, ey, ez = np.float32(eye[0]), np.float32(eye[1]), np.float32(eye[2])
        r00, r01, r02 = np.float32(rot[0, 0]), np.float32(rot[0, 1]), np.float32(rot[0, 2])
        r10, r11, r12 = np.float32(rot[1, 0]), np.float32(rot[1, 1]), np.float32(rot[1, 2])
        r20, r21, r22 = np.float32(rot[2, 0]), np.float32(rot[2, 1]), np.float32(rot[2, 2])
        background_packed = _pack(np.float32(background[w, 0]), np.float32(background[w, 1]),
                                  np.float32(background[w, 2]))
        inv_cell = np.float64(np.float32(1.0 / checker_cell))
        for r in range(height):
            for c in range(width):
                i = r * width + c
                f = zid[i]
                if f < 0 or zq[i] < q_far:
                    zid[i] = -1
                    zq[i] = 0.0
                    depth[w, r, c] = np.float32(empty_depth)
                    seg[w, r, c] = 0
                    colour = background_packed
                else:
                    d = np.float32(1.0) / zq[i]
                    depth[w, r, c] = d
                    seg[w, r, c] = tri_seg[f]
                    if not want_rgb:
                        continue
                    flags = tri_flags[f]
                    patterned = (flags & PATTERNED) != 0
                    receives = (flags & RECEIVES_SHADOW) != 0 and have_shadow
                    if not patterned and not (receives and face_diffuse[f] > 0.0):
                        colour = face_sunlit[f]
                    else:
                        right_m, up_m = ray_right[i] * d, ray_up[i] * d
                        x = ex + right_m * r00 + up_m * r10 - d * r20
                        y = ey + right_m * r01 + up_m * r11 - d * r21
                        z = ez + right_m * r02 + up_m * r12 - d * r22
                        if patterned:
                            ax0, ax1, ax2 = abs(normals[f, 0]), abs(normals[f, 1]), abs(normals[f, 2])
                            dominant = 0 if (ax0 >= ax1 and ax0 >= ax2) else (1 if ax1 >= ax2 else 2)
                            # float32 coordinates minus the float64 origin: float64 in numpy, as in albedo_planes
                            dx = np.float64(x) - checker_origin[0]
                            dy = np.float64(y) - checker_origin[1]
                            u = np.float32((dy if dominant == 0 else dx) * inv_cell)
                            v = np.float32((dy if dominant == 2 else np.float64(z) - checker_origin[2]) * inv_cell)
                            odd = np.int32(np.floor(u) + np.floor(v)) & 1
                            al0 = np.float32(checker_colors[w, odd, 0])
                            al1 = np.float32(checker_colors[w, odd, 1])
                            al2 = np.float32(checker_colors[w, odd, 2])
                        else:
                            a = tri_actor[f]
                            al0 = np.float32(actor_albedo[w, a, 0])
                            al1 = np.float32(actor_albedo[w, a, 1])
                            al2 = np.float32(actor_albedo[w, a, 2])
                        sun = 1.0
                        if receives:
                            sun = _visibility(x, y, z, smap, shadow_size, smap_params)
                        light32 = np.float32(face_ambient[f] + face_diffuse[f] * sun)
                        colour = _pack(al0 * light32, al1 * light32, al2 * light32)
                if want_rgb:
                    rgb[w, r, c, 0] = np.uint8(colour & np.uint32(0xFF))
                    rgb[w, r, c, 1] = np.uint8((colour >> np.uint32(8)) & np.uint32(0xFF))
                    rgb[w, r, c, 2] = np.uint8((colour >> np.uint32(16)) & np.uint32(0xFF))
        if not want_rgb or n_mk == 0:
            continue
        # translucent markers: each z-buffered into its own layer within its screen box, then blended far to near
        # where in front of the opaque surface
        _pose_faces(mk_local, mk_actor, mk_centre[w], mk_rot, mk_corners, mk_normals)
        _marker_boxes(mk_centre[w], mk_radius, eye, rot, focal, near, width, height, boxes)
        r_lo, r_hi, c_lo, c_hi = height, -1, width, -1
        for m in range(n_mk):
            r_lo, r_hi = min(r_lo, boxes[m, 0]), max(r_hi, boxes[m, 1])
            c_lo, c_hi = min(c_lo, boxes[m, 2]), max(c_hi, boxes[m, 3])
            for r in range(boxes[m, 0], boxes[m, 1] + 1):
                for c in range(boxes[m, 2], boxes[m, 3] + 1):
                    mq[m, r * width + c] = 0.0
                    mid[m, r * width + c] = -1
        for t in range(n_mk_tri):
            m = mk_index[t]
            if boxes[m, 1] < boxes[m, 0] or not _faces_eye(mk_corners, mk_normals, t, eye):
                continue
            _view_triangle(mk_corners[t], eye, rot, view)
            _raster_view_triangle(view, t, focal, near, width, height, mq[m], mid[m], clipped)
        for r in range(r_lo, r_hi + 1):
            for c in range(c_lo, c_hi + 1):
                i = r * width + c
                n_layers = 0
                for m in range(n_mk):
                    if not (boxes[m, 0] <= r <= boxes[m, 1] and boxes[m, 2] <= c <= boxes[m, 3]):
                        continue
                    if mid[m, i] >= 0 and mq[m, i] > zq[i] and mq[m, i] >= q_far:
                        # insertion by nearness, far first; equal nearness keeps marker order (a stable sort)
                        j = n_layers
                        while j > 0 and mq[order[j - 1], i] > mq[m, i]:
                            order[j] = order[j - 1]
                            j -= 1
                        order[j] = m
                        n_layers += 1
                for k in range(n_layers):
                    m = order[k]
                    t = mid[m, i]
                    amb = ground + (sky - ground) * 0.5 * (1.0 + mk_normals[t, 2])
                    dif = diffuse_k * max(0.0, -(mk_normals[t, 0] * lx + mk_normals[t, 1] * ly + mk_normals[t, 2] * lz))
                    light32 = np.float32(amb + dif)
                    alpha = mk_alpha[m]
                    keep = np.float32(1.0) - alpha
                    colour = _pack(alpha * (np.float32(mk_albedo[w, m, 0]) * light32)
                                   + keep * (np.float32(rgb[w, r, c, 0]) / inv255),
                                   alpha * (np.float32(mk_albedo[w, m, 1]) * light32)
                                   + keep * (np.float32(rgb[w, r, c, 1]) / inv255),
                                   alpha * (np.float32(mk_albedo[w, m, 2]) * light32)
                                   + keep * (np.float32(rgb[w, r, c, 2]) / inv255))
                    rgb[w, r, c, 0] = np.uint8(colour & np.uint32(0xFF))
                    rgb[w, r, c, 1] = np.uint8((colour >> np.uint32(8)) & np.uint32(0xFF))
                    rgb[w, r, c, 2] = np.uint8((colour >> np.uint32(16)) & np.uint32(0xFF))


@inner_kernel
def _marker_boxes(centres, radii, eye, rot, focal, near, width, height, boxes):
    """Pixel boxes (M, 4: first row, last row, first column, last column) holding each marker sphere's image: the
    projections of its bounding cube's corners, 1 pixel wider; the whole image when the cube reaches the near plane;
    empty (last < first) when it is behind it or off screen."""
    for m in range(centres.shape[0]):
        x_lo, x_hi, y_lo, y_hi = np.inf, -np.inf, np.inf, -np.inf
        behind, crossing = 0, False
        rad = radii[m]
        for k in range(8):
            px = centres[m, 0] + (rad if k & 1 else -rad) - eye[0]
            py = centres[m, 1] + (rad if k & 2 else -rad) - eye[1]
            pz = centres[m, 2] + (rad if k & 4 else -rad) - eye[2]
            vx = px * rot[0, 0] + py * rot[0, 1] + pz * rot[0, 2]
            vy = px * rot[1, 0] + py * rot[1, 1] + pz * rot[1, 2]
            d = -(px * rot[2, 0] + py * rot[2, 1] + pz * rot[2, 2])
            if d < near:
                crossing = True
                behind += 1
                continue
            sx, sy = 0.5 * width + focal * vx / d, 0.5 * height - focal * vy / d
            x_lo, x_hi, y_lo, y_hi = min(x_lo, sx), max(x_hi, sx), min(y_lo, sy), max(y_hi, sy)
        if behind == 8:
            boxes[m, 0], boxes[m, 1], boxes[m, 2], boxes[m, 3] = 0, -1, 0, -1
        elif crossing:
            boxes[m, 0], boxes[m, 1], boxes[m, 2], boxes[m, 3] = 0, height - 1, 0, width - 1
        else:
            boxes[m, 0] = max(int(np.floor(y_lo)) - 1, 0)
            boxes[m, 1] = min(int(np.floor(y_hi)) + 1, height - 1)
            boxes[m, 2] = max(int(np.floor(x_lo)) - 1, 0)
            boxes[m, 3] = min(int(np.floor(x_hi)) + 1, width - 1)
