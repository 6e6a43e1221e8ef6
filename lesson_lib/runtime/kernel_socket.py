"""The kernel websocket that reads a page's frames with the protocol chosen at the handshake.

On a kernel restart JupyterLab opens a new websocket with the same session id; jupyter_server logs "Replacing stale
connection" and closes the old handler, which drops tornado's ``ws_connection`` at once while the socket still
delivers the page's frames. jupyter_server's ``subprotocol`` then cannot read the handler's choice and falls back to
the legacy protocol, so the page's binary v1 frames are misread (``struct.error``), the channel drops and the queued
cells of Restart & Run All never run. This class keeps the protocol it saw while the handler was live.
scripts/lab_settings.py names it in the server's config (``ServerApp.kernel_websocket_connection_class``).
"""

from jupyter_server.services.kernels.connection.channels import ZMQChannelsWebsocketConnection

_READ_LIVE = ZMQChannelsWebsocketConnection.subprotocol.fget


class KeptProtocolConnection(ZMQChannelsWebsocketConnection):
    """A kernel connection whose protocol, once chosen, outlives its closed handler."""

    _kept = None

    @property
    def subprotocol(self):
        live = _READ_LIVE(self)  # None once the handler is closed (or when legacy was chosen)
        if live is not None:
            self._kept = live
        return live if live is not None else self._kept

    def connect(self):
        self._kept = self.subprotocol  # read while the handshake's handler is live: kept for after a close
        return super().connect()
