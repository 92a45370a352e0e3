"""The CI soak (issue 16): 2e4 world steps per configuration of random and adversarial actions (constant corners of
the action box, bang-bang, fingers opening and closing on the object); nothing may go wrong. The long soaks are
``python -m superdex_gym.soak`` (docs/reliability.md)."""

import pytest

from superdex_gym.soak import CONFIGS, soak


@pytest.mark.parametrize("name", list(CONFIGS))
def test_soak_nothing_escapes_nothing_tunnels(name):
    env_id, kwargs = CONFIGS[name]
    counts = soak(env_id, kwargs, world_steps=20_000, num_worlds=128, seed=0)
    assert counts["world_steps"] >= 20_000
    for key in ("nan", "obs_outside_space", "outside_arena", "inside_static", "exceptions"):
        assert counts[key] == 0, (key, counts)
    assert counts["max_tunnelling_ratio"] < 1.0 or counts["physics_diverged"] > 0, counts
