"""The per-op rules. Importing this package registers all of them."""

from . import arith, control, expand, linalg, pad, reshape, same_shape, shape_ops, tile  # noqa: F401
