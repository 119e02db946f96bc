"""Tip definitions shared by the real-daemon tests (seed 000's FilterTip)."""

import copy

FILTER_RULES = [
    {"event": "search.opened", "count": {"gte": 3}},
    {"event": "filter.used", "count": {"eq": 0}},
    {"event": "search.opened", "within": {"days": 1}, "count": {"gte": 1}},
]

FILTER_TIP = {
    "id": "filter.tip",
    "title": "You can narrow this down",
    "message": "When you have too many results, the filter at the top can cut them quickly.",
    "image": "line.3.horizontal.decrease.circle",
    "actions": [{"id": "learn-more", "title": "Learn more"}, {"id": "dismiss", "title": "Not now"}],
    "rules": FILTER_RULES,
}


def filter_tip(**overrides):
    tip = copy.deepcopy(FILTER_TIP)
    tip.update(overrides)
    return tip


def plain_tip(tip_id, *, rules=None, actions=None, **extra):
    tip = {"id": tip_id, "title": f"Title of {tip_id}", "actions": actions or [], "rules": rules or []}
    tip.update(extra)
    return tip


def event_tip(tip_id, event, n=1, **extra):
    return plain_tip(tip_id, rules=[{"event": event, "count": {"gte": n}}], **extra)
