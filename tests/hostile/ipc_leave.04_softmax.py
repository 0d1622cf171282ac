# Leaves IPC objects and files behind for whoever comes next: System V shared memory and a message
# queue, a POSIX queue, files in /tmp and /dev/shm, and a process that waits.
import ctypes
import ctypes.util
import os
import numpy as np

KEY = 0x4B1D
libc = ctypes.CDLL(None, use_errno=True)
segment = libc.shmget(KEY, 1 << 20, 0o1666)               # IPC_CREAT | 0666
queue = libc.msgget(KEY, 0o1666)
try:
    rt = ctypes.CDLL(ctypes.util.find_library("rt") or "librt.so.1", use_errno=True)
    rt.mq_open(b"/attention-kit-leak", os.O_CREAT | os.O_RDWR, 0o666, None)
except OSError:
    pass
for folder in ("/tmp", "/dev/shm"):
    try:
        with open(f"{folder}/attention-kit-leak", "w") as f:
            f.write("left behind")
    except OSError:
        pass
if os.fork() == 0:
    os.setsid()
    import time
    time.sleep(3600)
    os._exit(0)


def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)
