package remote

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"cudarepl/gpu"
	"cudarepl/internal/sysproc"
)

// A remote worker's connection: the client runs the Transport's command
// (ssh …), writes a setup line on its stdin and reads the host's first
// lines (helloWord), then both ends exchange frames (frame.go).
const (
	heartbeat = time.Second      // how often each end says it is there
	helloWait = 30 * time.Second // how long the command may take to reach a worker (ssh's ConnectTimeout is 10 s)
	silence   = 10 * time.Second // how long a host may go unheard before the client takes the connection as gone, unless Transport.Silence says
)

// remoteSetup is what the client tells the host's cudarepl worker before
// anything else, as one line of JSON.
type remoteSetup struct {
	Protocol int
	Backend  string   // what the worker serves ("gpu"; tests use fakes)
	Wrap     []string // a Wrapper's Argv, LogDir and LogStart for the host to fill in
	WrapName string
	Start    int      // the number of this worker process, for LogStart
	Env      []string // NAME=VALUE the worker runs with, from this end
}

// forwardEnv is what of this process's environment a remote worker runs
// with: what cudarepl hides ($CUDAREPL_HIDE), so that a hidden library is
// hidden there too. What a host's owner sets there ($CUDAREPL_MEM_LIMIT)
// stays theirs.
func forwardEnv() []string {
	var env []string
	for _, k := range []string{"CUDAREPL_HIDE"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// remoteConn is the client's side of one remote worker's connection: the
// gpu.Link of the worker.
type remoteConn struct {
	name    string // the Transport's Name
	stderr  *tail  // what the command printed on stderr
	beats   *frameWriter
	done    chan struct{} // closed when the frames end
	heard   atomic.Int64  // when a frame last came, in Unix nanoseconds
	onLog   func(string)  // takes each wrapper log the host sends
	silence time.Duration // how long the host may go unheard

	stopOnce sync.Once
	stop     chan struct{} // ends the heartbeat

	mu       sync.Mutex
	exit     string // how the worker process ended there, from its exit frame
	gotExit  bool
	setupErr string // why the host could not start a worker
	lost     string // why this end gave up on the connection
}

var _ gpu.Link = (*remoteConn)(nil)

// Done is closed when the frames end.
func (c *remoteConn) Done() <-chan struct{} { return c.done }

// SilentFor is how long since a frame last came from the host.
func (c *remoteConn) SilentFor() time.Duration {
	return time.Since(time.Unix(0, c.heard.Load()))
}

// Lost records why this end gave up on the connection, unless it did
// already.
func (c *remoteConn) Lost(why string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lost == "" {
		c.lost = why
	}
}

// Dropped reports whether the frames ended without the host's word of the
// worker ending, or of why it could not start one.
func (c *remoteConn) Dropped() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.gotExit && c.setupErr == ""
}

// ExitCause is how the worker process ended, as its host said, or that
// the connection ended without saying.
func (c *remoteConn) ExitCause() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gotExit {
		return c.exit
	}
	return "the connection ended"
}

// Why says what was seen of a lost connection: this end's reason, or the
// command's last line on stderr (ssh's).
func (c *remoteConn) Why() string {
	c.mu.Lock()
	lost := c.lost
	c.mu.Unlock()
	if lost != "" {
		return lost
	}
	return c.stderr.lastLine()
}

// NotReady says why a remote worker's pipe ended before its hello: the
// host could not start it, it exited (cause says how), or the connection
// went.
func (c *remoteConn) NotReady(cause string) error {
	c.mu.Lock()
	setupErr, gotExit := c.setupErr, c.gotExit
	c.mu.Unlock()
	switch {
	case setupErr != "":
		return errors.New(setupErr)
	case gotExit:
		return fmt.Errorf("gpu: the worker on %s exited before it was ready (%s)", c.name, cause)
	}
	why := c.stderr.lastLine()
	if why == "" {
		why = "it said nothing"
	}
	return fmt.Errorf("gpu: the connection to %s was lost before its worker was ready (%s)", c.name, why)
}

// remoteCalls is the calls side of a remote worker's pipe: data frames on
// the command's stdin, which Close closes (the host's worker then ends).
type remoteCalls struct {
	*frameWriter
	f *os.File
	c *remoteConn
}

func (r *remoteCalls) Close() error {
	r.c.stopOnce.Do(func() { close(r.c.stop) })
	return r.f.Close()
}

// Start runs the Transport's command and reads what it says until a worker
// says hello, then relays frames: the worker's replies to the returned
// Conn, heartbeats both ways, a wrapper's logs to s.Log.
func (r *Transport) Start(s gpu.WorkerStart) (*gpu.Conn, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("gpu: start the worker on %s: %w", r.Name, err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("gpu: start the worker on %s: %w", r.Name, err)
	}
	c := &remoteConn{name: r.Name, stderr: &tail{}, done: make(chan struct{}), stop: make(chan struct{}),
		onLog: s.Log, silence: r.Silence}
	if c.silence <= 0 {
		c.silence = silence
	}
	cmd := exec.Command(r.Argv[0], r.Argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, c.stderr
	cmd.SysProcAttr = sysproc.Attr() // Ctrl-C, meant for the REPL, does not reach ssh
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		if errors.Is(err, exec.ErrNotFound) && path.Base(r.Argv[0]) == "ssh" {
			return nil, fmt.Errorf("gpu: ssh not found: --remote runs the system's ssh (OpenSSH: apt install openssh-client; on Windows, the OpenSSH Client feature)")
		}
		return nil, fmt.Errorf("gpu: start the worker command for %s: %w", r.Name, err)
	}
	setup := remoteSetup{Protocol: gpu.WorkerProtocol, Backend: s.Backend, Start: s.Number, Env: forwardEnv()}
	if wr := s.Wrap; wr != nil {
		setup.Wrap, setup.WrapName = wr.Argv, wr.Name
	}
	line, _ := json.Marshal(setup)
	inW.Write(append(line, '\n')) // sent at once, not after the hello: one round trip less; a failure shows below
	c.beats = &frameWriter{w: inW}
	br := bufio.NewReaderSize(outR, 64<<10)
	if err := c.hello(br, cmd, r); err != nil {
		inW.Close()
		sysproc.KillTree(cmd.Process)
		cmd.Wait()
		outR.Close()
		return nil, err
	}
	c.stderr.passTo(s.Stderr) // from here on, what the worker there prints
	c.heard.Store(time.Now().UnixNano())
	repliesR, repliesW := io.Pipe()
	go c.demux(br, repliesW, outR)
	go c.beat(cmd)
	return &gpu.Conn{Cmd: cmd, Calls: &remoteCalls{frameWriter: c.beats, f: inW, c: c}, Replies: repliesR, Link: c}, nil
}

// hello reads the host's first lines until its worker's hello, skipping
// what a login's start-up files may print, and returns why no worker
// will answer if none does.
func (c *remoteConn) hello(br *bufio.Reader, cmd *exec.Cmd, r *Transport) error {
	type line struct {
		s   string
		err error
	}
	lines := make(chan line)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			s, err := br.ReadString('\n')
			select {
			case lines <- line{strings.TrimRight(s, "\r\n"), err}:
			case <-stop:
				return
			}
			// After the hello the frames begin, which are demux's to read.
			if err != nil || strings.HasPrefix(s, helloWord+" ") || strings.HasPrefix(s, missingWord) {
				return
			}
		}
	}()
	uname := ""
	timeout := time.After(helloWait)
	for n := 0; ; n++ {
		var l line
		select {
		case l = <-lines:
		case <-timeout:
			return fmt.Errorf("gpu: %s did not start a worker within %s (%s): is the host up, and does the command reach it?", r.Name, helloWait, strings.Join(r.Argv, " "))
		}
		if l.err != nil {
			return c.noHello(cmd, r, uname)
		}
		f := strings.Fields(l.s)
		switch {
		case len(f) == 0 || n > 1000:
		case f[0] == hostWord:
			uname = strings.Join(f[1:], " ")
		case f[0] == missingWord:
			looked := "looked in ~/" + path.Dir(remoteCache) + ", on the PATH of a non-interactive shell, in ~/go/bin and in ~/.local/bin"
			if r.ssh != nil && r.ssh.path != "" {
				looked = "looked for " + r.ssh.path
			}
			return &BinaryError{Host: r.Name, Problem: fmt.Sprintf("%s has no cudarepl (%s)", r.Name, looked),
				Platform: uname, Installable: r.ssh != nil && runsHere(uname), dest: r.installDest()}
		case f[0] == helloWord:
			return c.checkHello(f, r, uname)
		}
	}
}

// checkHello reads a worker's hello line, f in fields: its protocol, its
// version, its system and architecture.
func (c *remoteConn) checkHello(f []string, r *Transport, uname string) error {
	proto := -1
	if len(f) > 1 {
		if n, err := strconv.Atoi(f[1]); err == nil {
			proto = n
		}
	}
	if proto == gpu.WorkerProtocol {
		return nil
	}
	version, platform := "of an unknown version", ""
	if len(f) > 2 {
		version = f[2]
	}
	if len(f) > 3 {
		platform = f[3]
	}
	same := platform == runtime.GOOS+"/"+runtime.GOARCH
	if uname != "" {
		same = runsHere(uname)
	}
	return &BinaryError{Host: r.Name, Platform: uname, Installable: r.ssh != nil && same, dest: r.installDest(),
		Problem: fmt.Sprintf("the cudarepl on %s (%s) speaks worker protocol %d, and this one speaks %d", r.Name, version, proto, gpu.WorkerProtocol)}
}

// noHello says why the command ended before any worker said hello: ssh
// could not connect, or the host's cudarepl could not serve.
func (c *remoteConn) noHello(cmd *exec.Cmd, r *Transport, uname string) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(5 * time.Second):
		sysproc.KillTree(cmd.Process)
		err = <-done
	}
	said := c.stderr.lastLine()
	code := -1
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	}
	switch {
	case strings.Contains(c.stderr.String(), `unknown command "worker"`):
		return &BinaryError{Host: r.Name, Platform: uname, Installable: r.ssh != nil && runsHere(uname), dest: r.installDest(),
			Problem: fmt.Sprintf("the cudarepl on %s has no worker command (it is older than remote workers)", r.Name)}
	case path.Base(r.Argv[0]) == "ssh" && code == 255:
		return sshFailure(r.Name, err, said)
	case code == 126 || code == 127:
		return &BinaryError{Host: r.Name, Platform: uname, dest: r.installDest(),
			Problem: fmt.Sprintf("the worker command for %s found no cudarepl to run (%s)", r.Name, orWhat(said, err))}
	}
	return fmt.Errorf("gpu: the worker command for %s ended before a worker started (%s)", r.Name, orWhat(said, err))
}

// orWhat is what a command said, or how it ended.
func orWhat(said string, err error) string {
	switch {
	case said != "":
		return said
	case err != nil:
		return err.Error()
	}
	return "exit status 0, and nothing said"
}

// sshFailure is ssh's failure to reach host in one sentence: said is its
// last line on stderr.
func sshFailure(host string, err error, said string) error {
	low := strings.ToLower(said)
	switch {
	case strings.Contains(low, "permission denied"):
		return fmt.Errorf("gpu: %s refused the ssh key (%s): 'ssh %s' must log in without a password, with a key from your agent or ~/.ssh that %s accepts (ssh-copy-id %s puts yours there)",
			host, said, host, host, host)
	case strings.Contains(low, "host key verification failed"), strings.Contains(low, "no ") && strings.Contains(low, "host key is known"):
		return fmt.Errorf("gpu: the host key of %s is not known here (%s): run 'ssh %s' once to check it and accept it", host, said, host)
	case strings.Contains(low, "could not resolve hostname"):
		return fmt.Errorf("gpu: cannot reach %s over ssh: %s (is the name right, or in ~/.ssh/config?)", host, strings.TrimPrefix(said, "ssh: "))
	case said != "":
		return fmt.Errorf("gpu: cannot reach %s over ssh: %s", host, strings.TrimPrefix(said, "ssh: "))
	}
	return fmt.Errorf("gpu: cannot reach %s over ssh: %v", host, err)
}

// demux reads the host's frames until they end: the worker's replies
// into replies, the rest noted; then it closes replies and out.
func (c *remoteConn) demux(br *bufio.Reader, replies *io.PipeWriter, out *os.File) {
	defer func() {
		replies.Close()
		out.Close()
		c.stopOnce.Do(func() { close(c.stop) })
		close(c.done)
	}()
	for {
		kind, payload, err := readFrame(br)
		if err != nil {
			return
		}
		c.heard.Store(time.Now().UnixNano())
		switch kind {
		case frameData:
			replies.Write(payload) // fails only once the replies' reader has given up; the frames are still read
		case frameLog:
			if c.onLog != nil {
				c.onLog(string(payload))
			}
		case frameExit:
			c.mu.Lock()
			c.exit, c.gotExit = string(payload), true
			c.mu.Unlock()
		case frameError:
			c.mu.Lock()
			c.setupErr = string(payload)
			c.mu.Unlock()
		}
	}
}

// beat sends a heartbeat each second until the calls end, and kills the
// command when the host has not been heard from for c.silence: the
// connection is gone, though ssh may take long to notice.
func (c *remoteConn) beat(cmd *exec.Cmd) {
	t := time.NewTicker(heartbeat)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.beats.beat()
			if c.SilentFor() > c.silence {
				c.Lost(fmt.Sprintf("no word from it for %s", c.silence))
				sysproc.KillTree(cmd.Process)
				return
			}
		}
	}
}

// tail keeps the end of what a command writes on stderr, for messages,
// and from passTo on also passes it on.
type tail struct {
	mu   sync.Mutex
	buf  []byte
	pass io.Writer
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 8192 {
		t.buf = t.buf[len(t.buf)-4096:]
	}
	if t.pass != nil {
		t.pass.Write(p)
	}
	return len(p), nil
}

// passTo passes what is written from now on to w as well.
func (t *tail) passTo(w io.Writer) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pass = w
	t.buf = t.buf[:0] // a login's start-up noise is no reason for what happens later
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// lastLine is the last line written that holds anything.
func (t *tail) lastLine() string {
	lines := strings.Split(strings.TrimSpace(t.String()), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
