"""``python -m regions.otsserver.browser``: make sure the console's browser test
can run: Debian's ``chromium`` and ``chromium-driver`` (headless Chromium
driven by Selenium, tests/test_console_browser.py).

Does nothing when both are on PATH; otherwise runs ``apt-get install -y
chromium chromium-driver`` (through ``sudo`` when not root; ``apt-get update``
first if the packages are unknown).  Exits non-zero with the reason if it
cannot, so the README's test command stops there instead of skipping.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

PACKAGES = ("chromium", "chromium-driver")


def installed() -> bool:
    return bool((shutil.which("chromium") or shutil.which("chromium-browser"))
                and shutil.which("chromedriver"))


def main() -> int:
    if installed():
        return 0
    if not shutil.which("apt-get"):
        print("regions.otsserver.browser: chromium and chromedriver are missing and there is no "
              "apt-get here: install Chromium and its chromedriver, then rerun", file=sys.stderr)
        return 1
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    install = sudo + ["apt-get", "install", "-y", "-q", *PACKAGES]
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    print("+ " + " ".join(install), flush=True)
    if subprocess.call(install, env=env) != 0:
        subprocess.call(sudo + ["apt-get", "update", "-q"], env=env)
        if subprocess.call(install, env=env) != 0:
            print("regions.otsserver.browser: apt-get could not install %s" % " ".join(PACKAGES),
                  file=sys.stderr)
            return 1
    return 0 if installed() else 1


if __name__ == "__main__":
    sys.exit(main())
