#!/usr/bin/env python3
"""tests/support/free_ports.py - N free TCP ports on 127.0.0.1, drawn as the launcher draws its
local jobs' ports (backends/net/port.h): at random below the kernel's range for outgoing
connections, whose ports any connection made meanwhile can take (bind to port 0's were, in CI).
All differ: each is held until every one is chosen.
Usage: free_ports.py [N]  (prints them on one line); or import and call free_ports(n)."""
import random
import socket
import sys


def _outgoing_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 49152  # macOS and the BSDs


def free_ports(n, host="127.0.0.1"):
    low, held, ports = _outgoing_low(), [], []
    pick = random.SystemRandom()
    try:
        for _ in range(n):
            s = socket.socket()
            held.append(s)
            for _ in range(64):
                try:
                    s.bind((host, pick.randrange(10000, max(low, 10001))))
                    break
                except OSError:
                    continue
            else:
                s.bind((host, 0))
            s.listen(1)
            ports.append(s.getsockname()[1])
    finally:
        for s in held:
            s.close()
    return ports


if __name__ == "__main__":
    print(*free_ports(int(sys.argv[1]) if len(sys.argv) > 1 else 1))
