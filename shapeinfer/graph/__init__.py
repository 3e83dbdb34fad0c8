"""Graph structure: validity (structure), topological order, node naming."""
