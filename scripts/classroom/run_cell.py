#!/usr/bin/python3
"""Run notebook cells as a learner of the class, through JupyterHub.

With the class's API token (setup.sh made it; root reads it), it starts
the learner's Jupyter server through the hub's REST API, opens a notebook
of their course copy on the GoNB kernel (as the learner's browser would:
a session of the Jupyter server's REST API), runs cells on that kernel
over its websocket, and prints what each cell gave, one JSON object a
line. Run again on the same notebook, it reuses the same kernel, whose
state it keeps.

  sudo scripts/classroom/run_cell.py --user learner01             # a smoke test: the first step of lesson 1
  sudo scripts/classroom/run_cell.py --user learner01 --cell '%%
  fmt.Println("hello")'
  sudo scripts/classroom/run_cell.py --user learner01 --login PASSWORD   # does the hub take this password?
  sudo scripts/classroom/run_cell.py --user learner01 --stop

Written for Debian 12's JupyterHub 3.0 and classic notebook server, with
the standard library and tornado (which JupyterHub depends on) alone.
"""

import argparse
import asyncio
import datetime
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect


class Hub:
    """The class's hub, reached through its proxy on this host."""

    def __init__(self, prefix, url=None):
        try:
            with open(os.path.join(prefix, "classroom.json")) as f:
                self.class_ = json.load(f)
            with open(os.path.join(prefix, "secrets", "api-token")) as f:
                self.token = f.read().strip()
        except FileNotFoundError as e:
            raise SystemExit("run_cell.py: %s not found: is %s a class's folder (--prefix)?" % (e.filename, prefix))
        except PermissionError as e:
            raise SystemExit("run_cell.py: %s cannot be read: run it as root (sudo)" % e.filename)
        self.url = (url or "http://127.0.0.1:%d" % self.class_["port"]).rstrip("/")

    def request(self, method, path, body=None, timeout=30):
        """Makes one request with the class's token; returns (status, decoded JSON or text)."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Authorization": "token " + self.token, "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                status, raw = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, raw = e.code, e.read()
        except (urllib.error.URLError, OSError) as e:
            raise SystemExit("run_cell.py: %s %s%s: %s (is the hub running?)" % (method, self.url, path, e))
        try:
            return status, json.loads(raw or b"null")
        except ValueError:
            return status, raw.decode(errors="replace")

    def start(self, user, timeout):
        """Starts user's server, where it is not running, and waits until it answers."""
        status, body = self.request("POST", "/hub/api/users/%s/server" % user)
        if status not in (201, 202, 400):  # 400: already running, or pending
            raise SystemExit("run_cell.py: starting %s's server: HTTP %d: %s" % (user, status, body))
        deadline = time.time() + timeout
        while time.time() < deadline:
            status, model = self.request("GET", "/hub/api/users/%s" % user)
            if status == 404:
                raise SystemExit("run_cell.py: %s is not a user of the hub (is the name in classroom.json?)" % user)
            server = (model.get("servers") or {}).get("") if isinstance(model, dict) else None
            if server and server.get("ready"):
                return
            time.sleep(0.5)
        raise SystemExit("run_cell.py: %s's server did not start within %d s: see the hub's log" % (user, timeout))

    def stop(self, user):
        status, body = self.request("DELETE", "/hub/api/users/%s/server" % user)
        if status not in (202, 204, 400):
            raise SystemExit("run_cell.py: stopping %s's server: HTTP %d: %s" % (user, status, body))

    def login(self, user, password):
        """Logs in with the login form, as a browser does: True where the hub took the password."""
        body = urllib.parse.urlencode({"username": user, "password": password}).encode()
        req = urllib.request.Request(self.url + "/hub/login", data=body, method="POST")

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args, **kwargs):
                return None

        opener = urllib.request.build_opener(NoRedirect)
        try:
            with opener.open(req, timeout=30) as r:
                return False  # the form again, with "Invalid username or password"
        except urllib.error.HTTPError as e:
            return e.code == 302 and any(c.startswith("jupyterhub-session-id=") or c.startswith("jupyterhub-hub-login=")
                                         for c in e.headers.get_all("Set-Cookie") or [])

    def session(self, user, path):
        """Opens (or finds) the notebook at path, relative to user's home, on the GoNB kernel; returns the kernel's id."""
        status, body = self.request("POST", "/user/%s/api/sessions" % user,
                                    {"path": path, "name": os.path.basename(path), "type": "notebook", "kernel": {"name": "gonb"}},
                                    timeout=120)
        if status not in (200, 201):
            raise SystemExit("run_cell.py: opening %s as %s: HTTP %d: %s" % (path, user, status, body))
        return body["kernel"]["id"]

    def kernel_alive(self, user, kernel):
        status, body = self.request("GET", "/user/%s/api/kernels/%s" % (user, kernel))
        return status == 200

    async def run(self, user, kernel, code, timeout):
        """Runs code on the kernel; returns what the cell gave."""
        ws = self.url.replace("http", "ws", 1) + "/user/%s/api/kernels/%s/channels?session_id=%s" % (user, kernel, uuid.uuid4().hex)
        conn = await websocket_connect(HTTPRequest(ws, headers={"Authorization": "token " + self.token}))
        msg_id = uuid.uuid4().hex
        conn.write_message(json.dumps({
            "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "classroom", "session": uuid.uuid4().hex,
                       "version": "5.3", "date": datetime.datetime.now(datetime.timezone.utc).isoformat()},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                        "allow_stdin": False, "stop_on_error": True},
        }))
        out = {"user": user, "kernel": kernel, "status": None, "stdout": "", "stderr": "", "display": "", "error": ""}
        idle = False
        deadline = time.time() + timeout
        try:
            while not (idle and out["status"]):
                left = deadline - time.time()
                if left <= 0:
                    out["error"] += "no answer within %d s" % timeout
                    out["status"] = out["status"] or "timeout"
                    break
                raw = await asyncio.wait_for(conn.read_message(), left)
                if raw is None:
                    out["error"] += "the kernel's websocket closed"
                    out["status"] = out["status"] or "closed"
                    break
                if isinstance(raw, bytes):
                    continue  # a message with binary buffers: no cell here sends one
                m = json.loads(raw)
                if m.get("parent_header", {}).get("msg_id") != msg_id:
                    continue
                kind, content = m["header"]["msg_type"], m["content"]
                if kind == "stream":
                    out[content["name"]] += content["text"]
                elif kind in ("display_data", "execute_result", "update_display_data"):
                    data = content.get("data", {})
                    out["display"] += data.get("text/plain") or data.get("text/html") or ""
                elif kind == "error":
                    out["error"] += "%s: %s" % (content.get("ename"), content.get("evalue"))
                elif kind == "status" and content.get("execution_state") == "idle":
                    idle = True
                elif kind == "execute_reply":
                    out["status"] = content.get("status")
        finally:
            conn.close()
        return out


def first_code_cells(path, n):
    with open(path) as f:
        nb = json.load(f)
    cells = [c for c in nb["cells"] if c["cell_type"] == "code"]
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in cells[:n]]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--prefix", default="/opt/cudarepl-class", help="the class's folder (setup.sh --prefix)")
    p.add_argument("--url", help="the hub's address (default: http://127.0.0.1:<the class's port>)")
    p.add_argument("--user", required=True, help="the learner")
    p.add_argument("--notebook", default="course/notebooks/01-hello-gpu.ipynb", help="the notebook, in the learner's home")
    p.add_argument("--cell", action="append", help="a cell's code (repeat for more); default: the notebook's first two")
    p.add_argument("--timeout", type=int, default=900, help="seconds a cell may take (the first compiles the course)")
    p.add_argument("--login", metavar="PASSWORD", help="only check that the hub takes this password for the user")
    p.add_argument("--stop", action="store_true", help="only stop the user's server")
    a = p.parse_args()
    hub = Hub(a.prefix, a.url)
    if a.login is not None:
        ok = hub.login(a.user, a.login)
        print(json.dumps({"user": a.user, "login": ok}))
        return 0 if ok else 1
    if a.stop:
        hub.stop(a.user)
        return 0
    hub.start(a.user, 120)
    kernel = hub.session(a.user, a.notebook)
    cells = a.cell
    if not cells:
        home = os.path.expanduser("~" + a.user)
        cells = first_code_cells(os.path.join(home, a.notebook), 2)
    failed = False
    for code in cells:
        out = asyncio.run(hub.run(a.user, kernel, code, a.timeout))
        out["cell"] = code
        print(json.dumps(out), flush=True)
        failed = failed or out["status"] != "ok"
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
