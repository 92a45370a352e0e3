"""The wheel maps sim/, envs/ and training/ into the superdex_gym namespace and carries the assets."""

import pathlib
import subprocess
import sys
import tomllib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE_DIRS = {"superdex_gym": "superdex_gym", "superdex_gym.sim": "sim", "superdex_gym.envs": "envs",
                "superdex_gym.training": "training"}


def all_packages():
    """Every directory with an __init__.py under the mapped roots, as dotted package names."""
    out = []
    for pkg, folder in PACKAGE_DIRS.items():
        for init in sorted((ROOT / folder).rglob("__init__.py")):
            rel = init.parent.relative_to(ROOT / folder)
            out.append(".".join([pkg, *rel.parts]) if rel.parts else pkg)
    return out


def test_every_subpackage_is_listed_in_pyproject():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert set(all_packages()) == set(config["packages"])
    assert config["package-dir"] == PACKAGE_DIRS


def test_wheel_installs_and_imports_every_module(tmp_path):
    wheel_dir, target = tmp_path / "wheel", tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(wheel_dir), str(ROOT)], check=True, cwd=tmp_path)
    wheels = list(wheel_dir.glob("superdex_gym-*.whl"))
    assert len(wheels) == 1
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target),
                    str(wheels[0])], check=True)
    modules = []
    for pkg, folder in PACKAGE_DIRS.items():
        for py in sorted((ROOT / folder).rglob("*.py")):
            rel = py.relative_to(ROOT / folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            if "assets" in parts:
                continue
            modules.append(".".join([pkg, *parts]))
    code = (
        "import importlib, sys, pathlib\n"
        f"mods = {modules!r}\n"
        "for m in mods:\n"
        "    mod = importlib.import_module(m)\n"
        f"    assert pathlib.Path(mod.__file__).is_relative_to({str(target)!r}), (m, mod.__file__)\n"
        "import superdex_gym.sim as s\n"
        "assert (s.ASSETS_PATH / 'sphere/icosphere_3subdiv.1.mochi.json').is_file()\n"
        "from superdex_gym.training import rllib, config\n"
        "assert {'reach_ppo', 'push_ppo'} <= set(rllib.available_configs())\n"
        "assert {'reach', 'push'} <= set(config.available_configs())\n"
        "assert 'sim' not in sys.modules and 'envs' not in sys.modules\n"
        "print(len(mods))\n"
    )
    # run from tmp_path with only the installed copy on the path (not the source tree, not the editable install)
    env = {"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin", "PYTHONNOUSERSITE": "1"}
    out = subprocess.run([sys.executable, "-S", "-c", "import site; site.addsitedir(%r); " % _site_packages() + code],
                         check=True, capture_output=True, text=True, cwd=tmp_path, env=env)
    assert int(out.stdout.strip()) == len(modules)


def _site_packages():
    """The numpy/scipy/trimesh site-packages, without the editable superdex_gym finder (.pth files skipped)."""
    import numpy

    return str(pathlib.Path(numpy.__file__).parents[1])


def test_engine_stands_alone():
    """sim/ never imports gymnasium, torch, SB3 or the env/training packages, and works without Gymnasium
    installed (importing superdex_gym registers the envs only when Gymnasium is there)."""
    import ast

    banned = {"gymnasium", "torch", "stable_baselines3"}
    for py in (ROOT / "sim").rglob("*.py"):
        tree = ast.parse(py.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
                if node.level >= 2 and (node.module or "").split(".")[0] in ("envs", "training"):
                    names.append("superdex_gym." + node.module)
            for name in names:
                assert name.split(".")[0] not in banned, (py, name)
                assert not name.startswith(("superdex_gym.envs", "superdex_gym.training")), (py, name)
    code = ("import sys\n"
            "for m in ('gymnasium', 'torch', 'stable_baselines3'): sys.modules[m] = None  # not installed\n"
            "import superdex_gym.sim as s\n"
            "scene = s.create_scene(); scene.step(0.01)\n"
            "assert 'superdex_gym.envs.core.env' not in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True)
