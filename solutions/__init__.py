"""Reference implementations, generated from source/ by `python -m autograder build`."""
