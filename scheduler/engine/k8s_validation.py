"""Kubernetes name and label validation, as apimachinery's pkg/util/validation (validation.go) and
the pkg/api/validate/content helpers it now delegates label keys and values to.

Each function returns upstream's error strings, word for word, or [] when the value is valid;
callers attach a field path or reduce the list to a bool. Pure Python: the engine, the config
loader and the manifest loader all use it.
"""

from __future__ import annotations

import re

def _byte_len(value: str) -> int:
    # As upstream: lengths are Go's len(string), UTF-8 bytes. Go decodes a lone surrogate from JSON
    # as U+FFFD (3 bytes); "surrogatepass" counts it as 3 bytes too instead of raising.
    return len(value.encode("utf-8", "surrogatepass"))


# As upstream: there are two MaxLenError helpers. validation.MaxLenError says "characters";
# content.MaxLenError (label keys, label values and the key's prefix subdomain) says "bytes".
def _max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def _content_max_len_error(length: int) -> str:
    return f"must be no more than {length} bytes"


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    """As RegexError: "msg (e.g. 'a',  or 'b', regex used for validation is 'fmt')" (Go's spacing)."""
    if not examples:
        return msg + " (regex used for validation is '" + fmt + "')"
    out = msg + " (e.g. "
    for i, example in enumerate(examples):
        if i > 0:
            out += " or "
        out += "'" + example + "', "
    return out + "regex used for validation is '" + fmt + "')"


def _matches(pattern: re.Pattern[str], value: str) -> bool:
    # Go anchors with ^...$, where $ is the end of text; Python's $ would also accept a trailing
    # newline, so match the whole string instead.
    return pattern.fullmatch(value) is not None


# ---- DNS names (validation.go; content/dns.go for a label key's prefix) ----------------------
DNS1123_LABEL_MAX_LENGTH = 63
DNS1123_SUBDOMAIN_MAX_LENGTH = 253
_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_ERR_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
                          "and must start and end with an alphanumeric character")
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_ERR_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                              "'-' or '.', and must start and end with an alphanumeric character")
_DNS1123_LABEL_RE = re.compile(_DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN_RE = re.compile(_DNS1123_SUBDOMAIN_FMT)


def is_dns1123_label(value: str) -> list[str]:
    """As IsDNS1123Label (namespace and container names)."""
    errs = []
    if _byte_len(value) > DNS1123_LABEL_MAX_LENGTH:
        errs.append(_max_len_error(DNS1123_LABEL_MAX_LENGTH))
    if not _matches(_DNS1123_LABEL_RE, value):
        if _matches(_DNS1123_SUBDOMAIN_RE, value):
            # As upstream: a valid subdomain but not a label; length was checked, so it is the dots.
            errs.append("must not contain dots")
        else:
            errs.append(_regex_error(_DNS1123_LABEL_ERR_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def _dns1123_subdomain(value: str, max_len_error) -> list[str]:
    errs = []
    if _byte_len(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not _matches(_DNS1123_SUBDOMAIN_RE, value):
        errs.append(_regex_error(_DNS1123_SUBDOMAIN_ERR_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def is_dns1123_subdomain(value: str) -> list[str]:
    """As validation.IsDNS1123Subdomain (object names, node names, priority class names)."""
    return _dns1123_subdomain(value, _max_len_error)


# ---- label keys and values (content/kube.go) ---------------------------------------------------
LABEL_KEY_MAX_LENGTH = 63
LABEL_VALUE_MAX_LENGTH = 63
_LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_KEY_ERR_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', "
                      "and must start and end with an alphanumeric character")
_LABEL_VALUE_FMT = "(" + _LABEL_KEY_FMT + ")?"
_LABEL_VALUE_ERR_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
                        "and must start and end with an alphanumeric character")
_LABEL_KEY_RE = re.compile(_LABEL_KEY_FMT)
_LABEL_VALUE_RE = re.compile(_LABEL_VALUE_FMT)


def is_qualified_name(value: str) -> list[str]:
    """As IsQualifiedName (now content.IsLabelKey): an optional DNS-subdomain prefix and '/', then a name."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs += ["prefix part " + m for m in _dns1123_subdomain(prefix, _content_max_len_error)]
    else:
        return ["a valid label key " + _regex_error(_LABEL_KEY_ERR_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errs.append("name part must be non-empty")
    elif _byte_len(name) > LABEL_KEY_MAX_LENGTH:
        errs.append("name part " + _content_max_len_error(LABEL_KEY_MAX_LENGTH))
    if not _matches(_LABEL_KEY_RE, name):
        errs.append("name part " + _regex_error(_LABEL_KEY_ERR_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc"))
    return errs


def is_valid_label_value(value: str) -> list[str]:
    """As IsValidLabelValue (now content.IsLabelValue): empty, or a name of at most 63 bytes."""
    errs = []
    if _byte_len(value) > LABEL_VALUE_MAX_LENGTH:
        errs.append(_content_max_len_error(LABEL_VALUE_MAX_LENGTH))
    if not _matches(_LABEL_VALUE_RE, value):
        errs.append(_regex_error(_LABEL_VALUE_ERR_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs
