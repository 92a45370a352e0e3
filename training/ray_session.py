"""Starting and joining Ray for superdex-tune and superdex-rllib (Ray itself is imported by the caller)."""

from __future__ import annotations

import contextlib
import os


@contextlib.contextmanager
def ray_session(ray, address: str | None = None, num_cpus: int | None = None, log_to_driver: bool = False):
    """Ray for the block: the running one when already initialized (a test's, a notebook's), else the cluster
    at ``address`` / ``RAY_ADDRESS``, else a local in-process one (``num_cpus``, no dashboard). Only a Ray
    started here is shut down after (never ``ray stop``: it kills every Ray process on the host by name)."""
    if ray.is_initialized():
        yield
        return
    address = address or os.environ.get("RAY_ADDRESS")
    if address:
        ray.init(address=address)
    else:  # "local": a plain ray.init() would join the cluster a past `ray start` left in /tmp/ray, even a dead one
        ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, log_to_driver=log_to_driver)
    try:
        yield
    finally:
        ray.shutdown()
