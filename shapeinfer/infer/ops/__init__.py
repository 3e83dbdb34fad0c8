"""The per-op rules. Importing this package registers all of them."""

from . import arith, control, conv, expand, indexing, linalg, pad, reshape, resize, same_shape, shape_ops, tile  # noqa: F401
