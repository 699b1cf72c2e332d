"""What-if on a constructed history: the known answer, and what the stored data cannot answer."""

from dataclasses import replace
from fractions import Fraction

import pytest

from scheduler.engine.config import ProfileConfig, default_config, default_profile
from scheduler.engine.plugin_args import MOST_ALLOCATED, NodeResourcesFitArgs, ScoringStrategy
from scheduler.versions.whatif import CHANGED, SAME, UNKNOWN, StoredAttempt, Target, rescore, what_if
from scheduler.testing.whatif import DEFAULT_WEIGHTS, HISTORY, TIE_OF_2, attempt, candidate


IMAGE_X2 = Target("draft", default_config(), {"default-scheduler": {**DEFAULT_WEIGHTS, "ImageLocality": 2}})


def test_what_if_on_a_constructed_history_gives_the_known_answer():
    result = what_if(HISTORY, IMAGE_X2)
    assert {r.attempt.id: r.verdict for r in result.results} == {1: CHANGED, 2: SAME, 3: SAME, 4: CHANGED, 5: SAME}
    assert [(r.attempt.id, r.attempt.node_name, r.new_node) for r in result.changed] == [(1, "a", "b"), (4, "a", "c")]
    assert result.share_changed == 2 / 5
    assert result.node_moves() == [{"node": "a", "gain": 0, "lose": 2, "net": -2, "tied": 0},
                                   {"node": "b", "gain": 1, "lose": 0, "net": 1, "tied": 0},
                                   {"node": "c", "gain": 1, "lose": 0, "net": 1, "tied": 0}]
    assert result.exact_count == 4  # attempt 4 kept only its top 2 of 20 feasible nodes
    assert result.caveats() == [("only the top candidates were stored: a node outside them might win", 1)]


def test_the_same_weights_change_nothing():
    result = what_if(HISTORY, Target("version 0", default_config()))
    assert [r.verdict for r in result.results] == [SAME] * 5 and result.share_changed == 0


def test_rescore_shows_how_much_each_candidates_score_moves():
    r = rescore(HISTORY[0], IMAGE_X2)
    assert [(c.node, c.old_total, c.new_total, c.delta) for c in r.candidates] == [("b", 90, 130, 40), ("a", 100, 100, 0)]
    assert r.candidates[0].plugins["ImageLocality"] == {"normalized": 40, "old_weight": 1, "new_weight": 2,
                                                        "old_weighted": 40, "new_weighted": 80}
    assert (r.verdict, r.new_nodes, r.exact) == (CHANGED, ["b"], True)


def test_a_full_trace_is_preferred_to_the_top_candidates_and_is_exact():
    # The trace holds d, which is not among the stored top candidates and wins under the target.
    columns = {"plugins": list(DEFAULT_WEIGHTS), "weights": list(DEFAULT_WEIGHTS.values()), "nodes": ["a", "d"],
               "raw": [[0, 0, 100, 0, 0, 0, 0], [0, 0, 10, 0, 0, 0, 95]],
               "normalized": [[0, 0, 100, 0, 0, 0, 0], [0, 0, 10, 0, 0, 0, 95]],
               "totals": [100, 105]}
    a = attempt(7, "d", [candidate("d", fit=10, image=95)], feasible=2, trace={"v": 1, "scores": columns})
    fit_x3 = Target("draft", default_config(), {"default-scheduler": {**DEFAULT_WEIGHTS, "NodeResourcesFit": 3}})
    r = rescore(a, fit_x3)
    assert (r.verdict, r.new_node, r.exact) == (CHANGED, "a", True)  # a: 300, d: 30 + 95 = 125


def test_a_plugin_the_pod_was_not_scored_with_cannot_be_answered():
    no_image = [replace(h, candidates=[{**c, "plugins": {k: v for k, v in c["plugins"].items() if k != "ImageLocality"}}
                                       for c in h.candidates]) for h in HISTORY[:1]]
    r = what_if(no_image, Target("version 0", default_config())).results[0]
    assert r.verdict == UNKNOWN
    assert r.notes == ["no stored scores for ImageLocality (not scored when the pod was scheduled): cannot re-rank"]


def test_a_dropped_plugin_is_left_out_and_changed_args_are_flagged_not_hidden():
    profile = default_profile()
    target_profile = ProfileConfig(**{**profile.__dict__, "scores": [s for s in profile.scores if s[0] != "ImageLocality"],
                                      "plugin_args": {"NodeResourcesFit": NodeResourcesFitArgs(
                                          scoring_strategy=ScoringStrategy(type=MOST_ALLOCATED))}})
    target = Target("version 2", replace(default_config(), profiles=[target_profile]))
    r = rescore(HISTORY[0], target, ran_with=profile)
    assert r.verdict == SAME  # a: 100, b: 50 without ImageLocality
    assert r.notes == [
        "ImageLocality not scored by the target: left out of the new totals",
        "args of NodeResourcesFit differ from the ones the pod was scored with: raw scores would differ, "
        "these totals use the stored ones",
    ]


def test_an_attempt_of_a_profile_the_target_lacks_or_without_candidates_is_unknown():
    other = attempt(8, "a", [candidate("a", fit=1), candidate("b")], profile="batch")
    nothing = attempt(9, "", [])
    result = what_if([other, nothing], IMAGE_X2)
    assert [r.verdict for r in result.results] == [UNKNOWN, UNKNOWN]
    assert result.share_changed is None
    assert result.unknown_reasons() == [("draft has no profile 'batch'", 1),
                                        ("no candidate was stored (the pod did not fit any node)", 1)]


def test_a_plugin_that_skipped_the_pod_at_pre_score_scores_0_under_any_weight_and_is_answered():
    # NodeAffinity skips a pod without preferred terms, so the loop stores no NodeAffinity score.
    skipped = [replace(HISTORY[0], candidates=[{**c, "plugins": {k: v for k, v in c["plugins"].items() if k != "NodeAffinity"}}
                                               for c in HISTORY[0].candidates])]
    result = what_if(skipped, IMAGE_X2, ran_with=lambda version, name: default_profile(name))
    assert [(r.verdict, r.new_node, r.notes) for r in result.results] == [(CHANGED, "b", [])]
    newly_enabled = what_if(skipped, IMAGE_X2, ran_with=lambda version, name: ProfileConfig(
        **{**default_profile(name).__dict__, "scores": [s for s in default_profile().scores if s[0] != "NodeAffinity"]}))
    assert newly_enabled.results[0].verdict == UNKNOWN


TIE_OF_3 = attempt(12, "a", [candidate("a", fit=100), candidate("b", fit=50, image=40), candidate("c", fit=50, image=40),
                             candidate("d", fit=10, image=60)])
ONLY_B = attempt(13, "a", [candidate("a", fit=100), candidate("b", fit=50, image=40)])


@pytest.mark.parametrize("history, moves, ties", [
    # one pod to a tie of 2: b and c each gain half of it, neither the whole pod.
    ([TIE_OF_2], {"a": (0, 1, -1, 0), "b": (Fraction(1, 2), 0, Fraction(1, 2), 1), "c": (Fraction(1, 2), 0, Fraction(1, 2), 1)}, 1),
    ([TIE_OF_3], {"a": (0, 1, -1, 0), "b": (Fraction(1, 3), 0, Fraction(1, 3), 1), "c": (Fraction(1, 3), 0, Fraction(1, 3), 1),
                  "d": (Fraction(1, 3), 0, Fraction(1, 3), 1)}, 1),
    # a clear move to b plus a tie of b and c: b 1 + 1/2, c 1/2.
    ([ONLY_B, TIE_OF_2], {"a": (0, 2, -2, 0), "b": (Fraction(3, 2), 0, Fraction(3, 2), 1),
                          "c": (Fraction(1, 2), 0, Fraction(1, 2), 1)}, 1),
    ([ONLY_B], {"a": (0, 1, -1, 0), "b": (1, 0, 1, 0)}, 0),
], ids=["tie-of-2", "tie-of-3", "clear-and-tie", "no-tie"])
def test_a_move_to_tied_nodes_is_shared_among_them_not_credited_to_the_first(history, moves, ties):
    result = what_if(history, IMAGE_X2)
    assert {m["node"]: (m["gain"], m["lose"], m["net"], m["tied"]) for m in result.node_moves()} == moves
    assert sum(m["gain"] for m in result.node_moves()) == len(result.changed)  # every pod counted once
    assert result.changed_to_a_tie == ties


def test_what_if_consumes_a_stream_and_can_drop_the_stored_scores_once_rescored():
    consumed = []

    def stream():
        for a in HISTORY:
            consumed.append(a.id)
            yield a

    kept = what_if(stream(), IMAGE_X2)
    slim = what_if(iter(HISTORY), IMAGE_X2, keep_scores=False)
    assert consumed == [1, 2, 3, 4, 5]
    assert [(r.attempt.id, r.verdict, r.new_nodes, r.exact, r.notes) for r in slim.results] == \
        [(r.attempt.id, r.verdict, r.new_nodes, r.exact, r.notes) for r in kept.results]
    assert slim.node_moves() == kept.node_moves() and slim.caveats() == kept.caveats()
    assert all(r.attempt.trace == {} and r.attempt.candidates == [] and r.candidates == [] for r in slim.results)
    assert any(r.candidates for r in kept.results)


def test_stored_attempt_from_values_reads_the_trace_scores_alone():
    traced = HISTORY[0]
    values = (7, "ns", "p", "a", "default-scheduler", 0, traced.candidates, {"nodes": ["a"]}, 2)
    a = StoredAttempt.from_values(values)
    assert (a.id, a.pod, a.trace, a.feasible_nodes) == (7, "ns/p", {"scores": {"nodes": ["a"]}}, 2)
    assert StoredAttempt.from_values(values[:7] + (None, 2)).trace == {}
