"""Label selectors as the scheduler sees them: metav1.LabelSelector (what a manifest says) and its
compiled form, apimachinery's labels.Selector (what matches a pod's labels).

The nil-versus-empty distinction is upstream's: a nil selector (None here) selects nothing, an
empty one (LabelSelector()) selects everything. metav1.LabelSelectorAsSelector turns the first
into labels.Nothing() and the second into labels.Everything(); several plugins then ask Empty()
(true only for Everything), so both forms are kept apart all the way down.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property

from .k8s_validation import is_qualified_name, is_valid_label_value

# metav1.LabelSelectorOperator.
OP_IN, OP_NOT_IN, OP_EXISTS, OP_DOES_NOT_EXIST = "In", "NotIn", "Exists", "DoesNotExist"
# selection.Equals: what a matchLabels entry becomes.
OP_EQUALS = "="


@dataclass(frozen=True)
class LabelSelectorRequirement:
    key: str
    operator: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True)
class LabelSelector:
    """A metav1.LabelSelector. matchLabels are kept as sorted (key, value) pairs so the type hashes."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[LabelSelectorRequirement, ...] = ()

    @classmethod
    def of(cls, match_labels: Mapping[str, str] | None = None,
           match_expressions: Iterable[LabelSelectorRequirement] = ()) -> LabelSelector:
        return cls(tuple(sorted((match_labels or {}).items())), tuple(match_expressions))

    def to_v1(self) -> dict:
        out: dict = {}
        if self.match_labels:
            out["matchLabels"] = dict(self.match_labels)
        if self.match_expressions:
            out["matchExpressions"] = [
                {"key": r.key, "operator": r.operator, **({"values": list(r.values)} if r.values else {})}
                for r in self.match_expressions
            ]
        return out


class SelectorError(ValueError):
    """A selector labels.NewRequirement or LabelSelectorAsSelector refuses."""


@dataclass(frozen=True)
class Requirement:
    """A labels.Requirement; values are a set upstream, kept sorted here."""

    key: str
    operator: str  # OP_EQUALS, OP_IN, OP_NOT_IN, OP_EXISTS, OP_DOES_NOT_EXIST
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """As labels.Requirement.Matches."""
        op = self.operator
        if op == OP_EQUALS or op == OP_IN:
            value = labels.get(self.key)
            return value is not None and value in self.values
        if op == OP_NOT_IN:
            value = labels.get(self.key)
            return value is None or value not in self.values
        if op == OP_EXISTS:
            return self.key in labels
        return self.key not in labels  # OP_DOES_NOT_EXIST


@dataclass(frozen=True)
class Selector:
    """A compiled labels.Selector: Nothing (`nothing`), or requirements ANDed (none: Everything)."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        for r in self.requirements:
            if not r.matches(labels):
                return False
        return True

    def empty(self) -> bool:
        """As Selector.Empty(): true for Everything only (Nothing is not empty)."""
        return not self.nothing and not self.requirements

    def add(self, *requirements: Requirement) -> Selector:
        """As Selector.Add: Nothing stays Nothing; requirements are kept sorted by key, as upstream."""
        if self.nothing:
            return self
        return Selector(tuple(sorted(self.requirements + requirements, key=_requirement_order)))

    @cached_property
    def key(self) -> tuple:
        """A hashable identity (equal selectors match the same label sets)."""
        return ("nothing",) if self.nothing else tuple((r.key, r.operator, r.values) for r in self.requirements)

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Selector) and self.key == other.key


def _requirement_order(r: Requirement) -> tuple:
    return (r.key, r.operator, r.values)


NOTHING = Selector(nothing=True)
EVERYTHING = Selector()


def _invalid(path: str, value: object, detail: str) -> str:
    shown = f'"{value}"' if isinstance(value, str) else "[]string{" + ", ".join(f'"{v}"' for v in value) + "}"
    return f"{path}: Invalid value: {shown}: {detail}"


def new_requirement(key: str, operator: str, values: Iterable[str]) -> Requirement:
    """As labels.NewRequirement: the key must be a qualified name, the values valid label values,
    and their number fit the operator; else SelectorError with upstream's field-error wording."""
    values = tuple(values)
    errors = []
    if errs := is_qualified_name(key):
        errors.append(_invalid("key", key, "; ".join(errs)))
    if operator in (OP_IN, OP_NOT_IN):
        if not values:
            errors.append(_invalid("values", values, "for 'in', 'notin' operators, values set can't be empty"))
    elif operator == OP_EQUALS:
        if len(values) != 1:
            errors.append(_invalid("values", values, "exact-match compatibility requires one single value"))
    elif operator in (OP_EXISTS, OP_DOES_NOT_EXIST):
        if values:
            errors.append(_invalid("values", values, "values set must be empty for exists and does not exist"))
    else:
        errors.append(f'operator: Unsupported value: "{operator}"')
    for i, v in enumerate(values):
        if errs := is_valid_label_value(v):
            errors.append(_invalid(f"values[{i}][{key}]", v, "; ".join(errs)))
    if errors:
        raise SelectorError(errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")
    return Requirement(key, operator, tuple(sorted(set(values))))


_OPERATORS = {OP_IN: OP_IN, OP_NOT_IN: OP_NOT_IN, OP_EXISTS: OP_EXISTS, OP_DOES_NOT_EXIST: OP_DOES_NOT_EXIST}


def as_selector(ls: LabelSelector | None) -> Selector:
    """As metav1.LabelSelectorAsSelector: nil selects nothing, empty selects everything.
    Raises SelectorError where upstream returns an error."""
    if ls is None:
        return NOTHING
    if not ls.match_labels and not ls.match_expressions:
        return EVERYTHING
    reqs = [new_requirement(k, OP_EQUALS, (v,)) for k, v in ls.match_labels]
    for expr in ls.match_expressions:
        op = _OPERATORS.get(expr.operator)
        if op is None:
            raise SelectorError(f'"{expr.operator}" is not a valid label selector operator')
        reqs.append(new_requirement(expr.key, op, expr.values))
    return EVERYTHING.add(*reqs)


def selector_from_set(labels: Mapping[str, str]) -> Selector:
    """As labels.SelectorFromSet / Set.AsSelector: one equality per label; an empty set is Everything."""
    return EVERYTHING.add(*(Requirement(k, OP_EQUALS, (v,)) for k, v in labels.items()))


def merge_label_keys(selector: LabelSelector | None, keys: Iterable[str], operator: str,
                     pod_labels: Mapping[str, str]) -> LabelSelector | None:
    """What kube-apiserver does to a pod at creation (applyLabelKeysToLabelSelector): for each key the
    pod has a label for, append `key <operator> (value)` to the selector's matchExpressions. A nil
    selector stays nil (it selects nothing either way)."""
    if selector is None:
        return None
    added = tuple(LabelSelectorRequirement(k, operator, (pod_labels[k],)) for k in keys if k in pod_labels)
    if not added:
        return selector
    return LabelSelector(selector.match_labels, selector.match_expressions + added)
