"""Reference implementations of decoder, generated from source/decoder/ by `python -m autograder build`."""
