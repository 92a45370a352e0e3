"""Test-only helpers shared by several test files (reference numbers live in reference.py)."""

import numpy as np

from superdex_gym.sim import shapes


def assert_worker_threads_give_the_serial_bits(run):
    """``run()`` (arrays, e.g. the final poses) stepped serially, then again with ``initialize(num_worker_threads=2)``
    (the compiled Newton on 2 threads): the same arrays, bit for bit."""
    import superdex_gym.sim as mochi

    serial = run()
    try:
        mochi.initialize(num_worker_threads=2)
        threaded = run()
    finally:
        mochi.shutdown()
    assert len(threaded) == len(serial)
    for got, want in zip(threaded, serial):
        np.testing.assert_array_equal(got, want)


def box_arrays(half):
    """(vertices, triangles) of the product's 12-triangle box (CCW seen from outside); a scalar half size is a
    cube."""
    return shapes.box_mesh(np.broadcast_to(np.asarray(half, dtype=float), (3,)))


def dense_hessian(terms) -> np.ndarray:
    """(W, 6N, 6N) from the diagonal blocks and couplings of `PotentialTerms` (the solver's assembly, written
    out); couplings must join two different bodies."""
    w, n = terms.gradient.shape[:2]
    dense = np.zeros((w, 6 * n, 6 * n))
    for b in range(n):
        dense[:, 6 * b:6 * b + 6, 6 * b:6 * b + 6] += terms.hessian_diag[:, b]
    for coupling in terms.couplings:
        for p, (a, b) in enumerate(zip(coupling.body_a, coupling.body_b)):
            assert a != b
            dense[:, 6 * a:6 * a + 6, 6 * b:6 * b + 6] += coupling.block[:, p]
            dense[:, 6 * b:6 * b + 6, 6 * a:6 * a + 6] += np.swapaxes(coupling.block[:, p], -1, -2)
    return dense


def gif_size_and_duration_ms(path):
    """A GIF's (width, height) and total duration in ms. Pillow merges identical consecutive frames into one longer
    frame, so frames are counted by duration."""
    from PIL import Image

    with Image.open(path) as im:
        total_ms = 0
        for i in range(im.n_frames):
            im.seek(i)
            total_ms += im.info["duration"]
        return im.size, total_ms


def staged_reward_episode_end(wrapper_cls, env_id: str, worlds: int = 2, seed: int = 4):
    """A staged-reward wrapper (training/rewards.py) over ``worlds`` worlds of ``env_id`` with 3-step episodes, stepped
    to the episodes' end: (rewards, infos) of the last step, whose observations are the next episodes' first, so
    the rewards must have been scored on each info's ``terminal_observation``."""
    from superdex_gym.envs.adapters.sb3 import SuperDexSB3VecEnv

    venv = wrapper_cls(SuperDexSB3VecEnv(worlds, seed=seed, env_id=env_id, max_episode_steps=3))
    venv.reset()
    for _ in range(3):
        _, rewards, dones, infos = venv.step(np.tile([[0.5, 0.2, -0.3, -1.0]], (worlds, 1)))
    assert dones.all() and rewards.dtype == np.float32
    return rewards, infos
