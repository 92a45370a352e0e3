"""Vectorized triangle rasterization for the software renderer (`rendering.py`): near clipping, span
expansion and the z-buffer resolve. Pure numpy, no per-pixel Python objects.

Screen conventions (shared with `rendering.Camera`): continuous pixel coordinates ``(x, y)`` with ``x`` to the
right and ``y`` down; pixel ``(row r, column c)`` covers ``[c, c + 1) x [r, r + 1)`` and is sampled at its
centre ``(c + 0.5, r + 0.5)``. Flat index of a pixel is ``r * width + c``.

How a triangle becomes fragments, with no loop over triangles or pixels:

1. Each triangle is split into one *span* per pixel row its bounding box crosses. A span's column range is
   solved in closed form from the three edge functions ``E_k(x, y) = A_k x + B_k y + C_k >= 0`` (oriented
   so the inside is non-negative), so fragments are generated only for covered pixels: no bounding-box
   waste, which matters for the big table quad.
2. Spans are expanded into fragments with ``np.repeat`` in chunks of at most ``max_fragments_per_chunk``.
3. Every fragment carries a *nearness* ``q`` that is affine in screen space (``q = 1 / depth`` for a
   perspective camera, ``q = offset - distance`` for an orthographic shadow camera); larger is nearer.

Fill rule: top-left (as in Direct3D / OpenGL rasterizers): a pixel centre exactly on an edge belongs to the
triangle for which it is a left or top edge. Shared edges give bit-identical span bounds (the edge
coefficients of the two triangles are exact negations), so every pixel centre inside a closed mesh's
silhouette is covered by exactly one of its front triangles: no cracks, and no double blending of
translucent surfaces.

The z-buffer packs ``(float32 bits of q) << 32 | triangle_id`` into one int64 and keeps the per-pixel
maximum with ``np.maximum.at``: positive float32 bit patterns sort like the floats, so the maximum key is
the nearest fragment, and its low 32 bits say which triangle it came from.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Fragments", "clip_triangles_near", "iterate_fragments", "resolve_nearest", "collect_fragments"]

# |twice the signed area| below this [pixel^2] is a degenerate (zero-coverage) triangle.
_MIN_TWICE_AREA_PX2 = 1e-9
# Default chunk size: 2M fragments * ~40 bytes of temporaries = ~80 MB peak; typical frames fit in one.
DEFAULT_MAX_FRAGMENTS_PER_CHUNK = 2_000_000
_ID_MASK = np.int64(0xFFFFFFFF)


@dataclass(frozen=True)
class Fragments:
    """Covered pixel samples of a batch of triangles.

    Attributes:
        pixel_index: (N,) int64 flat pixel index ``row * width + column``.
        nearness: (N,) float32 interpolated screen-affine nearness ``q`` (> 0, larger is nearer).
        triangle_id: (N,) int64 caller-supplied id of the triangle that produced the fragment.
    """

    pixel_index: np.ndarray
    nearness: np.ndarray
    triangle_id: np.ndarray


def clip_triangles_near(view_vertices: np.ndarray, near_m: float) -> tuple[np.ndarray, np.ndarray]:
    """Clip triangles against the camera near plane ``depth = near_m`` (Sutherland–Hodgman, vectorized).

    Args:
        view_vertices: (T, 3, 3) triangle corners in camera coordinates [m]; the camera looks down -z, so
            a corner's depth along the view axis is ``-z``.
        near_m: near-plane distance [m] > 0.

    Returns:
        ``(clipped (T', 3, 3) camera coordinates [m], source (T',) int64)``: triangles entirely in front are
        kept, entirely behind are dropped, crossing ones are cut exactly at the plane into one triangle
        (one corner in front) or two (two corners in front); ``source`` indexes the input triangle of each
        output triangle. Winding (cyclic corner order) is preserved.
    """
    depth = -view_vertices[:, :, 2]
    in_front = depth >= near_m
    n_front = in_front.sum(axis=1)
    keep = view_vertices[n_front == 3]
    keep_src = np.flatnonzero(n_front == 3)

    def rotated(index, first_corner):
        # Cyclically rotate corners so that ``first_corner`` comes first (winding unchanged).
        order = (first_corner[:, None] + np.arange(3)[None, :]) % 3
        return np.take_along_axis(view_vertices[index], order[:, :, None], axis=1)

    def cut(p_in, p_out):
        # Point on segment p_in -> p_out where depth == near_m.
        d_in, d_out = -p_in[:, 2], -p_out[:, 2]
        t = (d_in - near_m) / (d_in - d_out)
        return p_in + t[:, None] * (p_out - p_in)

    # One corner in front (a): triangle (a, cut(a, b), cut(a, c)).
    one = np.flatnonzero(n_front == 1)
    tri = rotated(one, np.argmax(in_front[one], axis=1))
    a, b, c = tri[:, 0], tri[:, 1], tri[:, 2]
    one_tris = np.stack([a, cut(a, b), cut(a, c)], axis=1)

    # Two corners in front (a, b; c behind): quad (a, b, cut(b, c), cut(a, c)) as two triangles.
    two = np.flatnonzero(n_front == 2)
    tri = rotated(two, (np.argmin(in_front[two], axis=1) + 1) % 3)
    a, b, c = tri[:, 0], tri[:, 1], tri[:, 2]
    bc, ac = cut(b, c), cut(a, c)
    two_tris = np.concatenate([np.stack([a, b, bc], axis=1), np.stack([a, bc, ac], axis=1)])

    clipped = np.concatenate([keep, one_tris, two_tris]).reshape(-1, 3, 3)
    source = np.concatenate([keep_src, one, two, two]).astype(np.int64)
    return clipped, source


def _spans(screen_xy, nearness, width, height):
    """Per-row spans of triangles; see module docstring. Returns a dict of (S,) arrays (S spans), or None.

    Everything is kept as 1-D arrays per corner / edge: numpy reductions over a length-3 axis are slow.
    """
    x0, x1, x2 = screen_xy[:, 0, 0], screen_xy[:, 1, 0], screen_xy[:, 2, 0]
    y0, y1, y2 = screen_xy[:, 0, 1], screen_xy[:, 1, 1], screen_xy[:, 2, 1]
    twice_area = (x1 - x0) * (y2 - y0) - (x2 - x0) * (y1 - y0)
    x_min, x_max = np.minimum(np.minimum(x0, x1), x2), np.maximum(np.maximum(x0, x1), x2)
    y_min, y_max = np.minimum(np.minimum(y0, y1), y2), np.maximum(np.maximum(y0, y1), y2)
    row_first = np.maximum(np.ceil(y_min - 0.5), 0.0)
    row_last = np.minimum(np.floor(y_max - 0.5), height - 1.0)
    live = np.flatnonzero((np.abs(twice_area) > _MIN_TWICE_AREA_PX2) & (row_last >= row_first)
                          & (x_max >= 0.5) & (x_min <= width - 0.5) & np.isfinite(twice_area))
    if live.size == 0:
        return None
    x0, x1, x2, y0, y1, y2 = x0[live], x1[live], x2[live], y0[live], y1[live], y2[live]
    twice_area, x_min, x_max = twice_area[live], x_min[live], x_max[live]
    q0, q1, q2 = nearness[live, 0], nearness[live, 1], nearness[live, 2]

    # Edge k runs from corner i to corner j and is opposite corner k: (1 -> 2), (2 -> 0), (0 -> 1).
    # E_k(x, y) = A x + B y + C with A = y_i - y_j, B = x_j - x_i, C = x_i y_j - x_j y_i; E_k / twice_area is
    # the barycentric weight of corner k.
    edges = [(y1 - y2, x2 - x1, x1 * y2 - x2 * y1), (y2 - y0, x0 - x2, x2 * y0 - x0 * y2),
             (y0 - y1, x1 - x0, x0 * y1 - x1 * y0)]
    # Nearness plane q(x, y) = P x + Q y + R from the barycentric weights.
    inv_area = 1.0 / twice_area
    P = (edges[0][0] * q0 + edges[1][0] * q1 + edges[2][0] * q2) * inv_area
    Q = (edges[0][1] * q0 + edges[1][1] * q1 + edges[2][1] * q2) * inv_area
    R = (edges[0][2] * q0 + edges[1][2] * q1 + edges[2][2] * q2) * inv_area
    sign = np.sign(twice_area)  # orient edges so the inside is E >= 0 (exact: multiply by +-1)

    n_rows = (row_last[live] - row_first[live] + 1).astype(np.int64)
    span_tri = np.repeat(np.arange(live.size), n_rows)  # index into the live arrays
    first_span = np.cumsum(n_rows) - n_rows
    row = row_first[live][span_tri] + (np.arange(span_tri.size) - first_span[span_tri])
    y_centre = row + 0.5

    # Column interval where all three edge functions are >= 0 on the row's centre line, clamped to the
    # triangle's x extent (exact in real arithmetic; it tames near-horizontal edges).
    # Top-left fill rule: a centre exactly on a left edge (a > 0: the inside lies to its right) or a top
    # edge (horizontal, inside below: b > 0) is inside; on a right or bottom edge it is outside.
    lo, hi = x_min[span_tri], x_max[span_tri]  # lo inclusive, hi exclusive
    blocked = np.zeros(span_tri.size, dtype=bool)  # a horizontal edge with the row outside it
    with np.errstate(divide="ignore", invalid="ignore"):
        for A, B, C in edges:
            a, b = (A * sign)[span_tri], (B * sign)[span_tri]
            rest = b * y_centre + (C * sign)[span_tri]
            bound = -rest / a
            lo = np.where(a > 0, np.maximum(lo, bound), lo)
            hi = np.where(a < 0, np.minimum(hi, bound), hi)
            blocked |= (a == 0) & ((rest < 0) | ((rest == 0) & (b < 0)))
    col_first = np.maximum(np.ceil(lo - 0.5), 0.0)  # first centre c + 0.5 >= lo
    col_last = np.minimum(np.ceil(hi - 0.5) - 1.0, width - 1.0)  # last centre c + 0.5 < hi
    count = (col_last - col_first + 1).astype(np.int64)
    nonempty = np.flatnonzero((count > 0) & ~blocked)
    span_tri, row, col_first, count = span_tri[nonempty], row[nonempty], col_first[nonempty], count[nonempty]
    # Nearness at the span's first pixel centre and its per-pixel step (float32: it ends up as float32 bits).
    q_first = P[span_tri] * (col_first + 0.5) + Q[span_tri] * (row + 0.5) + R[span_tri]
    return {
        "start_pixel": (row * width + col_first).astype(np.int64),
        "count": count,
        "q_first": q_first.astype(np.float32),
        "q_step": P[span_tri].astype(np.float32),
        "source": live[span_tri],
    }


def iterate_fragments(screen_xy: np.ndarray, nearness: np.ndarray, triangle_id: np.ndarray, width: int,
                      height: int, max_fragments_per_chunk: int = DEFAULT_MAX_FRAGMENTS_PER_CHUNK):
    """Yield `Fragments` of the triangles, at most ``max(max_fragments_per_chunk, width)`` at a time (a
    span, one row of one triangle, is never split).

    Args:
        screen_xy: (T, 3, 2) float64 corner pixel coordinates (x right, y down; pixel centres at +0.5).
        nearness: (T, 3) float64 screen-affine nearness per corner, > 0 (larger is nearer).
        triangle_id: (T,) int ids in [0, 2^31) stored with each fragment.
        width, height: image size [pixels].
    """
    spans = _spans(np.asarray(screen_xy, np.float64), np.asarray(nearness, np.float64), width, height)
    if spans is None:
        return
    ids = np.asarray(triangle_id, np.int64)[spans["source"]]
    count = spans["count"]
    end = np.cumsum(count)
    chunk_limit = max(int(max_fragments_per_chunk), width)
    s0 = 0
    while s0 < count.size:
        base = end[s0] - count[s0]  # fragments before this chunk
        s1 = max(int(np.searchsorted(end, base + chunk_limit, side="right")), s0 + 1)
        c = count[s0:s1]
        # Column offset of each fragment within its span (in-place arithmetic: fewer big temporaries).
        local = np.arange(int(end[s1 - 1] - base), dtype=np.int64)
        local -= np.repeat(end[s0:s1] - c - base, c)
        pixel_index = np.repeat(spans["start_pixel"][s0:s1], c)
        pixel_index += local
        q = np.repeat(spans["q_step"][s0:s1], c)
        q *= local
        q += np.repeat(spans["q_first"][s0:s1], c)
        yield Fragments(pixel_index=pixel_index, nearness=q, triangle_id=np.repeat(ids[s0:s1], c))
        s0 = s1


def resolve_nearest(screen_xy: np.ndarray, nearness: np.ndarray, triangle_id: np.ndarray, width: int,
                    height: int, max_fragments_per_chunk: int = DEFAULT_MAX_FRAGMENTS_PER_CHUNK):
    """Z-buffer the triangles (arguments as in `iterate_fragments`).

    Returns:
        ``(nearness (H * W,) float32, triangle_id (H * W,) int64)``: the nearest fragment's nearness per
        pixel (0 where empty) and its triangle id (-1 where empty). Ties keep the larger id.
    """
    zkey = np.full(width * height, -1, dtype=np.int64)
    for frag in iterate_fragments(screen_xy, nearness, triangle_id, width, height, max_fragments_per_chunk):
        key = frag.nearness.view(np.int32).astype(np.int64)
        key <<= 32
        key |= frag.triangle_id
        np.maximum.at(zkey, frag.pixel_index, key)
    empty = zkey < 0
    q = (zkey >> 32).astype(np.int32).view(np.float32)
    q[empty] = 0.0
    ids = zkey & _ID_MASK
    ids[empty] = -1
    return q, ids


def collect_fragments(screen_xy: np.ndarray, nearness: np.ndarray, triangle_id: np.ndarray, width: int,
                      height: int) -> Fragments:
    """All fragments of the triangles in one `Fragments` (for small translucent batches)."""
    parts = list(iterate_fragments(screen_xy, nearness, triangle_id, width, height))
    if not parts:
        empty_i, empty_f = np.zeros(0, np.int64), np.zeros(0, np.float32)
        return Fragments(empty_i, empty_f, empty_i.copy())
    return Fragments(*(np.concatenate([getattr(p, f) for p in parts])
                       for f in ("pixel_index", "nearness", "triangle_id")))
