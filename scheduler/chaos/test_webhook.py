"""The bind-fault webhook: served over TLS with the certificate its configuration trusts, it denies
the first N bindings of each planned pod and allows everything else."""

import json
import ssl
import urllib.request

import pytest

from scheduler.chaos.webhook import NAMESPACE_LABEL, BindFaultWebhook


@pytest.fixture
def webhook():
    started = BindFaultWebhook({"chaos/flaky": 2}).start()
    yield started
    started.stop()


def review(webhook, namespace, name, uid):
    context = ssl.create_default_context(cadata=webhook.ca_bundle.decode())  # verifies as the API server would
    body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "request": {"uid": uid, "namespace": namespace, "name": name, "subResource": "binding"}})
    request = urllib.request.Request(webhook.url, data=body.encode(), headers={"Content-Type": "application/json"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=context))
    with opener.open(request, timeout=10) as response:
        return json.loads(response.read())["response"]


def test_it_denies_the_first_bindings_of_a_planned_pod_and_then_allows_them(webhook):
    answers = [review(webhook, "chaos", "flaky", f"u{i}") for i in range(3)]
    assert [a["allowed"] for a in answers] == [False, False, True]
    assert [a["uid"] for a in answers] == ["u0", "u1", "u2"]
    assert answers[0]["status"] == {"code": 403, "reason": "Forbidden", "message": "injected binding failure 1 of 2"}
    assert answers[1]["status"]["message"] == "injected binding failure 2 of 2"
    assert review(webhook, "chaos", "steady", "u3")["allowed"] is True
    assert webhook.report() == {"denied": 2, "pods_denied": 1, "allowed": 2}


def test_its_configuration_sends_only_bindings_of_labelled_namespaces_here(webhook):
    config = webhook.configuration("chaos-faults")
    hook = config["webhooks"][0]
    assert hook["rules"] == [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                              "resources": ["pods/binding"], "scope": "Namespaced"}]
    assert hook["namespaceSelector"] == {"matchLabels": NAMESPACE_LABEL}
    assert hook["clientConfig"]["url"] == webhook.url and hook["failurePolicy"] == "Ignore"
