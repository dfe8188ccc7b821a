#!/usr/bin/env python3
"""redis_helpers.py: what tests/cli/remote.sh needs beside redis-cli.

  resp.py PORT get KEY FILE        write a key's value (binary) to FILE; exit 1 when absent
  resp.py PORT set KEY FILE        set a key to FILE's bytes
  resp.py PORT keys PATTERN        print the matching keys, one per line
  fake PORTFILE MODE               a server on a free loopback port (written to PORTFILE):
                                   silent   accepts and never answers
                                   garbage  answers garbage
                                   trickle  answers every command with a valid reply (GET:
                                            a 4096-byte value), one byte every 0.5 s
                                   huge     answers GET with a bulk string announced as
                                            1 GiB and sends its bytes for ever; SCAN with
                                            one objects key, STRLEN with 1 GiB, the rest +OK
  peak OUT CMD...                  runs CMD (killed after 60 s: RC 124), writes
                                   "RC HWM_KB MAXRSS_KB MS" to OUT: its exit
                                   code, the peak resident size of that process alone
                                   (VmHWM, polled), the kernel's ru_maxrss at its end (it
                                   and the children it waited for) and its time
  value FILE OUT                   wrap FILE's bytes as a raw (uncompressed) remote value
  unvalue FILE OUT                 unwrap a raw or zstd remote value (zstd via the zstd tool)
A minimal RESP client on a socket, so binary values survive."""
import os
import socket
import struct
import subprocess
import sys
import threading
import time


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


def read_command(f):
    """One RESP command (an array of bulk strings) from f, or None at EOF."""
    line = f.readline()
    if not line:
        return None
    if not line.startswith(b"*"):
        return [line.strip()]
    args = []
    for _ in range(int(line[1:-2])):
        n = int(f.readline()[1:-2])
        args.append(f.read(n + 2)[:-2])
    return args


HEX = "0123456789abcdef" * 2


def answer(cmd, mode):
    """What the trickle and huge servers say to a command (huge: GET is
    answered by the caller, for ever)."""
    name = cmd[0].upper() if cmd else b""
    if name == b"SCAN":
        key = b"cubincache:v1:objects:" + HEX.encode()
        return b"*2\r\n$1\r\n0\r\n*1\r\n$%d\r\n%s\r\n" % (len(key), key)
    if name == b"STRLEN":
        return b":1073741824\r\n"
    if name in (b"EXPIRE", b"EXISTS", b"DEL"):
        return b":1\r\n"
    if name == b"GET" and mode == "trickle":
        return b"$4096\r\n" + b"x" * 4096 + b"\r\n"
    return b"+OK\r\n"


def fake(portfile, mode):
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    with open(portfile + ".tmp", "w") as f:
        f.write(str(srv.getsockname()[1]))
    os.rename(portfile + ".tmp", portfile)
    held = []

    def serve_commands(c):
        f = c.makefile("rb")
        try:
            while True:
                cmd = read_command(f)
                if cmd is None:
                    return
                if mode == "huge" and cmd and cmd[0].upper() == b"GET":
                    c.sendall(b"$1073741824\r\n")
                    chunk = b"y" * 65536
                    while True:  # until the client hangs up
                        c.sendall(chunk)
                reply = answer(cmd, mode)
                if mode == "trickle":
                    for i in range(len(reply)):
                        c.sendall(reply[i:i + 1])
                        time.sleep(0.5)
                else:
                    c.sendall(reply)
        except OSError:
            return

    def serve(c):
        if mode in ("trickle", "huge"):
            return serve_commands(c)
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


def peak(out, argv):
    """Runs argv; prints its exit code, its own peak RSS in kB (VmHWM,
    polled: the process alone, not its children), the peak RSS the kernel
    reports at its end (ru_maxrss: the process and the children it waited
    for) and its time in ms."""
    t0 = time.monotonic()
    pid = os.spawnvp(os.P_NOWAIT, argv[0], argv)
    hwm = 0
    while True:
        try:
            with open("/proc/%d/status" % pid) as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        hwm = max(hwm, int(line.split()[1]))
        except (OSError, ValueError):
            pass
        done, status, ru = os.wait4(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() - t0 > 60:
            os.kill(pid, 9)
            _, status, ru = os.wait4(pid, 0)
            break
        time.sleep(0.005)
    rc = os.waitstatus_to_exitcode(status)
    rc = 124 if rc == -9 else rc
    with open(out, "w") as f:
        print(rc, hwm, ru.ru_maxrss, int((time.monotonic() - t0) * 1000), file=f)


def main():
    a = sys.argv[1:]
    if a[0] == "peak":
        peak(a[1], a[2:])
    elif a[0] == "fake":
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
