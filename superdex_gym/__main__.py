"""``python -m superdex_gym``: the main job (`superdex_gym.tour`)."""

from .tour import main

if __name__ == "__main__":
    raise SystemExit(main())
