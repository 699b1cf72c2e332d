"""deploy/: the kustomize layout, its RBAC equal to what the code needs, and that RBAC proven enough
on a real API server in RBAC mode (where `kube check` also names a permission taken away)."""

import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import yaml

from scheduler.testing.deploy import deploy_settings
from scheduler.kube.permissions import REQUIRED, rules

BASE_DIR = Path(__file__).resolve().parent.parent
DEPLOY = BASE_DIR / "deploy"
NAMESPACE = "schedboard"


def documents(name):
    return [d for d in yaml.safe_load_all((DEPLOY / name).read_text()) if d]


def all_objects():
    kustomization = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())
    return [obj for name in kustomization["resources"] for obj in documents(name)]


def by_kind(kind):
    return [o for o in all_objects() if o["kind"] == kind]


# ---- the manifests ----------------------------------------------------------------------------

def test_the_cluster_role_grants_exactly_what_kube_check_checks():
    (cluster_role,) = by_kind("ClusterRole")
    (role,) = by_kind("Role")
    assert cluster_role["rules"] == rules(namespaced=False)
    assert role["rules"] == rules(namespaced=True)
    granted = {(r["apiGroups"][0], r["resources"][0], v) for r in cluster_role["rules"] + role["rules"] for v in r["verbs"]}
    assert granted == {(p.group, p.resource, v) for p in REQUIRED for v in p.verbs}


def test_the_roles_are_bound_to_our_service_account_and_only_the_controller_uses_it():
    (account,) = by_kind("ServiceAccount")
    for binding in by_kind("ClusterRoleBinding") + by_kind("RoleBinding"):
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account["metadata"]["name"], "namespace": NAMESPACE}]
    roles = {(o["kind"], o["metadata"]["name"]) for o in by_kind("ClusterRole") + by_kind("Role")}
    assert {(b["roleRef"]["kind"], b["roleRef"]["name"]) for b in by_kind("ClusterRoleBinding") + by_kind("RoleBinding")} == roles
    deployments = {d["metadata"]["name"]: d["spec"]["template"]["spec"] for d in by_kind("Deployment")}
    assert set(deployments) == {"schedboard-web", "schedboard-worker", "schedboard-beat", "schedboard-controller"}
    for name, spec in deployments.items():
        if name == "schedboard-controller":
            assert spec["serviceAccountName"] == "schedboard"
        else:
            assert spec["automountServiceAccountToken"] is False and "serviceAccountName" not in spec


def test_every_process_reads_the_connection_from_the_secret_and_runs_the_kubernetes_backend():
    (env,) = [c for c in by_kind("ConfigMap") if c["metadata"]["name"] == "schedboard-env"]
    assert env["data"]["SCHEDBOARD_BACKEND"] == "kubernetes"
    commands = {}
    for deployment in by_kind("Deployment"):
        spec = deployment["spec"]["template"]["spec"]
        for container in spec.get("initContainers", []) + spec["containers"]:
            sources = container["envFrom"]
            assert {"secretRef": {"name": "schedboard-connection"}} in sources
            assert {"configMapRef": {"name": "schedboard-env"}} in sources
            assert not any(e.get("name") in ("DATABASE_URL", "REDIS_URL") for e in container.get("env", []))
            commands[container["name"]] = container["command"]
    assert commands["controller"] == ["python", "manage.py", "kube", "run"]
    assert commands["worker"][:4] == ["celery", "-A", "config", "worker"]
    assert commands["beat"][:4] == ["celery", "-A", "config", "beat"]
    assert commands["migrate"] == ["python", "manage.py", "migrate", "--noinput"]
    (service,) = by_kind("Service")
    (web,) = [d for d in by_kind("Deployment") if d["metadata"]["name"] == "schedboard-web"]
    assert service["spec"]["selector"] == web["spec"]["selector"]["matchLabels"]


def test_the_scheduler_configuration_names_our_profile():
    from scheduler.engine.config import load_config

    (config,) = [c for c in by_kind("ConfigMap") if c["metadata"]["name"] == "schedboard-scheduler-config"]
    loaded = load_config(config["data"]["scheduler.yaml"], "scheduler.yaml")
    assert [p.scheduler_name for p in loaded.profiles] == ["schedboard"]


def test_the_web_is_reached_by_listed_names_only_among_them_the_service_s_dns_names():
    (env,) = [c for c in by_kind("ConfigMap") if c["metadata"]["name"] == "schedboard-env"]
    hosts = env["data"]["DJANGO_ALLOWED_HOSTS"].split(",")
    assert "*" not in hosts
    (service,) = by_kind("Service")
    namespace = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())["namespace"]
    name = service["metadata"]["name"]
    # Every form a pod in the cluster resolves the Service by; then the example external name to edit.
    assert hosts == [name, f"{name}.{namespace}", f"{name}.{namespace}.svc", f"{name}.{namespace}.svc.cluster.local",
                     "schedboard.example.com"]


# The processes that start the metrics endpoint on SCHEDBOARD_METRICS_PORT (config/celery.py, `kube run`).
SERVES_METRICS_PORT = (["celery", "-A", "config", "worker"], ["celery", "-A", "config", "beat"],
                       ["python", "manage.py", "kube", "run"])


def test_every_pod_is_scraped_where_it_serves_its_own_metrics():
    (env,) = [c for c in by_kind("ConfigMap") if c["metadata"]["name"] == "schedboard-env"]
    port = int(env["data"]["SCHEDBOARD_METRICS_PORT"])
    assert deploy_settings()["SCHEDBOARD_METRICS_PORT"] == port  # parsed as the processes will
    scraped = {}
    for deployment in by_kind("Deployment"):
        template = deployment["spec"]["template"]
        (container,) = template["spec"]["containers"]
        # Each pod has its own metrics directory: nobody else serves what it counts.
        (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == env["data"]["PROMETHEUS_MULTIPROC_DIR"]]
        assert {"name": mount["name"], "emptyDir": {}} in template["spec"]["volumes"]
        annotations = template["metadata"]["annotations"]
        assert annotations["prometheus.io/scrape"] == "true" and annotations["prometheus.io/path"] == "/metrics"
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        if container["name"] == "web":
            assert int(annotations["prometheus.io/port"]) == ports["http"]  # the web's own /metrics
        else:
            assert any(container["command"][:len(c)] == c for c in SERVES_METRICS_PORT), container["command"]
            assert int(annotations["prometheus.io/port"]) == ports["metrics"] == port
        scraped[container["name"]] = int(annotations["prometheus.io/port"])
    assert scraped == {"web": 8000, "worker": port, "beat": port, "controller": port}


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kustomize_renders_every_object_into_our_namespace():
    rendered = subprocess.run(["kubectl", "kustomize", str(DEPLOY)], capture_output=True, text=True, check=True).stdout
    objects = [o for o in yaml.safe_load_all(rendered) if o]
    assert len(objects) == len(all_objects())
    for obj in objects:
        if obj["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding"):
            assert obj["metadata"]["namespace"] == NAMESPACE, obj["metadata"]
    images = {c["image"] for o in objects if o["kind"] == "Deployment"
              for c in o["spec"]["template"]["spec"]["containers"]}
    assert images == {"schedboard:latest"}


# ---- on a real API server in RBAC mode -------------------------------------------------------

USER = "schedboard-sa"


@pytest.fixture(scope="module")
def rbac_cluster():
    from scheduler.testing.kube_apiserver import KubeApiServerNotBuilt, local_kube_cluster

    context = local_kube_cluster(authorization_mode="RBAC", users={USER: ()})
    try:
        cluster = context.__enter__()
    except KubeApiServerNotBuilt as missing:
        pytest.fail(str(missing), pytrace=False)
    try:
        yield cluster
    finally:
        context.__exit__(None, None, None)


def _grant_deploy_roles(cluster, *, drop: tuple[str, str] | None = None):
    """deploy/rbac.yaml as is, bound to our test user instead of the service account (no token controller runs)."""
    from kubernetes import client

    from scheduler.kube.client import ApiError, call

    api = cluster.api_client()
    rbac = client.RbacAuthorizationV1Api(api)
    core = client.CoreV1Api(api)
    try:
        call(core.create_namespace, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    except ApiError as exc:
        assert exc.status == 409
    subject = [{"kind": "User", "name": USER, "apiGroup": "rbac.authorization.k8s.io"}]
    for obj in documents("rbac.yaml"):
        obj = dict(obj)
        if obj["kind"] in ("Role", "RoleBinding"):
            obj["metadata"] = {**obj["metadata"], "namespace": NAMESPACE}
        if obj["kind"].endswith("Binding"):
            obj["subjects"] = subject
        if drop and obj["kind"] == "ClusterRole":
            obj["rules"] = [r for r in obj["rules"] if (r["resources"][0], r["verbs"]) != (drop[0], [drop[1]])]
        name, kind = obj["metadata"]["name"], obj["kind"]
        create = {"ClusterRole": rbac.create_cluster_role, "ClusterRoleBinding": rbac.create_cluster_role_binding}.get(kind)
        replace = {"ClusterRole": rbac.replace_cluster_role, "ClusterRoleBinding": rbac.replace_cluster_role_binding}.get(kind)
        try:
            if create:
                call(create, obj)
            else:
                call({"Role": rbac.create_namespaced_role, "RoleBinding": rbac.create_namespaced_role_binding}[kind],
                     NAMESPACE, obj)
        except ApiError as exc:
            assert exc.status == 409, exc
            if replace:
                current = call({"ClusterRole": rbac.read_cluster_role, "ClusterRoleBinding": rbac.read_cluster_role_binding}[kind], name)
                obj["metadata"] = {**obj["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]}
                call(replace, name, obj)
    api.close()


def _kube_check(cluster):
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="config.settings", KUBECONFIG=str(cluster.kubeconfig_for(USER)),
               SCHEDBOARD_KUBE_NAMESPACE=NAMESPACE, DJANGO_SECRET_KEY="kube-check-test")
    env.pop("DATABASE_URL", None)  # the check needs no database
    return subprocess.run([sys.executable, "manage.py", "kube", "check"], cwd=BASE_DIR, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.kube
@pytest.mark.django_db(transaction=True)
def test_the_deploy_roles_are_enough_to_schedule_and_kube_check_says_so(rbac_cluster):
    from kubernetes import client

    from scheduler.kube.client import call
    from scheduler.testing.kube import (leading_replica, node, pod, read_pod, schedule_loop, scheduled_condition,
                                        threads_running, wait_for_cluster)

    _grant_deploy_roles(rbac_cluster)
    result = _kube_check(rbac_cluster)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "all permissions present" in result.stdout and "MISSING" not in result.stdout
    assert result.stdout.count("credentials accepted") == 1  # once (Django's own check() ran it a second time)

    admin = client.CoreV1Api(rbac_cluster.api_client())
    call(admin.create_node, node("node-a", cpu="2"))
    call(admin.create_namespaced_pod, "default", pod("fits", cpu="1"))
    call(admin.create_namespaced_pod, "default", pod("too-big", cpu="4"))
    # Leading takes a Lease in our namespace (the Role), its list+watch of nodes and pods the ClusterRole.
    with leading_replica(rbac_cluster.api_client(USER), namespace=NAMESPACE,
                         lease_name=f"schedboard-{uuid.uuid4().hex[:6]}") as controller, threads_running(schedule_loop):
        wait_for_cluster(lambda: controller.committer.run_once(0.05) is not None and (
            read_pod(admin, "fits")["spec"].get("nodeName") == "node-a"
            and (scheduled_condition(read_pod(admin, "too-big")) or {}).get("reason") == "Unschedulable"
            and any(e["reason"] == "FailedScheduling" for e in call(client.EventsV1Api(rbac_cluster.api_client()).list_namespaced_event, "default")["items"])),
            "a binding, a pods/status patch and an event made as the deploy role")


@pytest.mark.kube
def test_kube_check_names_the_permission_taken_away(rbac_cluster):
    from scheduler.testing.kube import wait_for_cluster

    _grant_deploy_roles(rbac_cluster, drop=("pods/binding", "create"))
    outcome = {}

    def missing_reported():
        outcome["result"] = _kube_check(rbac_cluster)
        return outcome["result"].returncode != 0

    wait_for_cluster(missing_reported, "the authorizer to see the changed role", 60)
    result = outcome["result"]
    assert "MISSING  create pods/binding (all namespaces)" in result.stdout
    assert ('missing permission: create pods/binding (all namespaces): add to the ClusterRole: apiGroups [""], '
            'resources ["pods/binding"], verbs ["create"]') in result.stderr
    assert "1 permission(s) missing" in result.stderr
    assert result.stdout.count("MISSING") == 1
    _grant_deploy_roles(rbac_cluster)  # as it was, for any later test


@pytest.mark.kube
@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_apply_k_is_accepted_by_the_api_server(rbac_cluster):
    # Server-side dry run: every object validated and admitted by the API server, nothing stored
    # (the namespace must exist for its objects to be admitted, as it would after a real apply).
    from kubernetes import client

    from scheduler.kube.client import ApiError, call

    try:
        call(client.CoreV1Api(rbac_cluster.api_client()).create_namespace,
             {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    except ApiError as exc:
        assert exc.status == 409
    result = subprocess.run(["kubectl", "--kubeconfig", str(rbac_cluster.kubeconfig), "apply", "-k", str(DEPLOY),
                             "--dry-run=server"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    for line in ("namespace/schedboard", "serviceaccount/schedboard", "clusterrole.rbac.authorization.k8s.io/schedboard",
                 "deployment.apps/schedboard-controller", "deployment.apps/schedboard-worker",
                 "deployment.apps/schedboard-beat", "deployment.apps/schedboard-web", "service/schedboard-web"):
        assert line in result.stdout
