"""The run of one submission: its step files found, its children started, the hidden suites run against them, the results collected."""
