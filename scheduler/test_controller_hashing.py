"""The controllers' template hashes are upstream's controller.ComputeHash: checked byte for byte against
kubernetes v1.20.2's own code (testdata/compute_hash_v1.20.json, made by scripts/hashcheck.sh: go-spew's
printout and ComputeHash after a protobuf round trip, with the API server's defaults and without), printed
with the v1.20 type layout; production prints with master's (data/pod_template_types.json)."""

import json
from pathlib import Path

import pytest

from scheduler.controllers import hashing
from scheduler.controllers.hashing import SAFE_ALPHANUMS, compute_hash, fnv32a, safe_encode, template_hash
from scheduler.controllers.spew import Printer, canonical_quantity, layout, printout
from scheduler.controllers.template_defaults import defaulted

FIXTURE = json.loads((Path(hashing.__file__).parent / "testdata" / "compute_hash_v1.20.json").read_text())
V120 = FIXTURE["layout"]
CASES = FIXTURE["cases"]


@pytest.mark.parametrize("data, want", [(b"", 0x811C9DC5), (b"a", 0xE40C292C), (b"foobar", 0xBF9CF968)])
def test_fnv32a_matches_the_published_vectors(data, want):
    assert fnv32a(data) == want


def test_safe_encode_maps_each_character_by_its_code():
    assert safe_encode("0123456789") == "".join(SAFE_ALPHANUMS[ord(c) % 27] for c in "0123456789")


@pytest.mark.parametrize("case", CASES, ids=range(len(CASES)))
def test_the_printout_and_the_hash_of_a_stored_template_are_upstreams_to_the_byte(case):
    # The template as the API server stored it (Go's own defaults), printed as DeepHashObject does.
    text = Printer(V120).format("core.PodTemplateSpec", case["defaulted"])
    assert text == case["spew_defaulted"]
    assert compute_hash(text.encode(), case.get("collision")) == case["hash_defaulted"]


@pytest.mark.parametrize("case", CASES, ids=range(len(CASES)))
def test_quantities_nil_lists_and_maps_print_as_after_a_protobuf_round_trip(case):
    # The template as written, only its quantities made canonical: "0.5" is 500m, "1.5Gi" 1536Mi (whose cached
    # string Go drops), 1e20 takes ParseQuantity's inf.Dec path; [] and {} come back nil.
    text = Printer(V120).format("core.PodTemplateSpec", defaulted(case["template"], V120, defaults=False))
    assert text == case["spew"]
    assert compute_hash(text.encode(), case.get("collision")) == case["hash"]


def _semantic(value):
    if isinstance(value, dict):
        out = {k: _semantic(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, {}, [])}
    if isinstance(value, list):
        return [_semantic(v) for v in value]
    return value


@pytest.mark.parametrize("case", CASES, ids=range(len(CASES)))
def test_our_defaults_are_the_api_servers(case):
    want = _semantic(case["defaulted"])
    if case["template"]["spec"].get("hostNetwork"):
        # v1.20 gave a host-network template's ports hostPorts; master does that for pods only (SetDefaults_Pod).
        for c in want["spec"]["containers"]:
            for port in c.get("ports", ()):
                port.pop("hostPort", None)
    assert _semantic(defaulted(case["template"])) == want


def test_production_prints_with_masters_layout_and_its_new_fields():
    assert layout() is not V120 and len(layout()) > len(V120)
    text = printout(defaulted({"spec": {"containers": [{"name": "c", "image": "nginx"}]}}))
    # Fields v1.20 did not have are printed too (a hash differs across versions as upstream's does).
    assert "ResizePolicy:([]v1.ContainerResizePolicy)<nil>" in text and "SchedulingGates:" in text
    assert text.startswith("(v1.PodTemplateSpec){ObjectMeta:(v1.ObjectMeta){Name:(string) GenerateName:(string) ")


@pytest.mark.parametrize("written, milli, want", [("0.5", False, "500m"), ("1.5Gi", False, "1536Mi"),
                                                   ("1e3", False, "1e3"), ("1000", False, "1k"), (2, False, "2"),
                                                   ("1n", True, "1m"), ("100n", False, "100n"), ("0.0001", True, "1m")])
def test_a_quantity_is_stored_in_its_canonical_form(written, milli, want):
    assert canonical_quantity(written, milli=milli) == want


def test_a_template_hash_is_stable_and_changes_with_the_template_or_a_collision_count():
    t = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    same = {"spec": {"containers": [{"image": "nginx", "name": "c"}]}, "metadata": {"labels": {"app": "web"}}}
    assert template_hash(t) == template_hash(same)
    # Defaults make no difference: the API server would have stored them anyway.
    explicit = {**t, "spec": {"containers": [{"name": "c", "image": "nginx", "imagePullPolicy": "Always"}],
                              "restartPolicy": "Always"}}
    assert template_hash(explicit) == template_hash(t)
    assert template_hash(t) != template_hash({**t, "spec": {"containers": [{"name": "c", "image": "httpd"}]}})
    # A collision count, even 0, is hashed after the template.
    assert len({template_hash(t), template_hash(t, 0), template_hash(t, 1)}) == 3
    assert set(template_hash(t)) <= set(SAFE_ALPHANUMS) and 1 <= len(template_hash(t)) <= 10


def test_a_template_go_would_print_with_its_time_zone_is_hashed_by_its_json():
    t = {"metadata": {"creationTimestamp": "2026-12-01T10:00:00Z"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
    assert template_hash(t) == template_hash(json.loads(json.dumps(t)))
    assert template_hash(t) != template_hash({**t, "metadata": {}})
