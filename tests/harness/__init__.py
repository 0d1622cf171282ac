"""What several test files share: cases, the grading of many small files, readers of what the kit
writes. Test files import from here (`from harness import hostile`, found through pytest's
`pythonpath = ["tests"]`), never from one another; no test is defined here (tests/test_layout.py)."""
