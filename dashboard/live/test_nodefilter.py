"""The nodes page's filter (static/dashboard/js/nodefilter.js, no DOM) run by Node.js."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

MODULE = Path(__file__).resolve().parents[2] / "static" / "dashboard" / "js" / "nodefilter.js"

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")

NODE = {"name": "Node-A1", "unsched": False, "taints": ["GPU=Tesla:NoSchedule"],
        "labels": {"Topology.Kubernetes.io/Zone": "EU-West-1a", "team": "ml"}}


def match(query: str, node: dict = NODE) -> bool:
    script = (f"import {{matches}} from {json.dumps(MODULE.as_uri())};"
              f"console.log(JSON.stringify(matches({json.dumps(node)}, {json.dumps(query)})));")
    out = subprocess.run(["node", "--input-type=module", "-e", script], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


@pytest.mark.parametrize("query", ["node-a1", "NODE-A", "gpu=tesla", "noschedule", "topology.kubernetes.io/zone=eu-west",
                                   "EU-WEST-1A", "team=ml", "  Team=ML "])
def test_the_filter_matches_whatever_the_case(query):
    assert match(query) is True


@pytest.mark.parametrize("query", ["node-b", "zone=us", "unschedulable", "team=ops"])
def test_the_filter_does_not_match_what_is_not_there(query):
    assert match(query) is False


def test_unschedulable_matches_a_cordoned_node():
    assert match("Unschedulable", {**NODE, "unsched": True}) is True
