"""The trusted side of the boundary: limits, student problems, step sessions (one child each), isolation and the zygote."""
