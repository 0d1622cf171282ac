"""The trusted side of the boundary: limits, student problems, step children (one child each), isolation and the zygote."""
