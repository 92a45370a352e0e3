"""Checks `RobotTaskWorlds` makes before it changes anything: what differs between the configuration a state came
from and its own, and whether this machine holds the worlds asked for."""

from __future__ import annotations

import os
import pickle


def configuration_difference(theirs, ours) -> str:
    """What differs between two `configuration`s, in words (the task, the robot, or the fields that differ)."""
    if not (isinstance(theirs, tuple) and len(theirs) == 5):
        return f"not a configuration ({type(theirs).__name__})"
    if (theirs[0], theirs[2]) != (ours[0], ours[2]):
        return f"{theirs[0]} on {theirs[2]}, this env is {ours[0]} on {ours[2]}"
    fields = [(name, a, b) for t, o in zip(theirs[1::2] + theirs[4:], ours[1::2] + ours[4:])
              for name, a, b in ((k, v, getattr(o, k, None)) for k, v in vars(t).items()) if a != b]
    return "; ".join(f"{name} = {a!r} in the state, {b!r} here" for name, a, b in fields) or "the physics settings"


def check_memory(num_worlds: int, template) -> None:
    """ValueError, before anything is allocated, when ``num_worlds`` copies of the one-world ``template``'s state
    would take more than half of this machine's memory (the step's work arrays need several times that again)."""
    per_world = len(pickle.dumps(template, protocol=pickle.HIGHEST_PROTOCOL))
    need, total = num_worlds * per_world, os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    if need > total / 2:
        raise ValueError(f"num_envs={num_worlds} needs about {need / 2**30:.1f} GiB for the worlds' state alone "
                         f"({per_world / 1024:.1f} KiB per world) and several times that to step; this machine has "
                         f"{total / 2**30:.1f} GiB: at most {int(total / 2 / per_world)} worlds")
