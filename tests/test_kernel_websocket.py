"""Restart & Run All after a reconnect: the protocol the server reads a page's frames with is the one it chose.

On a kernel restart JupyterLab opens a new websocket with the same session id; when its handshake reaches the server
before the old socket's close, jupyter_server logs "Replacing stale connection" and closes the old handler, which
sets tornado's ``ws_connection`` to None at once while the socket still delivers the frames the page sent before
closing it. ``ZMQChannelsWebsocketConnection.subprotocol`` then fails and falls back to the legacy protocol: with
the default (v1) protocol the page's binary frames are misread (``struct.error: unpack requires a buffer of
402653184 bytes``), the socket aborts and the frames are lost. The first test shows that cause with
jupyter_server's own code; the others show that the connection the lesson's server config names keeps the
handshake's protocol. The browser test tests/e2e/test_restart_run_all.py runs ten Restart & Run Alls in a row.
"""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

ROOT = Path(__file__).resolve().parents[1]
V1 = "v1.kernel.websocket.jupyter.org"


@pytest.fixture
def channels():
    """jupyter_server's websocket connection module, imported by the tests that use it: at module level, every
    xdist worker paid its import (0.2 CPU-s) while collecting, and only one of them runs this file."""
    return pytest.importorskip("jupyter_server.services.kernels.connection.channels")


def _lesson_config(tmp_path) -> Config:
    sys.path.insert(0, str(ROOT / "scripts"))
    import lab_settings

    lab_settings.write(tmp_path)
    return Config(json.loads((tmp_path / "etc/jupyter/jupyter_server_config.json").read_text(encoding="utf-8")))


class _LiveHandler:
    """What tornado's handler is while its socket is open: the protocol chosen at the handshake."""

    def __init__(self, protocol):
        self.selected_subprotocol = protocol


class _ClosedHandler:
    """What tornado's handler is after ``close()``: ``selected_subprotocol`` asserts a live connection."""

    @property
    def selected_subprotocol(self):
        raise AssertionError("ws_connection is None")


def _negotiated(channels, config: Config) -> str | None:
    from jupyter_server.services.kernels.websocket import KernelWebsocketHandler

    connection = channels.ZMQChannelsWebsocketConnection(config=config)
    return KernelWebsocketHandler.select_subprotocol(SimpleNamespace(connection=connection), [V1])


def _after_close(channels) -> str | None:
    """The protocol a connection reads frames with once its handler was closed (jupyter_server's property)."""
    return channels.ZMQChannelsWebsocketConnection.subprotocol.fget(SimpleNamespace(websocket_handler=_ClosedHandler()))


def test_the_default_reads_a_replaced_sockets_v1_frames_as_legacy(channels):
    """The cause, in jupyter_server's code: v1 chosen, legacy after close, a v1 frame misread."""
    from jupyter_server.services.kernels.connection.base import deserialize_binary_message, serialize_msg_to_ws_v1

    assert _negotiated(channels, Config()) == V1 and _after_close(channels) is None
    # The smallest v1 frame (no message parts) is misread alike; the page's four parts only make the misread
    # offset table three times longer (a 400 MB struct format, 5 CPU-s of the fast set).
    frame = serialize_msg_to_ws_v1([], "shell")
    with pytest.raises(struct.error):
        deserialize_binary_message(frame)


def test_the_lessons_settings_replace_an_earlier_legacy_setting(tmp_path):
    config_file = tmp_path / "etc/jupyter/jupyter_server_config.json"
    config_file.parent.mkdir(parents=True)
    config_file.write_text(json.dumps({"ZMQChannelsWebsocketConnection": {"kernel_ws_protocol": ""}}))
    config = _lesson_config(tmp_path)
    assert "ZMQChannelsWebsocketConnection" not in config  # legacy for every socket failed each first handshake
    assert "kernel_websocket_connection_class" not in config.get("ServerApp", {})  # named by the .py config


def _lesson_connection(channels, tmp_path, handshake, monkeypatch):
    """The connection class the lesson's server config names, connected over a handshake that chose ``handshake``
    (jupyter_server's own connect() stubbed: no kernel), then its handler closed as for a stale socket."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import lab_settings

    lab_settings.write(tmp_path)
    config = PyFileConfigLoader("jupyter_server_config.py", path=str(tmp_path / "etc/jupyter")).load_config()
    cls = config.ServerApp.kernel_websocket_connection_class
    assert issubclass(cls, channels.ZMQChannelsWebsocketConnection)
    monkeypatch.setattr(channels.ZMQChannelsWebsocketConnection, "connect", lambda self: None)
    connection = cls(config=Config())
    connection._trait_values["websocket_handler"] = _LiveHandler(handshake)  # (a tornado handler needs a server)
    connection.connect()
    connection._trait_values["websocket_handler"] = _ClosedHandler()
    return connection


def test_the_lessons_connection_reads_a_replaced_sockets_frames_with_the_handshakes_protocol(channels, tmp_path,
                                                                                              monkeypatch):
    assert _lesson_connection(channels, tmp_path, V1, monkeypatch).subprotocol == V1


def test_the_lessons_connection_keeps_a_legacy_handshake_legacy(channels, tmp_path, monkeypatch):
    assert _lesson_connection(channels, tmp_path, None, monkeypatch).subprotocol is None


def test_the_lessons_server_logs_no_ping_warning_from_jupyter_servers_own_keepalive(tmp_path, caplog):
    """jupyter_server's kernel websocket handler gives tornado its keepalive in milliseconds (30000 / 90000); tornado
    >= 6.5 reads them as seconds and warns in English on the terminal the learner was promised one Chinese line in."""
    import logging

    tornado_ws = pytest.importorskip("tornado.websocket")
    from jupyter_server.base.websocket import WebSocketMixin

    handler = type("Handler", (WebSocketMixin,), {"settings": {}})()  # the kernel handler's defaults
    params = SimpleNamespace(ping_interval=handler.ping_interval, ping_timeout=handler.ping_timeout)
    protocol = SimpleNamespace(params=params, ping_interval=params.ping_interval)
    sys.path.insert(0, str(ROOT / "scripts"))
    import lab_settings

    lab_settings.write(tmp_path)
    general = logging.getLogger("tornado.general")
    before = list(general.filters)
    # the tests above loaded the same config in this process: without its filter first
    general.filters[:] = [f for f in before if type(f).__name__ != "_NoPingNotice"]
    try:
        with caplog.at_level(logging.WARNING, logger="tornado.general"):
            tornado_ws.de_dupe_gen_log.cache_clear()  # tornado logs each message once per process
            tornado_ws.WebSocketProtocol13.ping_timeout.fget(protocol)
            assert caplog.records, "tornado no longer warns: this filter can go"
            caplog.clear()
            PyFileConfigLoader("jupyter_server_config.py", path=str(tmp_path / "etc/jupyter")).load_config()
            tornado_ws.de_dupe_gen_log.cache_clear()
            timeout = tornado_ws.WebSocketProtocol13.ping_timeout.fget(protocol)
    finally:
        general.filters[:] = before
    assert [r.getMessage() for r in caplog.records] == []
    assert timeout == params.ping_interval  # tornado's own ping timeout is left as it was


def test_the_lessons_server_logs_no_closed_stream_warning_after_a_kernel_restart(tmp_path, caplog):
    """After a restart pyzmq may hand a closed channel's stream its last events; it drops them and warns in English
    ("Got events for closed stream") on the terminal the learner was promised one Chinese line in."""
    import logging

    zmq = pytest.importorskip("zmq")
    from zmq.eventloop.zmqstream import ZMQStream

    sys.path.insert(0, str(ROOT / "scripts"))
    import lab_settings

    lab_settings.write(tmp_path)
    context = zmq.Context()
    stream = ZMQStream(context.socket(zmq.PAIR))
    stream.close()
    general = logging.getLogger("tornado.general")
    before = list(general.filters)
    general.filters[:] = [f for f in before if type(f).__name__ != "_NoClosedStreamNotice"]
    try:
        with caplog.at_level(logging.WARNING, logger="tornado.general"):
            stream._handle_events(0, zmq.POLLIN)  # what the IO loop calls for such an event
            assert caplog.records, "pyzmq no longer warns: this filter can go"
            caplog.clear()
            PyFileConfigLoader("jupyter_server_config.py", path=str(tmp_path / "etc/jupyter")).load_config()
            stream._handle_events(0, zmq.POLLIN)
            general.warning("another warning")  # the filter lets others through
    finally:
        general.filters[:] = before
        context.term()
    assert [r.getMessage() for r in caplog.records] == ["another warning"]
