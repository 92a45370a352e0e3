"""The stage's Newton solve: numpy_newton (the oracle and the path of scenes outside the compiled scope) and
compiled_newton (the plan and the Python side of kernels/newton.py)."""
