"""How much memory this process holds now and at its peak, and a watch on each stage's."""

from __future__ import annotations

import os
import resource
import threading
from dataclasses import dataclass, field


def rss_bytes() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def maxrss_bytes() -> int:
    """The kernel's peak RSS of this process's memory: VmHWM, else ru_maxrss.

    ``ru_maxrss`` also keeps the peak of any thread that has exited, which a
    reset of the peak (see :func:`reset_peak`) does not clear; VmHWM does.
    """
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def reset_peak() -> bool:
    """Reset the kernel's peak RSS (VmHWM, and so ru_maxrss) to the current RSS."""
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
    except OSError:
        return False
    return True


@dataclass
class StageWatch:
    """The stage running now, each stage's sampled highest RSS, and where ru_maxrss grew."""

    stage: str = "setup"
    stage_peaks: dict[str, int] = field(default_factory=dict)
    peak_stage: str = "setup"
    last_maxrss: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)

    def enter(self, name: str) -> None:
        with self.lock:
            now = maxrss_bytes()
            if now > self.last_maxrss:
                self.peak_stage, self.last_maxrss = self.stage, now
            self.stage = name
            self._sample()

    def _sample(self) -> None:
        rss = rss_bytes()
        if rss > self.stage_peaks.get(self.stage, 0):
            self.stage_peaks[self.stage] = rss

    def run(self, interval: float = 0.002) -> None:
        while not self._stop.wait(interval):
            with self.lock:
                self._sample()

    def start(self) -> None:
        threading.Thread(target=self.run, name="rss-sampler", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()
