"""Shapes of the protocol's messages, for type checkers and readers.

Results are returned as plain ``dict``s with the wire's (camelCase) member
names, so members added by a newer minor version pass through untouched;
the ``TypedDict``s below document them. Notifications are small frozen
dataclasses with snake_case attributes and the raw ``params`` kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal, NotRequired, TypedDict


class Reason(StrEnum):
    ACTION_PERFORMED = "actionPerformed"
    TIP_CLOSED = "tipClosed"
    DISPLAY_COUNT_EXCEEDED = "displayCountExceeded"
    DISPLAY_DURATION_EXCEEDED = "displayDurationExceeded"


class Status(StrEnum):
    PENDING = "pending"
    AVAILABLE = "available"
    INVALIDATED = "invalidated"


class DisplayFrequency(StrEnum):
    IMMEDIATE = "immediate"
    HOURLY = "hourly"
    DAILY = "daily"
    WEEKLY = "weekly"
    MONTHLY = "monthly"


class GroupPriority(StrEnum):
    ORDERED = "ordered"
    FIRST_AVAILABLE = "firstAvailable"


class Action(TypedDict):
    id: str
    title: str
    index: int


class TipContent(TypedDict):
    id: str
    title: str
    message: str | None
    image: str | None
    actions: list[Action]
    #: The ``localizations`` key whose copy is shown (from the client's locale), or None for the tip's own copy.
    locale: str | None
    #: ``{"style": "popover"|"inline", "arrowEdge"?: ...}`` when the definition has one.
    presentation: NotRequired[dict[str, str]]
    #: The definition's free-form metadata, untouched, when it has some.
    metadata: NotRequired[dict[str, Any]]


class TipState(TypedDict):
    id: str
    shouldDisplay: bool
    status: Literal["pending", "available", "invalidated"]
    reason: NotRequired[str]
    displayCount: int
    displayedDuration: float
    #: The A/B variant this install sees, for a tip with ``variants``.
    variant: NotRequired[str]
    tip: TipContent


class SuppressionResult(TypedDict):
    """The suppression in force after ``tips/suppress`` or ``tips/resume`` (``since``, ``until``, ``reason`` are
    ``None`` when none runs; ``until`` is ``None`` for one that waits for ``tips/resume``)."""

    suppressed: bool
    since: float | None
    until: float | None
    reason: str | None


class GroupState(TypedDict):
    group: str
    tipId: str | None


class ObserveResult(TypedDict):
    subscription: Any
    tips: list[TipState]
    groups: list[GroupState]
    #: Requested ids naming no registered tip (still watched), when there are some.
    unknown: NotRequired[list[str]]


class Explanation(TypedDict, total=False):
    id: str
    status: str
    shouldDisplay: bool
    rules: list[dict[str, Any]]
    heldBy: list[dict[str, Any]]
    displayCount: int
    displayedDuration: float
    nextChangeAt: float | None
    lines: list[str]


class InitializeResult(TypedDict):
    protocolVersion: str
    serverInfo: dict[str, Any]
    capabilities: dict[str, Any]


class ConfigureResult(TypedDict):
    displayFrequency: str


class GroupRegisterResult(TypedDict):
    id: str
    currentTip: str | None


class ParameterValue(TypedDict):
    id: str
    value: bool | int | float | str | None


class EventConfigureResult(TypedDict):
    id: str
    maxDonations: int


class CatalogReloadResult(TypedDict):
    """``catalog/reload``: what changed; ``applied: False`` (with the errors) leaves the catalog in force serving."""

    applied: bool
    added: list[str]
    removed: list[str]
    changed: list[str]
    unchanged: list[str]
    diagnostics: list[dict[str, Any]]


class SyncStatus(TypedDict):
    """``sync/status`` (sync across devices, ``tipsd serve --sync``)."""

    enabled: bool
    state: str
    server: str | None
    account: str | None
    device: str | None
    outbox: int
    outboxLimit: int | None
    lagSeconds: float
    cursor: int
    lastPushAt: float | None
    lastPullAt: float | None
    lastError: str | None


class SignIn(TypedDict):
    """Who a hosted session is signed in as (``initialize``'s ``auth``, ``auth/refresh``)."""

    account: str | None
    admin: bool
    expiresAt: float | None


class AccountSummary(TypedDict):
    """One account of an ``accounts/list`` page."""

    account: str
    operations: int  # operations stored for the account
    resident: bool  # whether the answering node holds it in memory


class AccountPage(TypedDict):
    """``accounts/list`` (hosted mode, admin): pass ``next`` as ``after`` for the next page (None on the last)."""

    accounts: list[AccountSummary]
    next: str | None


class RecordedDonation(TypedDict):
    """A goal or app-closed donation the history recorded (``AccountExport["donations"]``)."""

    cursor: int
    event: str
    at: float


class AccountExport(TypedDict):
    """``accounts/export`` (hosted mode, admin): everything tipsd holds about one account."""

    account: str
    exportedAt: float
    state: dict[str, Any]  # the merged state, a snapshot as stored in tipsd.snapshots
    history: list[dict[str, Any]]  # AnalyticsEvent objects
    donations: list[RecordedDonation]  # oldest first; the analytics stream does not carry them


class AccountsImportResult(TypedDict):
    """``accounts/import`` (hosted mode, admin)."""

    account: str
    history: int  # history entries imported


class AccountsDeleteResult(TypedDict):
    """``accounts/delete`` (hosted mode, admin)."""

    account: str
    closedSessions: int  # sessions of the account this node closed


class ClockNow(TypedDict):
    now: float
    virtual: bool


class AnalyticsEntry(TypedDict):
    """One lifecycle event as ``analytics/read`` returns it (protocol/README.md, "Analytics stream")."""

    cursor: int
    type: Literal["impression", "eligibility", "invalidation", "action", "variant"]
    tipId: str
    variant: str | None
    at: float
    duration: NotRequired[float]
    status: NotRequired[str]
    shouldDisplay: NotRequired[bool]
    reason: NotRequired[str]
    actionId: NotRequired[str]
    actionIndex: NotRequired[int]


class AnalyticsReadResult(TypedDict):
    events: list[AnalyticsEntry]
    next: int
    head: int
    oldest: int | None


class AnalyticsSubscribeResult(TypedDict):
    subscription: str
    head: int
    oldest: int | None


class MetricsResult(TypedDict):
    """``metrics/get``: seed 000's metrics per tip and variant, with their sample sizes (protocol/README.md,
    "Metrics"); each of ``tips`` is ``{tipId, goal, overall, variants, comparisons, lift}``. The account is the unit
    (docs/measuring.md): each rate has ``low``/``high`` (fixed horizon), ``accounts`` and ``notEnoughData``; ``lift``
    and each comparison compare triggered accounts (the tip first displayable for them) that did the goal within its
    window: ``difference``, ``low``/``high`` (always valid), ``fixedHorizon``, ``relative``, ``correction``, ``srm``
    (the sample-ratio check), ``perImpression`` (secondary), ``sample``, ``notEnoughData`` and, with ``cuped=True``,
    ``cuped``; ``method`` says how they were computed."""

    now: float
    since: float | None
    until: float | None
    appClosedEvent: str | None
    closeWindow: float
    closeRateAlert: float | None
    baselineDays: int
    historyStart: float | None
    tips: list[dict[str, Any]]
    method: dict[str, Any]
    accounts: NotRequired[int]


class InspectState(TypedDict):
    """``inspect/state``: everything an inspector shows (``InspectState`` in protocol/openrpc.json)."""

    now: float
    virtualClock: bool
    testing: bool
    displayFrequency: str
    tips: list[dict[str, Any]]
    events: list[dict[str, Any]]
    parameters: list[dict[str, Any]]
    groups: list[dict[str, Any]]
    overrides: dict[str, Any]
    history: dict[str, Any]
    #: With ``watch=True``: one ``inspect/changed`` with this subscription follows the next change.
    subscription: NotRequired[str]


# A tip definition (protocol/schemas/tip.json); kept loose on purpose.
TipDefinition = dict[str, Any]


@dataclass(frozen=True)
class ShouldDisplayChanged:
    """``tips/shouldDisplayChanged``: a tip's eligibility flipped."""

    subscription: Any
    seq: int
    id: str
    should_display: bool
    status: str
    reason: str | None
    tip: dict[str, Any] | None
    params: dict[str, Any] = field(repr=False, compare=False)
    method: str = field(default="tips/shouldDisplayChanged", repr=False)

    @property
    def tip_id(self) -> str:
        return self.id


@dataclass(frozen=True)
class CurrentTipChanged:
    """``groups/currentTipChanged``: the tip a group would show changed."""

    subscription: Any
    seq: int
    group: str
    tip_id: str | None
    params: dict[str, Any] = field(repr=False, compare=False)
    method: str = field(default="groups/currentTipChanged", repr=False)


@dataclass(frozen=True)
class ActionPerformed:
    """``tips/actionPerformed``: an action button of a tip was used.

    ``actions`` is always a list (seed 000: model the payload as an array
    from day one); ``action_id`` is the first one's id, for convenience.
    """

    subscription: Any
    seq: int
    tip_id: str
    actions: list[dict[str, Any]]
    params: dict[str, Any] = field(repr=False, compare=False)
    method: str = field(default="tips/actionPerformed", repr=False)

    @property
    def action_id(self) -> str | None:
        if self.actions and isinstance(self.actions[0], dict):
            return self.actions[0].get("id")
        return None

    @property
    def action_ids(self) -> list[str]:
        return [a.get("id") for a in self.actions if isinstance(a, dict)]


@dataclass(frozen=True)
class AnalyticsEvent:
    """``analytics/event``: one lifecycle event (an impression, an eligibility
    change, an invalidation, an action or a variant assignment), in cursor
    order. Store ``cursor`` once the event is handled and pass the last one as
    ``after`` on the next run: every event arrives at least once."""

    subscription: Any
    seq: int
    cursor: int
    type: str
    tip_id: str
    variant: str | None
    at: float
    duration: float | None
    status: str | None
    should_display: bool | None
    reason: str | None
    action_id: str | None
    action_index: int | None
    params: dict[str, Any] = field(repr=False, compare=False)
    method: str = field(default="analytics/event", repr=False)


@dataclass(frozen=True)
class InspectChanged:
    """``inspect/changed``: the state ``inspect/state {watch: true}`` armed
    this for has changed (one notification; call it again to re-arm)."""

    subscription: Any
    seq: int
    params: dict[str, Any] = field(repr=False, compare=False)
    method: str = field(default="inspect/changed", repr=False)


@dataclass(frozen=True)
class UnknownNotification:
    """A notification this client version does not know (a newer minor)."""

    method: str
    params: Any
    subscription: Any = None
    seq: int | None = None


Notification = (
    ShouldDisplayChanged | CurrentTipChanged | ActionPerformed | AnalyticsEvent | InspectChanged | UnknownNotification
)


def parse_notification(method: str, params: Any) -> Notification:
    """Turn a notification's ``method``/``params`` into a dataclass."""
    p = params if isinstance(params, dict) else {}
    if method == "tips/shouldDisplayChanged" and isinstance(params, dict):
        return ShouldDisplayChanged(
            subscription=p.get("subscription"),
            seq=p.get("seq"),
            id=p.get("id"),
            should_display=bool(p.get("shouldDisplay")),
            status=p.get("status"),
            reason=p.get("reason"),
            tip=p.get("tip"),
            params=params,
        )
    if method == "groups/currentTipChanged" and isinstance(params, dict):
        return CurrentTipChanged(
            subscription=p.get("subscription"),
            seq=p.get("seq"),
            group=p.get("group"),
            tip_id=p.get("tipId"),
            params=params,
        )
    if method == "tips/actionPerformed" and isinstance(params, dict):
        actions = p.get("actions")
        if actions is None:
            actions = []
        elif not isinstance(actions, list):
            actions = [actions]
        return ActionPerformed(
            subscription=p.get("subscription"),
            seq=p.get("seq"),
            tip_id=p.get("tipId"),
            actions=actions,
            params=params,
        )
    if method == "analytics/event" and isinstance(params, dict):
        return AnalyticsEvent(
            subscription=p.get("subscription"),
            seq=p.get("seq"),
            cursor=p.get("cursor"),
            type=p.get("type"),
            tip_id=p.get("tipId"),
            variant=p.get("variant"),
            at=p.get("at"),
            duration=p.get("duration"),
            status=p.get("status"),
            should_display=p.get("shouldDisplay"),
            reason=p.get("reason"),
            action_id=p.get("actionId"),
            action_index=p.get("actionIndex"),
            params=params,
        )
    if method == "inspect/changed" and isinstance(params, dict):
        return InspectChanged(subscription=p.get("subscription"), seq=p.get("seq"), params=params)
    return UnknownNotification(method=method, params=params, subscription=p.get("subscription"), seq=p.get("seq"))
