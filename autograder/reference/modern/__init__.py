"""Known mistakes of the second assignment (modern_attention), applied to its references in torch
float64, one module per step: what a student who made one mistake would get on the same inputs."""
