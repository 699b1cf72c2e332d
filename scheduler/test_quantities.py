"""Quantities print as apimachinery's Quantity.String() does (the canonical form upstream's errors quote)."""

import pytest
from kubernetes.utils import parse_quantity

from scheduler.quantities import format_of, go_string


@pytest.mark.parametrize("written, printed", [
    ("0", "0"), ("0.5", "500m"), ("1.5", "1500m"), ("1000m", "1"), ("2000m", "2"), ("100n", "100n"),
    ("0.1", "100m"), ("1000", "1k"), ("1k", "1k"), ("1500", "1500"), ("-1", "-1"), ("12M", "12M"),
    ("1Ki", "1Ki"), ("1024Ki", "1Mi"), ("1.5Gi", "1536Mi"), ("1536Mi", "1536Mi"), ("100Mi", "100Mi"),
    ("0.5Ki", "512"),  # below 1024 a binary quantity prints in decimal
    ("1.5Ki", "1536"), ("1e3", "1e3"), ("1.5e3", "1500"), ("-1Gi", "-1Gi"),
])
def test_a_quantity_prints_in_its_canonical_form(written, printed):
    assert go_string(parse_quantity(written), format_of(written)) == printed
