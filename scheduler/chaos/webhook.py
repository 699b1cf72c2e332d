"""Injected bind failures on the kubernetes backend, made by the API server itself: a validating
admission webhook on `pods/binding` that denies the first N bindings of the pods the plan marks
(the `schedboard.io/fail-binds: "N"` annotation, as on the simulated backend). The binder sees a real
refusal from the API server (403, "admission webhook ... denied the request: injected binding failure").

The webhook is an HTTPS server on loopback in the chaos process, with a self-signed certificate
for 127.0.0.1 that the ValidatingWebhookConfiguration trusts through its caBundle.
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import json
import ssl
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

WEBHOOK_NAME = "bind-faults.chaos.schedboard.io"
# The namespaces whose bindings go through the webhook carry this label (v1.20 sets no name label itself).
NAMESPACE_LABEL = {"schedboard.io/chaos": "bind-faults"}


def _self_signed(directory: Path) -> tuple[Path, Path, bytes]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "schedboard-chaos-webhook")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    pem = cert.public_bytes(serialization.Encoding.PEM)
    cert_path, key_path = directory / "webhook.crt", directory / "webhook.key"
    cert_path.write_bytes(pem)
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                           serialization.NoEncryption()))
    key_path.chmod(0o600)
    return cert_path, key_path, pem


class BindFaultWebhook:
    """Denies the first `failures[namespace/name]` bindings of each listed pod; counts what it did."""

    def __init__(self, failures: dict[str, int]):
        self.failures = dict(failures)
        self.denied: dict[str, int] = {}
        self.allowed = 0
        self.lock = threading.Lock()
        self.server: ThreadingHTTPServer | None = None
        self.ca_bundle = b""

    def decide(self, key: str) -> str | None:
        """None to allow; else the denial message."""
        with self.lock:
            wanted = self.failures.get(key, 0)
            done = self.denied.get(key, 0)
            if done < wanted:
                self.denied[key] = done + 1
                return f"injected binding failure {done + 1} of {wanted}"
            self.allowed += 1
            return None

    def start(self) -> BindFaultWebhook:
        directory = Path(tempfile.mkdtemp(prefix="schedboard-chaos-webhook-"))
        cert, key, self.ca_bundle = _self_signed(directory)
        webhook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                review = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                request = review.get("request") or {}
                denial = webhook.decide(f"{request.get('namespace')}/{request.get('name')}")
                response = {"uid": request.get("uid", ""), "allowed": denial is None}
                if denial:
                    response["status"] = {"code": 403, "reason": "Forbidden", "message": denial}
                body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                   "response": response}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):  # quiet
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        threading.Thread(target=self.server.serve_forever, name="bind-fault-webhook", daemon=True).start()
        return self

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.server.server_address[1]}/validate"

    def configuration(self, name: str) -> dict:
        """The ValidatingWebhookConfiguration that sends pods/binding requests of labelled namespaces here."""
        return {
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": name},
            "webhooks": [{
                "name": WEBHOOK_NAME,
                "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                           "resources": ["pods/binding"], "scope": "Namespaced"}],
                "namespaceSelector": {"matchLabels": NAMESPACE_LABEL},
                "clientConfig": {"url": self.url, "caBundle": base64.b64encode(self.ca_bundle).decode()},
                "admissionReviewVersions": ["v1"], "sideEffects": "None", "failurePolicy": "Ignore",
                "timeoutSeconds": 5,
            }],
        }

    def report(self) -> dict:
        with self.lock:
            return {"denied": sum(self.denied.values()), "pods_denied": len(self.denied), "allowed": self.allowed}

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
