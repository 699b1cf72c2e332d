"""The what-if and re-score forms in a real browser, wide and narrow: each label sits over its input,
every input stays inside its fieldset, the fieldsets do not overlap, and the submit button sits below
them (it used to overlap the fieldsets' border at 1400x900, with the weights wrapping under their labels).
"""

import pytest

from scheduler.testing.browser import NARROW_VIEWPORT, login, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDE_VIEWPORT = {"width": 1400, "height": 900}

# Every box the assertions need, read in one go: the fieldsets, the submit button, and each field's
# label and control (a field is a label and the input or select it names with `for`).
_BOXES = """(formSelector) => {
  const box = (el) => { const r = el.getBoundingClientRect();
                        return {left: r.left, right: r.right, top: r.top, bottom: r.bottom}; };
  const form = document.querySelector(formSelector);
  const fieldsets = [...form.querySelectorAll('fieldset')];
  const fields = [...form.querySelectorAll('label[for]')].map((label) => {
    const control = document.getElementById(label.getAttribute('for'));
    const fieldset = fieldsets.indexOf(control.closest('fieldset'));
    return {name: label.textContent.trim(), type: control.type, label: box(label), control: box(control), fieldset};
  });
  return {fieldsets: fieldsets.map(box), button: box(form.querySelector('button[type=submit]')), fields,
          scrollWidth: document.documentElement.scrollWidth, viewportWidth: window.innerWidth};
}"""


def _overlap(a: dict, b: dict) -> bool:
    return a["left"] < b["right"] and b["left"] < a["right"] and a["top"] < b["bottom"] and b["top"] < a["bottom"]


def _inside(inner: dict, outer: dict) -> bool:
    return (inner["left"] >= outer["left"] - 0.5 and inner["right"] <= outer["right"] + 0.5
            and inner["top"] >= outer["top"] - 0.5 and inner["bottom"] <= outer["bottom"] + 0.5)


def assert_form_is_laid_out(layout: dict) -> None:
    fieldsets, button = layout["fieldsets"], layout["button"]
    assert fieldsets, "the form has no fieldsets"
    for i, a in enumerate(fieldsets):
        for b in fieldsets[i + 1:]:
            assert not _overlap(a, b), f"fieldsets overlap: {a} {b}"
        assert not _overlap(button, a), f"the button {button} overlaps a fieldset {a}"
    assert button["top"] >= max(f["bottom"] for f in fieldsets), "the button is not below the fieldsets"
    assert layout["scrollWidth"] <= layout["viewportWidth"], "the page scrolls sideways"
    assert layout["fields"], "no labelled fields found"
    for field in layout["fields"]:
        label, control, name = field["label"], field["control"], field["name"]
        assert field["fieldset"] >= 0, f"{name}: not in a fieldset"
        assert _inside(control, fieldsets[field["fieldset"]]), f"{name}: the input leaves its fieldset"
        assert not _overlap(label, control), f"{name}: the label overlaps its input"
        if field["type"] == "checkbox":  # a checkbox sits before its label, on one line
            assert control["right"] <= label["left"] + 0.5 and control["top"] < label["bottom"], name
        else:  # a label sits over its input, left edges aligned
            assert label["bottom"] <= control["top"] + 0.5, f"{name}: the label is not above its input"
            assert abs(label["left"] - control["left"]) <= 1, f"{name}: the label and its input are not aligned"


def _whatif_setup(dashboard_user):
    """A viewer allowed to see configuration versions, and one scheduled attempt to re-score."""
    from django.contrib.auth.models import Permission
    from django.utils import timezone

    from scheduler.models import Attempt

    dashboard_user.user_permissions.add(*Permission.objects.filter(codename="view_schedulerconfigversion"))
    candidates = [{"node": node, "total": total, "plugins": {"NodeResourcesFit": {"raw": total, "normalized": total,
                                                                               "weight": 1, "weighted": total}}}
                  for node, total in (("node-a", 60), ("node-b", 40))]
    return Attempt.objects.create(namespace="default", pod_name="web", number=1, started_at=timezone.now(),
                                  result="scheduled", node_name="node-a", candidates=candidates, feasible_nodes=2,
                                  num_nodes=2, evaluated_nodes=2)


@pytest.mark.parametrize("viewport", [WIDE_VIEWPORT, NARROW_VIEWPORT], ids=["1400px", "390px"])
def test_the_whatif_form_has_labels_over_inputs_and_the_button_below_its_fieldsets(asgi_server, dashboard_user,
                                                                                   page, viewport):
    _whatif_setup(dashboard_user)
    page.set_viewport_size(viewport)
    login(page, asgi_server, dashboard_user)
    page.goto(asgi_server.url + "/whatif/")
    screenshot(page, f"whatif-form-{viewport['width']}")
    assert_form_is_laid_out(page.evaluate(_BOXES, "#whatif-form"))


@pytest.mark.parametrize("viewport", [WIDE_VIEWPORT, NARROW_VIEWPORT], ids=["1400px", "390px"])
def test_the_rescore_form_has_labels_over_inputs_and_the_button_below_its_fieldset(asgi_server, dashboard_user,
                                                                                  page, viewport):
    attempt = _whatif_setup(dashboard_user)
    page.set_viewport_size(viewport)
    login(page, asgi_server, dashboard_user)
    page.goto(f"{asgi_server.url}/attempts/{attempt.pk}/rescore/")
    screenshot(page, f"rescore-form-{viewport['width']}")
    assert_form_is_laid_out(page.evaluate(_BOXES, "#rescore-form"))
