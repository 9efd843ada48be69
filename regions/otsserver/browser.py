"""``python -m regions.otsserver.browser``: make sure the console's browser test
can run: Debian's ``chromium`` and ``chromium-driver`` (headless Chromium
driven by Selenium, tests/test_console_browser.py).

Does nothing when both are on PATH.  Otherwise installs them with ``apt-get
install --no-install-recommends`` (through ``sudo`` when not root): the two
packages and the libraries they need, nothing merely recommended (on Debian
12 that is 20 packages instead of 109: no avahi, cups, udev, upower, perl
libraries), and no upgrade of a package already installed.  apt upgrades an
installed library when the new packages need a newer one, so the install is
simulated first (``apt-get install -s``); if it would upgrade or remove
anything, nothing is done and the packages are named.  With ``chromium``
installed already, only ``chromium-driver`` of the same version is asked for
(a newer driver would upgrade the browser).  ``apt-get update`` runs first
only if apt does not know the packages.  Exits non-zero with the reason if it
cannot, so the README's test command stops there instead of skipping.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

PACKAGES = ("chromium", "chromium-driver")
INSTALL = ("apt-get", "install", "-q", "--no-install-recommends")
PROG = "regions.otsserver.browser"

# apt-get -s: "Inst NAME [INSTALLED] (NEW ...)" upgrades, "Inst NAME (NEW ...)"
# installs, "Remv NAME [INSTALLED]" removes.
_STEP = re.compile(r"^(Inst|Remv) (\S+)(?: \[([^\]]*)\])?", re.M)


def installed() -> bool:
    return bool((shutil.which("chromium") or shutil.which("chromium-browser"))
                and shutil.which("chromedriver"))


def installed_version(package: str) -> str | None:
    """The version of ``package`` dpkg has installed, or None."""
    try:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Status}|${Version}", package],
                           capture_output=True, text=True)
    except OSError:
        return None
    status, _, version = r.stdout.partition("|")
    return version if r.returncode == 0 and status.endswith(" installed") and version else None


def wanted() -> list[str]:
    """What to ask apt for: both, or the driver at the installed browser's version."""
    version = installed_version("chromium")
    return [f"chromium-driver={version}"] if version else list(PACKAGES)


def plan(simulation: str) -> tuple[list[str], list[str]]:
    """``apt-get install -s``'s output -> (packages it would newly install,
    installed packages it would upgrade or remove, with their versions)."""
    new, changed = [], []
    for action, name, old in _STEP.findall(simulation):
        if action == "Inst" and not old:
            new.append(name)
        else:
            changed.append(f"{name} {old}" if action == "Inst" else f"{name} {old} (removed)")
    return new, changed


def simulate(packages) -> subprocess.CompletedProcess:
    return subprocess.run([*INSTALL, "-s", *packages], capture_output=True, text=True,
                          env=dict(os.environ, LC_ALL="C"))


def fail(message: str) -> int:
    print(f"{PROG}: {message}", file=sys.stderr)
    return 1


def main() -> int:
    if installed():
        return 0
    if not shutil.which("apt-get"):
        return fail("chromium and chromedriver are missing and there is no apt-get here: "
                    "install Chromium and its chromedriver, then rerun")
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    packages = wanted()
    simulation = simulate(packages)
    if simulation.returncode != 0:  # packages unknown: the lists are missing or old
        subprocess.call([*sudo, "apt-get", "update", "-q"], env=env)
        simulation = simulate(packages)
        if simulation.returncode != 0:
            last = (simulation.stderr.strip().splitlines() or ["(no reason given)"])[-1]
            return fail(f"apt-get cannot install {' '.join(packages)}: {last}")
    new, changed = plan(simulation.stdout)
    if changed:
        return fail(f"installing {' '.join(packages)} would upgrade or remove installed "
                    f"packages ({', '.join(changed)}); not done. If that is fine: "
                    f"{' '.join([*sudo, *INSTALL, *packages])}")
    install = [*sudo, *INSTALL, "-y", *packages]
    print(f"+ {' '.join(install)}    # {len(new)} new packages: {' '.join(new)}", flush=True)
    if subprocess.call(install, env=env) != 0:
        return fail(f"apt-get could not install {' '.join(packages)}")
    return 0 if installed() else fail("installed, but chromium or chromedriver is not on PATH")


if __name__ == "__main__":
    sys.exit(main())
