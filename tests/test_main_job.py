"""The main job (``python -m superdex_gym``, `superdex_gym.tour`) on a tiny budget: its table, its GIFs, its
command line; and the task list it iterates (the registry's SuperDex ids without the dense variants)."""

import re
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from helpers import gif_size_and_duration_ms

from superdex_gym import suite, tour


def test_task_ids_are_the_registered_sparse_ids():
    ids = suite.task_ids()
    registered = [i for i, s in gym.registry.items() if s.namespace == "SuperDex"]
    assert {"SuperDex/Push-v0", "SuperDex/Reach-v0"} <= set(ids)
    assert set(ids) == {i for i in registered if not i.endswith("Dense-v0")}
    for env_id in ids:  # every task has a scripted policy, and it acts on a batch
        venv = gym.make_vec(env_id, num_envs=2, vectorization_mode="vector_entry_point")
        obs, _ = venv.reset(seed=0)
        action = suite.scripted_policy(env_id)(obs)
        assert action.shape == (2, 4) and venv.action_space.contains(action.astype(np.float32))
        venv.close()


def test_main_job_prints_its_table_and_writes_a_gif_per_task(tmp_path, capsys):
    out = tmp_path / "tour"
    assert tour.main(["--num-envs", "4", "--gif-worlds", "2", "--frame-px", "32", "--output", str(out),
                      "--no-progress"]) == 0
    text = capsys.readouterr().out
    ids = suite.task_ids()
    rows = {}
    for line in text.splitlines():
        m = re.match(r"(SuperDex/\S+)\s+(\w+)\s+([\d.]+) \((\d+)/(\d+)\)\s+([\d.e+-]+) mm\s+([\d,]+)\s+([\d.e+]+) ms"
                     r"\s+(\S+)$", line)
        if m:
            rows[m.group(1)] = m
    assert sorted(rows) == sorted(ids)
    for env_id, m in rows.items():
        # the scripted policies solve their tasks (100% of 100 seeded episodes each, measured): 4 of 4 here
        assert m.group(2) == env_id.split("/")[1].split("-")[0]
        assert (int(m.group(4)), int(m.group(5))) == (4, 4) and float(m.group(3)) == 1.0
        # within the 5 cm success threshold; Throw's distance is to the bin's floor centre (its inside: +-8 cm)
        assert float(m.group(6)) < (120.0 if "Throw" in env_id else 50.0)
        assert int(m.group(7).replace(",", "")) > 0
        gif = out / f"{m.group(2).lower()}.gif"
        assert m.group(9) == str(gif) and gif.is_file()
        assert float(m.group(8)) > 0  # the warm-up step (ms, 3 digits: ~1 ms on a warm cache), timed apart
        # two 32 px worlds side by side; the reset frame + one episode (50 steps; Stack2 100, Stack3 150) at 25 Hz
        steps = gym.spec(env_id).max_episode_steps
        assert gif_size_and_duration_ms(gif) == ((64, 32), (steps + 1) * 40)
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{r.group(2).lower()}.gif" for r in rows.values())
    assert f"{tour.TRAIN_COMMAND}" in text.splitlines()[-1]


def test_main_job_without_gifs_writes_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert tour.main(["--num-envs", "2", "--gif-worlds", "0", "--only", "Reach", "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "SuperDex/Reach-v0" in text and "SuperDex/Push-v0" not in text
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv, message", [
    (["--num-envs", "0"], "--num-envs"),
    (["--num-envs", "2", "--gif-worlds", "3"], "--gif-worlds"),
    (["--only", "NoSuchTask"], "NoSuchTask"),
])
def test_main_job_rejects_bad_arguments(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert tour.main(argv) == 2
    assert message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_python_dash_m_superdex_gym_runs_the_main_job():
    out = subprocess.run([sys.executable, "-m", "superdex_gym", "--help"], capture_output=True, text=True, check=True)
    assert "--num-envs" in out.stdout and "(default: 32)" in out.stdout and "superdex-gym" in out.stdout
