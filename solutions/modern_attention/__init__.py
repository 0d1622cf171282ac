"""Reference implementations of modern_attention, generated from source/modern_attention/ by `python -m autograder build`."""
