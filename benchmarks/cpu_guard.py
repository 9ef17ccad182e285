"""Run a command and log every other process that keeps a CPU busy meanwhile: on a shared
machine, a benchmark slice is trustworthy only if this log stays (nearly) empty.

Usage: ``python benchmarks/cpu_guard.py LOG -- COMMAND...``; exits with the command's status.
Every second it writes ``time cpu-seconds pid command`` for each process that is not the
command or one of its descendants and used more than ``--threshold`` of a CPU (Linux /proc).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


def snapshot() -> dict[int, tuple[int, int, str]]:
    """pid -> (parent pid, CPU ticks used so far, command line) for every process."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, UnicodeDecodeError):
            continue
        close = stat.rindex(")")
        fields = stat[close + 2 :].split()
        name = cmd.strip()[:100] or stat[stat.index("(") + 1 : close]
        out[int(entry)] = (int(fields[1]), int(fields[11]) + int(fields[12]), name)
    return out


def family(root: int, procs: dict[int, tuple[int, int, str]]) -> set[int]:
    """``root`` and all its descendants."""
    members, grew = {root}, True
    while grew:
        grew = False
        for pid, (parent, _, _) in procs.items():
            if parent in members and pid not in members:
                members.add(pid)
                grew = True
    return members


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("log", type=Path, help="where to write the busy seconds of other processes")
    p.add_argument("--threshold", type=float, default=0.15, help="CPU share per second (0.15)")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command to run")
    args = p.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        p.error("give the command to run after --")
    with args.log.open("w") as log:
        child = subprocess.Popen(command)
        before = snapshot()
        while child.poll() is None:
            time.sleep(1)
            now = snapshot()
            ours = family(child.pid, now) | {os.getpid()}
            for pid, (_, ticks, name) in now.items():
                used = (ticks - before.get(pid, (0, 0, ""))[1]) / TICKS
                if pid not in ours and used > args.threshold:
                    log.write(f"{time.strftime('%H:%M:%S')} {used:.2f} {pid} {name}\n")
                    log.flush()
            before = now
    return child.returncode


if __name__ == "__main__":
    sys.exit(main())
