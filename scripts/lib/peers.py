"""What the long-running test scripts (soak.py, journal-crash.py) share: free loopback ports and a
Mosquitto broker of their own, started on one with its own configuration."""

import socket
import subprocess
import time


def free_port():
    """A loopback port nobody listens on now (the kernel's choice for a bind to port 0)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(port, limit, who):
    """Returns once 127.0.0.1:port accepts a connection; exits naming `who` after `limit` seconds."""
    deadline = time.monotonic() + limit
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise SystemExit(f"{who} did not start listening on port {port} within {limit} s")
            time.sleep(0.05)


def start_mosquitto(conf_path, port, settings, log=None):
    """Debian's mosquitto on 127.0.0.1:port, anonymous, without persistence, plus `settings` (lines of its
    configuration), its output to `log` (a file object; none: discarded). Returns once it listens."""
    with open(conf_path, "w") as handle:
        handle.write(f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\n")
        handle.write("".join(line + "\n" for line in settings))
    output = log if log is not None else subprocess.DEVNULL
    broker = subprocess.Popen(["mosquitto", "-c", conf_path], stdin=subprocess.DEVNULL,
                              stdout=output, stderr=subprocess.STDOUT)
    wait_for_port(port, 10, "mosquitto")
    return broker
