"""The nodes page's logic without the DOM (static/dashboard/js/nodelogic.js), run by Node.js: the filter and the
heat map's keyboard cursor."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

MODULE = Path(__file__).resolve().parents[2] / "static" / "dashboard" / "js" / "nodelogic.js"

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")

NODE = {"name": "Node-A1", "unsched": False, "taints": ["GPU=Tesla:NoSchedule"],
        "labels": {"Topology.Kubernetes.io/Zone": "EU-West-1a", "team": "ml"}}


def call(function: str, *args):
    script = (f"import {{{function}}} from {json.dumps(MODULE.as_uri())};"
              f"console.log(JSON.stringify({function}(...{json.dumps(args)})));")
    out = subprocess.run(["node", "--input-type=module", "-e", script], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def match(query: str, node: dict = NODE) -> bool:
    return call("matches", node, query)


@pytest.mark.parametrize("query", ["node-a1", "NODE-A", "gpu=tesla", "noschedule", "topology.kubernetes.io/zone=eu-west",
                                   "EU-WEST-1A", "team=ml", "  Team=ML "])
def test_the_filter_matches_whatever_the_case(query):
    assert match(query) is True


@pytest.mark.parametrize("query", ["node-b", "zone=us", "unschedulable", "team=ops"])
def test_the_filter_does_not_match_what_is_not_there(query):
    assert match(query) is False


def test_unschedulable_matches_a_cordoned_node():
    assert match("Unschedulable", {**NODE, "unsched": True}) is True


# 23 cells in rows of 10:  0..9 / 10..19 / 20..22
@pytest.mark.parametrize("index,key,to", [
    (0, "ArrowRight", 1), (0, "ArrowLeft", 0), (22, "ArrowRight", 22), (5, "ArrowDown", 15), (15, "ArrowDown", 15),
    (12, "ArrowDown", 22), (15, "ArrowUp", 5), (5, "ArrowUp", 5), (7, "Home", 0), (7, "End", 22), (3, "PageDown", 13),
    (21, "PageUp", 1), (7, "a", None), (40, "ArrowLeft", 21),
])
def test_the_heat_map_cursor_moves_by_key_and_stays_on_the_cells(index, key, to):
    assert call("step", index, key, 10, 23) == to


def test_the_heat_map_cursor_has_nowhere_to_go_on_an_empty_map():
    assert call("step", 0, "ArrowRight", 10, 0) is None


def test_grouping_by_a_topology_key_sorts_the_domains_and_puts_nodes_lacking_the_key_last():
    nodes = [{"name": "a1", "labels": {"zone": "b"}}, {"name": "x", "labels": {}},
             {"name": "a2", "labels": {"zone": "a"}}, {"name": "a3", "labels": {"zone": "b"}}]
    groups = call("groupNodes", nodes, "zone")
    assert [(g["value"], [n["name"] for n in g["nodes"]]) for g in groups] == [
        ("a", ["a2"]), ("b", ["a1", "a3"]), (None, ["x"])]


@pytest.mark.parametrize(("x", "y", "index"), [
    (0, 16, 0), (15, 16, 1), (5, 26, 2), (15, 26, -1),  # the first domain: 3 nodes in rows of 2 under its label
    (5, 5, -1),  # a label line is no cell
    (5, 57, 3), (15, 57, -1),  # the second domain starts a fresh row under its own label
    (25, 16, -1),  # right of the last column
])
def test_the_grouped_heat_map_finds_the_node_under_a_point(x, y, index):
    layout = call("groupLayout", [3, 1], 2, 10, 16)
    assert [(g["start"], g["top"], g["rows"]) for g in layout["groups"]] == [(0, 16, 2), (3, 57, 1)]
    script_args = (layout, x, y, 2, 10)
    assert call("groupCellAt", *script_args) == index
