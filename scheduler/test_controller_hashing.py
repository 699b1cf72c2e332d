"""The controllers' template hashes: stable, changed by the template or a collision count, in the safe alphabet."""

import pytest

from scheduler.controllers.hashing import SAFE_ALPHANUMS, fnv32a, safe_encode, template_hash


@pytest.mark.parametrize("data, want", [(b"", 0x811C9DC5), (b"a", 0xE40C292C), (b"foobar", 0xBF9CF968)])
def test_fnv32a_matches_the_published_vectors(data, want):
    assert fnv32a(data) == want


def test_safe_encode_maps_each_character_by_its_code():
    assert safe_encode("0123456789") == "".join(SAFE_ALPHANUMS[ord(c) % 27] for c in "0123456789")


def test_a_template_hash_is_stable_and_changes_with_the_template_or_a_collision_count():
    t = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    same = {"spec": {"containers": [{"image": "nginx", "name": "c"}]}, "metadata": {"labels": {"app": "web"}}}
    assert template_hash(t) == template_hash(same)
    assert template_hash(t) != template_hash({**t, "spec": {"containers": [{"name": "c", "image": "httpd"}]}})
    assert template_hash(t) != template_hash(t, 1)
    assert set(template_hash(t)) <= set(SAFE_ALPHANUMS) and 1 <= len(template_hash(t)) <= 10
