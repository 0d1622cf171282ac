"""The limits a child runs under, and the running time left to one submission.

`Limits` are per child (CPU, memory, disk, processes, time per call) and chosen once per grading
run; `Budget` is the time all the calls of one submission share, across its steps.
"""
import time
from dataclasses import dataclass


@dataclass
class Limits:
    """Per-child limits and isolation. Defaults suit the hidden suites' small inputs."""
    call_seconds: float = 20.0        # one load or one call
    submission_seconds: float = 600.0 # all the calls of one submission together
    cpu_seconds: int = 120            # CPU time of one child (RLIMIT_CPU)
    memory_bytes: int = 4 << 30       # RLIMIT_DATA: heap and private mappings
    max_processes: int = 64           # RLIMIT_NPROC for the child's uid
    file_bytes: int = 64 << 20        # RLIMIT_FSIZE: largest file the child may write
    disk_bytes: int = 128 << 20       # all it may write: its scratch folder, /tmp and /dev/shm (one tmpfs)
    output_bytes: int = 16_000        # stdout+stderr excerpt kept per step
    max_restarts: int = 3             # fresh children after a crash or time-out, per step
    isolation: str = "auto"           # "auto", "uid", "userns" or "process" (see isolation.py)
    hide: tuple = ()                  # more folders the child must not see (e.g. the batch root)



class Budget:
    """The running time left to one submission, shared by its steps."""

    def __init__(self, seconds):
        self.seconds, self.deadline = seconds, time.monotonic() + seconds

    def left(self):
        return self.deadline - time.monotonic()
