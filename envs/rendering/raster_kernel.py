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

Most of a frame does not change between steps, so the kernel keeps, per world, what only the camera, light,
colours, static poses or goals decide, and redraws it only when one of those changes (compared exactly): the static
actors' z-buffer and their frame in full sun, and each goal marker's layer. A frame is then that static frame with
the moving triangles z-buffered over it (a z-buffer keeps the largest (nearness, face) whatever the drawing order,
so this is the frame drawing everything at once gives) and only the TILE x TILE tiles they reach drawn again,
plus the static tiles whose points can look up an occupied part of the shadow map (elsewhere their visibility is
exactly 1, their full-sun colour). The shadow map keeps no face ids (only its nearness is looked up) and turns a
texel's nearness into an occluder depth only when it is read. Helpers called per pixel take scalars: a numba call
passing arrays costs more than the arithmetic of a pixel.
"""

from __future__ import annotations

import numpy as np

from superdex_gym.sim.jit import inner_kernel, kernel

# Triangle flags (`render_worlds`' ``tri_flags``).
PATTERNED = 1  # albedo from the checker pattern at the pixel's world position
CASTS_SHADOW = 2
RECEIVES_SHADOW = 4
STATIC = 8  # a static actor's: drawn into the world's kept static layer, not every frame

_MIN_TWICE_AREA_PX2 = 1e-9  # raster.py's degenerate-triangle threshold
_SHADOW_MARGIN_TEXELS = 2  # shading.ShadowMap._MARGIN_TEXELS
TILE = 4  # pixels per side of the static layer's tiles, whose light-space bounds skip shadow lookups
BLOCK = 4  # shadow-map texels per side of a block marked when a caster triangle's texel box reaches it


@inner_kernel
def _edge_span(a, b, c, y_centre, lo, hi):
    """The span [lo, hi] of a row at ``y_centre`` narrowed to the inside of edge a x + b y + c >= 0; True when a
    horizontal edge leaves the row outside."""
    rest = b * y_centre + c
    if a > 0:
        return max(lo, -rest / a), hi, False
    if a < 0:
        return lo, min(hi, -rest / a), False
    return lo, hi, rest < 0 or (rest == 0 and b < 0)


@inner_kernel
def _raster_triangle(x0, y0, x1, y1, x2, y2, q0, q1, q2, tri_id, width, height, zq, zid):
    """Z-buffer one triangle (screen corners, nearness per corner) into ``zq`` / ``zid`` (flat, width * height):
    a fragment wins where its float32 nearness is larger, or equal with a larger id (raster.resolve_nearest's key);
    ``tri_id`` -1 keeps the nearness only (``zid`` untouched).
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
        lo, hi, blocked0 = _edge_span(a0, b0, c0, y_centre, x_min, x_max)
        lo, hi, blocked1 = _edge_span(a1, b1, c1, y_centre, lo, hi)
        lo, hi, blocked2 = _edge_span(a2, b2, c2, y_centre, lo, hi)
        blocked = blocked0 or blocked1 or blocked2
        col_first = max(np.ceil(lo - 0.5), 0.0)
        col_last = min(np.ceil(hi - 0.5) - 1.0, width - 1.0)
        count = int(col_last - col_first + 1)
        if count > 0 and not blocked:
            q_first = np.float32(p * (col_first + 0.5) + qq * (row + 0.5) + r)
            start = int(row) * width + int(col_first)
            step64 = np.float64(q_step)
            if tri_id < 0:
                # no id kept (the shadow map): the nearer value wins, an unconditional max the loop can vectorize
                for i in range(count):
                    zq[start + i] = max(zq[start + i], np.float32(step64 * i) + q_first)
            else:
                for i in range(count):
                    q = np.float32(step64 * i) + q_first
                    pix = start + i
                    if q > zq[pix] or (q == zq[pix] and tri_id > zid[pix]):
                        zq[pix] = q
                        zid[pix] = tri_id
        row += 1.0


@inner_kernel
def _draw_faces(faces, corners, normals, eye, rot, focal, near, width, height, zq, zid, view, clipped, dirty,
                base_q, base_id):
    """Z-buffer the triangles ``faces`` (indices into world ``corners`` (T, 3, 3) and unit ``normals`` (T, 3)) that
    turn their front to ``eye`` (renderer._project's back-face test), in camera coordinates (camera-from-world rows
    ``rot``; camera.world_to_camera's sum order), cut at the near plane (raster.clip_triangles_near: one corner in
    front gives one triangle, two give two) and projected; ``view`` (3, 3) and ``clipped`` (2, 3, 3) are scratch.
    With ``dirty`` (TILE x TILE tiles, row-major; empty: none) the tiles of the pixels a piece's screen box reaches
    (one pixel wider on each side: a pixel is drawn only where its centre is inside) are marked, and a tile newly
    marked gets its z-buffer ``zq`` / ``zid`` from ``base_q`` / ``base_id`` first (the rest is never copied).
    One function for the whole loop: a numba call passing arrays costs more than a small triangle's raster."""
    tiles_x = (width + TILE - 1) // TILE
    v = view
    for f in range(faces.size):
        tri_id = faces[f]
        if not (normals[tri_id, 0] * (eye[0] - corners[tri_id, 0, 0])
                + normals[tri_id, 1] * (eye[1] - corners[tri_id, 0, 1])
                + normals[tri_id, 2] * (eye[2] - corners[tri_id, 0, 2])) > 0.0:
            continue
        for c in range(3):
            d0, d1, d2 = (corners[tri_id, c, 0] - eye[0], corners[tri_id, c, 1] - eye[1],
                          corners[tri_id, c, 2] - eye[2])
            for j in range(3):
                v[c, j] = d0 * rot[j, 0] + d1 * rot[j, 1] + d2 * rot[j, 2]
        n_front = 0
        for k in range(3):
            if -v[k, 2] >= near:
                n_front += 1
        if n_front == 0:
            continue
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
            x0, y0 = 0.5 * width + focal * clipped[t, 0, 0] / d0, 0.5 * height - focal * clipped[t, 0, 1] / d0
            x1, y1 = 0.5 * width + focal * clipped[t, 1, 0] / d1, 0.5 * height - focal * clipped[t, 1, 1] / d1
            x2, y2 = 0.5 * width + focal * clipped[t, 2, 0] / d2, 0.5 * height - focal * clipped[t, 2, 1] / d2
            if dirty.size > 0:
                r0, r1, c0, c1 = _tile_box(x0, y0, x1, y1, x2, y2, width, height)
                for r in range(r0, r1 + 1):
                    for c in range(c0, c1 + 1):
                        if dirty[r * tiles_x + c]:
                            continue
                        dirty[r * tiles_x + c] = True
                        for row in range(r * TILE, min(r * TILE + TILE, height)):
                            for i in range(row * width + c * TILE, row * width + min(c * TILE + TILE, width)):
                                zq[i], zid[i] = base_q[i], base_id[i]
            _raster_triangle(x0, y0, x1, y1, x2, y2, 1.0 / d0, 1.0 / d1, 1.0 / d2, tri_id, width, height, zq, zid)


@inner_kernel
def _tile_box(x0, y0, x1, y1, x2, y2, width, height):
    """First and last tile row and column of the pixels a triangle's screen box reaches, one pixel wider on each
    side (last < first when off screen; NaN corners draw nothing either)."""
    x_lo, x_hi = min(min(x0, x1), x2), max(max(x0, x1), x2)
    y_lo, y_hi = min(min(y0, y1), y2), max(max(y0, y1), y2)
    if not (x_hi >= -1.0 and y_hi >= -1.0 and x_lo <= width + 1.0 and y_lo <= height + 1.0):
        return 0, -1, 0, -1
    return (int(max(np.floor(y_lo) - 1.0, 0.0)) // TILE, int(min(np.floor(y_hi) + 1.0, height - 1.0)) // TILE,
            int(max(np.floor(x_lo) - 1.0, 0.0)) // TILE, int(min(np.floor(x_hi) + 1.0, width - 1.0)) // TILE)


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
def _pose_faces(tri_local, tri_actor, pos, rot, corners, normals, crosses):
    """World corners (T, 3, 3), unit normals (T, 3) and (c1 - c0) x (c2 - c0) ``crosses`` (T, 3) of the local
    triangles under one world's actor poses."""
    for t in range(tri_local.shape[0]):
        a = tri_actor[t]
        for k in range(3):
            for j in range(3):
                corners[t, k, j] = (tri_local[t, k, 0] * rot[a, j, 0] + tri_local[t, k, 1] * rot[a, j, 1]
                                    + tri_local[t, k, 2] * rot[a, j, 2]) + pos[a, j]
        e10, e11, e12 = corners[t, 1, 0] - corners[t, 0, 0], corners[t, 1, 1] - corners[t, 0, 1], \
            corners[t, 1, 2] - corners[t, 0, 2]
        e20, e21, e22 = corners[t, 2, 0] - corners[t, 0, 0], corners[t, 2, 1] - corners[t, 0, 1], \
            corners[t, 2, 2] - corners[t, 0, 2]
        n0, n1, n2 = e11 * e22 - e12 * e21, e12 * e20 - e10 * e22, e10 * e21 - e11 * e20
        crosses[t, 0], crosses[t, 1], crosses[t, 2] = n0, n1, n2
        length = np.sqrt(n0 * n0 + n1 * n1 + n2 * n2)
        if length > 0:
            normals[t, 0], normals[t, 1], normals[t, 2] = n0 / length, n1 / length, n2 / length
        else:
            normals[t, 0], normals[t, 1], normals[t, 2] = 0.0, 0.0, 0.0


@inner_kernel
def _light_frame(light):
    """Unit axes e1, e2 across the light's travel direction (shading.ShadowMap's basis), as six scalars."""
    lx, ly, lz = light[0], light[1], light[2]
    if abs(lz) > 0.9:
        hx, hy, hz = 1.0, 0.0, 0.0
    else:
        hx, hy, hz = 0.0, 0.0, 1.0
    e1x, e1y, e1z = hy * lz - hz * ly, hz * lx - hx * lz, hx * ly - hy * lx
    n = np.sqrt(e1x * e1x + e1y * e1y + e1z * e1z)
    e1x, e1y, e1z = e1x / n, e1y / n, e1z / n
    e2x, e2y, e2z = ly * e1z - lz * e1y, lz * e1x - lx * e1z, lx * e1y - ly * e1x
    return e1x, e1y, e1z, e2x, e2y, e2z


@inner_kernel
def _shadow_map(corners, crosses, tri_flags, light, size, bias_texels, smap, no_ids, scratch, params, extent, occupied):
    """shading.ShadowMap for one world: the casters' faces turned toward the light, orthographic along ``light``,
    fitted to their extent, into ``smap`` (size * size occluder nearnesses ``offset - light depth``, 0 where none;
    ``no_ids`` any int64 array: drawn with id -1, no id kept). ``params`` gets the float32 lookup maps:
    3 x 3 linear, 3 offsets, then ``offset``; ``extent`` the map's origin along e1, e2 and its texel [m];
    ``occupied`` (ceil(size / BLOCK) ** 2,) True for the BLOCK x BLOCK blocks a caster's texel box reaches (outside
    them every texel is empty). Returns False when nothing casts a shadow."""
    lx, ly, lz = light[0], light[1], light[2]
    e1x, e1y, e1z, e2x, e2y, e2z = _light_frame(light)
    count = 0
    lo0 = lo1 = lo2 = np.inf
    hi0 = hi1 = hi2 = -np.inf
    for t in range(corners.shape[0]):
        if not (tri_flags[t] & CASTS_SHADOW):
            continue
        if not (crosses[t, 0] * lx + crosses[t, 1] * ly + crosses[t, 2] * lz < 0.0):
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
    for i in range(smap.size):  # plain loops: numba's slice assignment goes element by element
        smap[i] = 0.0
    for i in range(occupied.size):
        occupied[i] = False
    blocks = (size + BLOCK - 1) // BLOCK
    for t in range(count):
        x_lo = min(min(scratch[t, 0, 0], scratch[t, 1, 0]), scratch[t, 2, 0])
        x_hi = max(max(scratch[t, 0, 0], scratch[t, 1, 0]), scratch[t, 2, 0])
        y_lo = min(min(scratch[t, 0, 1], scratch[t, 1, 1]), scratch[t, 2, 1])
        y_hi = max(max(scratch[t, 0, 1], scratch[t, 1, 1]), scratch[t, 2, 1])
        # a texel is written only where its centre is inside: the box's texels and more
        c0, c1 = _block_span(x_lo, x_hi, o0, texel, size)
        r0, r1 = _block_span(y_lo, y_hi, o1, texel, size)
        for br in range(r0, r1 + 1):
            for bc in range(c0, c1 + 1):
                occupied[br * blocks + bc] = True
        _raster_triangle((scratch[t, 0, 0] - o0) / texel, (scratch[t, 0, 1] - o1) / texel,
                         (scratch[t, 1, 0] - o0) / texel, (scratch[t, 1, 1] - o1) / texel,
                         (scratch[t, 2, 0] - o0) / texel, (scratch[t, 2, 1] - o1) / texel,
                         offset - scratch[t, 0, 2], offset - scratch[t, 1, 2], offset - scratch[t, 2, 2],
                         -1, size, size, smap, no_ids)
    bias = bias_texels * texel + 1e-5
    params[0], params[1], params[2] = np.float32(e1x / texel), np.float32(e1y / texel), np.float32(e1z / texel)
    params[3], params[4], params[5] = np.float32(e2x / texel), np.float32(e2y / texel), np.float32(e2z / texel)
    params[6], params[7], params[8] = np.float32(lx), np.float32(ly), np.float32(lz)
    params[9], params[10], params[11] = np.float32(-o0 / texel - 0.5), np.float32(-o1 / texel - 0.5), np.float32(-bias)
    params[12] = np.float32(offset)
    extent[0], extent[1], extent[2] = o0, o1, texel
    return True


@inner_kernel
def _occluder_depth(nearness, offset):
    """The light depth of a shadow-map texel's occluder, inf where none: computed at lookup for the 4 texels read,
    not for the whole map. A Python float minus a float32 array is float32 arithmetic in numpy (NEP 50): the
    oracle's occluder depths."""
    return offset - nearness if nearness > 0.0 else np.float32(np.inf)


@inner_kernel
def _shadow_texel(x, y, z, size, m):
    """Where float32 world x, y, z looks the shadow map up (shading.ShadowMap.visibility_at): the flat index of its
    2 x 2 texels' first (-1 when they lie in the map's empty border, two texels wide: lit, as the lookup says), the
    bilinear weights and the point's light depth. ``m``: the tuple of `_shadow_map`'s 13 float32 parameters."""
    tx = x * m[0] + y * m[1] + z * m[2] + m[9]
    ty = x * m[3] + y * m[4] + z * m[5] + m[10]
    if tx < 1.0 or ty < 1.0 or tx >= size - 2 or ty >= size - 2:
        return -1, 0.0, 0.0, np.float32(0.0)
    light_depth = x * m[6] + y * m[7] + z * m[8] + m[11]
    top = np.float32(size - 1.001)
    tx = min(max(tx, np.float32(0.0)), top)
    ty = min(max(ty, np.float32(0.0)), top)
    col, row = np.int32(tx), np.int32(ty)
    # float32 - int32 promotes to float64 in numpy, so the oracle's weights are float64
    return row * size + col, np.float64(tx) - col, np.float64(ty) - row, light_depth


@inner_kernel
def _pcf(light_depth, n00, n10, n01, n11, offset, fx, fy):
    """Sun visibility in [0, 1]: the 2 x 2 texels' (nearnesses ``n``) lit tests blended bilinearly."""
    lit00 = 1.0 if light_depth <= _occluder_depth(n00, offset) else 0.0
    lit10 = 1.0 if light_depth <= _occluder_depth(n10, offset) else 0.0
    lit01 = 1.0 if light_depth <= _occluder_depth(n01, offset) else 0.0
    lit11 = 1.0 if light_depth <= _occluder_depth(n11, offset) else 0.0
    lower = lit00 + fx * (lit10 - lit00)
    upper = lit01 + fx * (lit11 - lit01)
    return lower + fy * (upper - lower)


@inner_kernel
def _checker_parity(dominant, x, y, z, ox, oy, oz, inv_cell):
    """0 or 1: the checker cell at float32 world x, y, z of a face whose normal is largest along axis ``dominant``
    (the pattern origin ``ox, oy, oz``; float32 coordinates minus the float64 origin: float64 in numpy, as in
    albedo_planes)."""
    dx = np.float64(x) - ox
    dy = np.float64(y) - oy
    u = np.float32((dy if dominant == 0 else dx) * inv_cell)
    v = np.float32((dy if dominant == 2 else np.float64(z) - oz) * inv_cell)
    return np.int32(np.floor(u) + np.floor(v)) & 1


@inner_kernel
def _lit(al0, al1, al2, ambient, diffuse, sun):
    """The packed colour of float32 albedo ``al`` under flat light ``ambient + diffuse * sun``."""
    light32 = np.float32(ambient + diffuse * sun)
    return _pack(al0 * light32, al1 * light32, al2 * light32)


@inner_kernel
def _unpack(colour):
    return (np.uint8(colour & np.uint32(0xFF)), np.uint8((colour >> np.uint32(8)) & np.uint32(0xFF)),
            np.uint8((colour >> np.uint32(16)) & np.uint32(0xFF)))


@inner_kernel
def _block_span(lo, hi, origin, texel, size):
    """The first and last shadow-map block (BLOCK texels) that points from ``lo`` to ``hi`` along a light axis can
    look up: texel coordinates ``(e - origin) / texel - 0.5``, the 2 x 2 lookup's next texel, and half a texel more
    on each side for the lookup's float32 rounding (~1e-4 texel); last < first when off the map (lit by rule) or
    when ``lo > hi`` (no point)."""
    t_lo, t_hi = (lo - origin) / texel - 1.0, (hi - origin) / texel + 1.0
    if not (t_hi >= 0.0 and t_lo <= size and lo <= hi):
        return 0, -1
    blocks = (size + BLOCK - 1) // BLOCK
    return (min(max(int(np.floor(t_lo)) // BLOCK, 0), blocks - 1),
            min(max(int(np.floor(t_hi)) // BLOCK, 0), blocks - 1))


@inner_kernel
def _copy(dst, src):
    """``dst[:] = src`` for 1-d contiguous arrays as a plain loop (which compiles to a vectorized copy; numba's
    slice assignment goes element by element)."""
    for i in range(src.size):
        dst[i] = src[i]


@inner_kernel
def _key_matches(key, values, n):
    """Whether ``key[:n]`` equals ``values[:n]`` exactly (a NaN never matches); then ``key`` takes ``values``."""
    same = True
    for i in range(n):
        if key[i] != values[i]:
            same = False
        key[i] = values[i]
    return same


@inner_kernel
def _put(buf, n, values):
    """Copy ``values`` (C-contiguous) into ``buf`` from ``n``; the index after them."""
    flat = values.ravel()
    for i in range(flat.size):
        buf[n + i] = flat[i]
    return n + flat.size


@kernel
def render_worlds(tri_local, tri_actor, tri_flags, tri_seg, actor_pos, actor_rot, actor_albedo,
                  mk_local, mk_index, mk_radius, mk_centre, mk_albedo, mk_alpha,
                  checker_colors, checker_cell, checker_origin, light, background,
                  cam_eye, cam_rot, focal, near, far, ray_right, ray_up, shading, shadow_size, shadows,
                  want_rgb, want_geometry, empty_depth, slots, st_key, st_q, st_id, st_rgb, st_depth, st_seg,
                  st_xyz, st_tile, mk_key, mk_q, mk_light, mk_box, rgb, depth, seg):
    """Draw world w's frame for every w into ``rgb`` (W, H, Wd, 3) uint8, ``depth`` (W, H, Wd) float32 [m] (far
    ``empty_depth`` where nothing opaque) and ``seg`` (W, H, Wd) int32 (``tri_seg`` of the visible face, 0 where none).

    Meshes: ``tri_local`` (T, 3, 3) corners in their actor's frame, ``tri_actor`` (T,), ``tri_flags`` (T,)
    (PATTERNED | CASTS_SHADOW | RECEIVES_SHADOW | STATIC), ``tri_seg`` (T,) int32; markers ``mk_local`` (Tm, 3, 3)
    about their centre, ``mk_index`` (Tm,) marker of each, ``mk_radius`` (M,) [m] a radius holding each marker. Per
    world: ``actor_pos`` (W, A, 3), ``actor_rot`` (W, A, 3, 3), ``actor_albedo`` (W, A, 3), ``mk_centre`` (W, M, 3),
    ``mk_albedo`` (W, M, 3), ``checker_colors`` (W, 2, 3), ``light`` (W, 3) unit travel direction, ``background``
    (W, 3), ``cam_eye`` (W, 3), ``cam_rot`` (W, 3, 3) camera-from-world rows. Shared: ``mk_alpha`` (M,) float32,
    ``checker_cell`` [m], ``checker_origin`` (3,), ``focal`` [px], ``near``, ``far`` [m], ``ray_right`` / ``ray_up``
    (H * Wd,) float32 camera.pixel_ray_slopes, ``shading`` (sky, ground, diffuse, bias texels), ``shadow_size``
    texels, ``shadows``; ``want_rgb`` False skips the shading (depth and segmentation only), ``want_geometry``
    False leaves ``depth`` and ``seg`` unwritten (rgb only).

    Layers kept between calls in cache slot ``slots[w]`` (S slots; the arrays' first axis): the STATIC triangles'
    z-buffer ``st_q`` / ``st_id`` (S, H * Wd), their frame in full sun ``st_rgb`` (S, H * Wd, 3), ``st_depth``,
    ``st_seg`` (S, H * Wd), each pixel's float32 world point ``st_xyz`` (S, H * Wd, 3) and each TILE x TILE tile's
    bounds along the light frame's e1, e2 (min, max, min, max) ``st_tile`` (S, tiles, 4), rebuilt when ``st_key``
    (S, 24 + 15 A) (the camera, light, checker and background colours, the static actors' albedo and poses)
    changes; a frame is that layer's, redrawn only in the tiles the moving triangles or their shadows reach; the
    markers' layers ``mk_q`` (nearness, 0 where none) and ``mk_light`` (S, M, H * Wd) within the pixel boxes
    ``mk_box`` (S, M, 4), rebuilt when ``mk_key`` (S, 15 + 3 M) (the centres, camera, light) changes. A z-buffer
    keeps the largest (nearness, face) of the fragments drawn, whatever their order, so the static layer then the
    moving triangles give the frame drawing all at once gives. A NaN key never matches: fill the keys with NaN to
    drop the layers."""
    num_worlds, height, width = depth.shape[0], depth.shape[1], depth.shape[2]
    n_pix = height * width
    n_tri, n_mk_tri, n_mk = tri_local.shape[0], mk_local.shape[0], mk_centre.shape[1]
    n_actor = actor_pos.shape[1]
    sky, ground, diffuse_k, bias_texels = shading[0], shading[1], shading[2], shading[3]
    corners = np.empty((n_tri, 3, 3))
    normals = np.empty((n_tri, 3))
    crosses = np.empty((n_tri, 3))
    view = np.empty((3, 3))
    clipped = np.empty((2, 3, 3))
    zq = np.empty(n_pix, dtype=np.float32)
    zid = np.empty(n_pix, dtype=np.int32)
    face_ambient = np.empty(n_tri)
    face_diffuse = np.empty(n_tri)
    face_sunlit = np.empty(n_tri, dtype=np.uint32)
    face_albedo = np.empty((n_tri + 2, 3), dtype=np.float32)
    face_dominant = np.empty(n_tri, dtype=np.int64)
    face_shaded = np.empty(n_tri, dtype=np.bool_)
    smap = np.empty(shadow_size * shadow_size, dtype=np.float32)
    no_ids = np.empty(1, dtype=np.int32)  # the shadow map keeps nearness only
    scratch = np.empty((n_tri, 3, 3))
    smap_params = np.zeros(13, dtype=np.float32)
    mk_corners = np.empty((n_mk_tri, 3, 3))
    mk_normals = np.empty((n_mk_tri, 3))
    mk_crosses = np.empty((n_mk_tri, 3))
    mk_rot = np.zeros((max(n_mk, 1), 3, 3))
    for m in range(n_mk):
        for j in range(3):
            mk_rot[m, j, j] = 1.0
    mk_actor = mk_index.copy()
    mid = np.empty((max(n_mk, 1), n_pix), dtype=np.int32)
    order = np.empty(max(n_mk, 1), dtype=np.int64)
    actor_static = np.zeros(n_actor, dtype=np.bool_)
    n_static, n_moving = 0, 0
    for t in range(n_tri):
        if tri_flags[t] & STATIC:
            actor_static[tri_actor[t]] = True
            n_static += 1
    fixed, moving = np.empty(n_static, dtype=np.int64), np.empty(n_tri - n_static, dtype=np.int64)
    for t in range(n_tri):
        if tri_flags[t] & STATIC:
            fixed[t - n_moving] = t
        else:
            moving[n_moving] = t
            n_moving += 1
    mk_faces = np.arange(n_mk_tri)
    mk_first = np.searchsorted(mk_index, np.arange(n_mk + 1))  # markers' triangles come in marker order
    key = np.empty(max(st_key.shape[1], mk_key.shape[1]))
    tiles_x = (width + TILE - 1) // TILE
    n_tiles = st_tile.shape[1]
    dirty = np.zeros(n_tiles, dtype=np.bool_)
    no_tiles = np.zeros(0, dtype=np.bool_)
    extent = np.empty(3)
    blocks = (shadow_size + BLOCK - 1) // BLOCK
    occupied = np.empty(blocks * blocks, dtype=np.bool_)
    q_far = np.float32(1.0 / far)
    inv255 = np.float32(255.0)
    inv_cell = np.float64(np.float32(1.0 / checker_cell))
    ox, oy, oz = checker_origin[0], checker_origin[1], checker_origin[2]
    for w in range(num_worlds):
        s = slots[w]
        eye, rot = cam_eye[w], cam_rot[w]
        lx, ly, lz = light[w, 0], light[w, 1], light[w, 2]
        ex, ey, ez = np.float32(eye[0]), np.float32(eye[1]), np.float32(eye[2])
        r00, r01, r02 = np.float32(rot[0, 0]), np.float32(rot[0, 1]), np.float32(rot[0, 2])
        r10, r11, r12 = np.float32(rot[1, 0]), np.float32(rot[1, 1]), np.float32(rot[1, 2])
        r20, r21, r22 = np.float32(rot[2, 0]), np.float32(rot[2, 1]), np.float32(rot[2, 2])
        background_packed = _pack(np.float32(background[w, 0]), np.float32(background[w, 1]),
                                  np.float32(background[w, 2]))
        _pose_faces(tri_local, tri_actor, actor_pos[w], actor_rot[w], corners, normals, crosses)
        # flat lighting per face (renderer._Faces.build); float32 albedo per face, then the checker's two colours
        for t in range(n_tri):
            amb = ground + (sky - ground) * 0.5 * (1.0 + normals[t, 2])
            dif = diffuse_k * max(0.0, -(normals[t, 0] * lx + normals[t, 1] * ly + normals[t, 2] * lz))
            face_ambient[t], face_diffuse[t] = amb, dif
            for j in range(3):
                face_albedo[t, j] = np.float32(actor_albedo[w, tri_actor[t], j])
            face_sunlit[t] = _lit(face_albedo[t, 0], face_albedo[t, 1], face_albedo[t, 2], amb, dif, 1.0)
            ax0, ax1, ax2 = abs(normals[t, 0]), abs(normals[t, 1]), abs(normals[t, 2])
            face_dominant[t] = -1 if not (tri_flags[t] & PATTERNED) else (
                0 if (ax0 >= ax1 and ax0 >= ax2) else (1 if ax1 >= ax2 else 2))
        for k in range(2):
            for j in range(3):
                face_albedo[n_tri + k, j] = np.float32(checker_colors[w, k, j])
        n = _put(key, 0, eye)
        n = _put(key, n, rot)
        n = _put(key, n, light[w])
        n = _put(key, n, checker_colors[w])
        n = _put(key, n, background[w])
        for a in range(n_actor):
            for j in range(3):
                key[n + j] = actor_albedo[w, a, j] if actor_static[a] else 0.0
                key[n + 3 + j] = actor_pos[w, a, j] if actor_static[a] else 0.0
                for i in range(3):
                    key[n + 6 + 3 * j + i] = actor_rot[w, a, j, i] if actor_static[a] else 0.0
            n += 15
        if not _key_matches(st_key[s], key, n):
            # the static layer: its z-buffer (far fragments dropped, as the frame drops them), its frame, and each
            # pixel's world point with its tile's bounds across the light
            sq, sid_, bounds = st_q[s], st_id[s], st_tile[s]
            sq[:] = 0.0
            sid_[:] = -1
            e1x, e1y, e1z, e2x, e2y, e2z = _light_frame(light[w])
            for k in range(n_tiles):
                bounds[k, 0], bounds[k, 1], bounds[k, 2], bounds[k, 3] = np.inf, -np.inf, np.inf, -np.inf
            _draw_faces(fixed, corners, normals, eye, rot, focal, near, width, height, sq, sid_, view, clipped,
                        no_tiles, sq, sid_)
            bg0, bg1, bg2 = _unpack(background_packed)
            for i in range(n_pix):
                f = sid_[i]
                if f < 0 or sq[i] < q_far:
                    sid_[i], sq[i] = -1, 0.0
                    st_depth[s, i], st_seg[s, i] = np.float32(empty_depth), 0
                    st_rgb[s, i, 0], st_rgb[s, i, 1], st_rgb[s, i, 2] = bg0, bg1, bg2
                    continue
                d = np.float32(1.0) / sq[i]
                st_depth[s, i], st_seg[s, i] = d, tri_seg[f]
                right_m, up_m = ray_right[i] * d, ray_up[i] * d
                x = ex + right_m * r00 + up_m * r10 - d * r20
                y = ey + right_m * r01 + up_m * r11 - d * r21
                z = ez + right_m * r02 + up_m * r12 - d * r22
                st_xyz[s, i, 0], st_xyz[s, i, 1], st_xyz[s, i, 2] = x, y, z
                dom = face_dominant[f]
                row = f if dom < 0 else n_tri + _checker_parity(dom, x, y, z, ox, oy, oz, inv_cell)
                st_rgb[s, i, 0], st_rgb[s, i, 1], st_rgb[s, i, 2] = _unpack(_lit(
                    face_albedo[row, 0], face_albedo[row, 1], face_albedo[row, 2], face_ambient[f], face_diffuse[f],
                    1.0))
                if tri_flags[f] & RECEIVES_SHADOW:
                    k = (i // width) // TILE * tiles_x + (i % width) // TILE
                    along1 = np.float64(x) * e1x + np.float64(y) * e1y + np.float64(z) * e1z
                    along2 = np.float64(x) * e2x + np.float64(y) * e2y + np.float64(z) * e2z
                    bounds[k, 0], bounds[k, 1] = min(bounds[k, 0], along1), max(bounds[k, 1], along1)
                    bounds[k, 2], bounds[k, 3] = min(bounds[k, 2], along2), max(bounds[k, 3], along2)
        # the static layer's frame, then the moving triangles over its z-buffer, in the tiles they reach
        if want_geometry:
            _copy(depth[w].reshape(n_pix), st_depth[s])
            _copy(seg[w].reshape(n_pix), st_seg[s])
        if want_rgb:
            _copy(rgb[w].reshape(3 * n_pix), st_rgb[s].reshape(3 * n_pix))
        for k in range(n_tiles):
            dirty[k] = False
        _draw_faces(moving, corners, normals, eye, rot, focal, near, width, height, zq, zid, view, clipped, dirty,
                    st_q[s], st_id[s])
        have_shadow = want_rgb and shadows and _shadow_map(corners, crosses, tri_flags, light[w], shadow_size,
                                                           bias_texels, smap, no_ids, scratch, smap_params, extent,
                                                           occupied)
        sm = (smap_params[0], smap_params[1], smap_params[2], smap_params[3], smap_params[4], smap_params[5],
              smap_params[6], smap_params[7], smap_params[8], smap_params[9], smap_params[10], smap_params[11],
              smap_params[12])  # scalars: a per-pixel call passing arrays costs more than its arithmetic
        for t in range(n_tri):
            face_shaded[t] = have_shadow and (tri_flags[t] & RECEIVES_SHADOW) != 0 and face_diffuse[t] > 0.0
        # the map's reach along e1, e2, a texel wider each side: a quick test before `_block_span`'s
        reach0, reach1 = extent[0] - extent[2], extent[0] + (shadow_size + 1) * extent[2]
        reach2, reach3 = extent[1] - extent[2], extent[1] + (shadow_size + 1) * extent[2]
        for k in range(n_tiles):
            # a static tile is drawn again where a moving triangle reached it, or where its points can look up an
            # occupied block of the shadow map (elsewhere their visibility is exactly 1)
            on = False
            if have_shadow and st_tile[s, k, 1] >= reach0 and st_tile[s, k, 0] <= reach1 \
                    and st_tile[s, k, 3] >= reach2 and st_tile[s, k, 2] <= reach3:
                c0, c1 = _block_span(st_tile[s, k, 0], st_tile[s, k, 1], extent[0], extent[2], shadow_size)
                r0, r1 = _block_span(st_tile[s, k, 2], st_tile[s, k, 3], extent[1], extent[2], shadow_size)
                for br in range(r0, r1 + 1):
                    for bc in range(c0, c1 + 1):
                        on = on or occupied[br * blocks + bc]
            if not (dirty[k] or on):
                continue
            ready = dirty[k]  # zq / zid hold this tile; elsewhere the static layer's are the frame's
            p0, q0 = (k // tiles_x) * TILE, (k % tiles_x) * TILE
            for r in range(p0, min(p0 + TILE, height)):
                for c in range(q0, min(q0 + TILE, width)):
                    i = r * width + c
                    f = zid[i] if ready else st_id[s, i]
                    if f < 0 or (zq[i] if ready else st_q[s, i]) < q_far:
                        if ready:
                            zid[i] = -1
                            zq[i] = 0.0
                            if want_geometry:
                                depth[w, r, c] = np.float32(empty_depth)
                                seg[w, r, c] = 0
                            if want_rgb:
                                rgb[w, r, c, 0], rgb[w, r, c, 1], rgb[w, r, c, 2] = _unpack(background_packed)
                        continue
                    static = f == st_id[s, i]
                    if static:  # the static face seen, drawn in full sun: darkened below where shadowed
                        if not (on and face_shaded[f]):
                            continue
                        x, y, z = st_xyz[s, i, 0], st_xyz[s, i, 1], st_xyz[s, i, 2]
                    else:
                        d = np.float32(1.0) / zq[i]
                        if want_geometry:
                            depth[w, r, c] = d
                            seg[w, r, c] = tri_seg[f]
                        if not want_rgb:
                            continue
                        if face_dominant[f] < 0 and not face_shaded[f]:
                            rgb[w, r, c, 0], rgb[w, r, c, 1], rgb[w, r, c, 2] = _unpack(face_sunlit[f])
                            continue
                        right_m, up_m = ray_right[i] * d, ray_up[i] * d
                        x = ex + right_m * r00 + up_m * r10 - d * r20
                        y = ey + right_m * r01 + up_m * r11 - d * r21
                        z = ez + right_m * r02 + up_m * r12 - d * r22
                    sun = 1.0
                    if face_shaded[f]:
                        base, fx, fy, light_depth = _shadow_texel(x, y, z, shadow_size, sm)
                        if base >= 0:
                            sun = _pcf(light_depth, smap[base], smap[base + 1], smap[base + shadow_size],
                                       smap[base + shadow_size + 1], sm[12], fx, fy)
                    if static and sun == 1.0:
                        continue
                    dom = face_dominant[f]
                    row = f if dom < 0 else n_tri + _checker_parity(dom, x, y, z, ox, oy, oz, inv_cell)
                    rgb[w, r, c, 0], rgb[w, r, c, 1], rgb[w, r, c, 2] = _unpack(_lit(
                        face_albedo[row, 0], face_albedo[row, 1], face_albedo[row, 2], face_ambient[f],
                        face_diffuse[f], sun))
        if not want_rgb or n_mk == 0:
            continue
        # translucent markers: each z-buffered into its own layer within its screen box (kept while the markers,
        # camera and light stay), then blended far to near where in front of the opaque surface
        n = _put(key, 0, mk_centre[w])
        n = _put(key, n, eye)
        n = _put(key, n, rot)
        n = _put(key, n, light[w])
        boxes = mk_box[s]
        if not _key_matches(mk_key[s], key, n):
            _pose_faces(mk_local, mk_actor, mk_centre[w], mk_rot, mk_corners, mk_normals, mk_crosses)
            _marker_boxes(mk_centre[w], mk_radius, eye, rot, focal, near, width, height, boxes)
            for m in range(n_mk):
                if boxes[m, 1] < boxes[m, 0]:
                    continue
                layer, ids = mk_q[s, m], mid[m]
                for r in range(boxes[m, 0], boxes[m, 1] + 1):
                    for c in range(boxes[m, 2], boxes[m, 3] + 1):
                        layer[r * width + c] = 0.0
                        ids[r * width + c] = -1
                _draw_faces(mk_faces[mk_first[m]:mk_first[m + 1]], mk_corners, mk_normals, eye, rot, focal, near,
                            width, height, layer, ids, view, clipped, no_tiles, layer, ids)
                for r in range(boxes[m, 0], boxes[m, 1] + 1):
                    for c in range(boxes[m, 2], boxes[m, 3] + 1):
                        i = r * width + c
                        t = ids[i]
                        if t < 0:
                            layer[i] = 0.0  # nothing of the marker here
                            continue
                        amb = ground + (sky - ground) * 0.5 * (1.0 + mk_normals[t, 2])
                        dif = diffuse_k * max(0.0, -(mk_normals[t, 0] * lx + mk_normals[t, 1] * ly
                                                     + mk_normals[t, 2] * lz))
                        mk_light[s, m, i] = np.float32(amb + dif)
        r_lo, r_hi, c_lo, c_hi = height, -1, width, -1
        for m in range(n_mk):
            r_lo, r_hi = min(r_lo, boxes[m, 0]), max(r_hi, boxes[m, 1])
            c_lo, c_hi = min(c_lo, boxes[m, 2]), max(c_hi, boxes[m, 3])
        for r in range(r_lo, r_hi + 1):
            for c in range(c_lo, c_hi + 1):
                i = r * width + c
                n_layers = 0
                for m in range(n_mk):
                    if not (boxes[m, 0] <= r <= boxes[m, 1] and boxes[m, 2] <= c <= boxes[m, 3]):
                        continue
                    mq = mk_q[s, m, i]
                    if mq > 0.0 and mq > (zq[i] if dirty[(r // TILE) * tiles_x + c // TILE] else st_q[s, i]) \
                            and mq >= q_far:
                        # insertion by nearness, far first; equal nearness keeps marker order (a stable sort)
                        j = n_layers
                        while j > 0 and mk_q[s, order[j - 1], i] > mq:
                            order[j] = order[j - 1]
                            j -= 1
                        order[j] = m
                        n_layers += 1
                for k in range(n_layers):
                    m = order[k]
                    light32 = mk_light[s, m, i]
                    alpha = mk_alpha[m]
                    keep = np.float32(1.0) - alpha
                    was0, was1, was2 = rgb[w, r, c, 0], rgb[w, r, c, 1], rgb[w, r, c, 2]
                    rgb[w, r, c, 0], rgb[w, r, c, 1], rgb[w, r, c, 2] = _unpack(_pack(
                        alpha * (np.float32(mk_albedo[w, m, 0]) * light32) + keep * (np.float32(was0) / inv255),
                        alpha * (np.float32(mk_albedo[w, m, 1]) * light32) + keep * (np.float32(was1) / inv255),
                        alpha * (np.float32(mk_albedo[w, m, 2]) * light32) + keep * (np.float32(was2) / inv255)))


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
