"""What a new user meets first: a README read in minutes, docs without work-log narrative, modules of a readable
size, and a headless ``human`` window that touches only pygame's display."""

from __future__ import annotations

import pathlib
import re
import sys
import types

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_readme_is_at_most_1500_words_with_one_speed_table():
    text = (ROOT / "README.md").read_text()
    assert len(text.split()) <= 1500
    speed_tables = [line for line in text.splitlines() if line.startswith("|") and "steps/s" in line]
    assert len(speed_tables) == 1, speed_tables


def _prose(text: str) -> list:
    """The lines of a markdown text with fenced code blocks and inline code spans blanked (module names such as the
    released engine's ``utils.scene_helpers`` are code, not narrative)."""
    text = re.sub(r"```.*?```", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.DOTALL)
    return [re.sub(r"`[^`]*`", "", line) for line in text.splitlines()]


def test_no_work_log_narrative_in_readme_or_docs():
    pattern = re.compile(r"session [0-9]|helper|coordinator|stop [0-9]{2}", re.IGNORECASE)
    hits = [f"{path.relative_to(ROOT)}:{n}" for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
            for n, line in enumerate(_prose(path.read_text()), 1) if pattern.search(line)]
    assert not hits, hits


def test_core_modules_stay_under_the_layout_size():
    for name in ("envs/core/worlds.py", "envs/robots/floating_gripper.py"):
        assert len((ROOT / name).read_text().splitlines()) <= 330, name


def test_human_window_initializes_only_the_display(monkeypatch):
    calls = []
    fake = types.SimpleNamespace(
        init=lambda: calls.append("init"),
        display=types.SimpleNamespace(init=lambda: calls.append("display.init"),
                                      set_mode=lambda size: calls.append(("set_mode", size)),
                                      set_caption=lambda title: None, flip=lambda: None,
                                      quit=lambda: calls.append("display.quit")),
        time=types.SimpleNamespace(Clock=lambda: types.SimpleNamespace(tick=lambda fps: None)),
        event=types.SimpleNamespace(pump=lambda: None),
        surfarray=types.SimpleNamespace(make_surface=lambda a: a))
    monkeypatch.setitem(sys.modules, "pygame", fake)
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    from superdex_gym.envs.rendering.scene_view import HumanWindow

    window = HumanWindow(8, 6, 25)
    window._screen = types.SimpleNamespace(blit=lambda surface, at: None)
    window.show(np.zeros((6, 8, 3), dtype=np.uint8))
    window.close()
    assert calls == ["display.init", ("set_mode", (8, 6)), "display.quit"]
