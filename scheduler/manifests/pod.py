"""A v1 Pod decoded into the engine's PodSpec: the API server's defaulting that the scheduler depends on,
and the validation that would refuse the object, each problem at its field path."""

from __future__ import annotations

from scheduler.engine import field
from scheduler.engine.field import INT64_MAX, INT64_MIN, child_path, parse_int64
from scheduler.engine.k8s_validation import is_dns1123_label, is_dns1123_subdomain, is_qualified_name, is_valid_label_value
from scheduler.engine.pods import (
    DEFAULT_SCHEDULER_NAME,
    NO_EXECUTE,
    NO_SCHEDULE,
    OP_DOES_NOT_EXIST,
    OP_EXISTS,
    OP_GT,
    OP_IN,
    OP_LT,
    OP_NOT_IN,
    PREEMPT_LOWER_PRIORITY,
    PREEMPT_NEVER,
    PREFER_NO_SCHEDULE,
    Container,
    HostPort,
    NodeSelectorTerm,
    PodSpec,
    PreferredTerm,
    Requirement,
    Toleration,
)

from . import stored, topology
from .decode import DEFAULT_NAMESPACE, ObjectDecoder, decode_annotations, decode_labels, decode_metadata, describe
from .resources import (
    ContainerResources,
    container_resource_name,
    pod_level_resources,
    resource_list,
    resource_requirements,
    units,
    within_limits,
)

UID_MAX_LENGTH = 64  # Pod.uid and the uid columns of the audit tables
TAINT_EFFECTS = (NO_SCHEDULE, PREFER_NO_SCHEDULE, NO_EXECUTE)
PROTOCOLS = ("TCP", "UDP", "SCTP")
PREEMPTION_POLICIES = (PREEMPT_NEVER, PREEMPT_LOWER_PRIORITY)  # as core's supportedPreemptionPolicies, sorted


def _container(o: ObjectDecoder, c: dict, path: str, init: bool, host_network: bool
               ) -> tuple[Container, ContainerResources]:
    name = o.required_str(c.get("name"), child_path(path, "name"))
    if name:
        o.check(child_path(path, "name"), name, is_dns1123_label(name))
    image = o.required_str(c.get("image"), child_path(path, "image"))  # as validateContainers
    rpath = child_path(path, "resources")
    resources = o.map(c.get("resources"), rpath)
    requests, limits = resource_requirements(o, resources, rpath, container_resource_name)
    within_limits(o, rpath, requests, limits)
    # As SetDefaults_Pod: a resource with a limit and no request requests its limit.
    effective = {**limits, **requests}
    ports = []
    ppath = child_path(path, "ports")
    plist = o.list(c.get("ports"), ppath)
    for i in range(len(plist)):
        p = o.item(plist, i, ppath)
        if p is None:
            continue
        ipath = child_path(ppath, i)
        container_port = o.int(p.get("containerPort"), child_path(ipath, "containerPort"), 0)
        if not 1 <= container_port <= 65535:
            o.add(child_path(ipath, "containerPort"), field.required()
                  if not container_port else field.invalid(container_port, "must be between 1 and 65535, inclusive"))
        host_port = o.int(p.get("hostPort"), child_path(ipath, "hostPort"), 0)
        if host_port and not 1 <= host_port <= 65535:
            o.add(child_path(ipath, "hostPort"), field.invalid(host_port, "must be between 1 and 65535, inclusive"))
            host_port = 0
        if host_network and not host_port:
            host_port = container_port  # as defaultHostNetworkPorts
        protocol = o.str(p.get("protocol"), child_path(ipath, "protocol")) or "TCP"
        if protocol not in PROTOCOLS:
            o.add(child_path(ipath, "protocol"), field.not_supported(protocol, ("SCTP", "TCP", "UDP")))
        host_ip = o.str(p.get("hostIP"), child_path(ipath, "hostIP")) or "0.0.0.0"
        if host_port > 0:
            ports.append(HostPort(port=host_port, protocol=protocol, ip=host_ip))
    restart_policy = None
    if init:
        restart_policy = o.str(c.get("restartPolicy"), child_path(path, "restartPolicy")) or None
        if restart_policy not in (None, "Always"):
            o.add(child_path(path, "restartPolicy"), field.not_supported(restart_policy, ("Always",)))
            restart_policy = None
    container = Container(name=name, image=image, requests=units(effective), ports=tuple(ports),
                          restart_policy=restart_policy)
    return container, ContainerResources(effective, limits, sidecar=restart_policy == "Always")


def _requirement(o: ObjectDecoder, r: dict, path: str, field_selector: bool) -> Requirement:
    key = o.str(r.get("key"), child_path(path, "key"))
    op = o.str(r.get("operator"), child_path(path, "operator"))
    vpath = child_path(path, "values")
    raw_values = o.list(r.get("values"), vpath)
    values = []
    for i, v in enumerate(raw_values):
        if isinstance(v, str):
            values.append(v)
        else:
            o.add(child_path(vpath, i), f"expected a string, got {describe(v)}")
    if field_selector:
        # As ValidateNodeFieldSelectorRequirement.
        if op in (OP_IN, OP_NOT_IN):
            if len(raw_values) != 1:
                o.add(vpath, field.required("must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
        else:
            o.add(child_path(path, "operator"), field.invalid(op, "not a valid selector operator"))
        if key != "metadata.name":
            o.add(child_path(path, "key"), field.invalid(key, "not a valid field selector key"))
        else:
            for i, v in enumerate(values):
                o.check(child_path(vpath, i), v, is_dns1123_subdomain(v))
        return Requirement(key=key, operator=op, values=tuple(values))
    # As ValidateNodeSelectorRequirement.
    if op in (OP_IN, OP_NOT_IN):
        if not raw_values:
            o.add(vpath, field.required("must be specified when `operator` is 'In' or 'NotIn'"))
    elif op in (OP_EXISTS, OP_DOES_NOT_EXIST):
        if raw_values:
            o.add(vpath, field.forbidden("may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
    elif op in (OP_GT, OP_LT):
        if len(raw_values) != 1:
            o.add(vpath, field.required("must be specified single value when `operator` is 'Lt' or 'Gt'"))
        elif values and parse_int64(values[0]) is None:
            # As labels.NewRequirement, which the scheduler's node affinity matching goes through.
            o.add(child_path(vpath, 0), field.invalid(values[0], "for 'Gt', 'Lt' operators, the value must be an integer"))
    else:
        o.add(child_path(path, "operator"), field.invalid(op, "not a valid selector operator"))
    o.check(child_path(path, "key"), key, is_qualified_name(key))
    return Requirement(key=key, operator=op, values=tuple(values))


def _term(o: ObjectDecoder, t: dict, path: str) -> NodeSelectorTerm:
    parts = {}
    for field_name, is_field in (("matchExpressions", False), ("matchFields", True)):
        fpath = child_path(path, field_name)
        seq = o.list(t.get(field_name), fpath)
        reqs = []
        for i in range(len(seq)):
            r = o.item(seq, i, fpath)
            if r is not None:
                reqs.append(_requirement(o, r, child_path(fpath, i), is_field))
        parts[field_name] = tuple(reqs)
    return NodeSelectorTerm(match_expressions=parts["matchExpressions"], match_fields=parts["matchFields"])


def _node_affinity(o: ObjectDecoder, spec: dict, path: str):
    apath = child_path(path, "affinity")
    napath = child_path(apath, "nodeAffinity")
    na = o.map(o.map(spec.get("affinity"), apath).get("nodeAffinity"), napath)
    required = None
    rpath = child_path(napath, "requiredDuringSchedulingIgnoredDuringExecution")
    if na.get("requiredDuringSchedulingIgnoredDuringExecution") is not None:
        selector = o.map(na["requiredDuringSchedulingIgnoredDuringExecution"], rpath)
        tpath = child_path(rpath, "nodeSelectorTerms")
        seq = o.list(selector.get("nodeSelectorTerms"), tpath)
        if not seq:
            o.add(tpath, field.required("must have at least one node selector term"))
        terms = []
        for i in range(len(seq)):
            t = o.item(seq, i, tpath)
            if t is not None:
                terms.append(_term(o, t, child_path(tpath, i)))
        required = tuple(terms)
    preferred = []
    ppath = child_path(napath, "preferredDuringSchedulingIgnoredDuringExecution")
    seq = o.list(na.get("preferredDuringSchedulingIgnoredDuringExecution"), ppath)
    for i in range(len(seq)):
        p = o.item(seq, i, ppath)
        if p is None:
            continue
        ipath = child_path(ppath, i)
        weight = o.int(p.get("weight"), child_path(ipath, "weight"), 0)
        if not 1 <= weight <= 100:
            o.add(child_path(ipath, "weight"), field.invalid(weight, "must be in the range 1-100"))
        pref = o.map(p.get("preference"), child_path(ipath, "preference"))
        preferred.append(PreferredTerm(weight=weight, preference=_term(o, pref, child_path(ipath, "preference"))))
    return required, tuple(preferred)


def _tolerations(o: ObjectDecoder, value, path: str) -> tuple[Toleration, ...]:
    out = []
    seq = o.list(value, path)
    for i in range(len(seq)):
        t = o.item(seq, i, path)
        if t is None:
            continue
        ipath = child_path(path, i)
        key = o.str(t.get("key"), child_path(ipath, "key"))
        op = o.str(t.get("operator"), child_path(ipath, "operator")) or "Equal"  # as SetDefaults: "" means Equal
        val = o.str(t.get("value"), child_path(ipath, "value"))
        effect = o.str(t.get("effect"), child_path(ipath, "effect"))
        seconds = o.int(t.get("tolerationSeconds"), child_path(ipath, "tolerationSeconds"), None, INT64_MIN, INT64_MAX)
        # As ValidateTolerations.
        if key:
            o.check(child_path(ipath, "key"), key, is_qualified_name(key))
        elif op != "Exists":
            o.add(child_path(ipath, "operator"), field.invalid(
                op, 'operator must be Exists when `key` is empty, which means "match all values and all keys"'))
        if seconds is not None and effect != NO_EXECUTE:
            o.add(child_path(ipath, "effect"), field.invalid(effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
        if op == "Equal":
            o.check(child_path(ipath, "value"), val, is_valid_label_value(val))
        elif op == "Exists":
            if val:
                o.add(child_path(ipath, "value"), field.invalid(val, "value must be empty when `operator` is 'Exists'"))
        else:
            o.add(child_path(ipath, "operator"), field.not_supported(op, ("Equal", "Exists")))
        if effect and effect not in TAINT_EFFECTS:
            o.add(child_path(ipath, "effect"), field.not_supported(effect, TAINT_EFFECTS))
        out.append(Toleration(key=key, operator=op, value=val, effect=effect, toleration_seconds=seconds))
    return tuple(out)


def _scheduling_gates(o: ObjectDecoder, value, path: str) -> tuple[str, ...]:
    """As validateSchedulingGates: each name a qualified name, none twice."""
    names: list[str] = []
    seq = o.list(value, path)
    for i in range(len(seq)):
        g = o.item(seq, i, path)
        if g is None:
            continue
        ipath = child_path(path, i)
        name = o.str(g.get("name"), child_path(ipath, "name"))
        o.check(ipath, name, is_qualified_name(name))
        if name in names:
            o.add(ipath, field.duplicate(name))
        names.append(name)
    return tuple(names)


def decode_pod(o: ObjectDecoder, obj: dict) -> PodSpec:
    meta, namespace, name = decode_metadata(o, obj, namespaced=True)
    labels = decode_labels(o, meta.get("labels"), "metadata.labels", "ObjectMeta.metadata.labels")
    owners = topology.owner_references(o, meta.get("ownerReferences"))
    decode_annotations(o, meta.get("annotations"), "metadata.annotations")
    uid = o.str(meta.get("uid"), "metadata.uid")
    if len(uid) > UID_MAX_LENGTH:  # our column's size; the API server's uids are 36-character UUIDs
        o.add("metadata.uid", field.too_long(UID_MAX_LENGTH))
    deleting = meta.get("deletionTimestamp") is not None
    spec = o.map(obj.get("spec"), "spec")
    spec_is_map = obj.get("spec") is None or isinstance(obj.get("spec"), dict)  # else that is the one problem
    host_network = o.bool(spec.get("hostNetwork"), "spec.hostNetwork")
    containers, init_containers = [], []
    exact: dict[bool, list[ContainerResources]] = {False: [], True: []}  # per container, for spec.resources
    for field_name, into, init in (("containers", containers, False), ("initContainers", init_containers, True)):
        cpath = child_path("spec", field_name)
        seq = o.list(spec.get(field_name), cpath)
        if not init and not spec.get(field_name) and spec_is_map:
            o.add(cpath, field.required())
        for i in range(len(seq)):
            c = o.item(seq, i, cpath)
            if c is not None:
                container, resources = _container(o, c, child_path(cpath, i), init, host_network)
                into.append(container)
                exact[init].append(resources)
    seen: dict[str, str] = {}
    for field_name, group in (("initContainers", init_containers), ("containers", containers)):
        for i, c in enumerate(group):
            if c.name and c.name in seen:
                o.add(f"spec.{field_name}[{i}].name", field.duplicate(c.name))
            elif c.name:
                seen[c.name] = f"spec.{field_name}[{i}]"
    overhead = units(resource_list(o, spec.get("overhead"), "spec.overhead", container_resource_name))
    pod_level_requests = pod_level_resources(o, spec, exact[False], exact[True])
    node_selector = decode_labels(o, spec.get("nodeSelector"), "spec.nodeSelector", "PodSpec.spec.nodeSelector")
    required, preferred = _node_affinity(o, spec, "spec")
    # Labels: the API server checks matchLabelKeys after it merged them into the selectors (at creation).
    merged_from = labels if o.from_user else None
    pod_affinity, pod_anti_affinity = topology.pod_affinities(o, spec.get("affinity"), pod_labels=merged_from)
    spread = topology.topology_spread_constraints(o, spec.get("topologySpreadConstraints"), pod_labels=merged_from)
    tolerations = _tolerations(o, spec.get("tolerations"), "spec.tolerations")
    # The decoder has no PriorityClass objects: apply and explain resolve spec.priorityClassName after it,
    # as the Priority admission plugin (manifests/priority.py); until then a pod without spec.priority reads 0.
    priority = o.int(spec.get("priority"), "spec.priority", 0)
    class_name = o.str(spec.get("priorityClassName"), "spec.priorityClassName")
    if class_name:
        o.check("spec.priorityClassName", class_name, is_dns1123_subdomain(class_name))
    # As the API server: PreemptLowerPriority unless set (Priority admission copies it from the class).
    preemption_policy = o.str(spec.get("preemptionPolicy"), "spec.preemptionPolicy") or PREEMPT_LOWER_PRIORITY
    if preemption_policy not in PREEMPTION_POLICIES:
        o.add("spec.preemptionPolicy", field.not_supported(preemption_policy, PREEMPTION_POLICIES))
    scheduler_name = o.str(spec.get("schedulerName"), "spec.schedulerName") or DEFAULT_SCHEDULER_NAME
    if o.from_user:
        # The API server takes any string here; schedboard does not: the name keys a profile, labels
        # metrics and events, and is shown and exported on every page. A profile name is a DNS-1123
        # subdomain in practice, so the same rule and upstream's words for it. Pods mirrored from a
        # cluster are taken as the API server took them.
        o.check("spec.schedulerName", scheduler_name, is_dns1123_subdomain(scheduler_name))
    node_name = o.str(spec.get("nodeName"), "spec.nodeName")
    if node_name:
        o.check("spec.nodeName", node_name, is_dns1123_subdomain(node_name))
    gates = _scheduling_gates(o, spec.get("schedulingGates"), "spec.schedulingGates")
    if gates and node_name and o.from_user:  # as ValidatePodCreate (a mirrored pod is as the API server took it)
        o.add("spec.nodeName", field.forbidden("cannot be set until all schedulingGates have been cleared"))
    return PodSpec(
        namespace=namespace, name=name, uid=uid, scheduler_name=scheduler_name, priority=priority,
        node_name=node_name, node_selector=node_selector, required_terms=required, preferred_terms=preferred,
        tolerations=tolerations, containers=tuple(containers), init_containers=tuple(init_containers),
        overhead=overhead, pod_level_requests=pod_level_requests, deleting=deleting, labels=labels,
        owner_references=owners, topology_spread_constraints=spread, pod_affinity=pod_affinity,
        pod_anti_affinity=pod_anti_affinity, preemption_policy=preemption_policy, scheduling_gates=gates,
        **stored.status_fields(obj),
    )


def default_pod_manifest(m: dict) -> None:
    """Write into a (valid) pod manifest the API-server defaults the spec was built with."""
    meta = m.setdefault("metadata", {})
    meta["namespace"] = meta.get("namespace") or DEFAULT_NAMESPACE
    spec = m.setdefault("spec", {})
    spec["schedulerName"] = spec.get("schedulerName") or DEFAULT_SCHEDULER_NAME
    for field_name in ("containers", "initContainers"):
        for c in spec.get(field_name) or ():
            resources = c.get("resources") or {}
            if resources.get("limits"):
                c["resources"] = resources
                resources["requests"] = {**resources["limits"], **(resources.get("requests") or {})}
            for p in c.get("ports") or ():
                p["protocol"] = p.get("protocol") or "TCP"
                if spec.get("hostNetwork") and not p.get("hostPort"):
                    p["hostPort"] = p.get("containerPort")
