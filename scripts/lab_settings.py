"""The lesson's JupyterLab and kernel settings, written into one Python environment (nothing in the learner's home).

    python scripts/lab_settings.py [--prefix DIR] [--locale zh_CN|en]

One home for every way the lesson is opened: scripts/setup.sh, scripts/personal_copy.py (the pip path) and
binder/postBuild (a hub image) all call it. It writes, under the environment's prefix:

- ``share/jupyter/lab/settings/overrides.json``: JupyterLab's menus in Chinese (the language pack is in
  requirements.txt) unless the learner chose English, and no news or update checks (a classroom may have no
  way out; the toast is an English box a learner cannot act on). An earlier choice of language is kept unless
  ``--locale`` is given.
- ``etc/jupyter/jupyter_server_config.json`` (merged): the file browser hides ``*.egg-info`` (what pip's
  install of ``lesson_lib`` leaves in the course folder) beside JupyterLab's own hidden patterns, and no protocol
  setting for the kernel websocket (an earlier version's legacy setting, which made Chromium fail every first
  handshake, is removed).
- ``etc/jupyter/jupyter_server_config.py``: the kernel websocket reads a page's frames with the protocol chosen at
  its handshake (``SERVER_CONFIG``). jupyter_server 2.21.1 (the newest) reads it from tornado's live
  ``ws_connection`` each time and falls back to the legacy protocol when that is gone. On a restart's reconnect the
  new socket's handshake can reach the server before the old socket's close: jupyter_server logs "Replacing stale
  connection" and closes the old handler, which drops its ``ws_connection`` at once while tornado still hands it the
  frames the page sent before closing; those v1 frames were read as legacy (``struct.error``), the socket aborted
  and the frames lost, and about one Restart & Run All in three ran nothing (tests/test_kernel_websocket.py,
  tests/e2e/test_restart_run_all.py). It also drops tornado's English websocket_ping_timeout warning and pyzmq's
  "Got events for closed stream" after a kernel restart (see there): ``personal_copy.py --open`` promises the learner
  one Chinese line in the terminal.
- ``etc/ipython/ipython_kernel_config.py``: the kernel does not log ipykernel's English "Kernel is running over
  TCP without encryption" notice (the kernel listens on 127.0.0.1 of the learner's own machine), nor "No such
  comm target registered: jupyter.widget.control" (JupyterLab's widget manager asks for it on every restart,
  before the lesson imports ipywidgets; the widgets work either way).
- ``share/jupyter/kernels/python3/kernel.json``: the kernel starts with ``-Xfrozen_modules=off`` and
  ``PYDEVD_DISABLE_FILE_VALIDATION=1``, so debugpy prints no English frozen-modules warning on every start.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

NEWS = {"fetchNews": "false", "checkForUpdates": False}
HIDDEN = ["__pycache__", "*.pyc", "*.pyo", ".DS_Store", "*~", "*.so", "*.dylib", "*.egg-info"]
KERNEL_CONFIG = '''\
# Written by the lesson's scripts/lab_settings.py. ipykernel logs an English notice about its TCP transport on every
# start; on a learner's own machine (127.0.0.1) it is nothing the learner can act on, so it is filtered out.
import logging


class _NoTcpNotice(logging.Filter):
    def filter(self, record):
        return "without encryption" not in record.getMessage()


class _NoWidgetControlNotice(logging.Filter):
    # JupyterLab's widget manager opens this comm on every kernel restart, before the lesson imports ipywidgets.
    def filter(self, record):
        return record.getMessage() != "No such comm target registered: jupyter.widget.control"


logging.getLogger("IPKernelApp").addFilter(_NoTcpNotice())
for _name in ("Comm", "ipykernel.comm"):
    logging.getLogger(_name).addFilter(_NoWidgetControlNotice())
'''


SERVER_CONFIG = '''\
# Written by the lesson's scripts/lab_settings.py (see its docstring): the kernel websocket reads every frame with the
# protocol chosen at its handshake, also after the server closed a stale handler that still delivers the page's frames.
import logging

from jupyter_server.services.kernels.connection.channels import ZMQChannelsWebsocketConnection

_LIVE = ZMQChannelsWebsocketConnection.subprotocol.fget  # None once tornado dropped the handler's ws_connection


class HandshakeProtocolConnection(ZMQChannelsWebsocketConnection):
    _handshake = None

    def connect(self):
        self._handshake = _LIVE(self)  # open() calls this after the handshake, before tornado reads any frame
        return super().connect()

    @property
    def subprotocol(self):
        live = _LIVE(self)
        return self._handshake if live is None else live


class _NoPingNotice(logging.Filter):
    # jupyter_server keeps its kernel websocket alive itself (a ping every 30 s, 90 s for the answer: room for a busy
    # class hub) with milliseconds under the handler's ping_interval/ping_timeout, which tornado >= 6.5 also reads, as
    # seconds, and then warns in English that 90000 is longer than 30000. No setting silences it without shortening
    # that 90 s (both read the same two numbers); tornado's own pings (every 30000 s) never happen: only the line goes.
    def filter(self, record):
        return not record.getMessage().startswith("The websocket_ping_timeout (")


class _NoClosedStreamNotice(logging.Filter):
    # pyzmq's stream of a restarted kernel's channel may still be handed events after the server closed it: they are
    # dropped either way (that kernel is gone), and only the English line would reach the learner's terminal.
    def filter(self, record):
        return not record.getMessage().startswith("Got events for closed stream")


logging.getLogger("tornado.general").addFilter(_NoPingNotice())
logging.getLogger("tornado.general").addFilter(_NoClosedStreamNotice())
c = get_config()  # noqa: F821 (traitlets provides it)
c.ServerApp.kernel_websocket_connection_class = HandshakeProtocolConnection
'''


def current_locale(prefix: Path) -> str | None:
    try:
        data = json.loads((prefix / "share/jupyter/lab/settings/overrides.json").read_text(encoding="utf-8"))
        return data["@jupyterlab/translation-extension:plugin"]["locale"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def write(prefix: Path, locale: str | None = None) -> str:
    """Write the files above under ``prefix``; returns the UI language in force (zh_CN unless chosen otherwise)."""
    locale = locale or current_locale(prefix) or "zh_CN"
    settings = prefix / "share/jupyter/lab/settings"
    settings.mkdir(parents=True, exist_ok=True)
    overrides = {"@jupyterlab/translation-extension:plugin": {"locale": locale},
                 "@jupyterlab/apputils-extension:notification": NEWS}
    (settings / "overrides.json").write_text(json.dumps(overrides, indent=2) + "\n", encoding="utf-8")
    server = prefix / "etc/jupyter/jupyter_server_config.json"  # (a .d folder would be read for extensions only)
    server.parent.mkdir(parents=True, exist_ok=True)
    try:
        config = json.loads(server.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        config = {}
    config.setdefault("ContentsManager", {})["hide_globs"] = HIDDEN
    earlier = config.get("ZMQChannelsWebsocketConnection", {})
    earlier.pop("kernel_ws_protocol", None)  # an earlier version's setting: every first handshake failed with it
    if not earlier:
        config.pop("ZMQChannelsWebsocketConnection", None)
    server_app = config.get("ServerApp", {})
    server_app.pop("kernel_websocket_connection_class", None)  # an earlier version's name: SERVER_CONFIG sets it
    if not server_app:
        config.pop("ServerApp", None)
    server.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    server.with_suffix(".py").write_text(SERVER_CONFIG, encoding="utf-8")
    ipython = prefix / "etc/ipython"
    ipython.mkdir(parents=True, exist_ok=True)
    (ipython / "ipython_kernel_config.py").write_text(KERNEL_CONFIG, encoding="utf-8")
    quiet_kernel_spec(prefix)
    return locale


def quiet_kernel_spec(prefix: Path) -> None:
    """The environment's python3 kernel spec (ipykernel's) without debugpy's frozen-modules warning."""
    spec_file = prefix / "share/jupyter/kernels/python3/kernel.json"
    try:
        spec = json.loads(spec_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # no ipykernel here (yet): nothing to quiet
    argv = spec.get("argv", [])
    if argv and "-Xfrozen_modules=off" not in argv:
        argv.insert(1, "-Xfrozen_modules=off")  # an unknown -X option is ignored by Python 3.10
    spec.setdefault("env", {})["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
    spec_file.write_text(json.dumps(spec, indent=1) + "\n", encoding="utf-8")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prefix", type=Path, default=Path(sys.prefix), help="the environment (default: this one)")
    parser.add_argument("--locale", choices=("zh_CN", "en"), help="JupyterLab's UI language (default: keep, or zh_CN)")
    args = parser.parse_args(argv)
    print(write(args.prefix, args.locale))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
