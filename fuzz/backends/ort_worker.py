"""An ONNX Runtime build in a worker process: the wire format, and the worker for another Python environment.

The backends of builds that cannot live in the suite's own process (onnxruntime-node, ORT Web in a browser,
an older onnxruntime in its own virtual environment) talk to a worker over two pipes, one request at a time.
A message is a little-endian ``uint32`` header length, a JSON header, then the raw bytes of the blobs the
header lists (``"blobs": [size, ...]``): model bytes and arrays, never text-encoded. Requests:

- ``{"op": "hello"}``: what the worker runs (``"info"``: versions, device, implementation);
- ``{"op": "load", "model": id}`` + the model: create a session (``{"ok": false, "error": ...}`` if refused);
- ``{"op": "run", "model": id, "inputs": [{name, dtype, shape}], "outputs": [name, ...]}`` + the arrays;
  an id the worker does not hold (never loaded, evicted, or a fresh worker) is answered ``"missing": true``.

Run as a script (``python ort_worker.py --reply-fd N --ep NAME``), this module is that worker for an
onnxruntime of another environment: it needs only numpy and onnxruntime (imported there, not here), so that
interpreter needs nothing of this project. Replies go to fd ``N``: whatever native code prints on stdout
cannot corrupt them.
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import sys
from collections import OrderedDict
from typing import Any, BinaryIO

import numpy as np

HEADER = struct.Struct("<I")

Message = tuple[dict[str, Any], list[bytes]]
"""A decoded message: its header and its blobs."""


def encode(header: dict[str, Any], blobs: list[bytes] | None = None) -> bytes:
    """One message as bytes."""
    blobs = blobs or []
    text = json.dumps({**header, "blobs": [len(b) for b in blobs]}).encode()
    return b"".join([HEADER.pack(len(text)), text, *blobs])


def _read_exactly(stream: BinaryIO, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = stream.read(left)
        if not chunk:
            raise EOFError(f"stream ended {left} bytes short of a message")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def decode(stream: BinaryIO) -> Message:
    """The next message of ``stream``; ``EOFError`` when it has ended."""
    (size,) = HEADER.unpack(_read_exactly(stream, HEADER.size))
    header = json.loads(_read_exactly(stream, size))
    return header, [_read_exactly(stream, n) for n in header.pop("blobs", [])]


def array_blob(name: str, array: np.ndarray) -> tuple[dict[str, Any], bytes]:
    """An array as a header item ``{name, dtype, shape}`` and its bytes (C order, little-endian)."""
    array = np.ascontiguousarray(array)
    return {"name": name, "dtype": str(array.dtype), "shape": list(array.shape)}, array.tobytes()


def blob_array(item: dict[str, Any], blob: bytes) -> np.ndarray:
    """The array of a header item and its bytes (a copy the caller owns)."""
    return np.frombuffer(blob, np.dtype(item["dtype"])).reshape(item["shape"]).copy()


# ---- the worker for an onnxruntime of another Python environment --------------------------------------

SESSIONS_KEPT = 64
"""Sessions a worker keeps (least recently used dropped first); the client re-sends a dropped model."""


class _Worker:
    """Sessions of one EP, CPU fallback disabled, placement checked; answers one message at a time."""

    def __init__(self, ep: str) -> None:
        import onnxruntime as ort

        ort.set_default_logger_severity(3)
        self.ort, self.ep = ort, ep
        self.sessions: OrderedDict[str, Any] = OrderedDict()

    def info(self) -> dict[str, Any]:
        available = self.ort.get_available_providers()
        devices = [f"{d.device.type.name} device, vendor {d.device.vendor}"
                   for d in getattr(self.ort, "get_ep_devices", list)() if d.ep_name == self.ep]
        return {"runtime": "onnxruntime", "version": self.ort.__version__, "ep": self.ep,
                "available": self.ep in available, "providers": available, "devices": devices,
                "python": sys.version.split()[0], "executable": sys.executable}

    def load(self, model_id: str, model: bytes) -> None:
        options = self.ort.SessionOptions()
        options.log_severity_level = 4
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
        session = self.ort.InferenceSession(model, options, providers=[self.ep])
        if session.get_providers()[0] != self.ep:
            raise RuntimeError(f"placement: the session runs on {session.get_providers()}, not {self.ep}")
        self.sessions[model_id] = session
        while len(self.sessions) > SESSIONS_KEPT:
            self.sessions.popitem(last=False)

    def handle(self, header: dict[str, Any], blobs: list[bytes]) -> Message:
        op = header["op"]
        if op == "hello":
            return {"ok": True, "info": self.info()}, []
        try:
            if op == "load":
                self.load(header["model"], blobs[0])
                return {"ok": True}, []
            session = self.sessions.get(header["model"])
            if session is None:
                return {"ok": False, "missing": True}, []
            self.sessions.move_to_end(header["model"])
            feeds = {item["name"]: blob_array(item, blob) for item, blob in zip(header["inputs"], blobs, strict=True)}
            results = session.run(header["outputs"], feeds)
        except Exception as err:
            return {"ok": False, "error": str(err).strip()}, []
        pairs = [array_blob(name, np.asarray(value)) for name, value in zip(header["outputs"], results, strict=True)]
        return {"ok": True, "outputs": [item for item, _ in pairs]}, [blob for _, blob in pairs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reply-fd", type=int, required=True)
    parser.add_argument("--ep", default="WebGpuExecutionProvider")
    args = parser.parse_args()
    os.environ.setdefault("ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER", "1")
    replies = os.fdopen(args.reply_fd, "wb")
    worker = _Worker(args.ep)
    while True:
        try:
            header, blobs = decode(sys.stdin.buffer)
        except EOFError:
            return
        reply, out = worker.handle(header, blobs)
        replies.write(encode(reply, out))
        replies.flush()


if __name__ == "__main__":
    main()
