package host

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/util/wait"

	pb "github.com/salvor-dev/salvor/pkg/plugin/proto/generated"
	"github.com/salvor-dev/salvor/pkg/plugin/wire"
)

// Command is how to start a plugin binary, or how to reach plugins served
// in this process.
type Command struct {
	Path string
	Args []string
	// InProcess, when set, serves the plugins from this process instead of
	// running Path (plugintest's StartInProcess; Path only names it): it is
	// called for each generation and serves until ctx is done. Such a
	// plugin cannot be killed: a call that overruns its deadline stops its
	// server, and the next call starts a new one, but the handler that hung
	// keeps its goroutine.
	InProcess func(ctx context.Context) (*goplugin.ReattachConfig, error)
}

func (c Command) String() string {
	if len(c.Args) == 0 {
		return c.Path
	}
	return c.Path + " " + strings.Join(c.Args, " ")
}

// initCall is an Init a process has answered, replayed after a restart.
type initCall struct {
	method string
	plugin string
	req    proto.Message
}

// process is one running plugin binary and what is needed to bring it back.
type process struct {
	cmd  Command
	opts *Options
	log  *slog.Logger

	mu       sync.Mutex
	client   *goplugin.Client
	execCmd  *exec.Cmd
	conn     *grpc.ClientConn
	gen      int
	restarts int
	// started is when the current process started; streak counts the
	// processes in a row that died young (see backoff).
	started time.Time
	streak  int
	diedAt  time.Time
	counted int // the generation whose death streak counts
	inits   []initCall
	// initMu makes callers that would Init a plugin wait for one doing so.
	initMu sync.Mutex
	stderr *stderrTail
	closed bool
	exit   *exitWatch
	// oldWatches are the watches of earlier generations, released on close.
	oldWatches []*exitWatch
	// An in-process generation serves until stop is called; stopped says
	// it was, as an exit says so of a process.
	stop    context.CancelFunc
	stopped bool
}

func newProcess(cmd Command, opts *Options) *process {
	log := opts.Logger.With("plugin_binary", filepath.Base(cmd.Path))
	return &process{cmd: cmd, opts: opts, log: log, stderr: newStderrTail(opts.StderrLines, log)}
}

// hostPlugins is the go-plugin plugin set of the host: go-plugin refuses a
// handshake without one, but Salvor uses the raw connection, not Dispense.
var hostPlugins = map[string]goplugin.Plugin{"PluginLister": nopPlugin{}}

type nopPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
}

func (nopPlugin) GRPCServer(*goplugin.GRPCBroker, *grpc.Server) error { return nil }
func (nopPlugin) GRPCClient(context.Context, *goplugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, nil
}

// get returns a live connection and its generation, starting or restarting
// the process (and replaying its Inits) as needed.
func (p *process) get(ctx context.Context) (*grpc.ClientConn, int, error) {
	// Fast path, taken by nearly every call and without holding the lock: a
	// connection that is up, to a process that is alive. The process is
	// checked itself (not only the connection) because a process killed a
	// moment ago may still have a connection that looks up.
	p.mu.Lock()
	client, conn, gen, closed, exit, stopped := p.client, p.conn, p.gen, p.closed, p.exit, p.stopped
	p.mu.Unlock()
	if !closed && client != nil && conn != nil && conn.GetState() == connectivity.Ready && p.running(client, exit, stopped) {
		return conn, gen, nil
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, 0, fmt.Errorf("plugin process %s: the plugin manager is closed", p.cmd.Path)
	}
	if p.client != nil && p.running(p.client, nil, p.stopped) {
		return p.conn, p.gen, nil
	}
	if p.client != nil {
		if wait := p.backoff(time.Now()); wait > 0 {
			// Crashing again and again: fail fast, without a new process,
			// until the backoff has passed.
			return nil, 0, fmt.Errorf("%w: plugin binary %s crashed %d times in a row; not started again for %s%s",
				ErrPluginCrashed, p.cmd.Path, p.streak, wait.Round(time.Millisecond), p.stderr.suffix())
		}
		p.end()
		p.restarts++
		p.log.Warn("restarting plugin process", "restarts", p.restarts, "crashes_in_a_row", p.streak)
		if p.opts.OnRestart != nil {
			p.opts.OnRestart(p.cmd.Path)
		}
	}
	if err := p.start(); err != nil {
		return nil, 0, err
	}
	p.started = time.Now()
	for _, ic := range p.inits {
		ictx, cancel := context.WithTimeout(ctx, p.opts.timeout(ic.method))
		err := p.conn.Invoke(ictx, ic.method, ic.req, &pb.Empty{})
		cancel()
		if err != nil {
			p.end()
			return nil, 0, fmt.Errorf("re-initialising plugin %s in restarted process %s: %w", ic.plugin, p.cmd.Path, err)
		}
	}
	return p.conn, p.gen, nil
}

// running tells whether the current generation still serves: a process
// until it exits (exit watches it; nil asks /proc), an in-process server
// until it is stopped.
func (p *process) running(client *goplugin.Client, exit *exitWatch, stopped bool) bool {
	if p.cmd.InProcess != nil {
		return !stopped
	}
	if exit == nil {
		return !client.Exited() && processAlive(client)
	}
	return !client.Exited() && exit.alive(client)
}

// end ends the current generation: go-plugin kills a process; an
// in-process server is stopped and its connection closed (go-plugin leaves
// both to the test that served it).
func (p *process) end() {
	if p.stop != nil {
		// The server is stopped by its context alone: go-plugin's client
		// Close would also ask it to shut down, and the two stops race.
		p.stop()
		p.stopped = true
		if p.conn != nil {
			_ = p.conn.Close()
		}
	}
	p.client.Kill()
}

func (p *process) start() error {
	if p.cmd.InProcess != nil {
		return p.startInProcess()
	}
	args := append([]string{}, p.cmd.Args...)
	args = append(args, "--log-level="+p.opts.PluginLogLevel)
	p.execCmd = exec.Command(p.cmd.Path, args...)
	p.client = goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  wire.Handshake,
		Plugins:          hostPlugins,
		Cmd:              p.execCmd,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		StartTimeout:     p.opts.StartTimeout,
		Stderr:           p.stderr,
		SyncStderr:       p.stderr,
		SyncStdout:       p.stderr,
		// Salvor re-emits stderr itself (stderrTail), so go-plugin's own
		// parsing and logging of it is switched off.
		Logger:          hclog.New(&hclog.LoggerOptions{Level: hclog.Off}),
		GRPCDialOptions: wire.DialOptions(),
	})
	var rpc goplugin.ClientProtocol
	err := startTied(p.execCmd, func() (err error) {
		rpc, err = p.client.Client()
		return err
	})
	if err != nil {
		p.client.Kill()
		return fmt.Errorf("starting plugin binary %s: %w%s", p.cmd, err, p.stderr.suffix())
	}
	gc, ok := rpc.(*goplugin.GRPCClient)
	if !ok {
		p.client.Kill()
		return fmt.Errorf("plugin binary %s does not speak gRPC", p.cmd)
	}
	p.conn = gc.Conn
	p.newGeneration()
	return nil
}

// startInProcess serves a generation from this process and attaches to it
// as go-plugin attaches to a plugin it did not start.
func (p *process) startInProcess() error {
	ctx, stop := context.WithCancel(context.Background())
	rc, err := p.cmd.InProcess(ctx)
	if err != nil {
		stop()
		return fmt.Errorf("serving plugins %s in process: %w", p.cmd.Path, err)
	}
	p.client = goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  wire.Handshake,
		Plugins:          hostPlugins,
		Reattach:         rc,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		Logger:           hclog.New(&hclog.LoggerOptions{Level: hclog.Off}),
		GRPCDialOptions:  wire.DialOptions(),
	})
	p.stop, p.stopped = stop, false
	rpc, err := p.client.Client()
	if err != nil {
		p.end()
		return fmt.Errorf("attaching to plugins %s served in process: %w", p.cmd.Path, err)
	}
	gc, ok := rpc.(*goplugin.GRPCClient)
	if !ok {
		p.end()
		return fmt.Errorf("plugins %s served in process do not speak gRPC", p.cmd.Path)
	}
	p.conn = gc.Conn
	p.newGeneration()
	return nil
}

func (p *process) newGeneration() {
	// Callers may still hold the previous generation's watch: its fd stays
	// open (so its number is not reused under them) until the process is
	// closed for good.
	if p.exit != nil {
		p.oldWatches = append(p.oldWatches, p.exit)
	}
	if p.cmd.InProcess == nil {
		p.exit = watchExit(p.client)
	}
	p.gen++
	p.stderr.reset()
}

// backoff says how long to wait before starting again a process that died
// at now: nothing for the first crash, then RestartBackoff, doubling, up to
// RestartBackoffMax. A process that lived longer than RestartBackoffMax
// ends the streak. It counts the crash once per dead process.
func (p *process) backoff(now time.Time) time.Duration {
	if p.counted != p.gen {
		p.counted = p.gen
		if now.Sub(p.started) > p.opts.RestartBackoffMax {
			p.streak = 0
		}
		p.streak++
		p.diedAt = now
	}
	if p.streak < 2 {
		return 0
	}
	wait := min(p.opts.RestartBackoff<<(p.streak-2), p.opts.RestartBackoffMax)
	return max(p.diedAt.Add(wait).Sub(now), 0)
}

// initOnce calls init unless plugin was initialised in this process
// already (a restarted process gets it again from the record). An Init
// runs while other calls of the same plugin may be in flight, and plugins
// — Velero's among them — set their configuration in Init without a lock:
// calling it again for every use would race with those calls.
func (p *process) initOnce(plugin string, init func() error) error {
	p.initMu.Lock()
	defer p.initMu.Unlock()
	p.mu.Lock()
	done := slices.ContainsFunc(p.inits, func(ic initCall) bool { return ic.plugin == plugin })
	p.mu.Unlock()
	if done {
		return nil
	}
	return init()
}

// recordInit remembers a successful Init so a restarted process gets it again.
func (p *process) recordInit(method, plugin string, req proto.Message) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, ic := range p.inits {
		if ic.method == method && ic.plugin == plugin {
			p.inits[i].req = proto.Clone(req)
			return
		}
	}
	p.inits = append(p.inits, initCall{method: method, plugin: plugin, req: proto.Clone(req)})
}

// kill stops generation gen of the process at once (SIGKILL): it is hung, so
// a graceful stop would wait for it in vain. The next call restarts it.
func (p *process) kill(gen int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if gen != p.gen || p.client == nil {
		return
	}
	if p.cmd.InProcess != nil {
		// Its "process" is this one: stop its server instead.
		p.end()
		return
	}
	if rc := p.client.ReattachConfig(); rc != nil && rc.Pid > 0 {
		if proc, err := os.FindProcess(rc.Pid); err == nil {
			_ = proc.Kill()
		}
	}
	p.client.Kill()
}

// exited waits a moment for generation gen to be seen dead, and says how it ended.
func (p *process) exited(gen int) (bool, string) {
	var how string
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, p.opts.ExitWait, true, func(context.Context) (bool, error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		current := gen == p.gen && p.client != nil
		// A process counts as ended once go-plugin has reaped it (Exited),
		// not when /proc says so: its ProcessState is written then.
		if current && (p.cmd.InProcess != nil && !p.stopped || p.cmd.InProcess == nil && !p.client.Exited()) {
			return false, nil
		}
		if current && p.cmd.InProcess != nil {
			how = "its in-process server stopped"
		} else if current && p.execCmd.ProcessState != nil {
			how = p.execCmd.ProcessState.String()
		}
		return true, nil
	})
	if err != nil {
		return false, ""
	}
	if how == "" {
		how = "exited"
	}
	return true, how
}

// pid is the current process's ID, for tests and diagnostics.
func (p *process) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.client == nil || p.cmd.InProcess != nil {
		return 0
	}
	if rc := p.client.ReattachConfig(); rc != nil {
		return rc.Pid
	}
	return 0
}

func (p *process) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.client != nil {
		p.end()
	}
	for _, w := range append(p.oldWatches, p.exit) {
		w.release()
	}
}

// stderrTail re-emits a plugin's stderr through the host's logger and keeps
// its last lines for crash reports.
type stderrTail struct {
	mu    sync.Mutex
	lines []string
	max   int
	log   *slog.Logger
	buf   []byte
	// crashed is set once a panic's first line was seen.
	crashed bool
}

func newStderrTail(max int, log *slog.Logger) *stderrTail {
	return &stderrTail{max: max, log: log}
}

// Write receives stderr as go-plugin reads it: a line, then its newline.
func (t *stderrTail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	for {
		i := strings.IndexByte(string(t.buf), '\n')
		if i < 0 {
			break
		}
		line := string(t.buf[:i])
		t.buf = t.buf[i+1:]
		if line == "" {
			continue
		}
		switch {
		case strings.HasPrefix(line, "panic: ") || strings.HasPrefix(line, "fatal error: "):
			// A crash report is the most useful output there is: keep it
			// from its first line rather than its last ones.
			t.lines = []string{line}
			t.crashed = true
		case t.crashed && len(t.lines) >= t.max:
		default:
			t.lines = append(t.lines, line)
			if len(t.lines) > t.max {
				t.lines = t.lines[len(t.lines)-t.max:]
			}
		}
		emit(t.log, line)
	}
	return len(b), nil
}

func (t *stderrTail) last() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.lines...)
}

func (t *stderrTail) reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = nil
	t.buf = nil
	t.crashed = false
}

func (t *stderrTail) suffix() string {
	if l := t.last(); len(l) > 0 {
		return "; its last output was:\n" + strings.Join(l, "\n")
	}
	return ""
}

// emit logs one stderr line. JSON lines carry their level and message under
// go-plugin's keys (@level, @message) or logrus' (level, msg), which is what
// plugins built with Velero's framework write; other lines (a Go panic, say)
// are logged as they are.
func emit(log *slog.Logger, line string) {
	var entry map[string]any
	if err := json.Unmarshal([]byte(line), &entry); err != nil || entry == nil {
		level := slog.LevelInfo
		if strings.HasPrefix(line, "panic: ") || strings.HasPrefix(line, "fatal error: ") {
			level = slog.LevelError
		}
		log.Log(context.Background(), level, line)
		return
	}
	msg := pop(entry, "@message", "msg", "message")
	levelText := pop(entry, "@level", "level")
	delete(entry, "@timestamp")
	delete(entry, "time")
	level := slog.LevelInfo
	switch strings.ToLower(levelText) {
	case "trace", "debug":
		level = slog.LevelDebug
	case "warn", "warning":
		level = slog.LevelWarn
	case "error", "fatal", "panic":
		level = slog.LevelError
	}
	attrs := make([]any, 0, 2*len(entry))
	for k, v := range entry {
		attrs = append(attrs, k, v)
	}
	log.Log(context.Background(), level, msg, attrs...)
}

func pop(m map[string]any, keys ...string) string {
	for _, k := range keys {
		if v, ok := m[k]; ok {
			delete(m, k)
			if s, ok := v.(string); ok {
				return s
			}
			return fmt.Sprint(v)
		}
	}
	return ""
}
