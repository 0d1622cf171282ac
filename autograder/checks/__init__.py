"""What the hidden suites are written with: the check marker, CheckFailed and the expectations, the Student adapter, complexity and gradient checks, tolerances, seeded inputs, memo."""
