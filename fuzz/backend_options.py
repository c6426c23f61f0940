"""The options of every command that makes backends: which WebGPU EP library and which GPU to test.

``add_arguments(parser)`` adds ``--ep-library``, ``--device`` and ``--adapter`` to a command;
``apply(args)`` checks them before any work starts and writes them into this process's
environment (``LAFUZZ_WEBGPU_EP_LIBRARY``, ``LAFUZZ_DEVICE``, ``LAFUZZ_ADAPTER``), where every
backend reads them and from where every process it starts inherits them: campaign workers and
crash-isolated backends test the same library on the same device. Setting the variables by hand
does the same.
"""

from __future__ import annotations

import argparse
import os

from fuzz.usage import UsageError, whole_number


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--ep-library``, ``--device`` and ``--adapter`` to ``parser``."""
    parser.add_argument(
        "--ep-library",
        metavar="PATH",
        help="the WebGPU plugin EP library to test as ort-webgpu, e.g. a local build of "
        "libonnxruntime_providers_webgpu.so (default: $LAFUZZ_WEBGPU_EP_LIBRARY, else the "
        "onnxruntime-ep-webgpu package's)",
    )
    parser.add_argument(
        "--device",
        type=whole_number(0),
        metavar="N",
        help="run the GPU backends on device N, numbered as `lafuzz backends` lists them "
        "(default: the best one; campaign workers spread over all of them)",
    )
    parser.add_argument(
        "--adapter",
        metavar="TEXT",
        help="run the GPU backends on the device whose description contains TEXT (with --device: the N-th of those)",
    )


def apply(args: argparse.Namespace) -> None:
    """Check the options and put them in the environment; ``UsageError`` for a library that is not a file."""
    from fuzz.backends.device_choice import ADAPTER_ENV, DEVICE_ENV, LIBRARY_ENV

    if args.ep_library is not None:
        if not os.path.isfile(args.ep_library):
            raise UsageError(f"--ep-library {args.ep_library}: no such file")
        os.environ[LIBRARY_ENV] = os.path.realpath(args.ep_library)
    if args.device is not None:
        os.environ[DEVICE_ENV] = str(args.device)
    if args.adapter is not None:
        os.environ[ADAPTER_ENV] = args.adapter
