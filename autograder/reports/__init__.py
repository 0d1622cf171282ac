"""Output formats written from a graded submission's results: Gradescope JSON, JUnit, GitHub, the feedback page, the class view. Imported by commands only."""
