"""The benchmark command line (not its figures: speed is measured there, never asserted): defaults in --help,
the ratio explained, --json for machines."""

import json

import numpy as np

import pytest

from superdex_gym import benchmark


def test_help_shows_the_defaults(capsys):
    with pytest.raises(SystemExit):
        benchmark.main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: 5)" in text and "(default: 100)" in text and "(default: 5000)" in text and "--json" in text


def test_one_case_to_json_with_its_ratio_explained(tmp_path, capsys):
    path = tmp_path / "bench.json"
    assert benchmark.main(["--only", "sphere on plane, W=1", "--repeats", "1", "--steps", "2", "--json", str(path),
                           "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert benchmark.RATIO_NOTE in out and "x0.1 means" in benchmark.RATIO_NOTE
    report = json.loads(path.read_text())
    assert list(report["cases"]) == ["sphere on plane, W=1"] and report["env"] == {}
    case, base = report["cases"]["sphere on plane, W=1"], report["baseline"]["batches of 1000 solves/s"]
    assert case["engine steps/s"] > 0 and case["ratio to baseline"] == pytest.approx(case["engine steps/s"] / base)
    assert f"(x{case['ratio to baseline']:.3g} baseline)" in out


def test_scaling_tables_and_plot(tmp_path):
    from superdex_gym import benchmark

    rows = benchmark.scaling(worlds=(1, 2), bodies=(1, 2), pile_worlds=2, env_steps=1, steps=1)
    assert [r["W"] for r in rows["worlds"]] == [1, 2]
    assert [r["bodies"] for r in rows["bodies"]] == [1, 2]
    # State per world: history (3 entries of 2 x (N, 3) + 2 x (N, 3, 3) float64) and the per-world arrays grow
    # with the bodies; the same per world whatever W.
    assert rows["worlds"][0]["stack state bytes/world"] == rows["worlds"][1]["stack state bytes/world"]
    assert rows["bodies"][1]["state bytes/world"] > rows["bodies"][0]["state bytes/world"]
    assert all(r["stack world-steps/s"] > 0 and r["Push world-steps/s"] > 0 for r in rows["worlds"])
    table, plot = benchmark.write_scaling(rows, tmp_path)
    data_rows = [line for line in table.read_text().splitlines() if line[:3] in ("| 1", "| 2")]
    assert len(data_rows) == 4  # two rows in each table
    assert plot.stat().st_size > 1000


def test_env_case_reports_the_threaded_batch_and_restores_serial():
    """The env case also times make_vec(64) with the opt-in worker threads, then leaves the process serial."""
    from types import SimpleNamespace

    import superdex_gym.sim as mochi

    out = benchmark.case_env(SimpleNamespace(env_steps=64))
    threaded = out["SuperDex/Push-v0 make_vec(64) aggregate env steps/s, 2 worker threads"]
    assert threaded > 0 and out["SuperDex/Push-v0 make_vec(64) aggregate env steps/s"] > 0
    assert mochi.context.worker_threads() == 1
    # the arm on the same task, and its cost against the gripper's
    assert out["SuperDex/PandaPush-v0 single env steps/s"] > 0
    assert out["ratio PandaPush-v0 / Push-v0, single"] == (out["SuperDex/PandaPush-v0 single env steps/s"]
                                                          / out["SuperDex/Push-v0 single env steps/s"])


def test_only_selects_the_env_cases_by_their_name(tmp_path):
    """`--only Push` runs the env cases (their name holds it) and no engine case; `--only stack` the reverse."""
    path = tmp_path / "bench.json"
    assert benchmark.main(["--only", "Push-v0", "--repeats", "1", "--env-steps", "64", "--json", str(path),
                           "--no-progress"]) == 0
    report = json.loads(path.read_text())
    assert report["cases"] == {} and "SuperDex/Push-v0 single env steps/s" in report["env"]
    assert benchmark.main(["--only", "5-box stack, W=1", "--repeats", "1", "--steps", "2", "--json", str(path),
                           "--no-progress"]) == 0
    report = json.loads(path.read_text())
    assert list(report["cases"]) == ["aligned 5-box stack, W=1"] and report["env"] == {}


def test_pixel_cases_report_the_ratio_frames_and_mujoco(tmp_path):
    """`--only "pixel cases"` runs the camera-observation cases only: the rgb / state-only ratio, one frame's time,
    frames/s at 64, 84 and 128, and MuJoCo's offscreen renderer (a rate, or why it cannot run here)."""
    path = tmp_path / "bench.json"
    assert benchmark.main(["--only", "pixel cases", "--repeats", "1", "--env-steps", "64", "--json", str(path),
                           "--no-progress"]) == 0
    report = json.loads(path.read_text())
    assert report["cases"] == {} and report["env"] == {}
    px = report["pixels"]
    ratio = px["ratio rgb 64x64 / state-only (target >= 0.5)"]
    assert ratio == pytest.approx(px["Push-v0 make_vec(64) rgb 64x64 aggregate env steps/s"]
                                  / px["Push-v0 make_vec(64) state-only aggregate env steps/s"])
    assert px["ratio rgb 64x64 / state-only by the stepping thread's CPU time"] > 0
    assert all(px[f"frames/s at {s}x{s} (64 worlds per kernel call, rgb + depth + segmentation)"] > 0
               for s in (64, 84, 128))
    mujoco = px["MuJoCo offscreen 64x64 frames/s"]
    assert (isinstance(mujoco, float) and mujoco > 0) or "unavailable" in mujoco or "cannot run headless" in mujoco


def test_arm_case_runs_and_its_worlds_hold_the_same_pose(tmp_path):
    path = tmp_path / "arm.json"
    name = "arm (7 joints + 2 fingers) holding a pose, W=1"
    assert benchmark.main(["--only", name, "--repeats", "1", "--steps", "2", "--json", str(path), "--no-progress",
                           "--skip-env"]) == 0
    assert json.loads(path.read_text())["cases"][name]["world-steps/s"] > 0
    scene, arm = benchmark.arm_scene(2)
    assert arm.get_num_dofs() == 9 and len(arm.get_nested_link_actors()) == 9
    for _ in range(3):
        scene.step(0.01)
    assert (arm.get_articulated_pose(world=0) == arm.get_articulated_pose(world=1)).all()
    # drives of stiffness 2000 against the links' weight: held within a few hundredths of the targets
    assert abs(arm.get_articulated_pose() - benchmark.ARM_POSE).max() < 0.05


def test_arm_cube_case_presses_the_fingers_on_the_cube():
    """The cube under the fingers changes the arm's motion (contact) and rests on its slab."""
    held, arm0 = benchmark.arm_scene(1)
    pressed, arm1 = benchmark.arm_cube_scene(2)
    cube = next(a for a in pressed.get_actors() if a.get_name() == "cube")
    for _ in range(20):
        held.step(0.01)
        pressed.step(0.01)
    assert abs(arm1.get_articulated_pose() - arm0.get_articulated_pose()).max() > 1e-3  # the cube pushes back
    y = pressed.get_actor_poses([cube])[0][:, 0, 1]
    assert np.all(abs(y - benchmark.ARM_CUBE_CENTRE[1]) < 2e-3)  # on the slab, not pushed through or thrown
    assert (arm1.get_articulated_pose(world=0) == arm1.get_articulated_pose(world=1)).all()
