"""Python client for tipsd, the TipKit eligibility daemon (the protocol
version it speaks is ``PROTOCOL_VERSION``, in ``methods.py``).

    from tipsd_client import TipsClient

    async with TipsClient.connect(socket_path="/tmp/tipsd.sock") as tips:
        await tips.donate("search.opened")
        unsubscribe = await tips.on_action(lambda a: print(a.tip_id, a.action_ids))
        async with tips.observe(["filter.tip"]) as sub:
            async for change in sub:
                print(change.id, change.should_display)

``SyncTipsClient`` is the same API, blocking; the ``tipsd`` pytest fixture
(``tipsd_client.pytest_plugin``) yields one connected to a fresh daemon.
"""

__version__ = "0.1.0"

from .auth import TokenRequest, TokenSource  # noqa: E402
from .client import TipsClient, connect  # noqa: E402
from .daemon import TipsdDaemon, TipsdNotFound, find_tipsd, stdio_command  # noqa: E402
from .errors import (  # noqa: E402
    DatastoreFailureError,
    ErrorCode,
    ForbiddenError,
    InternalError,
    InvalidParamsError,
    InvalidRequestError,
    InvalidRuleError,
    MethodNotFoundError,
    ParseError,
    QuotaExceededError,
    ServerNotInitializedError,
    ShuttingDownError,
    SubscriptionClosed,
    SyncOutboxFullError,
    TipsdConnectionError,
    TipsdError,
    TipsdProtocolError,
    TooManyConnectionsError,
    UnauthorizedError,
    UnavailableError,
    UnknownActionError,
    UnknownGroupError,
    UnknownSubscriptionError,
    UnknownTipError,
    VirtualClockDisabledError,
)
from .methods import PROTOCOL_VERSION  # noqa: E402
from .models import (  # noqa: E402
    ActionPerformed,
    AnalyticsEvent,
    CurrentTipChanged,
    DisplayFrequency,
    GroupPriority,
    InspectChanged,
    Reason,
    ShouldDisplayChanged,
    Status,
    UnknownNotification,
)
from .offline import OfflineQueue  # noqa: E402
from .subscription import Subscription, Unsubscribe  # noqa: E402
from .sync import SyncSubscription, SyncTipsClient  # noqa: E402

__all__ = [
    "__version__",
    "PROTOCOL_VERSION",
    "TipsClient",
    "connect",
    "SyncTipsClient",
    "OfflineQueue",
    "SyncSubscription",
    "Subscription",
    "Unsubscribe",
    "TipsdDaemon",
    "TipsdNotFound",
    "find_tipsd",
    "stdio_command",
    "TipsdError",
    "TipsdConnectionError",
    "TipsdProtocolError",
    "SubscriptionClosed",
    "ErrorCode",
    "ParseError",
    "InvalidRequestError",
    "MethodNotFoundError",
    "InvalidParamsError",
    "InternalError",
    "ServerNotInitializedError",
    "UnknownTipError",
    "UnknownSubscriptionError",
    "VirtualClockDisabledError",
    "DatastoreFailureError",
    "ShuttingDownError",
    "UnknownGroupError",
    "UnknownActionError",
    "InvalidRuleError",
    "TooManyConnectionsError",
    "SyncOutboxFullError",
    "UnauthorizedError",
    "ForbiddenError",
    "QuotaExceededError",
    "UnavailableError",
    "ShouldDisplayChanged",
    "CurrentTipChanged",
    "ActionPerformed",
    "AnalyticsEvent",
    "InspectChanged",
    "UnknownNotification",
    "TokenRequest",
    "TokenSource",
    "Reason",
    "Status",
    "DisplayFrequency",
    "GroupPriority",
]
