"""attention-kit's grader: hidden suites, the child runner, reports and the command line."""
__version__ = "0.1.0"
