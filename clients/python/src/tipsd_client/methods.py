"""The protocol as this client knows it: its version and every method.

``PROTOCOL_VERSION`` is the one place the client states the version it speaks
(sent in ``initialize``; a test holds it to ``info.version`` in
protocol/openrpc.json).

``METHODS`` lists every request method the daemon answers.

Byte-wise sorted, like the daemon's registry (``Messages.requests`` in Sources/TipsProtocol/Messages.swift); a Swift
test (RegistryTests.pythonMethodListMatchesTheRegistry) fails when the two differ, so a method added to the daemon
is added here too. ``TipsClient.request`` accepts any method name; this list is for tooling and for checking.
"""

PROTOCOL_VERSION = "1.3"

METHODS = (
    "accounts/delete",
    "accounts/export",
    "accounts/import",
    "accounts/list",
    "actions/subscribe",
    "actions/unsubscribe",
    "analytics/read",
    "analytics/subscribe",
    "analytics/unsubscribe",
    "audit/list",
    "auth/refresh",
    "catalog/reload",
    "catalogs/diff",
    "catalogs/history",
    "catalogs/publish",
    "catalogs/rollback",
    "catalogs/schedule",
    "clock/advance",
    "clock/now",
    "clock/set",
    "datastore/reset",
    "events/configure",
    "events/donate",
    "groups/register",
    "groups/unregister",
    "initialize",
    "inspect/state",
    "metrics/get",
    "parameters/define",
    "parameters/set",
    "rpc.discover",
    "shutdown",
    "sync/pull",
    "sync/push",
    "sync/status",
    "testing/clear",
    "testing/hideAllTips",
    "testing/hideTips",
    "testing/showAllTips",
    "testing/showTips",
    "tips/configure",
    "tips/displayed",
    "tips/explain",
    "tips/instantiate",
    "tips/invalidate",
    "tips/observe",
    "tips/performAction",
    "tips/register",
    "tips/resetEligibility",
    "tips/resume",
    "tips/setVariant",
    "tips/status",
    "tips/suppress",
    "tips/unobserve",
    "tips/unregister",
    "webhooks/create",
    "webhooks/delete",
    "webhooks/list",
    "webhooks/replay",
    "webhooks/test",
)

#: Notifications a client may send.
CLIENT_NOTIFICATIONS = ("$/cancelRequest", "exit", "initialized")

#: Notifications the daemon sends.
SERVER_NOTIFICATIONS = (
    "analytics/event",
    "groups/currentTipChanged",
    "inspect/changed",
    "sync/changed",
    "tips/actionPerformed",
    "tips/shouldDisplayChanged",
)
