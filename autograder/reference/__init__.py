"""What the references are compared with: the known mistakes applied to them (variants), the misconception catalogue, and the mutation audit's mutants and equivalence check."""
