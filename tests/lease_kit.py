"""A lease held by another live process, for the tests of instance ownership."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager

from runtime.instance.home import InstancePaths

HOLDER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from runtime.instance.home import InstancePaths
    from runtime.instance.lease import LeaseOwner, acquire_lease

    paths = InstancePaths.for_name(sys.argv[1], Path(sys.argv[2]))
    team = sys.argv[3]
    lease = acquire_lease(paths, LeaseOwner.this_process(f"the host of team {team!r}", team=team))
    print("held", flush=True)
    sys.stdin.read()  # until the test closes stdin (or kills this process)
    lease.release()
    """
)


@contextmanager
def held_elsewhere(paths: InstancePaths, team: str = "trio") -> Iterator[subprocess.Popen[str]]:
    """Another live process holding the instance's lease as the host of `team`; its stdin is
    closed (it lets go) or, if it will not go, it is killed on exit."""
    with subprocess.Popen(
        [sys.executable, "-c", HOLDER, paths.name, str(paths.root.parent), team],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as child:
        assert child.stdout is not None and child.stdin is not None
        try:
            assert child.stdout.readline() == "held\n"
            yield child
        finally:
            if child.poll() is None:
                child.stdin.close()
                try:
                    child.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    child.kill()
                    child.wait()
