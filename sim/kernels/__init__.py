"""numba kernels of the engine (compiled with `sim.jit.kernel`); the numpy implementations they replace stay
beside the potentials as test oracles."""
