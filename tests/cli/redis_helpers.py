#!/usr/bin/env python3
"""redis_helpers.py: what tests/cli/remote.sh needs beside redis-cli.

  resp.py PORT get KEY FILE        write a key's value (binary) to FILE; exit 1 when absent
  resp.py PORT set KEY FILE        set a key to FILE's bytes
  resp.py PORT keys PATTERN        print the matching keys, one per line
  fake PORTFILE silent|garbage     a server on a free loopback port (written to PORTFILE)
                                   that accepts and never answers, or answers garbage
  value FILE OUT                   wrap FILE's bytes as a raw (uncompressed) remote value
  unvalue FILE OUT                 unwrap a raw or zstd remote value (zstd via the zstd tool)
A minimal RESP client on a socket, so binary values survive."""
import os
import socket
import struct
import subprocess
import sys
import threading


def resp_cmd(port, *args):
    s = socket.create_connection(("127.0.0.1", int(port)), timeout=5)
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    s.sendall(out)
    f = s.makefile("rb")
    return read_reply(f)


def read_reply(f):
    line = f.readline()
    t, rest = line[:1], line[1:-2]
    if t == b"+":
        return rest
    if t == b"-":
        raise RuntimeError(rest.decode())
    if t == b":":
        return int(rest)
    if t == b"$":
        n = int(rest)
        if n < 0:
            return None
        data = f.read(n + 2)
        return data[:-2]
    if t == b"*":
        return [read_reply(f) for _ in range(int(rest))]
    raise RuntimeError("bad reply %r" % line)


def fake(portfile, mode):
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    with open(portfile + ".tmp", "w") as f:
        f.write(str(srv.getsockname()[1]))
    os.rename(portfile + ".tmp", portfile)
    held = []

    def serve(c):
        try:
            while True:
                d = c.recv(65536)
                if not d:
                    return
                if mode == "garbage":
                    c.sendall(b"garbage that is no RESP\r\n")
        except OSError:
            return

    while True:
        c, _ = srv.accept()
        held.append(c)
        threading.Thread(target=serve, args=(c,), daemon=True).start()


def main():
    a = sys.argv[1:]
    if a[0] == "fake":
        fake(a[1], a[2])
    elif a[0] == "value":
        data = open(a[1], "rb").read()
        open(a[2], "wb").write(b"CBCR" + bytes([1, 0, 0, 0]) + struct.pack("<Q", len(data)) + data)
    elif a[0] == "unvalue":
        v = open(a[1], "rb").read()
        assert v[:4] == b"CBCR", "not a value"
        body = v[16:]
        if v[5] == 1:
            body = subprocess.run(["zstd", "-dc"], input=body, capture_output=True, check=True).stdout
        open(a[2], "wb").write(body)
    elif a[1] == "get":
        v = resp_cmd(a[0], "GET", a[2])
        if v is None:
            sys.exit(1)
        open(a[3], "wb").write(v)
    elif a[1] == "set":
        resp_cmd(a[0], "SET", a[2], open(a[3], "rb").read())
    elif a[1] == "keys":
        for k in sorted(resp_cmd(a[0], "KEYS", a[2])):
            print(k.decode())
    else:
        sys.exit("unknown command")


if __name__ == "__main__":
    main()
