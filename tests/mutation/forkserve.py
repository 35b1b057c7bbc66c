"""A fork server that makes cosmic-ray's per-mutant test runs cheap (not a test module).

Each mutant is tested by a fresh ``pytest`` run; started as a new interpreter, most of that run is
start-up (numpy, scipy, python-flint, sympy, hypothesis, pytest itself) and re-compiling the test
modules with pytest's assertion rewriting.  The server imports the third-party libraries once and
forks a child per request; the child imports ``softrank`` from disk, so it sees the file cosmic-ray
has just mutated (the server never imports ``softrank``, and it deletes the package's bytecode
caches after warming pytest's, so no stale ``.pyc`` can stand in for a mutated source).

    serve:  PYTHONPATH=COPY/pkg WARM_TESTS="tests/replay tests/exact" \
            python forkserve.py serve SOCKET            (run in COPY, the mutated copy)
    client: python forkserve.py run SOCKET TIMEOUT PYTEST_ARGS...   (cosmic-ray's test-command)

The client exits 0 when pytest passed and 1 otherwise (a failure, an error, or a run past TIMEOUT
seconds, which the server kills: cosmic-ray counts each as killed).  An unreachable server is
waited for, never reported as a verdict.
"""

import glob
import json
import os
import signal
import socket
import sys
import time

PRELOAD = ("numpy", "scipy", "scipy.linalg", "scipy.optimize", "scipy.sparse", "flint", "mpmath", "sympy",
           "fractions", "hypothesis", "pytest", "_pytest.python", "_pytest.assertion.rewrite")


def _child(args, cwd=None):
    if cwd:
        os.chdir(cwd)
    fd = os.open(os.devnull, os.O_WRONLY)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    import atexit
    import pytest
    try:
        rc = int(pytest.main(args))
        atexit._run_exitfuncs()  # the suite's temporary folders, as at a normal exit
    except BaseException:
        rc = 99
    os._exit(rc)


def _warm(tests):
    """Cache pytest's rewritten test modules once (tests are never mutated), then delete every
    other bytecode cache under the working directory."""
    pid = os.fork()
    if pid == 0:
        sys.dont_write_bytecode = False
        _child(["--co", "-q", "-p", "no:cacheprovider"] + tests)
    os.waitpid(pid, 0)
    for f in glob.glob(os.getcwd() + "/**/__pycache__/*.pyc", recursive=True):
        if "pytest" not in os.path.basename(f) and os.path.exists(f):
            os.unlink(f)


def serve(path):
    sys.dont_write_bytecode = True
    import importlib
    for name in PRELOAD:
        importlib.import_module(name)
    assert not any(m.startswith("softrank") for m in sys.modules), "the server must not import softrank"
    warm = os.environ.get("WARM_TESTS", "").split()
    if warm:
        _warm(warm)
    if os.path.exists(path):
        os.unlink(path)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(8)
    while True:
        conn, _ = server.accept()
        data = b""
        while not data.endswith(b"\n"):
            chunk = conn.recv(65536)
            if not chunk:
                break
            data += chunk
        request = json.loads(data)
        pid = os.fork()
        if pid == 0:
            server.close()
            conn.close()
            _child(request["args"], request["cwd"])
        deadline = time.monotonic() + request["timeout"]
        rc = None
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                rc = os.waitstatus_to_exitcode(status)
                break
            time.sleep(0.01)
        if rc is None:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            rc = 124
        try:
            conn.sendall(f"{rc}\n".encode())
            conn.close()
        except OSError:
            pass


def run(path, timeout, args):
    while True:
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            client.connect(path)
            break
        except OSError:
            client.close()
            time.sleep(1)
    client.sendall((json.dumps({"cwd": os.getcwd(), "timeout": float(timeout), "args": args}) + "\n").encode())
    data = b""
    while not data.endswith(b"\n"):
        chunk = client.recv(100)
        if not chunk:
            sys.exit("forkserve: the server closed the connection without a result")
        data += chunk
    return 0 if int(data) == 0 else 1


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2])
    else:
        sys.exit(run(sys.argv[2], sys.argv[3], sys.argv[4:]))
