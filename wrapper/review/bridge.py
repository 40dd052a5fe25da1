"""The bridge inside a bubblewrap sandbox without network (``reviewer.api_proxy``).

kdev runs this file's source with ``python -I -S -c SOURCE SOCKET PORT EXECUTABLE
ARGV0 [ARG...]`` (the host's own interpreter, bound read-only; stdlib only, nothing of
kdev is imported). It listens on ``127.0.0.1:PORT`` of the sandbox's network namespace
(loopback only), carries each connection to the UNIX socket ``SOCKET`` (kdev's
:mod:`wrapper.review.proxy`, bind-mounted in), forks and execs the reviewer, and exits
with the reviewer's status: its exit code, or the same signal raised on itself. SIGTERM,
SIGINT and SIGHUP are passed on to the reviewer. It binds before the reviewer starts,
so the first request finds it listening.
"""

import os
import signal
import socket
import sys
import threading

BUFFER = 65536


def pump(source: socket.socket, target: socket.socket) -> None:
    """Copy until ``source`` ends, then end ``target``'s writing side."""
    try:
        while True:
            data = source.recv(BUFFER)
            if not data:
                break
            target.sendall(data)
    except OSError:
        pass
    try:
        target.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def carry(client: socket.socket, path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        upstream.close()
        return
    back = threading.Thread(target=pump, args=(upstream, client), daemon=True)
    back.start()
    pump(client, upstream)
    back.join()
    client.close()
    upstream.close()


def serve(listener: socket.socket, path: str) -> None:
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            continue
        # Small writes (headers, then body) must not wait for the client's delayed ACK.
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=carry, args=(client, path), daemon=True).start()


def main(args: list[str]) -> int:
    if len(args) < 4:
        os.write(2, b"usage: bridge SOCKET PORT EXECUTABLE ARGV0 [ARG...]\n")
        return 2
    path, port, executable, argv = args[0], int(args[1]), args[2], args[3:]
    listener = socket.create_server(("127.0.0.1", port), backlog=64)
    pid = os.fork()
    if pid == 0:
        try:
            os.execv(executable, argv)
        except OSError as exc:
            os.write(2, f"kdev bridge: cannot start {executable}: {exc.strerror}\n".encode())
        os._exit(127)

    def forward(signum: int, frame: object) -> None:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    for passed in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(passed, forward)
    threading.Thread(target=serve, args=(listener, path), daemon=True).start()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        if signum not in (signal.SIGKILL, signal.SIGSTOP):  # those have no handler
            signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    sys.stdout.flush()
    os._exit(os.waitstatus_to_exitcode(status))
    return 1  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
