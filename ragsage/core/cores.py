"""How many of this machine's cores a process may keep busy with its own threads.

A worker's pool runs several processes on one machine.  A numeric library that
sizes its thread pool to every core (onnxruntime does) then runs cores × processes
threads, which fight for the cores and spin while they wait for each other.  The
worker's main process says how many processes share the cores before it forks
them (:func:`share_cores`); libraries built afterwards ask :func:`cores_per_process`.
"""

from __future__ import annotations

import os

_sharing = 1


def share_cores(processes: int) -> None:
    """This process and the ones it will fork split the cores ``processes`` ways."""
    global _sharing
    _sharing = max(1, processes)


def usable_cores() -> int:
    """The cores this process may run on (its affinity, which a container may narrow)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not every platform has affinity
        return os.cpu_count() or 1


def cores_per_process() -> int:
    """This process's share of the usable cores, at least one."""
    return max(1, usable_cores() // _sharing)


def shared() -> bool:
    """True when other processes were declared to share the cores with this one."""
    return _sharing > 1
