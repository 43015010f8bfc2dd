"""A throwaway PostgreSQL cluster for the tests: found (or installed with apt-get), started
under a temporary directory on 127.0.0.1 and a free port, stopped and removed at the end.

PostgreSQL refuses to run as root, so as root the cluster belongs to the ``postgres`` user
(the package makes it). :func:`start` returns None with the reason when no PostgreSQL can be
found or installed; ``.ci/run`` sets ``SBC_SQL_REQUIRE_POSTGRES=1`` so that CI fails instead.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

#: where Debian's packages put the server programs, newest first
_DEBIAN = Path("/usr/lib/postgresql")


@dataclass
class Cluster:
    """A running cluster: its URL (database ``postgres``, trust authentication) and how to
    stop it."""

    url: str
    bindir: Path
    data: Path
    user: str | None

    def stop(self) -> None:
        self._run([str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop"])
        shutil.rmtree(self.data.parent, ignore_errors=True)

    def url_of(self, database: str) -> str:
        """The URL of another database of the cluster."""
        return self.url.rsplit("/", 1)[0] + "/" + database

    def sql(self, statement: str) -> None:
        """Run one statement as the superuser, outside a transaction (CREATE DATABASE)."""
        done = subprocess.run(
            [str(self.bindir / "psql"), self.url, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-c", statement],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"psql failed: {done.stderr.strip()}")

    def _run(self, argv: list[str]) -> subprocess.CompletedProcess[str]:
        return _as(self.user, argv)


def _as(user: str | None, argv: list[str]) -> subprocess.CompletedProcess[str]:
    if user is not None:
        argv = ["runuser", "-u", user, "--", *argv]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)


def find_bindir() -> Path | None:
    """The directory holding initdb and pg_ctl: PATH first, then Debian's versioned ones."""
    on_path = shutil.which("initdb")
    if on_path is not None:
        return Path(on_path).resolve().parent
    if _DEBIAN.is_dir():
        versions = sorted(
            (p for p in _DEBIAN.iterdir() if (p / "bin" / "initdb").exists()),
            key=lambda p: int(p.name) if p.name.isdigit() else 0,
            reverse=True,
        )
        if versions:
            return versions[0] / "bin"
    return None


def install(package: str = "postgresql") -> str | None:
    """Install a Debian package (PostgreSQL by default) with apt-get; the reason it could not
    be, or None."""
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return f"{package} is not installed and cannot be installed here (needs root and apt-get)"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    argv = ["apt-get", "install", "-y", "-q", package]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        subprocess.run(["apt-get", "update", "-q"], capture_output=True, env=env, check=False)
        done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    return None if done.returncode == 0 else f"apt-get install {package} failed"


def plpython(cluster: Cluster) -> str | None:
    """Make PL/Python 3 available to the cluster's server (Debian's postgresql-plpython3-NN,
    installed when missing); the reason it could not be, or None."""
    libdir = subprocess.run(
        [str(cluster.bindir / "pg_config"), "--pkglibdir"], capture_output=True, text=True, check=False
    ).stdout.strip()
    if libdir and (Path(libdir) / "plpython3.so").exists():
        return None
    major = cluster.bindir.parent.name if cluster.bindir.parent.name.isdigit() else ""
    if not major:
        return "PL/Python 3 is not installed, and the server's version is not known to install it"
    reason = install(f"postgresql-plpython3-{major}")
    if reason is None and libdir and not (Path(libdir) / "plpython3.so").exists():
        return f"postgresql-plpython3-{major} installed, and still no plpython3.so in {libdir}"
    return reason


def python_path(cluster: Cluster, paths: list[str]) -> list[str]:
    """``paths`` (where sbc-sql and its packages are imported from) as the server's user can
    read them: as they are when it can, else hard-linked (or copied) under the cluster's
    directory, which it can read. A checkout or a virtual environment under a private
    directory (mktemp's are 0700) is out of the server's reach otherwise."""
    if cluster.user is None or all(
        _as(cluster.user, ["test", "-r", p, "-a", "-x", p]).returncode == 0 for p in paths
    ):
        return paths
    readable = []
    for i, path in enumerate(paths):
        target = cluster.data.parent / f"python{i}"
        if not target.exists():
            try:
                shutil.copytree(path, target, copy_function=os.link, symlinks=True)
            except OSError:  # another file system: copy
                shutil.rmtree(target, ignore_errors=True)
                shutil.copytree(path, target, symlinks=True)
        readable.append(str(target))
    return readable


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start() -> Cluster | str:
    """A running throwaway cluster, or the reason none could be started."""
    bindir = find_bindir()
    if bindir is None:
        reason = install()
        bindir = find_bindir()
        if bindir is None:
            return reason or "no PostgreSQL server programs (initdb, pg_ctl) found after installing"
    user: str | None = None
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no 'postgres' user to run the server as"
        user = "postgres"
    root = Path(tempfile.mkdtemp(prefix="sbc-pg-"))
    data = root / "data"
    if user is not None:
        entry = pwd.getpwnam(user)
        os.chown(root, entry.pw_uid, entry.pw_gid)
        root.chmod(0o755)
    made = _as(user, [str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8"])
    if made.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        return f"initdb failed: {made.stderr.strip()[-300:]}"
    for _ in range(3):  # another process may take the free port before the server does
        port = _free_port()
        options = f"-c listen_addresses=127.0.0.1 -p {port} -k {root} -c fsync=off"
        log = root / "server.log"
        started = _as(
            user, [str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(log), "-w", "start"]
        )
        if started.returncode == 0:
            return Cluster(f"postgresql://postgres@127.0.0.1:{port}/postgres", bindir, data, user)
    shutil.rmtree(root, ignore_errors=True)
    return f"pg_ctl start failed: {started.stderr.strip()[-300:]}"


@contextlib.contextmanager
def running() -> object:
    """A cluster for the ``with`` block (the reason string when none could be started)."""
    cluster = start()
    try:
        yield cluster
    finally:
        if isinstance(cluster, Cluster):
            cluster.stop()
