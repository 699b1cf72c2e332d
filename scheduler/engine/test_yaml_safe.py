"""The shared decoder: JSON values out, hostile YAML and JSON refused with the field path and line."""

import json
import tracemalloc

import pytest

from scheduler.engine.yaml_safe import MAX_DEPTH, DecodeProblem, load_json, load_yaml


def refused(load, text: str) -> str:
    with pytest.raises(DecodeProblem) as info:
        load(text)
    return str(info.value)


REFUSED_YAML = [
    ("a: &x [1]\nb: *x\n", "a: YAML anchors are not allowed (&x) (line 1, column 4)"),
    ("a: [1]\nb: *x\n", "b: YAML aliases are not allowed (*x) (line 2, column 4)"),
    ("spec:\n  containers:\n  - &c {name: a}\n", "spec.containers[0]: YAML anchors are not allowed (&c) (line 3, column 5)"),
    ("x: " + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1),
     "x" + "[0]" * (MAX_DEPTH - 1) + f": nested more than {MAX_DEPTH} levels deep (line 1, column {MAX_DEPTH + 3})"),
    ("n: " + "9" * 4301, "n: integer with more than 4300 digits (line 1, column 4)"),
    ("n: 0x" + "f" * 3600, "n: integer with more than 4300 digits (line 1, column 4)"),
    ("n: .inf", "n: .inf: not a finite number (JSON has no infinity or NaN) (line 1, column 4)"),
    ("n: -.inf", "n: -.inf: not a finite number (JSON has no infinity or NaN) (line 1, column 4)"),
    ("n: .nan", "n: .nan: not a finite number (JSON has no infinity or NaN) (line 1, column 4)"),
    ("n: 1.0e+999999999", "n: 1.0e+999999999: not a finite number (JSON has no infinity or NaN) (line 1, column 4)"),
    ("b: !!binary aGVsbG8=", "b: YAML tag !!binary is not allowed: only strings, numbers, booleans, null, lists and maps "
                              "(line 1, column 4)"),
    ("s: !!set {a, b}", "s: YAML tag !!set is not allowed: only strings, numbers, booleans, null, lists and maps "
                        "(line 1, column 4)"),
    ("o: !!omap [{a: 1}]", "o: YAML tag !!omap is not allowed: only strings, numbers, booleans, null, lists and maps "
                           "(line 1, column 4)"),
    ("t: !!timestamp 2024-01-01", "t: YAML tag !!timestamp is not allowed: only strings, numbers, booleans, null, lists "
                                  "and maps (line 1, column 4)"),
    ("p: !!python/object:os.system x", "p: YAML tag !!python/object:os.system is not allowed: only strings, numbers, "
                                       "booleans, null, lists and maps (line 1, column 4)"),
    ("c: !mine x", "c: YAML tag !mine is not allowed: only strings, numbers, booleans, null, lists and maps "
                   "(line 1, column 4)"),
    ("n: !!int abc", 'n: cannot read "abc" as an integer (line 1, column 4)'),
    ("n: !!float abc", 'n: cannot read "abc" as a number (line 1, column 4)'),
    ("n: !!bool maybe", 'n: cannot read "maybe" as a boolean (line 1, column 4)'),
    ("metadata:\n  labels:\n    app: a\n    app: b\n", 'metadata.labels: key "app" already set in map (line 4, column 5)'),
    ("m: {1: a, '1': b}", 'm: key "1" already set in map (line 1, column 11)'),
    ("m: {true: a, true: b}", "m: key true already set in map (line 1, column 14)"),
    ("m: {~: a}", "m: map key null is not a string (line 1, column 5)"),
    ("m: {1.5: a}", "m: map key 1.5 is not a string (line 1, column 5)"),
    ("m:\n  ? [a]\n  : b\n", "m: map key a list or map is not a string (line 2, column 5)"),
    ("m:\n  <<: {a: 1}\n", "m: YAML merge keys (<<) are not allowed (line 2, column 3)"),
    ('s: "a\\0b"', "s: NUL characters (\\0) are not supported (line 1, column 4)"),
]


@pytest.mark.parametrize("text, expected", REFUSED_YAML)
def test_it_refuses_hostile_yaml_with_the_field_path_and_line(text, expected):
    assert refused(load_yaml, text) == expected


def test_an_alias_bomb_is_refused_at_its_first_anchor_before_anything_is_expanded():
    # 9 levels of 9 aliases each: 9**9 = 387 million strings once expanded, from 306 bytes.
    bomb = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
        f"{c}: &{c} [{','.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi"))
    assert len(bomb) < 512
    tracemalloc.start()
    try:
        message = refused(load_yaml, bomb)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # The first event with an anchor stops the loader: the rest of the file is never even parsed.
    assert message == "a: YAML anchors are not allowed (&a) (line 1, column 4)"
    assert peak < 1_000_000


ACCEPTED_YAML = [
    ("a: [1, 2.5, true, null, x]", {"a": [1, 2.5, True, None, "x"]}),
    # As sigs.k8s.io/yaml: int and bool keys become strings, timestamps stay the text written.
    ("{1: a, true: b}", {"1": "a", "true": "b"}),
    ("t: 2024-01-01T00:00:00Z\nd: 2024-13-45\n", {"t": "2024-01-01T00:00:00Z", "d": "2024-13-45"}),
    # YAML 1.1 reads these as numbers, Go as text: "1e999999999" is not a float without a dot, 1:30 is not base 60.
    ("n: 1e999999999\nm: 1:30\n", {"n": "1e999999999", "m": "1:30"}),
    ("n: " + "9" * 4300, {"n": int("9" * 4300)}),
    ('s: "\\ud800"', {"s": "\ufffd"}),  # a lone surrogate reads as U+FFFD, as Go's decoder does
    # The top-level map is one level: MAX_DEPTH in all.
    ("x: " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1), {"x": json.loads("[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1))}),
]


@pytest.mark.parametrize("text, expected", ACCEPTED_YAML)
def test_it_reads_plain_yaml_as_json_values(text, expected):
    assert load_yaml(text) == expected


REFUSED_JSON = [
    ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), f"nested more than {MAX_DEPTH} levels deep (line 1, column {MAX_DEPTH + 1})"),
    ('{"a": "[[[[", "b": ' + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) + "}",
     f"nested more than {MAX_DEPTH} levels deep (line 1, column {MAX_DEPTH + 19})"),  # the map is the first level
    ('{"n": [' + "9" * 4301 + "]}", "n[0]: integer with more than 4300 digits"),
    ('{"n": 1e999999999}', "n: 1e999999999: not a finite number (JSON has no infinity or NaN)"),
    ('{"n": NaN}', "n: NaN: not a finite number (JSON has no infinity or NaN)"),
    ('{"n": -Infinity}', "n: -Infinity: not a finite number (JSON has no infinity or NaN)"),
    ('{"metadata": {"labels": {"a": "1", "a": "2"}}}', 'metadata.labels: key "a" already set in map'),
    ('{"s": "a\\u0000"}', "s: NUL characters (\\0) are not supported"),
]


@pytest.mark.parametrize("text, expected", REFUSED_JSON)
def test_it_refuses_hostile_json_with_the_field_path(text, expected):
    assert refused(load_json, text) == expected


def test_json_brackets_inside_strings_do_not_count_as_nesting():
    text = json.dumps({"a": "[" * 1000, "b": "{" * 1000})
    assert load_json(text) == {"a": "[" * 1000, "b": "{" * 1000}


def test_a_lone_surrogate_in_json_reads_as_the_replacement_character():
    assert load_json('{"k\\udc00": "\\ud800x"}') == {"k\ufffd": "\ufffdx"}
