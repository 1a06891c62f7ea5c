"""A question's vector from a process of its own, for a process that stays up (the daemon).

A recall embeds its question on a thread beside its text lists (`Early` in
`search/embed.py`). The encoder's matrix products leave Python's lock, but each of the ~300
numpy calls of a question's forward pass takes it back, and the text lists are Python work
that holds it: the embedding thread waits for the interpreter's switch interval (5 ms) again
and again, and barely moves while they run. Measured on the two-core machine: a question's
embedding alone 22 ms; a 12 ms pure-Python loop on the main thread beside it, both done after
33 ms (a 12 ms sleep instead of the loop: 21 ms); a switch interval of 0.1 ms gave 30 ms.

A child process has a lock of its own. `QueryProcess` starts `python -m loremap.embed.apart`
with the model's folder, which loads the same encoder and answers questions over its pipes
(a length-prefixed UTF-8 text in, float32 bytes out): the recall's thread waits on a pipe,
holding nothing, and the child computes on the other core. Its vectors are the in-process
encoder's (the same code and weights). The child costs a second copy of the model (~90 MB)
and its start (~0.5 s, beside the first questions); it ends when its pipe closes, and with
the process that started it (`codemap.pool.die_with`, as the parse workers do).

It never makes a question wait: while the child loads, while another question holds it, or
once it has failed (exited, timed out, answered garbage: one line in the daemon's log, and it
is not started again), `embed_query` answers None and the caller embeds in process as before.
A one-shot process (the CLI, a hook run alone) never starts one: the model's load would cost
more than the question.
"""

from __future__ import annotations

import json
import logging
import os
import select
import struct
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path
from typing import IO, Any

log = logging.getLogger("loremap.embed")

_SIZE = struct.Struct("<I")  # every frame: its length, then its bytes
_FAILED = 0xFFFFFFFF  # a length that announces an error message instead of a vector
_START_S = 120.0  # the child's model load, at most
_PIPE_WRITE = 4096  # bytes written at once: a pipe that selects writable takes this many


class QueryProcess:
    """`embed_query` answered by a child process that loaded the encoder in `folder`."""

    def __init__(self, folder: Path, name: str, timeout_s: float = 30.0) -> None:
        self.name = name
        self.timeout_s = timeout_s
        self.failure: str | None = None
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._dim = 0
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "loremap.embed.apart"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0, close_fds=True)
        # Dropped unclosed (a daemon's App closed, the model's setting changed): its pipes
        # close, so the child ends.
        weakref.finalize(self, _let_go, self._proc)
        threading.Thread(target=self._start, args=(folder,), name="loremap-embed-apart",
                         daemon=True).start()

    @property
    def ready(self) -> bool:
        """Whether the child has loaded its model and answers."""
        return self._ready.is_set() and self.failure is None

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Wait for the child's load (or its failure); whether it answers."""
        self._ready.wait(timeout)
        return self.ready

    def _start(self, folder: Path) -> None:
        with self._lock:
            try:
                deadline = time.monotonic() + _START_S
                self._write(json.dumps({"folder": str(folder), "name": self.name,
                                        "owner": os.getpid()}).encode(), deadline)
                dim = json.loads(self._read(deadline))["dim"]
                self._dim = int(dim)
            except (OSError, ValueError, KeyError, TypeError, TimeoutError,
                    _ChildError) as exc:
                self._fail(f"did not start ({exc})")
            self._ready.set()

    def embed_query(self, text: str) -> Any:
        """The question's unit vector (float32), or None when the child cannot answer now."""
        if not self.ready or not self._lock.acquire(blocking=False):
            return None
        try:
            import numpy as np

            deadline = time.monotonic() + self.timeout_s
            self._write(text.encode("utf-8", "replace"), deadline)
            vector = np.frombuffer(self._read(deadline), dtype=np.float32).copy()
            if vector.shape != (self._dim,):
                raise ValueError(f"a vector of {vector.size} numbers, not {self._dim}")
            return vector
        except (OSError, ValueError, TimeoutError, _ChildError) as exc:
            self._fail(f"stopped answering ({exc})")
            return None
        finally:
            self._lock.release()

    def close(self) -> None:
        """End the child (closing its pipes ends it; killed if it does not go)."""
        with self._lock:
            _close_pipes(self._proc)
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()

    def _fail(self, why: str) -> None:
        """Stop using the child (the caller holds the lock): killed, reaped by a thread."""
        if self.failure is None:
            self.failure = f"the query process of {self.name} {why}"
            log.warning("%s; questions are embedded in process", self.failure)
        self._proc.kill()
        _let_go(self._proc)

    def _write(self, data: bytes, deadline: float) -> None:
        """One frame to the child, by `deadline` (a long text fills the pipe until the
        child reads it, and a child that reads nothing must not hold the question)."""
        stdin = self._proc.stdin
        assert stdin is not None
        view = memoryview(_SIZE.pack(len(data)) + data)
        fd = stdin.fileno()
        while view:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([], [fd], [], left)[1]:
                raise TimeoutError("the question was not taken in time")
            view = view[os.write(fd, view[:_PIPE_WRITE]):]

    def _read(self, deadline: float) -> bytes:
        stdout = self._proc.stdout
        assert stdout is not None
        (size,) = _SIZE.unpack(_read_exact(stdout, _SIZE.size, deadline))
        if size == _FAILED:
            (size,) = _SIZE.unpack(_read_exact(stdout, _SIZE.size, deadline))
            raise _ChildError(_read_exact(stdout, size, deadline).decode("utf-8", "replace"))
        return _read_exact(stdout, size, deadline)


def _close_pipes(proc: subprocess.Popen[bytes]) -> None:
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            pipe.close()


def _let_go(proc: subprocess.Popen[bytes]) -> None:
    """Close the child's pipes (it ends at its input's end) and reap it on a thread."""
    _close_pipes(proc)
    threading.Thread(target=proc.wait, name="loremap-embed-apart-reap", daemon=True).start()


class _ChildError(Exception):
    """What the child said went wrong."""


def _read_exact(pipe: IO[bytes], size: int, deadline: float) -> bytes:
    """`size` bytes from the unbuffered `pipe`, by `deadline` (time.monotonic)."""
    out = bytearray()
    fd = pipe.fileno()
    while len(out) < size:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise TimeoutError("no answer in time")
        chunk = os.read(fd, size - len(out))
        if not chunk:
            raise OSError("the process exited")
        out += chunk
    return bytes(out)


def _frame(out: IO[bytes], data: bytes) -> None:
    out.write(_SIZE.pack(len(data)) + data)
    out.flush()


def _failed(out: IO[bytes], message: str) -> None:
    data = message.encode("utf-8", "replace")
    out.write(_SIZE.pack(_FAILED) + _SIZE.pack(len(data)) + data)
    out.flush()


def _take(stream: IO[bytes]) -> bytes | None:
    """One frame from `stream`; None at its end."""
    head = stream.read(_SIZE.size)
    if len(head) < _SIZE.size:
        return None
    (size,) = _SIZE.unpack(head)
    data = stream.read(size)
    return data if len(data) == size else None


def main() -> None:
    """The child: load the encoder its first frame names, then answer each text's vector
    until its input ends."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    first = _take(stdin)
    if first is None:
        return
    try:
        import numpy as np

        from loremap.codemap.pool import die_with
        from loremap.embed.bert import BertEncoder

        order = json.loads(first)
        # Ended by the kernel with its parent too, as the parse workers are: a sibling forked
        # from the parent may still hold the input's write end, so its end may come late.
        die_with(int(order["owner"]))
        encoder = BertEncoder(Path(order["folder"]), str(order["name"]))
    except Exception as exc:  # noqa: BLE001 - any failure to load is told to the parent
        _failed(stdout, f"{type(exc).__name__}: {exc}")
        return
    _frame(stdout, json.dumps({"dim": encoder.dim}).encode())
    while (text := _take(stdin)) is not None:
        try:
            vector = np.ascontiguousarray(encoder.embed_query(text.decode("utf-8")),
                                          dtype=np.float32)
        except Exception as exc:  # noqa: BLE001 - told to the parent, which stops using us
            _failed(stdout, f"{type(exc).__name__}: {exc}")
            return
        _frame(stdout, vector.tobytes())


if __name__ == "__main__":
    main()
