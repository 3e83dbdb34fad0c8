"""Constant folding: NumPy kernels (exact for every dtype), onnx.reference for the rest."""
