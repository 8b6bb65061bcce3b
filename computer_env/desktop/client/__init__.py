"""Client for the guest server API (this project's server or an upstream OSWorld VM).

One short typed method per endpoint of the server, in three layers of one class: the transport
and the answer types (``_transport``), setup, files and scripts (``_setup``), and
the screen, input, discovery and lifecycle. Connection failures are retried and then raise
:class:`computer_env.errors.VMUnreachable`; an HTTP error answer raises
:class:`DesktopRequestError` (not an infrastructure error: callers decide what it means).
"""

from computer_env.desktop.client._client import DesktopClient
from computer_env.desktop.client._transport import DesktopRequestError, ExecResult

__all__ = ["DesktopClient", "DesktopRequestError", "ExecResult"]
