"""Fit one oriented box to each Panda link's collision mesh (the Franka description's meshes as pybullet_data ships
them, Apache-2.0; installed with the ``bench`` extra) and print them as envs/robots/panda_model.py stores them:
per link, the box centre (3,) [m] and rotation (x, y, z, w) in the link frame and its half extents (3,) [m], with
the fit's volume over the mesh's convex hull volume. The box is trimesh's minimum-volume oriented bounding box.

    python tools/fit_panda_collision.py
"""

import pathlib

import numpy as np
import pybullet_data
import trimesh
from scipy.spatial.transform import Rotation

LINKS = ("link0", "link1", "link2", "link3", "link4", "link5", "link6", "link7", "hand", "finger")


def fit(name: str):
    """(centre, quaternion xyzw, half extents, box volume / hull volume) of one link's mesh."""
    path = pathlib.Path(pybullet_data.getDataPath()) / "franka_panda" / "meshes" / "collision" / f"{name}.obj"
    mesh = trimesh.load(path, force="mesh")
    to_box, extents = trimesh.bounds.oriented_bounds(mesh)
    box_pose = np.linalg.inv(to_box)  # the box frame in the link frame
    quat = Rotation.from_matrix(box_pose[:3, :3]).as_quat()
    return box_pose[:3, 3], quat, extents / 2.0, float(np.prod(extents) / mesh.convex_hull.volume)


def main() -> None:
    for name in LINKS:
        centre, quat, half, ratio = fit(name)
        print(f'    "{name}": ({tuple(np.round(centre, 5).tolist())}, {tuple(np.round(quat, 5).tolist())}, '
              f'{tuple(np.round(half, 5).tolist())}),  # box / hull volume {ratio:.2f}')


if __name__ == "__main__":
    main()
