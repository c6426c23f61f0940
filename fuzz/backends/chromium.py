"""Where the headless browser is: ``$LAFUZZ_CHROMIUM``, else Debian's ``chromium`` (or ``chromium-browser``) on the
PATH. A module of its own, light to import: the set-up, the remembered probes and both browser backends ask it."""

from __future__ import annotations

import os
import shutil

CHROMIUM_ENV = "LAFUZZ_CHROMIUM"


def chromium_path() -> str | None:
    return os.environ.get(CHROMIUM_ENV) or shutil.which("chromium") or shutil.which("chromium-browser")
