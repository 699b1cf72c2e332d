"""A throwaway kube-apiserver and etcd on loopback, for tests of the Kubernetes backend.

The API server binary is built once by `scripts/kube-apiserver.sh build` (Kubernetes v1.20.2 from
Debian's source package) and cached outside the repository; etcd is Debian's `etcd-server`. Both
listen on 127.0.0.1 only, keep their state in a temporary directory, and are stopped by PID on exit:

    with local_kube_cluster() as cluster:
        v1 = kubernetes.client.CoreV1Api(cluster.api_client())
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

KUBE_VERSION = "v1.20.2"
DEFAULT_CACHE_DIR = "/var/cache/schedboard"
LOOPBACK = "127.0.0.1"
ADMIN_USER = "admin"
# The ranges the recipe uses; nothing routes to them, the API server only allocates from them.
SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"

BUILD_HINT = "run `scripts/kube-apiserver.sh build` (about 4 minutes the first time; the binary is cached)"


class KubeApiServerNotBuilt(RuntimeError):
    """The cached kube-apiserver binary (or etcd) is missing."""


class KubeClusterStartError(RuntimeError):
    """etcd or kube-apiserver did not come up; the message carries the end of its log."""


def apiserver_binary() -> Path:
    """The cached binary, where `scripts/kube-apiserver.sh path` says it is."""
    return cached_binary("kube-apiserver")


def cached_binary(command: str) -> Path:
    """A command of the same v1.20.2 tree, where `scripts/kube-apiserver.sh path COMMAND` says it is
    (kube-apiserver, kubectl, kube-scheduler)."""
    cache = Path(os.environ.get("SCHEDBOARD_KUBE_CACHE") or DEFAULT_CACHE_DIR)
    binary = cache / f"{command}-{KUBE_VERSION}"
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        hint = BUILD_HINT if command == "kube-apiserver" else f"run `scripts/kube-apiserver.sh build {command}`"
        raise KubeApiServerNotBuilt(f"{command} {KUBE_VERSION} not found at {binary}: {hint}")
    return binary


def etcd_binary() -> Path:
    found = shutil.which("etcd")
    if found is None:
        raise KubeApiServerNotBuilt(f"etcd not found on PATH (Debian's etcd-server): {BUILD_HINT}")
    return Path(found)


@dataclass
class LocalKubeCluster:
    """A running loopback API server: its URL, tokens and a kubeconfig per token user."""

    url: str
    etcd_url: str
    workdir: Path
    tokens: dict[str, str]
    authorization_mode: str
    pids: dict[str, int] = field(default_factory=dict)
    # The running processes and how each was started, for restart_apiserver().
    procs: dict[str, subprocess.Popen] = field(default_factory=dict, repr=False)
    argv: dict[str, list[str]] = field(default_factory=dict, repr=False)

    @property
    def kubeconfig(self) -> Path:
        """The admin's kubeconfig (group system:masters: allowed everything, even under RBAC)."""
        return self.kubeconfig_for(ADMIN_USER)

    def kubeconfig_for(self, user: str) -> Path:
        path = self.workdir / f"kubeconfig-{user}"
        if not path.exists():
            path.write_text(json.dumps(_kubeconfig(self.url, user, self.tokens[user], self.ca_file), indent=2))
            path.chmod(0o600)
        return path

    @property
    def ca_file(self) -> Path:
        """The API server's self-signed certificate (it names 127.0.0.1): clients verify TLS against it."""
        return self.workdir / "certs" / "apiserver.crt"

    def api_client(self, user: str = ADMIN_USER):
        """A `kubernetes.client.ApiClient` for one of the token users."""
        from kubernetes import config

        return config.new_client_from_config(config_file=str(self.kubeconfig_for(user)), persist_config=False)

    def log_tail(self, name: str, lines: int = 40) -> str:
        return _tail(self.workdir / f"{name}.log", lines)

    def restart_apiserver(self, ready_timeout: float = 60.0) -> None:
        """Stop kube-apiserver (SIGTERM, as a rolling restart does) and start it again on the same port and
        etcd: clients see their connections and watches end, then the same objects again."""
        old = self.procs["kube-apiserver"]
        _stop(old)
        with open(self.workdir / "kube-apiserver.log", "ab") as log:
            proc = subprocess.Popen(self.argv["kube-apiserver"], cwd=self.workdir, stdin=subprocess.DEVNULL,
                                    stdout=log, stderr=subprocess.STDOUT, env=_child_env())
        self.procs["kube-apiserver"] = proc  # the same dict local_kube_cluster stops on exit
        self.pids["kube-apiserver"] = proc.pid
        _wait_until(lambda: _http_get(f"{self.url}/readyz", token=self.tokens[ADMIN_USER]) == "ok",
                    proc, self.workdir / "kube-apiserver.log", "kube-apiserver", ready_timeout)


@contextlib.contextmanager
def local_kube_cluster(
    *,
    authorization_mode: str = "AlwaysAllow",
    users: Mapping[str, Sequence[str]] | None = None,
    ready_timeout: float = 30.0,
    extra_apiserver_args: Sequence[str] = (),
    keep_workdir: bool = False,
) -> Iterator[LocalKubeCluster]:
    """Start etcd and kube-apiserver on loopback; stop both and remove their state on exit.

    `authorization_mode` is passed as is ("AlwaysAllow", or "RBAC" to test a ClusterRole).
    `users` adds token users besides the admin: name -> groups (e.g. {"schedboard": ()}); each gets
    a token in `cluster.tokens` and a kubeconfig through `cluster.kubeconfig_for(name)`.
    """
    apiserver = apiserver_binary()
    etcd = etcd_binary()
    workdir = Path(tempfile.mkdtemp(prefix="schedboard-kube-"))
    tokens = {ADMIN_USER: secrets.token_hex(16)}
    groups = {ADMIN_USER: ("system:masters",)}
    for name, user_groups in (users or {}).items():
        tokens[name] = secrets.token_hex(16)
        groups[name] = tuple(user_groups)
    procs: dict[str, subprocess.Popen] = {}
    try:
        etcd_client, etcd_peer, secure_port = _free_loopback_ports(3)
        etcd_url = f"http://{LOOPBACK}:{etcd_client}"
        procs["etcd"] = _spawn(workdir, "etcd", [
            str(etcd),
            "--name=schedboard-test",
            f"--data-dir={workdir / 'etcd-data'}",
            f"--listen-client-urls={etcd_url}",
            f"--advertise-client-urls={etcd_url}",
            f"--listen-peer-urls=http://{LOOPBACK}:{etcd_peer}",
            f"--initial-advertise-peer-urls=http://{LOOPBACK}:{etcd_peer}",
            f"--initial-cluster=schedboard-test=http://{LOOPBACK}:{etcd_peer}",
            "--initial-cluster-state=new",
        ])
        _wait_until(
            lambda: '"health":"true"' in _http_get(f"{etcd_url}/health", token=None).replace(" ", ""),
            procs["etcd"], workdir / "etcd.log", "etcd", ready_timeout,
        )

        _write_token_file(workdir / "tokens.csv", tokens, groups)
        _write_service_account_keys(workdir / "sa.key", workdir / "sa.pub")
        url = f"https://{LOOPBACK}:{secure_port}"
        apiserver_argv = [
            str(apiserver),
            f"--etcd-servers={etcd_url}",
            f"--bind-address={LOOPBACK}",
            f"--advertise-address={LOOPBACK}",
            f"--secure-port={secure_port}",
            "--insecure-port=0",
            f"--cert-dir={workdir / 'certs'}",
            f"--token-auth-file={workdir / 'tokens.csv'}",
            f"--authorization-mode={authorization_mode}",
            f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
            f"--service-account-key-file={workdir / 'sa.pub'}",
            f"--service-account-signing-key-file={workdir / 'sa.key'}",
            f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
            # No controller-manager runs to create the default service account pods would need, nor
            # a node lifecycle controller to lift the not-ready taint TaintNodesByCondition puts on
            # every new node (no kubelet ever reports Ready here).
            "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
            "--enable-priority-and-fairness=false",
            "--endpoint-reconciler-type=none",
            "--profiling=false",
            *extra_apiserver_args,
        ]
        procs["kube-apiserver"] = _spawn(workdir, "kube-apiserver", apiserver_argv)
        cluster = LocalKubeCluster(
            url=url, etcd_url=etcd_url, workdir=workdir, tokens=tokens,
            authorization_mode=authorization_mode,
            pids={name: proc.pid for name, proc in procs.items()},
            procs=procs, argv={"kube-apiserver": apiserver_argv},
        )
        admin_token = tokens[ADMIN_USER]
        _wait_until(
            lambda: _http_get(f"{url}/readyz", token=admin_token) == "ok",
            procs["kube-apiserver"], workdir / "kube-apiserver.log", "kube-apiserver", ready_timeout,
        )
        yield cluster
    finally:
        # The API server first: it holds etcd watches and would log errors while etcd goes away.
        for name in ("kube-apiserver", "etcd"):
            if name in procs:
                _stop(procs[name])
        if not keep_workdir:
            shutil.rmtree(workdir, ignore_errors=True)


def _kubeconfig(url: str, user: str, token: str, ca_file: Path) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        # The API server made its own certificate in --cert-dir; clients verify it as they would a real one.
        "clusters": [{"name": "schedboard-test", "cluster": {"server": url, "certificate-authority": str(ca_file)}}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": user, "context": {"cluster": "schedboard-test", "user": user}}],
        "current-context": user,
    }


def _write_token_file(path: Path, tokens: Mapping[str, str], groups: Mapping[str, Sequence[str]]) -> None:
    # Static token file format: token,user,uid[,"group1,group2"]
    lines = []
    for user, token in tokens.items():
        line = f"{token},{user},{user}"
        if groups[user]:
            line += ',"' + ",".join(groups[user]) + '"'
        lines.append(line)
    path.write_text("\n".join(lines) + "\n")
    path.chmod(0o600)


def _write_service_account_keys(private_path: Path, public_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private_path.write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption(),
    ))
    private_path.chmod(0o600)
    public_path.write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo,
    ))


def _free_loopback_ports(count: int) -> list[int]:
    """Ports the kernel reports free on 127.0.0.1 (held together so they differ)."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((LOOPBACK, 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _child_env() -> dict[str, str]:
    # No proxy may carry loopback traffic elsewhere.
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("http_proxy", "https_proxy", "all_proxy")}
    env["NO_PROXY"] = env["no_proxy"] = f"{LOOPBACK},localhost"
    return env


def _spawn(workdir: Path, name: str, argv: list[str]) -> subprocess.Popen:
    with open(workdir / f"{name}.log", "wb") as log:
        return subprocess.Popen(
            argv, cwd=workdir, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=_child_env(),
        )


def _stop(proc: subprocess.Popen, grace: float = 10.0) -> None:
    if proc.poll() is not None:
        return
    os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()


# Plain HTTP(S) to loopback, never through a proxy from the environment.
def _unverified_tls() -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # the API server's self-signed certificate, on loopback
    return context


_OPENER = urllib.request.build_opener(
    urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=_unverified_tls()),
)


def _http_get(url: str, *, token: str | None, timeout: float = 2.0) -> str:
    request = urllib.request.Request(url)
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            return response.read().decode(errors="replace").strip()
    except (urllib.error.URLError, OSError, ValueError):
        return ""


def _wait_until(ready, proc: subprocess.Popen, log: Path, name: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise KubeClusterStartError(f"{name} exited with code {proc.returncode}:\n{_tail(log)}")
        if ready():
            return
        if time.monotonic() > deadline:
            raise KubeClusterStartError(f"{name} not ready after {timeout:.0f}s:\n{_tail(log)}")
        time.sleep(0.1)


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
