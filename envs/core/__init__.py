"""The engine-side core of every environment: the worlds, the Env and native VectorEnv, the Task interface,
shared settings and kwargs parsing."""
