"""Hypothesis strategies for the engine's tests: random clusters (nodes and their usage), pods and profiles,
shared by the engine-versus-reference checks and the explain/trace tests. A harness beside the engine, so
that its tests import nothing outside it; never imported by a production module (import-linter checks it)."""

from __future__ import annotations

import random

from hypothesis import strategies as st

from scheduler.engine.cluster_objects import ClusterObjects
from scheduler.engine.config import ProfileConfig, default_profile
from scheduler.engine.labels import LabelSelector, LabelSelectorRequirement
from scheduler.engine.nodes import ImageState, NodeSpec, NodeUsage
from scheduler.engine.plugin_args import (
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    NodeAffinityArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    ResourceSpec,
    ScoringStrategy,
    UtilizationShapePoint,
)
from scheduler.engine.pods import (
    NO_EXECUTE,
    NO_SCHEDULE,
    PREFER_NO_SCHEDULE,
    Container,
    HostPort,
    NodeSelectorTerm,
    OwnerReference,
    PodAffinity,
    PodAffinityTerm,
    PodSpec,
    PreferredTerm,
    Requirement,
    Taint,
    Toleration,
    TopologySpreadConstraint,
    WeightedPodAffinityTerm,
)

GPU = "example.com/gpu"
MI = 1024 * 1024
GI = 1024 * MI
RESOURCES = ("cpu", "memory", "ephemeral-storage", GPU)

LABEL_KEYS = ("zone", "disk", "num", "example.com/team")
LABEL_VALUES = {"zone": ("a", "b", "c"), "disk": ("ssd", "hdd"), "num": ("1", "5", "10", "-3", "x"),
                "example.com/team": ("red", "blue")}
TAINT_KEYS = ("dedicated", "spot", "node.kubernetes.io/unschedulable")
EFFECTS = (NO_SCHEDULE, PREFER_NO_SCHEDULE, NO_EXECUTE)
IMAGES = ("nginx:latest", "nginx", "redis:7", "busybox:latest", "reg.io/app:v1", "reg.io:5000/app")

FILTERS = ["NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts", "NodeResourcesFit"]
SCORES = ["TaintToleration", "NodeAffinity", "NodeResourcesFit", "NodeResourcesBalancedAllocation", "ImageLocality"]

# ---- clusters --------------------------------------------------------------------------------

host_ports = st.builds(
    HostPort,
    port=st.sampled_from([80, 443, 8080]),
    protocol=st.sampled_from(["TCP", "UDP", ""]),
    ip=st.sampled_from(["0.0.0.0", "127.0.0.1", "10.0.0.1", ""]),
)


# Clusters are built by a plain RNG from a hypothesis-drawn seed: drawing forty nodes field by field
# through hypothesis costs a hundred times more than scheduling on them.
def random_host_port(rng: random.Random) -> HostPort:
    return HostPort(port=rng.choice([80, 443, 8080]), protocol=rng.choice(["TCP", "UDP", ""]),
                    ip=rng.choice(["0.0.0.0", "127.0.0.1", "10.0.0.1", ""]))


def random_node(rng: random.Random, name: str) -> NodeSpec:
    alloc = {
        "cpu": rng.choice([0, 1000, 2000, 4000, 8000, 8000, 8000, 16000]),
        "memory": rng.choice([0, 512 * MI, GI, 4 * GI, 16 * GI, 16 * GI, 32 * GI, 64 * GI]),
        "pods": rng.choice([0, 1, 3, 110, 110, 110, 110, 110]),
    }
    if rng.random() < 0.8:
        alloc["ephemeral-storage"] = rng.choice([0, 10 * GI, 100 * GI, 100 * GI])
    if rng.random() < 0.5:
        alloc[GPU] = rng.randint(0, 4)
    labels = {k: rng.choice(LABEL_VALUES[k]) for k in LABEL_KEYS if rng.random() < 0.6}
    taints = {Taint(rng.choice(TAINT_KEYS), rng.choice(["", "a", "b"]), rng.choice(EFFECTS))
              for _ in range(rng.choice([0, 0, 0, 1, 1, 2, 3]))}
    images = tuple(
        ImageState(tuple(rng.sample(IMAGES, rng.randint(1, 2))), rng.choice([0, 10 * MI, 300 * MI, 900 * MI, 1500 * MI]))
        for _ in range(rng.randint(0, 3))
    )
    return NodeSpec(name=name, labels=labels, taints=tuple(sorted(taints, key=repr)), allocatable=alloc,
                    unschedulable=rng.random() < 0.15, images=images)


def random_usage(rng: random.Random) -> NodeUsage:
    requested = {}
    for res, top in (("cpu", 6000), ("memory", 8 * GI), ("ephemeral-storage", 50 * GI), (GPU, 2), ("pods", 4)):
        if rng.random() < 0.4:
            requested[res] = rng.randint(0, top)
    # Non-zero requests are at least the plain ones (defaults fill the containers that set none).
    nonzero_cpu = requested.get("cpu", 0) + rng.choice([0, 100, 300])
    nonzero_memory = requested.get("memory", 0) + rng.choice([0, 200 * MI])
    ports = tuple(random_host_port(rng) for _ in range(rng.choice([0, 0, 0, 1, 2])))
    return NodeUsage(requested=requested, nonzero_cpu=nonzero_cpu, nonzero_memory=nonzero_memory, ports=ports)


@st.composite
def clusters(draw, max_nodes: int = 40) -> tuple[list[NodeSpec], list[NodeUsage]]:
    n = draw(st.integers(1, max_nodes))
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    specs = [random_node(rng, f"n{i}") for i in range(n)]
    return specs, [random_usage(rng) for _ in range(n)]


# ---- pods ------------------------------------------------------------------------------------
# Strategies are built once (building them per example costs more than running the example).
PINNED = ("n0", "n1", "n3", "ghost")  # node names that matchFields and spec.nodeName may name

LABEL_REQUIREMENTS = st.one_of(
    st.builds(lambda k, vs: Requirement(k, "In", tuple(vs)), st.sampled_from(LABEL_KEYS),
              st.lists(st.sampled_from(("a", "b", "ssd", "red", "5")), min_size=1, max_size=2)),
    st.builds(lambda k, vs: Requirement(k, "NotIn", tuple(vs)), st.sampled_from(LABEL_KEYS),
              st.lists(st.sampled_from(("a", "hdd", "blue")), min_size=1, max_size=2)),
    st.builds(lambda k: Requirement(k, "Exists"), st.sampled_from(LABEL_KEYS)),
    st.builds(lambda k: Requirement(k, "DoesNotExist"), st.sampled_from(LABEL_KEYS)),
    # "z" does not parse as an integer and "-5" is not a valid label value: such a term never matches.
    st.builds(lambda op, v: Requirement("num", op, (v,)), st.sampled_from(("Gt", "Lt")),
              st.sampled_from(("0", "4", "10", "-5", "z"))),
)
VALID_LABEL_REQUIREMENTS = LABEL_REQUIREMENTS.filter(lambda r: r.values not in (("z",), ("-5",)))
FIELD_REQUIREMENTS = st.builds(lambda op, v: Requirement("metadata.name", op, (v,)),
                               st.sampled_from(("In", "NotIn")), st.sampled_from(PINNED))


def _terms(labels):
    return st.builds(lambda e, f: NodeSelectorTerm(tuple(e), tuple(f)),
                     st.lists(labels, max_size=2), st.lists(FIELD_REQUIREMENTS, max_size=1))


TERMS = _terms(LABEL_REQUIREMENTS)
VALID_TERMS = _terms(VALID_LABEL_REQUIREMENTS)
PREFERRED = st.lists(st.builds(PreferredTerm, st.integers(1, 100), TERMS), max_size=2).map(tuple)
VALID_PREFERRED = st.lists(st.builds(PreferredTerm, st.integers(1, 100), VALID_TERMS), max_size=2).map(tuple)

REQUESTS = st.dictionaries(
    st.sampled_from(RESOURCES),
    st.one_of(st.just(0), st.sampled_from([100, 250, 500, 1000, 3000]), st.integers(1, 2)),
    max_size=2,
).map(lambda d: {k: (v * MI if k == "memory" else v * GI if k == "ephemeral-storage" else v) for k, v in d.items()})


def _containers(prefix: str, *, init: bool):
    return st.lists(st.builds(
        Container, name=st.just(prefix), image=st.sampled_from(IMAGES + ("",)), requests=REQUESTS,
        ports=st.lists(host_ports, max_size=1).map(tuple),
        restart_policy=st.sampled_from([None, "Always"]) if init else st.none(),
    ), min_size=0 if init else 1, max_size=2 if init else 3).map(tuple)


CONTAINERS = _containers("c", init=False)
INIT_CONTAINERS = _containers("i", init=True)
TOLERATIONS = st.lists(st.builds(
    Toleration, key=st.sampled_from(("",) + TAINT_KEYS), operator=st.sampled_from(("Equal", "Exists", "")),
    value=st.sampled_from(("", "a")), effect=st.sampled_from(("",) + EFFECTS),
), max_size=3).map(tuple)
SELECTORS = st.dictionaries(st.sampled_from(LABEL_KEYS), st.sampled_from(("a", "b", "ssd", "5", "red")), max_size=2)

def sometimes(strategy, otherwise, odds: int = 3):
    """`strategy` about one time in `odds`, else the value `otherwise` (so most pods can go somewhere)."""
    return st.integers(0, 99).flatmap(lambda i: strategy if i >= 100 - 100 // odds else st.just(otherwise))


PODS = st.builds(
    PodSpec, namespace=st.just("default"), name=st.just("p"),
    node_name=sometimes(st.sampled_from(PINNED), "", 6),
    node_selector=sometimes(SELECTORS, {}),
    required_terms=sometimes(st.lists(TERMS, max_size=2).map(tuple), None),
    preferred_terms=PREFERRED, tolerations=TOLERATIONS, containers=CONTAINERS, init_containers=INIT_CONTAINERS,
    overhead=st.one_of(st.just({}), st.fixed_dictionaries({"cpu": st.sampled_from([10, 250])})),
)

# ---- profiles --------------------------------------------------------------------------------

RESOURCE_SPECS = st.lists(
    st.builds(ResourceSpec, st.sampled_from(RESOURCES), st.integers(1, 100)),
    min_size=1, max_size=4, unique_by=lambda r: r.name,
).map(tuple)
# Utilization points strictly increasing, scores 0..10 (as ValidateRequestedToCapacityRatioArgs).
SHAPES = st.lists(st.tuples(st.integers(0, 100), st.integers(0, 10)), min_size=1, max_size=4,
                  unique_by=lambda p: p[0]).map(lambda ps: tuple(UtilizationShapePoint(u, s) for u, s in sorted(ps)))


@st.composite
def profiles(draw) -> ProfileConfig:
    filters = draw(st.permutations(FILTERS))
    drop = draw(st.lists(st.sampled_from(FILTERS), max_size=2))
    filters = [f for f in filters if f not in drop]  # most filters, in a random order
    chosen = draw(st.lists(st.sampled_from(SCORES), min_size=1, max_size=5, unique=True))
    scores = [(s, draw(st.integers(1, 10))) for s in chosen]
    kind = draw(st.sampled_from([LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO]))
    strategy = ScoringStrategy(type=kind, resources=draw(RESOURCE_SPECS),
                               shape=draw(SHAPES) if kind == REQUESTED_TO_CAPACITY_RATIO else ())
    ignored = draw(st.sampled_from(((), (GPU,))))
    added_required = draw(sometimes(st.lists(VALID_TERMS, min_size=1, max_size=2).map(tuple), None, 4))
    return ProfileConfig(
        scheduler_name="random", filters=filters, scores=scores,
        plugin_args={
            "NodeResourcesFit": NodeResourcesFitArgs(ignored_resources=ignored, scoring_strategy=strategy),
            "NodeResourcesBalancedAllocation": NodeResourcesBalancedAllocationArgs(resources=draw(RESOURCE_SPECS)),
            "NodeAffinity": NodeAffinityArgs(added_required_terms=added_required, added_preferred_terms=draw(VALID_PREFERRED)),
        },
    )


PROFILES = profiles()


@st.composite
def cases(draw, random_profile: bool):
    specs, use = draw(clusters())
    pod = draw(PODS)
    profile = draw(PROFILES) if random_profile else default_profile()
    return specs, use, pod, profile, draw(st.integers(0, 2**32 - 1))


# ---- clusters with topology labels, labelled pods with affinity terms, spread constraints --------

TOPO_KEYS = ("kubernetes.io/hostname", "topology.kubernetes.io/zone", "rack", "zone", "missing-key")
NAMESPACES = ("default", "other", "unknown")
NAMESPACE_LABELS = {"default": {"team": "a"}, "other": {"team": "b"}}
POD_LABEL_VALUES = {"app": ("a", "b"), "tier": ("x", "y", "")}


def random_labels(rng: random.Random) -> dict[str, str]:
    return {k: rng.choice(vs) for k, vs in POD_LABEL_VALUES.items() if rng.random() < 0.6}


def random_selector(rng: random.Random) -> LabelSelector | None:
    roll = rng.random()
    if roll < 0.12:
        return None  # nil: selects nothing
    if roll < 0.24:
        return LabelSelector()  # empty: selects everything (and counts nothing for spreading)
    labels = {k: rng.choice(vs) for k, vs in POD_LABEL_VALUES.items() if rng.random() < 0.4}
    exprs = []
    for _ in range(rng.choice([0, 0, 1, 2])):
        key = rng.choice(list(POD_LABEL_VALUES) + ["other"])
        op = rng.choice(["In", "NotIn", "Exists", "DoesNotExist"])
        values = tuple(rng.sample(("a", "b", "x", "y"), rng.randint(1, 2))) if op in ("In", "NotIn") else ()
        exprs.append(LabelSelectorRequirement(key, op, values))
    return LabelSelector.of(labels, exprs)


def random_term(rng: random.Random) -> PodAffinityTerm:
    return PodAffinityTerm(
        topology_key=rng.choice(TOPO_KEYS), label_selector=random_selector(rng),
        namespaces=rng.choice([(), (), ("other",), ("default", "other")]),
        namespace_selector=rng.choice([None, None, LabelSelector(),
                                       LabelSelector.of(match_expressions=[LabelSelectorRequirement("team", "In", ("a",))])]),
    )


def random_affinity(rng: random.Random, odds: float) -> PodAffinity | None:
    if rng.random() >= odds:
        return None
    return PodAffinity(
        required=tuple(random_term(rng) for _ in range(rng.choice([0, 1, 1, 2]))),
        preferred=tuple(WeightedPodAffinityTerm(rng.randint(1, 100), random_term(rng))
                        for _ in range(rng.choice([0, 1, 2]))),
    )


def random_topology_node(rng: random.Random, name: str) -> NodeSpec:
    labels = {}
    if rng.random() < 0.9:
        labels["kubernetes.io/hostname"] = name
    if rng.random() < 0.75:
        labels["topology.kubernetes.io/zone"] = rng.choice(["z1", "z2", "z3"])
    if rng.random() < 0.6:
        labels["rack"] = rng.choice(["r1", "r2", ""])  # "" is a value (and what a missing key reads as)
    if rng.random() < 0.5:
        labels["zone"] = rng.choice(["a", "b"])
    taints = (Taint("dedicated", "x", NO_SCHEDULE),) if rng.random() < 0.15 else ()
    return NodeSpec(name=name, labels=labels, taints=taints,
                    allocatable={"cpu": 8000, "memory": 16 * GI, "pods": 110})


def random_existing_pod(rng: random.Random, i: int) -> PodSpec:
    return PodSpec(rng.choice(NAMESPACES), f"e{i}", labels=random_labels(rng), deleting=rng.random() < 0.08,
                   pod_affinity=random_affinity(rng, 0.2), pod_anti_affinity=random_affinity(rng, 0.25))


def random_spread(rng: random.Random) -> TopologySpreadConstraint:
    return TopologySpreadConstraint(
        max_skew=rng.randint(1, 3), topology_key=rng.choice(TOPO_KEYS),
        when_unsatisfiable=rng.choice(["DoNotSchedule", "ScheduleAnyway"]), label_selector=random_selector(rng),
        min_domains=rng.choice([None, None, 1, 2, 4]), node_affinity_policy=rng.choice([None, "Honor", "Ignore"]),
        node_taints_policy=rng.choice([None, "Honor", "Ignore"]),
        match_label_keys=tuple(rng.sample(("app", "tier", "missing"), rng.choice([0, 0, 1, 2]))),
    )


def random_incoming_pod(rng: random.Random) -> PodSpec:
    owners = ()
    if rng.random() < 0.3:
        owners = (OwnerReference(*rng.choice([("apps/v1", "ReplicaSet", "rs"), ("apps/v1", "StatefulSet", "ss"),
                                                ("v1", "ReplicationController", "rc")]), controller=True),)
    return PodSpec(
        rng.choice(NAMESPACES[:2]), "incoming", labels=random_labels(rng), owner_references=owners,
        topology_spread_constraints=tuple(random_spread(rng) for _ in range(rng.choice([0, 1, 1, 2]))),
        pod_affinity=random_affinity(rng, 0.4), pod_anti_affinity=random_affinity(rng, 0.4),
        node_selector={"zone": "a"} if rng.random() < 0.15 else {},
        tolerations=(Toleration("dedicated", "Exists"),) if rng.random() < 0.2 else (),
        containers=(Container("c", requests={"cpu": 100}),),
    )


def random_objects(rng: random.Random) -> ClusterObjects:
    return ClusterObjects(
        namespace_labels=dict(NAMESPACE_LABELS),
        services={"default": [rng.choice([{"app": "a"}, {"tier": "x"}, None])] if rng.random() < 0.5 else []},
        replica_sets={("default", "rs"): random_selector(rng)},
        stateful_sets={("default", "ss"): LabelSelector.of({"app": "b"})},
        replication_controllers={("default", "rc"): {"tier": "y"}},
    )



# ---- a fixed small cluster and pod ------------------------------------------------------------

def small_cluster() -> tuple[list[NodeSpec], list[NodeUsage]]:
    alloc = {"cpu": 4000, "memory": 8 * GI, "pods": 110}
    specs = [
        NodeSpec("n0", taints=(Taint("dedicated", "infra", NO_SCHEDULE),), allocatable=alloc),
        NodeSpec("n1", allocatable={"cpu": 200, "memory": 512 * MI, "pods": 110}),
        NodeSpec("n2", allocatable=alloc),
        NodeSpec("n3", allocatable=alloc, images=(ImageState(("nginx:1.25",), 500 * MI),)),
    ]
    return specs, [NodeUsage() for _ in specs]


POD = PodSpec("web", "frontend", containers=(Container("c", image="nginx:1.25", requests={"cpu": 500, "memory": GI}),))
