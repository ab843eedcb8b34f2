package remote

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"runtime"
	"strings"
	"time"

	"cudarepl/gpu"
)

// The variables that send workers elsewhere. CommandEnv wins where both
// are set; SSHConfigEnv names an ssh configuration file (ssh -F) for
// HostEnv's ssh.
const (
	HostEnv      = "CUDAREPL_REMOTE"     // [user@]host[:path]: the worker runs there, over ssh
	CommandEnv   = "CUDAREPL_WORKER_CMD" // any command line whose stdin and stdout are a worker's pipe
	SSHConfigEnv = "CUDAREPL_SSH_CONFIG" // an ssh configuration file, passed to ssh as -F
)

// Transport runs workers that are not children of this process, for
// gpu.Options.Remote: a command whose standard input and output are a
// worker's pipe, such as "ssh gpu1 cudarepl worker" or "docker exec -i box
// cudarepl worker". The kernels, their compiling (the host's NVRTC) and
// their faults happen there; the caller's files, figures and notebooks
// stay here. Each worker the gpu.Worker starts (the first, and a fresh one
// after a fault) runs the command again.
type Transport struct {
	// Name names the other end in messages ("the connection to gpu1 was
	// lost"): the host, or the command.
	Name string
	// Argv is the command line that starts the worker.
	Argv []string
	// Silence is how long the host may go unheard before the connection
	// is taken as gone and the command killed; 10 s when 0.
	Silence time.Duration

	ssh *sshTarget // set by SSH: what Install needs
}

// Host is the Transport's Name.
func (t *Transport) Host() string { return t.Name }

var _ gpu.Transport = (*Transport)(nil)

func init() {
	gpu.RegisterRemote(func() (gpu.Transport, error) {
		t, err := FromEnv()
		if t == nil {
			return nil, err // no *Transport inside the interface: Open's nil is a worker here
		}
		return t, err
	})
}

// sshTarget is a host reached with the system's ssh.
type sshTarget struct {
	dest string   // [user@]host, as ssh takes it
	path string   // the cudarepl to run there; "" tries the usual places
	opts []string // ssh's options before dest
}

// remoteCache is where Install puts cudarepl on a host, under its home
// folder: one folder a protocol, since any cudarepl that speaks it serves.
var remoteCache = fmt.Sprintf(".cache/cudarepl/worker-%d/cudarepl", gpu.WorkerProtocol)

// SSH returns the Transport that runs cudarepl's worker on a host over the
// system's ssh, from target written [user@]host[:path], where path is the
// cudarepl to run there (by default: one that Install copied, else
// cudarepl on the PATH of a non-interactive shell, else ~/go/bin or
// ~/.local/bin). ssh runs without prompting (BatchMode) and gives up on a
// host that does not answer within 10 s, so a missing key or an unknown
// host is an error, never a question; keys, agents and ~/.ssh/config work
// as they do for ssh itself, and $CUDAREPL_SSH_CONFIG names another
// configuration file.
func SSH(target string) (*Transport, error) {
	dest, p := target, ""
	if strings.HasPrefix(dest, "[") || strings.Contains(dest, "@[") { // an IPv6 address: [::1]:path
		if i := strings.Index(dest, "]"); i >= 0 {
			dest, p = dest[:i+1], strings.TrimPrefix(dest[i+1:], ":")
		}
	} else if i := strings.Index(dest, ":"); i >= 0 {
		dest, p = dest[:i], dest[i+1:]
	}
	host := dest[strings.LastIndex(dest, "@")+1:]
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	switch {
	case strings.TrimSpace(host) == "":
		return nil, fmt.Errorf("gpu: remote %q names no host: write it as [user@]host[:path], e.g. gpu1 or me@gpu1:bin/cudarepl", target)
	case strings.HasPrefix(dest, "-") || strings.ContainsAny(dest, " \t\n'\"`$;&|<>"):
		return nil, fmt.Errorf("gpu: remote %q is not a host name: write it as [user@]host[:path], e.g. gpu1 or me@gpu1:bin/cudarepl", target)
	}
	t := &sshTarget{dest: dest, path: p, opts: sshOptions()}
	argv := append([]string{"ssh"}, t.opts...)
	argv = append(argv, "--", dest, "sh -c "+shSingle(t.script()))
	return &Transport{Name: host, Argv: argv, ssh: t}, nil
}

// sshOptions are the options ssh runs with: never a prompt (BatchMode), a
// time limit on connecting, keep-alives that notice a connection gone
// dead, no terminal, and no warnings mixed into what a worker says.
func sshOptions() []string {
	opts := []string{"-T", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10",
		"-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3", "-o", "LogLevel=ERROR"}
	if f := os.Getenv(SSHConfigEnv); f != "" {
		opts = append([]string{"-F", f}, opts...)
	}
	return opts
}

// script is the command a host's shell runs: it names the host's system
// and architecture (for Install's offer), then starts the first
// cudarepl it finds as a worker, or says it found none.
func (t *sshTarget) script() string {
	cands := []string{`"$HOME/` + remoteCache + `"`, `"$(command -v cudarepl)"`, `"$HOME/go/bin/cudarepl"`, `"$HOME/.local/bin/cudarepl"`}
	if t.path != "" {
		cands = []string{shDouble(t.path)}
	}
	return `echo "` + hostWord + ` $(uname -sm)"; for c in ` + strings.Join(cands, " ") +
		`; do if [ -n "$c" ] && [ -f "$c" ] && [ -x "$c" ]; then exec "$c" worker; fi; done; echo ` + missingWord
}

// The lines a host's shell and a remote worker start with, before any
// frame: they must read the same in every version of the protocol.
const (
	helloWord   = "cudarepl-worker"  // protocol, version, GOOS/GOARCH
	hostWord    = "cudarepl-host"    // the host's uname -sm
	missingWord = "cudarepl-missing" // no cudarepl was found to start
)

// shDouble quotes s for a POSIX shell in double quotes, with a leading ~/
// as $HOME.
func shDouble(s string) string {
	home := ""
	if rest, ok := strings.CutPrefix(s, "~/"); ok {
		home, s = "$HOME/", rest
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", `\$`, "`", "\\`")
	return `"` + home + r.Replace(s) + `"`
}

// shSingle quotes s in single quotes, for any shell a login may have.
func shSingle(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Command returns the Transport that runs the command line cmdline (its
// words split as a shell would, with quotes and backslashes, but nothing
// expanded) and takes its stdin and stdout as a worker's pipe. The
// command must start "cudarepl worker" where the GPU is: "ssh gpu1
// cudarepl worker", "docker exec -i box cudarepl worker", or "cudarepl
// worker" itself, a worker here over a pipe.
func Command(cmdline string) (*Transport, error) {
	argv, err := splitWords(cmdline)
	if err != nil {
		return nil, fmt.Errorf("gpu: worker command %q: %w", cmdline, err)
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf("gpu: the worker command is empty: give a command line such as \"ssh gpu1 cudarepl worker\"")
	}
	name := sshHost(argv)
	if name == "" {
		name = "the worker (" + clipped(cmdline, 60) + ")"
	}
	return &Transport{Name: name, Argv: argv}, nil
}

// sshHost is the host of an ssh command line, "" for another command.
func sshHost(argv []string) string {
	if path.Base(argv[0]) != "ssh" {
		return ""
	}
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "--":
			if i+1 < len(argv) {
				return argv[i+1][strings.LastIndex(argv[i+1], "@")+1:]
			}
			return ""
		case len(a) == 2 && a[0] == '-' && strings.ContainsRune("BbcDEeFIiJLlmOoPpRSWw", rune(a[1])):
			i++ // an option with a value
		case strings.HasPrefix(a, "-"):
		default:
			return a[strings.LastIndex(a, "@")+1:]
		}
	}
	return ""
}

// clipped is s cut to n characters, ending in "…" where it was cut.
func clipped(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// splitWords splits a command line into words as a POSIX shell does,
// honouring single quotes, double quotes and backslashes, but expanding
// nothing.
func splitWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("a single quote is not closed")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, errors.New("a double quote is not closed")
			}
			inWord = true
		case c == '\\':
			if i+1 < len(s) {
				i++
				cur.WriteByte(s[i])
			}
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// FromEnv returns the Transport that $CUDAREPL_WORKER_CMD or
// $CUDAREPL_REMOTE names, or nil where neither is set: gpu.Open's default
// (gpu.DefaultRemote) in a program that imports this package.
func FromEnv() (*Transport, error) {
	if c := os.Getenv(CommandEnv); strings.TrimSpace(c) != "" {
		r, err := Command(c)
		if err != nil {
			return nil, fmt.Errorf("%w (from %s)", err, CommandEnv)
		}
		return r, nil
	}
	if t := os.Getenv(HostEnv); strings.TrimSpace(t) != "" {
		r, err := SSH(strings.TrimSpace(t))
		if err != nil {
			return nil, fmt.Errorf("%w (from %s)", err, HostEnv)
		}
		return r, nil
	}
	return nil, nil
}

// BinaryError says that a host has no cudarepl able to serve this one's
// workers: none at all, one without the worker command, or one that
// speaks another worker protocol. Installable reports whether Install can
// copy this program there (the host is reached with SSH and runs this
// program's system and architecture).
type BinaryError struct {
	Host        string
	Problem     string // e.g. "gpu1 has no cudarepl (looked in …)"
	Platform    string // the host's system and architecture (uname -sm), "" where unknown
	Installable bool

	dest string // where Install would copy it, as the user wrote it; "" for the cache folder
}

// installDest is where Install copies cudarepl on r's host, as a message
// shows it.
func (r *Transport) installDest() string {
	if r.ssh != nil && r.ssh.path != "" {
		return r.ssh.path
	}
	return "~/" + remoteCache
}

func (e *BinaryError) Error() string {
	here := runtime.GOOS + "/" + runtime.GOARCH
	dest := e.dest
	if dest == "" {
		dest = "~/" + remoteCache
	}
	var fix string
	switch goos, goarch := unamePlatform(e.Platform); {
	case e.Installable:
		fix = fmt.Sprintf("run cudarepl with --remote-install to copy this one (%s) to %s there, or install there a cudarepl that speaks worker protocol %d", here, dest, gpu.WorkerProtocol)
	case goos != "" && goarch != "" && !runsHere(e.Platform):
		fix = fmt.Sprintf("%s runs %s and this cudarepl is built for %s: build one for it (GOOS=%s GOARCH=%s CGO_ENABLED=0 go build ./cmd/cudarepl) and copy it to %s there",
			e.Host, e.Platform, here, goos, goarch, dest)
	default:
		fix = fmt.Sprintf("install there a cudarepl that speaks worker protocol %d (this one does), where the worker command finds it", gpu.WorkerProtocol)
	}
	return "gpu: " + e.Problem + ": " + fix
}

// unamePlatform is Go's GOOS and GOARCH for what uname -sm prints, such
// as "Linux x86_64"; "" for what it does not know.
func unamePlatform(uname string) (goos, goarch string) {
	f := strings.Fields(uname)
	if len(f) != 2 {
		return "", ""
	}
	goos = map[string]string{"Linux": "linux", "Darwin": "darwin", "FreeBSD": "freebsd"}[f[0]]
	goarch = map[string]string{"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64",
		"i386": "386", "i686": "386", "ppc64le": "ppc64le", "s390x": "s390x", "riscv64": "riscv64"}[f[1]]
	return goos, goarch
}

// runsHere reports whether a host whose uname -sm is uname runs this
// program's system and architecture.
func runsHere(uname string) bool {
	goos, goarch := unamePlatform(uname)
	return goos == runtime.GOOS && goarch == runtime.GOARCH
}

// Install copies the program exe (a cudarepl) to r's host, where r's
// command finds it first: the path given after the host, or
// ~/.cache/cudarepl/worker-N/cudarepl. It checks first that the host runs
// this program's system and architecture. It returns where the copy went,
// as host:path. Only a Transport from SSH can be installed to.
func Install(r *Transport, exe string) (string, error) {
	if r == nil || r.ssh == nil {
		return "", errors.New("gpu: --remote-install copies cudarepl over ssh, to a host named with --remote or $" + HostEnv + "; with a worker command, install cudarepl where the command runs it")
	}
	t := r.ssh
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := t.run(ctx, r.Name, "uname -sm", nil)
	if err != nil {
		return "", err
	}
	uname := strings.TrimSpace(string(out))
	if !runsHere(uname) {
		goos, goarch := unamePlatform(uname)
		return "", fmt.Errorf("gpu: %s runs %s and this cudarepl is built for %s/%s, so it cannot be copied there: build one for it (GOOS=%s GOARCH=%s CGO_ENABLED=0 go build ./cmd/cudarepl) and copy it to %s there",
			r.Name, uname, runtime.GOOS, runtime.GOARCH, goos, goarch, r.installDest())
	}
	dest, shown := `"$HOME/`+remoteCache+`"`, r.installDest()
	if t.path != "" {
		dest = shDouble(t.path)
	}
	f, err := os.Open(exe)
	if err != nil {
		return "", fmt.Errorf("gpu: --remote-install: %w", err)
	}
	defer f.Close()
	// Copied beside its place and then renamed: a worker starting meanwhile
	// never runs half a file.
	script := `set -e; f=` + dest + `; mkdir -p "$(dirname "$f")"; cat > "$f.part"; chmod 755 "$f.part"; mv -f "$f.part" "$f"`
	if _, err := t.run(context.Background(), r.Name, "sh -c "+shSingle(script), f); err != nil {
		return "", err
	}
	return r.Name + ":" + shown, nil
}

// run runs command on the host, called name in messages, with stdin, and
// returns what it printed, or an error in one sentence that says what ssh
// said.
func (t *sshTarget) run(ctx context.Context, name, command string, stdin *os.File) ([]byte, error) {
	argv := append(append([]string{"ssh"}, t.opts...), "--", t.dest, command)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	if stdin != nil {
		cmd.Stdin = stdin
	}
	var stderr tail
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode() != 255: // ssh's own failures are 255; this is the command's
		return out, fmt.Errorf("gpu: on %s, copying cudarepl failed: %s", name, orWhat(stderr.lastLine(), err))
	case err != nil:
		return out, sshFailure(name, err, stderr.lastLine())
	}
	return out, nil
}
