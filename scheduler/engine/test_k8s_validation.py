"""Name and label validation against upstream's own tables (apimachinery util/validation/validation_test.go)
and the exact messages of validation.go and validate/content."""

from __future__ import annotations

import pytest

from .k8s_validation import is_dns1123_label, is_dns1123_subdomain, is_qualified_name, is_valid_label_value

# As TestIsQualifiedName.
QUALIFIED_NAME_GOOD = [
    "simple", "now-with-dashes", "1-starts-with-num", "1234", "simple/simple", "now-with-dashes/simple",
    "now-with-dashes/now-with-dashes", "now.with.dots/simple", "now-with.dashes-and.dots/simple", "1-num.2-num/3-num",
    "1234/5678", "1.2.3.4/5678", "Uppercase_Is_OK_123", "example.com/Uppercase_Is_OK_123", "requests.storage-foo",
    "a" * 63, "a" * 253 + "/" + "b" * 63,
]
QUALIFIED_NAME_BAD = [
    "nospecialchars%^=@", "cantendwithadash-", "-cantstartwithadash-", "only/one/slash", "Example.com/abc",
    "example_com/abc", "example.com/", "/simple", "a" * 64, "a" * 254 + "/abc",
]

# As TestIsDNS1123Subdomain.
SUBDOMAIN_GOOD = [
    "a", "ab", "abc", "a1", "a-1", "a--1--2--b",
    "0", "01", "012", "1a", "1-a", "1--a--b--2",
    "a.a", "ab.a", "abc.a", "a1.a", "a-1.a", "a--1--2--b.a",
    "a.1", "ab.1", "abc.1", "a1.1", "a-1.1", "a--1--2--b.1",
    "0.a", "01.a", "012.a", "1a.a", "1-a.a", "1--a--b--2",
    "0.1", "01.1", "012.1", "1a.1", "1-a.1", "1--a--b--2.1",
    "a.b.c.d.e", "aa.bb.cc.dd.ee", "1.2.3.4.5", "11.22.33.44.55",
    "a" * 253,
]
SUBDOMAIN_BAD = [
    "", "A", "ABC", "aBc", "A1", "A-1", "1-A",
    "-", "a-", "-a", "1-", "-1",
    "_", "a_", "_a", "a_b", "1_", "_1", "1_2",
    ".", "a.", ".a", "a..b", "1.", ".1", "1..2",
    " ", "a ", " a", "a b", "1 ", " 1", "1 2",
    "A.a", "aB.a", "ab.A", "A1.a", "a1.A",
    "A.1", "aB.1", "A1.1", "1A.1",
    "0.A", "01.A", "012.A", "1A.a", "1a.A",
    "A.B.C.D.E", "AA.BB.CC.DD.EE", "a.B.c.d.e", "aa.bB.cc.dd.ee",
    "a@b", "a,b", "a_b", "a;b",
    "a:b", "a%b", "a?b", "a$b",
    "a" * 254,
]

# As TestIsDNS1123Label.
LABEL_GOOD = ["a", "ab", "abc", "a1", "a-1", "a--1--2--b", "0", "01", "012", "1a", "1-a", "1--a--b--2", "a" * 63]
LABEL_BAD = [
    "", "A", "ABC", "aBc", "A1", "A-1", "1-A",
    "-", "a-", "-a", "1-", "-1",
    "_", "a_", "_a", "a_b", "1_", "_1", "1_2",
    ".", "a.", ".a", "a.b", "1.", ".1", "1.2",
    " ", "a ", " a", "a b", "1 ", " 1", "1 2",
    "a" * 64,
]

# As TestIsValidLabelValue.
LABEL_VALUE_GOOD = ["simple", "now-with-dashes", "1-starts-with-num", "end-with-num-1", "1234", "a" * 63, ""]
LABEL_VALUE_BAD = [
    "nospecialchars%^=@", "Tama-nui-te-rā.is.Māori.sun", "\\backslashes\\are\\bad", "-starts-with-dash",
    "ends-with-dash-", ".starts.with.dot", "ends.with.dot.", "a" * 64,
]

CASES = (
    [(is_qualified_name, v, True) for v in QUALIFIED_NAME_GOOD]
    + [(is_qualified_name, v, False) for v in QUALIFIED_NAME_BAD]
    + [(is_dns1123_subdomain, v, True) for v in SUBDOMAIN_GOOD]
    + [(is_dns1123_subdomain, v, False) for v in SUBDOMAIN_BAD]
    + [(is_dns1123_label, v, True) for v in LABEL_GOOD]
    + [(is_dns1123_label, v, False) for v in LABEL_BAD]
    + [(is_valid_label_value, v, True) for v in LABEL_VALUE_GOOD]
    + [(is_valid_label_value, v, False) for v in LABEL_VALUE_BAD]
)


@pytest.mark.parametrize(("check", "value", "valid"), CASES,
                         ids=[f"{c.__name__}-{v[:20]!r}-{'ok' if ok else 'bad'}" for c, v, ok in CASES])
def test_it_accepts_and_rejects_upstreams_own_cases(check, value, valid):
    errors = check(value)
    assert (errors == []) is valid, errors


SUBDOMAIN_REGEX = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                   "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
                   "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
LABEL_REGEX = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
               "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
               "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
KEY_REGEX = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
             "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
             "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
VALUE_REGEX = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
               "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
               "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")


@pytest.mark.parametrize(("check", "value", "expected"), [
    (is_dns1123_subdomain, "Web_1", [SUBDOMAIN_REGEX]),
    # validation.MaxLenError counts "characters"...
    (is_dns1123_subdomain, "a" * 254, ["must be no more than 253 characters"]),
    (is_dns1123_subdomain, "-" * 254, ["must be no more than 253 characters", SUBDOMAIN_REGEX]),
    (is_dns1123_label, "a.b", ["must not contain dots"]),
    (is_dns1123_label, "A", [LABEL_REGEX]),
    (is_dns1123_label, "a" * 64, ["must be no more than 63 characters"]),
    (is_dns1123_label, "a." * 32 + "a", ["must be no more than 63 characters", "must not contain dots"]),
    # ...while content.MaxLenError, behind label keys and values, counts "bytes".
    (is_qualified_name, "/simple", ["prefix part must be non-empty"]),
    (is_qualified_name, "example.com/", ["name part must be non-empty", "name part " + KEY_REGEX]),
    (is_qualified_name, "Example.com/-a", ["prefix part " + SUBDOMAIN_REGEX, "name part " + KEY_REGEX]),
    (is_qualified_name, "a" * 254 + "/abc", ["prefix part must be no more than 253 bytes"]),
    (is_qualified_name, "a" * 64, ["name part must be no more than 63 bytes"]),
    (is_qualified_name, "only/one/slash",
     ["a valid label key " + KEY_REGEX + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]),
    (is_valid_label_value, "-a", [VALUE_REGEX]),
    (is_valid_label_value, "a" * 64, ["must be no more than 63 bytes"]),
    # Go's len() counts UTF-8 bytes: 32 two-byte letters are 64 bytes.
    (is_valid_label_value, "ā" * 32, ["must be no more than 63 bytes", VALUE_REGEX]),
])
def test_it_returns_upstreams_exact_messages(check, value, expected):
    assert check(value) == expected


@pytest.mark.parametrize("check", [is_dns1123_label, is_dns1123_subdomain, is_qualified_name, is_valid_label_value])
def test_it_rejects_a_trailing_newline_as_gos_end_of_text_anchor_does(check):
    assert check("abc\n") != []
