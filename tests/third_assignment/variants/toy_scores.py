"""The third assignment's probes for the audit's equivalence check (autograder/reference/equivalence.py):
probes(rng, dtype, scale) -> [(function name, args, kwargs)] on numpy arrays, every dim distinct."""


def probes(rng, dtype, scale):
    def arrays(*shapes):
        return [(rng.standard_normal(s) * scale).astype(dtype) for s in shapes]
    return [("toy_scores", arrays((2, 5, 3), (2, 7, 3)), {}), ("toy_scores", arrays((5, 3), (7, 3)), {})]
