#!/usr/bin/env python3
"""A counting TCP relay for the rtk benchmark: counting-relay.py UPSTREAM_PORT NAME [NAME ...].

Listens on 127.0.0.1, one ephemeral port per NAME (one per client under test), and relays each
connection to 127.0.0.1:UPSTREAM_PORT (the caster), counting the bytes each way. Prints, one line
each, flushed at once (times in seconds on this process's monotonic clock):
  listen NAME PORT
  open NAME ID T
  bytes NAME ID DOWN ELAPSED          every second while open (DOWN: caster -> client)
  close NAME ID DOWN UP ELAPSED T      when either side closed
"""
import socket
import sys
import threading
import time

lock = threading.Lock()


def say(*fields):
    with lock:
        sys.stdout.write(" ".join(str(f) for f in fields) + "\n")
        sys.stdout.flush()


def pump(source, sink, counter, key, done):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
            with lock:
                counter[key] += len(data)
    except OSError:
        pass
    finally:
        done.set()


def serve(name, client, upstream_port, number):
    opened = time.monotonic()
    try:
        caster = socket.create_connection(("127.0.0.1", upstream_port))
    except OSError:
        client.close()
        say("close", name, number, 0, 0, "0.000", f"{time.monotonic():.3f}")
        return
    say("open", name, number, f"{opened:.3f}")
    counter = {"down": 0, "up": 0}
    done = threading.Event()
    threading.Thread(target=pump, args=(caster, client, counter, "down", done), daemon=True).start()
    threading.Thread(target=pump, args=(client, caster, counter, "up", done), daemon=True).start()
    while not done.wait(1.0):
        with lock:
            down = counter["down"]
        say("bytes", name, number, down, f"{time.monotonic() - opened:.3f}")
    closed = time.monotonic()
    for s in (client, caster):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        s.close()
    with lock:
        down, up = counter["down"], counter["up"]
    say("close", name, number, down, up, f"{closed - opened:.3f}", f"{closed:.3f}")


def listen(name, upstream_port):
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    say("listen", name, server.getsockname()[1])
    number = 0
    while True:
        client, _ = server.accept()
        number += 1
        threading.Thread(target=serve, args=(name, client, upstream_port, number), daemon=True).start()


def main():
    upstream_port = int(sys.argv[1])
    for name in sys.argv[2:]:
        threading.Thread(target=listen, args=(name, upstream_port), daemon=True).start()
    threading.Event().wait()


if __name__ == "__main__":
    main()
