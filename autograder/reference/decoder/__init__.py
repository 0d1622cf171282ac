"""Known mistakes of the third assignment (decoder), applied to its references in torch float64, one
module per step: what a student who made one mistake would get on the same inputs."""
