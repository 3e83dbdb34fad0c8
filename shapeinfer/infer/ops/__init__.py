"""The per-op rules. Importing this package registers all of them."""

from . import arith, control, expand, linalg, pad, reshape, shape_ops, tile  # noqa: F401
