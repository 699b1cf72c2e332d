"""Tasks sent by name (scheduler/dispatch.py): the message's argsrepr header made without Celery's saferepr."""

from celery import current_app

from scheduler import dispatch


def test_short_arguments_are_shown_as_their_repr():
    for args in [(), ("token",), (1, [1, 2]), ([{"pod": 1, "node": "node-0"}],), (None, "x")]:
        assert dispatch.argsrepr(args) == repr(args)


def test_a_long_list_is_cut_after_the_limit_not_written_out_whole():
    items = [{"attempt": i, "node": f"node-{i}"} for i in range(10_000)]

    text = dispatch.argsrepr((items, "after"))

    assert text.startswith("([{'attempt': 0, 'node': 'node-0'}, ") and text.endswith(", ...], ...)")  # (and what follows it)
    assert dispatch.ARGSREPR_LIMIT < len(text) < dispatch.ARGSREPR_LIMIT + 100


def test_send_hands_the_task_its_arguments_and_their_repr(monkeypatch):
    sent = []
    task = current_app.tasks[dispatch.BIND]
    monkeypatch.setattr(task, "apply_async", lambda args, **options: sent.append((args, options)))

    dispatch.send(dispatch.BIND, [{"pod": 1}])

    assert sent == [(([{"pod": 1}],), {"argsrepr": "([{'pod': 1}],)"})]
