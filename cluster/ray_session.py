"""Connecting to Ray: ``local`` starts a single-machine instance, anything else is a cluster address.

    ray = connect("local")                  # ray.init(num_cpus=<this machine>, no dashboard unless asked)
    ray = connect("ray://head:10001")       # or "auto" on a node of a running cluster (``ray up``)

Ray is optional (``requirements-cluster.txt``): without it, ``--ray`` is one clear error and the
in-process runner still works. Workers of a local instance inherit this process's environment
(``EMBPROBE_CACHE``, ``EMBPROBE_DATA``, ``PYTHONPATH`` with the repository); a remote cluster
gets the repository as the job's working directory (``runtime_env``), the cache and data through
the paths or URLs the cluster's nodes share (docs/scaling.md). Off a terminal, Ray's log prefixes
("(raylet)", "(autoscaler)") come without colour codes (``RAY_COLOR_PREFIX=0``).

A local instance's servers listen on every network interface (Ray binds them so), and anyone who can reach them
can run code as this user. So a local instance asks for a token (``RAY_AUTH_MODE=token``, a fresh random
``RAY_AUTH_TOKEN`` its workers inherit) unless the environment chose a mode. (This module had set
``RAY_AUTH_MODE=disabled``, opting out of the token Ray 2.60 turns on by itself, which it writes to
``~/.ray/auth_token``; a process that imported ray before ``connect`` gets that default.)
"""

from __future__ import annotations

import importlib.util
import os
import secrets
import socket
import sys

from corpora.paths import REPO_ROOT
from probes.errors import ProbeInputError

INSTALL_HINT = "pip install -r requirements-cluster.txt"


def import_ray():
    try:
        import ray  # lazy: ray is optional (requirements-cluster.txt) and takes seconds to import
    except ImportError:
        raise ProbeInputError(f"--ray needs the ray package, an optional extra: {INSTALL_HINT}") from None
    return ray


def connect(address: str, num_cpus: int | None = None, dashboard: bool = False):
    """The ``ray`` module, initialised for ``address`` (reused when this process is already connected)."""
    if address == "local" and "RAY_AUTH_MODE" not in os.environ and "ray" not in sys.modules:
        os.environ["RAY_AUTH_MODE"] = "token"  # the driver reads it at import: before import_ray
        os.environ.setdefault("RAY_AUTH_TOKEN", secrets.token_hex(32))
    ray = import_ray()
    if ray.is_initialized():
        return ray
    if not sys.stderr.isatty():  # no ANSI colour codes around "(raylet)" prefixes in a log file
        os.environ.setdefault("RAY_COLOR_PREFIX", "0")
    if address == "local":
        # aiohttp: the dashboard's server, not in the minimal ray package
        if dashboard and importlib.util.find_spec("aiohttp") is None:
            raise ProbeInputError("--dashboard needs Ray's dashboard extra: pip install 'ray[default]==2.60.0'")
        paths = [str(REPO_ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
        ray.init(
            address="local",  # a new instance, never another one running here (ray.init()'s default joins it)
            num_cpus=num_cpus or os.cpu_count(),
            include_dashboard=dashboard,
            log_to_driver=False,
            configure_logging=False,
        )
        return ray
    _check_reachable(address)
    try:
        ray.init(
            address=address,
            log_to_driver=False,
            runtime_env={"working_dir": str(REPO_ROOT), "excludes": ["cache/", ".venv/", ".git/", "results/", "x/"]},
        )
    except (ConnectionError, ValueError, RuntimeError) as exc:
        raise ProbeInputError(f"--ray {address}: cannot connect ({exc}).") from None
    return ray


def _check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """A HOST:PORT (or ray://HOST:PORT) that does not answer is one error now, not minutes of Ray's retries."""
    target = address.split("://", 1)[-1]
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit():
        return  # "auto" and other forms: Ray resolves them itself
    try:
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise ProbeInputError(
            f"--ray {address}: nothing answers there ({exc.strerror or exc}); is the cluster up "
            "(`ray up cluster/ray-cluster.yaml`, docs/scaling.md)?"
        ) from None
