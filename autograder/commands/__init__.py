"""The commands a person or a CI job runs: the command line, batch grading, nbgrader's hooks, release, the Gradescope zip, the mutation audit. Nothing imports this package."""
