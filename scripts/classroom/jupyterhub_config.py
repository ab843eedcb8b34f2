# JupyterHub in front of GoNB for a class on one GPU server (docs/classroom.md).
#
# setup.sh copies this file into the class's folder beside classroom.json,
# which holds the class's settings (learners, budget, GPUs, port), and
# Debian's jupyterhub service starts the hub with it. Each learner logs in
# with their own Unix account (PAM) and gets their own Jupyter server, run
# as them, whose GoNB kernels start one cudarepl worker per cell: their
# own process, workspace, device-memory budget and time limit.
#
# Written for Debian 12's jupyterhub 3.0 with node-configurable-http-proxy
# and the classic notebook server (python3-notebook).

import json
import os
import pwd

here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "classroom.json")) as f:
    class_ = json.load(f)

prefix = class_["prefix"]
learners = class_["learners"]
teachers = class_.get("teachers", [])
gpus = [g for g in class_.get("gpus", "").split(",") if g.strip()]

# Who may log in: the class's accounts, and no other account of the
# server. Teachers get the admin page (start, stop and look into servers).
c.JupyterHub.authenticator_class = "jupyterhub.auth.PAMAuthenticator"
c.Authenticator.allowed_users = set(learners) | set(teachers)
c.Authenticator.admin_users = set(teachers)

# Debian's configurable-http-proxy finds its modules in /usr/share/nodejs,
# where Debian's node looks; another node (NodeSource's, say) looks there
# only when told. The proxy inherits the hub's environment.
os.environ["NODE_PATH"] = ":".join(p for p in ["/usr/share/nodejs", os.environ.get("NODE_PATH")] if p)

# Where the hub listens, and its own state (database, cookie secret).
c.JupyterHub.ip = class_.get("ip", "")
c.JupyterHub.port = int(class_.get("port", 8000))
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = int(class_.get("hub_port", 8081))
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:%d" % int(class_.get("proxy_api_port", 8001))
c.JupyterHub.db_url = "sqlite:///" + os.path.join(prefix, "state", "jupyterhub.sqlite")
c.JupyterHub.cookie_secret_file = os.path.join(prefix, "state", "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = os.path.join(prefix, "state", "jupyterhub.pid")
if class_.get("ssl_cert"):
    c.JupyterHub.ssl_cert = class_["ssl_cert"]
    c.JupyterHub.ssl_key = class_["ssl_key"]

# The class's own API token, for the teacher's scripts (run_cell.py) and
# CI: it may create users, start and stop their servers and reach them.
with open(os.path.join(prefix, "secrets", "api-token")) as f:
    token = f.read().strip()
c.JupyterHub.services = [{"name": "classroom", "api_token": token}]
c.JupyterHub.load_roles = [
    {
        "name": "classroom",
        "scopes": ["admin:users", "admin:servers", "access:servers", "read:users", "list:users"],
        "services": ["classroom"],
    }
]

# Each learner's Jupyter server runs as them, in their home, and opens on
# their copy of the course's notebooks.
c.JupyterHub.spawner_class = "jupyterhub.spawner.LocalProcessSpawner"
c.Spawner.cmd = ["/usr/bin/jupyterhub-singleuser"]
c.Spawner.default_url = "/tree/course/notebooks"
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120
# Nothing of the hub's own environment but the locale (not root's PATH).
c.Spawner.env_keep = ["LANG", "LC_ALL"]


def home(spawner):
    return pwd.getpwnam(spawner.user.name).pw_dir


def workspace(spawner):
    """Where cudarepl keeps the learner's exercise copies and figures."""
    return os.path.join(home(spawner), "cudarepl")


def visible_gpu(spawner):
    """One GPU of the server per learner, in turn: learner i gets GPU i mod n."""
    name = spawner.user.name
    i = learners.index(name) if name in learners else 0
    return gpus[i % len(gpus)]


env = {
    # cudarepl, GoNB and goimports first, then Go and the system's tools.
    "PATH": ":".join([os.path.join(prefix, "bin"), class_["go_bin"], "/usr/local/bin", "/usr/bin", "/bin"]),
    # The GoNB kernel, installed for the class rather than for one user.
    "JUPYTER_PATH": os.path.join(prefix, "share", "jupyter"),
    "CUDAREPL_WORKSPACE": workspace,
    # The learners take turns on the GPU for timing (share.LockEnv, package gpu/share).
    "CUDAREPL_GPU_LOCK": os.path.join(prefix, "gpu-locks"),
    # Go modules come from the class's own copy, made at setup: no network
    # is needed, and every learner builds the same versions.
    "GOPROXY": "file://" + os.path.join(prefix, "gomodcache", "cache", "download"),
    "GOSUMDB": "off",  # go.sum, in the course, checks every module
    "GOTOOLCHAIN": "local",
    "GOFLAGS": "-buildvcs=false",
}
if class_.get("mem_limit"):
    env["CUDAREPL_MEM_LIMIT"] = class_["mem_limit"]  # each worker's device-memory budget (share.MemLimitEnv, package gpu/share)
if gpus:
    # Numbered as nvidia-smi numbers them (CUDA's own order puts the
    # fastest first).
    env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    env["CUDA_VISIBLE_DEVICES"] = visible_gpu
c.Spawner.environment = env
