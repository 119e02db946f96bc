"""Typed calls: one method per request of the protocol, returning its result
with the shapes of ``models.py`` (subscriptions are in ``subscription.py``)."""

from __future__ import annotations

import asyncio
import datetime as _dt
import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from . import __version__
from .auth import TokenRequest, TokenSource, refresh_delay, resolve_token
from .connection import Connection, _ids
from .errors import TipsdConnectionError, TipsdError
from .methods import PROTOCOL_VERSION
from .models import (
    AccountExport,
    AccountPage,
    AccountsDeleteResult,
    AccountsImportResult,
    AnalyticsReadResult,
    CatalogReloadResult,
    ClockNow,
    ConfigureResult,
    EventConfigureResult,
    Explanation,
    GroupRegisterResult,
    InitializeResult,
    InspectState,
    MetricsResult,
    ParameterValue,
    SignIn,
    SuppressionResult,
    SyncStatus,
    TipDefinition,
    TipState,
)

log = logging.getLogger("tipsd_client")


def _timestamp(value: float | int | _dt.datetime) -> float | int:
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.UTC)
        ts = value.timestamp()
        return int(ts) if ts == int(ts) else ts
    return value


class Calls(Connection):
    """The protocol's requests as methods (``initialize`` is sent by ``connect``)."""

    # -------------------------------------------------------------- lifecycle

    async def initialize(
        self,
        *,
        client_name: str = "tipsd-python",
        client_version: str | None = __version__,
        locale: str | None = None,
        protocol_version: str = PROTOCOL_VERSION,
        auth_token: str | None = None,
        app: str | None = None,
    ) -> InitializeResult:
        """``initialize`` (done for you by :meth:`connect`). ``auth_token``
        signs the session in (hosted mode: the app's JWT or the admin token);
        ``app``: the app it signs in to, on a deployment with several
        (``tipsd serve --apps``)."""
        info: dict[str, Any] = {"name": client_name}
        if client_version is not None:
            info["version"] = client_version
        params: dict[str, Any] = {"protocolVersion": protocol_version, "clientInfo": info}
        if locale is not None:
            params["locale"] = locale
        if auth_token is not None:
            params["auth"] = {"token": auth_token}
        if app is not None:
            params["app"] = app
        result = await self.request("initialize", params)
        self.initialize_result = result if isinstance(result, dict) else {}
        self.auth = self.initialize_result.get("auth")
        self.server_info = self.initialize_result.get("serverInfo") or {}
        self.capabilities = self.initialize_result.get("capabilities") or {}
        self.protocol_version = self.initialize_result.get("protocolVersion")
        return self.initialize_result

    def supports(self, method: str) -> bool:
        """Whether the daemon lists ``method`` in ``capabilities.methods``."""
        return method in (self.capabilities.get("methods") or [])

    async def shutdown(self) -> None:
        """``shutdown``: afterwards only ``exit`` is accepted."""
        await self.request("shutdown")
        self._shutdown_sent = True

    async def exit(self) -> None:
        """The ``exit`` notification (a socket connection closes; a stdio
        daemon exits)."""
        await self.notify("exit")

    async def discover(self) -> dict[str, Any]:
        """``rpc.discover``: the OpenRPC document."""
        return await self.request("rpc.discover")

    async def cancel_request(self, request_id: Any) -> None:
        await self.notify("$/cancelRequest", {"id": request_id})

    # ------------------------------------------------------------------- tips

    async def configure(self, display_frequency: str = "immediate", **extra: Any) -> ConfigureResult:
        """``tips/configure`` (like ``Tips.configure([.displayFrequency(...)])``)."""
        return await self.request("tips/configure", {"displayFrequency": str(display_frequency), **extra})

    async def register(self, tips: TipDefinition | Sequence[TipDefinition]) -> list[TipState]:
        """``tips/register``: returns each tip's state."""
        if isinstance(tips, Mapping):
            tips = [tips]
        result = await self.request("tips/register", {"tips": list(tips)})
        return result.get("tips", []) if isinstance(result, dict) else result

    async def unregister(self, ids: str | Iterable[str]) -> list[str]:
        """``tips/unregister``: returns the ids that were registered."""
        result = await self.request("tips/unregister", {"ids": _ids(ids)})
        return result.get("ids", []) if isinstance(result, dict) else result

    async def register_group(self, id: str, tips: Iterable[str], priority: str = "ordered") -> GroupRegisterResult:
        """``groups/register``: returns ``{id, currentTip}``."""
        return await self.request("groups/register", {"id": id, "priority": str(priority), "tips": list(tips)})

    async def unregister_group(self, id: str) -> None:
        await self.request("groups/unregister", {"id": id})

    async def define_parameters(self, parameters: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> list[str]:
        """``parameters/define``. Either ``[{"id", "default", "transient"?}]`` or
        a ``{id: default}`` mapping."""
        if isinstance(parameters, Mapping):
            if "id" in parameters and "default" in parameters:
                params_list = [dict(parameters)]
            else:
                params_list = [{"id": k, "default": v} for k, v in parameters.items()]
        else:
            params_list = [dict(p) for p in parameters]
        result = await self.request("parameters/define", {"parameters": params_list})
        return result.get("ids", []) if isinstance(result, dict) else result

    async def define_parameter(self, id: str, default: Any, *, transient: bool | None = None) -> list[str]:
        p: dict[str, Any] = {"id": id, "default": default}
        if transient is not None:
            p["transient"] = transient
        return await self.define_parameters([p])

    async def set_parameter(self, id: str, value: Any) -> ParameterValue:
        """``parameters/set``: returns ``{id, value}``."""
        return await self.request("parameters/set", {"id": id, "value": value})

    async def donate(self, id: str, info: Mapping[str, Any] | None = None) -> int:
        """``events/donate``: returns the stored donation count of that event."""
        params: dict[str, Any] = {"id": id}
        if info is not None:
            params["info"] = dict(info)
        result = await self.request("events/donate", params)
        return result.get("count") if isinstance(result, dict) else result

    async def configure_event(self, id: str, max_donations: int) -> EventConfigureResult:
        """``events/configure``: cap the stored donations of an event."""
        return await self.request("events/configure", {"id": id, "maxDonations": max_donations})

    async def invalidate(self, id: str, reason: str = "tipClosed") -> TipState:
        """``tips/invalidate`` (seed 000's close handler)."""
        return await self.request("tips/invalidate", {"id": id, "reason": str(reason)})

    async def reset_eligibility(self, id: str) -> TipState:
        return await self.request("tips/resetEligibility", {"id": id})

    async def displayed(self, id: str, duration: float | None = None) -> TipState:
        """``tips/displayed``: record that the tip was shown (for ``duration`` s)."""
        params: dict[str, Any] = {"id": id}
        if duration is not None:
            params["duration"] = duration
        return await self.request("tips/displayed", params)

    async def status(self, ids: str | Iterable[str] | None = None) -> list[TipState]:
        """``tips/status``: the state of the given tips (all when ``ids`` is None)."""
        params = {} if ids is None else {"ids": _ids(ids)}
        result = await self.request("tips/status", params)
        return result.get("tips", []) if isinstance(result, dict) else result

    async def state(self, id: str) -> TipState:
        """The state of one tip (``tips/status`` with one id)."""
        tips = await self.status([id])
        for t in tips:
            if t.get("id") == id:
                return t
        raise TipsdError(-32001, f"unknown tip {id!r}", method="tips/status")

    async def should_display(self, id: str) -> bool:
        return bool((await self.state(id)).get("shouldDisplay"))

    async def explain(self, id: str) -> Explanation:
        """``tips/explain``: why a tip is (not) showing."""
        return await self.request("tips/explain", {"id": id})

    async def perform_action(self, id: str, action_id: str, invalidate: bool | None = None) -> TipState:
        """``tips/performAction``: as if the user tapped the action button;
        action subscribers get ``tips/actionPerformed``. ``invalidate`` defaults to the action's definition
        (true unless it says ``"invalidate": false``)."""
        params: dict[str, Any] = {"id": id, "actionId": action_id}
        if invalidate is not None:
            params["invalidate"] = invalidate
        return await self.request("tips/performAction", params)

    async def instantiate(self, template: str, values: dict[str, Any]) -> TipState:
        """``tips/instantiate``: make and register a content tip from a catalog template (same values, same id)."""
        return await self.request("tips/instantiate", {"template": template, "values": values})

    async def reload_catalog(self) -> CatalogReloadResult:
        """``catalog/reload``: reload the daemon's catalog file and apply what changed."""
        return await self.request("catalog/reload", None)

    async def set_variant(self, id: str, variant: str | None) -> TipState:
        """``tips/setVariant``: force the A/B variant a tip shows (``None``: back to the install id's pick)."""
        return await self.request("tips/setVariant", {"id": id, "variant": variant})

    async def suppress(self, seconds: float | None = None, reason: str | None = None) -> SuppressionResult:
        """``tips/suppress``: no tip is displayable for ``seconds`` (or until :meth:`resume`); statuses do not change.
        A hosted daemon refuses it (-32014)."""
        params: dict[str, Any] = {}
        if seconds is not None:
            params["seconds"] = seconds
        if reason is not None:
            params["reason"] = reason
        return await self.request("tips/suppress", params)

    async def resume(self) -> SuppressionResult:
        """``tips/resume``: end :meth:`suppress`; tips that are displayable show again."""
        return await self.request("tips/resume", None)

    # ---------------------------------------------------------------- testing

    async def show_all_tips(self) -> None:
        """``testing/showAllTips`` (``Tips.showAllTipsForTesting()``)."""
        await self.request("testing/showAllTips")

    async def hide_all_tips(self) -> None:
        await self.request("testing/hideAllTips")

    async def show_tips(self, ids: str | Iterable[str]) -> None:
        await self.request("testing/showTips", {"ids": _ids(ids)})

    async def hide_tips(self, ids: str | Iterable[str]) -> None:
        await self.request("testing/hideTips", {"ids": _ids(ids)})

    async def clear_testing(self) -> None:
        """``testing/clear``: undo show/hide overrides."""
        await self.request("testing/clear")

    async def reset_datastore(self) -> None:
        """``datastore/reset`` (``Tips.resetDatastore()``)."""
        await self.request("datastore/reset")

    # ----------------------------------------------- measuring and inspecting

    async def metrics(
        self,
        since: float | _dt.datetime | None = None,
        until: float | _dt.datetime | None = None,
        tips: str | Iterable[str] | None = None,
    ) -> MetricsResult:
        """``metrics/get``: seed 000's metrics per tip and variant (goal rate,
        time to goal, close rate, goal per day before → after), with their
        sample sizes; every tip and all the kept history by default."""
        params: dict[str, Any] = {}
        if since is not None:
            params["since"] = _timestamp(since)
        if until is not None:
            params["until"] = _timestamp(until)
        if tips is not None:
            params["tips"] = _ids(tips)
        return await self.request("metrics/get", params)

    async def inspect_state(self, watch: bool = False) -> InspectState:
        """``inspect/state``: every tip with its explanation, events,
        parameters, groups, overrides and the history's cursors. With
        ``watch=True`` one ``inspect/changed`` notification (an
        :class:`~tipsd_client.models.InspectChanged`, to ``on_notification``
        listeners) follows the next change; call again to re-arm it."""
        return await self.request("inspect/state", {"watch": True} if watch else {})

    async def analytics_read(self, after: int | None = None, limit: int | None = None) -> AnalyticsReadResult:
        """``analytics/read``: committed lifecycle events after cursor
        ``after`` (default 0), at most ``limit`` (1…1000, default 100); pass
        the result's ``next`` as ``after`` next time. ``analytics()`` streams
        them instead."""
        params: dict[str, Any] = {}
        if after is not None:
            params["after"] = after
        if limit is not None:
            params["limit"] = limit
        return await self.request("analytics/read", params)

    # ------------------------------------------------------------------ sync

    async def sync_status(self) -> SyncStatus:
        """``sync/status``: sync across devices — ``{enabled, state, outbox, lagSeconds, lastPushAt, …}``."""
        return await self.request("sync/status")

    async def sync_push(self, device: str, ops: list[dict[str, Any]]) -> dict[str, Any]:
        """``sync/push`` (hosted mode): a device's operations ``[{seq, op}]`` into the session's account; answers
        ``{cursor}`` once committed. (How a device daemon syncs through a node: ``tipsd serve --sync wss://…``.)"""
        return await self.request("sync/push", {"device": device, "ops": ops})

    async def sync_pull(self, device: str, after: int | None = None, limit: int | None = None) -> dict[str, Any]:
        """``sync/pull`` (hosted mode): the account's operations after ``after`` (or its snapshot); subscribes the
        session to ``sync/changed``."""
        params: dict[str, Any] = {"device": device}
        if after is not None:
            params["after"] = after
        if limit is not None:
            params["limit"] = limit
        return await self.request("sync/pull", params)

    # ------------------------------------------------------------------ hosted mode

    async def auth_refresh(self, token: str) -> SignIn:
        """``auth/refresh`` (hosted mode): replaces the session's token with a newer one for the same account
        (its subscriptions stay); ``client.auth`` then holds the new expiry."""
        result = await self.request("auth/refresh", {"token": token})
        if isinstance(result, dict):
            self.auth = result
        return result

    def _keep_signed_in(self, token: TokenSource | None) -> None:
        """Hosted mode: when the session's token expires (``auth.expiresAt``), refresh it a margin before — 60 s,
        or a tenth of its lifetime when shorter — with a token asked of the provider (``TokenRequest("refresh")``)
        and ``auth/refresh``, again and again. A fixed token cannot be renewed: a warning says so. A refresh that
        fails is logged; the daemon then ends the session at expiry (this client does not reconnect)."""
        expires_at = (self.auth or {}).get("expiresAt")
        if expires_at is None:
            return
        if not callable(token):
            log.warning(
                "tipsd: the session's token expires at %s and cannot be refreshed: pass a token provider"
                " (a function) instead of a string",
                _dt.datetime.fromtimestamp(expires_at, _dt.UTC).isoformat(),
            )
            return
        self._refresh_task = asyncio.get_running_loop().create_task(self._refresh_loop(token), name="tipsd-refresh")

    async def _refresh_loop(self, provider: TokenSource) -> None:
        while not self.closed:
            expires_at = (self.auth or {}).get("expiresAt")
            if expires_at is None:
                return
            await asyncio.sleep(refresh_delay(expires_at, time.time()))
            if self.closed:
                return
            try:
                await self.auth_refresh(await resolve_token(provider, TokenRequest("refresh")))
            except (TipsdError, TipsdConnectionError, TimeoutError) as e:
                if not self.closed:
                    log.warning(
                        "tipsd: could not refresh the session's token (%s); the session ends when it expires", e
                    )
                return

    async def accounts_list(self, after: str | None = None, limit: int | None = None) -> AccountPage:
        """``accounts/list`` (hosted mode, admin): the accounts PostgreSQL holds, a page at a time."""
        params: dict[str, Any] = {}
        if after is not None:
            params["after"] = after
        if limit is not None:
            params["limit"] = limit
        return await self.request("accounts/list", params)

    async def accounts_export(self, account: str) -> AccountExport:
        """``accounts/export`` (hosted mode, admin): everything tipsd holds about one account."""
        return await self.request("accounts/export", {"account": account})

    async def accounts_import(self, account: str, export: Mapping[str, Any]) -> AccountsImportResult:
        """``accounts/import`` (hosted mode, admin): makes ``account`` from an ``accounts/export`` result."""
        return await self.request("accounts/import", {"account": account, "export": dict(export)})

    async def accounts_delete(self, account: str) -> AccountsDeleteResult:
        """``accounts/delete`` (hosted mode, admin): erases an account everywhere and closes its sessions."""
        return await self.request("accounts/delete", {"account": account})

    async def catalogs_publish(
        self, app: str, catalog: Mapping[str, Any], note: str | None = None, dry_run: bool = False
    ) -> dict[str, Any]:
        """``catalogs/publish`` (hosted mode, admin): lints ``catalog`` and publishes it as the app's next version
        (``dry_run``: stores nothing, reports the diff and the resident accounts whose tips would change)."""
        params: dict[str, Any] = {"app": app, "catalog": dict(catalog)}
        if note is not None:
            params["note"] = note
        if dry_run:
            params["dryRun"] = True
        return await self.request("catalogs/publish", params)

    async def catalogs_diff(self, app: str, from_version: int, to_version: int) -> dict[str, Any]:
        """``catalogs/diff`` (hosted mode, admin): what changed between two published versions."""
        return await self.request("catalogs/diff", {"app": app, "from": from_version, "to": to_version})

    async def catalogs_rollback(self, app: str, version: int) -> dict[str, Any]:
        """``catalogs/rollback`` (hosted mode, admin): makes a published version current again."""
        return await self.request("catalogs/rollback", {"app": app, "version": version})

    async def catalogs_schedule(self, app: str, version: int, at: float | int | _dt.datetime) -> dict[str, Any]:
        """``catalogs/schedule`` (hosted mode, admin): publishes a stored version at ``at``."""
        return await self.request("catalogs/schedule", {"app": app, "version": version, "at": _timestamp(at)})

    async def catalogs_history(self, app: str) -> dict[str, Any]:
        """``catalogs/history`` (hosted mode, admin): the app's published versions, newest first."""
        return await self.request("catalogs/history", {"app": app})

    async def audit_list(
        self, app: str | None = None, after: int | None = None, limit: int | None = None
    ) -> dict[str, Any]:
        """``audit/list`` (hosted mode, admin): the audit log's entries after ``after``, oldest first."""
        params: dict[str, Any] = {}
        if app is not None:
            params["app"] = app
        if after is not None:
            params["after"] = after
        if limit is not None:
            params["limit"] = limit
        return await self.request("audit/list", params)

    async def webhooks_create(self, app: str, url: str, events: list[str], secret: str | None = None) -> dict[str, Any]:
        """``webhooks/create`` (hosted mode, admin): an endpoint for ``events`` of ``app``; answers its id and its
        ``whsec_`` signing secret (generated when ``secret`` is None), the only time the secret is sent."""
        params: dict[str, Any] = {"app": app, "url": url, "events": list(events)}
        if secret is not None:
            params["secret"] = secret
        return await self.request("webhooks/create", params)

    async def webhooks_list(self, app: str | None = None) -> dict[str, Any]:
        """``webhooks/list`` (hosted mode, admin): the endpoints (of ``app``, or all), with their delivery state."""
        return await self.request("webhooks/list", {} if app is None else {"app": app})

    async def webhooks_delete(self, app: str, endpoint: int) -> dict[str, Any]:
        """``webhooks/delete`` (hosted mode, admin): removes an endpoint and what it had left to deliver."""
        return await self.request("webhooks/delete", {"app": app, "id": endpoint})

    async def webhooks_test(self, app: str, endpoint: int) -> dict[str, Any]:
        """``webhooks/test`` (hosted mode, admin): enqueues a ``webhook.test`` event for one endpoint."""
        return await self.request("webhooks/test", {"app": app, "id": endpoint})

    async def webhooks_replay(self, app: str, after: int) -> dict[str, Any]:
        """``webhooks/replay`` (hosted mode, admin): delivers the app's events after event ``after`` again, under
        their own ids."""
        return await self.request("webhooks/replay", {"app": app, "after": after})

    # ------------------------------------------------------------------ clock

    async def clock(self) -> ClockNow:
        """``clock/now``: ``{now, virtual}``."""
        return await self.request("clock/now")

    async def now(self) -> float:
        """The daemon's current time, in seconds since the Unix epoch."""
        result = await self.clock()
        return result.get("now") if isinstance(result, dict) else result

    async def advance_clock(self, seconds: float | _dt.timedelta) -> float:
        """``clock/advance`` (virtual clock only): returns the new now."""
        if isinstance(seconds, _dt.timedelta):
            seconds = seconds.total_seconds()
        result = await self.request("clock/advance", {"seconds": seconds})
        return result.get("now") if isinstance(result, dict) else result

    async def set_clock(self, now: float | int | _dt.datetime) -> float:
        """``clock/set`` (virtual clock only): seconds since the epoch or a datetime."""
        result = await self.request("clock/set", {"now": _timestamp(now)})
        return result.get("now") if isinstance(result, dict) else result
