"""How a loop script reports its own time to bench/notes.py: ``loop_s=<wall> cpu_s=<cpu>`` on one line."""
import os
import sys
import time


def cpu_seconds():
    """User and system time of this process and of its finished children (the DataLoader workers)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def run_timed(train, default_size):
    """``train(size)`` with the size from argv[1] (else ``default_size``), then its times printed."""
    started, cpu_started = time.perf_counter(), cpu_seconds()
    train(int(sys.argv[1]) if len(sys.argv) > 1 else default_size)
    print(f"loop_s={time.perf_counter() - started:.6f} cpu_s={cpu_seconds() - cpu_started:.6f}")
