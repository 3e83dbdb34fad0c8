"""The per-op rules. Importing this package registers all of them."""

from . import arith, contrib, control, conv, expand, indexing, linalg, pad, quantized, reshape, resize, same_shape, shape_ops, tile  # noqa: F401
