package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/salvor-dev/salvor/pkg/plugin/kind"
	pb "github.com/salvor-dev/salvor/pkg/plugin/proto/generated"
	"github.com/salvor-dev/salvor/pkg/plugin/wire"
)

// Options configure a Manager. The zero value of each field means its default.
type Options struct {
	// Logger receives the plugins' logs and the manager's own.
	Logger *slog.Logger
	// Timeouts overrides default per-call deadlines. Keys are "Kind.Method"
	// (e.g. "BackupItemActionV2.Execute"), "Kind" or "Method".
	Timeouts map[string]time.Duration
	// Grace is how long past its deadline a call may run before the plugin's
	// process is killed. Default 10s.
	Grace time.Duration
	// StartTimeout bounds a plugin's start-up handshake. Default 1m.
	StartTimeout time.Duration
	// StderrLines is how many lines of a plugin's stderr are kept for crash
	// reports. Default 20.
	StderrLines int
	// PluginLogLevel is passed to plugins as --log-level. Default "info".
	PluginLogLevel string
	// ExitWait is how long a failed call waits to see whether the process
	// died, to tell a crash from a network error. Default 2s.
	ExitWait time.Duration
	// RestartBackoff is how long a plugin process that died twice in a row
	// waits before it is started again (the first restart is at once);
	// the wait doubles with each crash in a row, up to RestartBackoffMax,
	// and calls in between fail at once with ErrPluginCrashed, naming the
	// binary and its last stderr lines. A process that lives longer than
	// RestartBackoffMax ends the streak. Defaults 200ms and 30s.
	RestartBackoff, RestartBackoffMax time.Duration
	// OnRestart, if set, is called with the binary's path whenever a plugin
	// process is restarted (for metrics).
	OnRestart func(binary string)
	// OnCall, if set, is called after every plugin call with its kind,
	// method, outcome ("ok", "error", "deadline", "hung", "crashed", "stalled",
	// "cancelled") and duration (for metrics).
	OnCall func(k kind.Kind, method, outcome string, took time.Duration)

	methods *sync.Map // full method name → methodInfo
}

func (o *Options) withDefaults() *Options {
	out := *o
	out.methods = &sync.Map{}
	if out.Logger == nil {
		out.Logger = slog.Default()
	}
	if out.Grace <= 0 {
		out.Grace = 10 * time.Second
	}
	if out.StartTimeout <= 0 {
		out.StartTimeout = time.Minute
	}
	if out.StderrLines <= 0 {
		out.StderrLines = 20
	}
	if out.PluginLogLevel == "" {
		out.PluginLogLevel = "info"
	}
	if out.ExitWait <= 0 {
		out.ExitWait = 2 * time.Second
	}
	if out.RestartBackoff <= 0 {
		out.RestartBackoff = 200 * time.Millisecond
	}
	if out.RestartBackoffMax <= 0 {
		out.RestartBackoffMax = 30 * time.Second
	}
	return &out
}

// timeoutFor picks a call's deadline: the most specific override, else the
// kind table's default.
func (o *Options) timeoutFor(d kind.Descriptor, method string) time.Duration {
	for _, k := range []string{string(d.Kind) + "." + method, string(d.Kind), method} {
		if t, ok := o.Timeouts[k]; ok && t > 0 {
			return t
		}
	}
	return d.Timeout(method)
}

func (o *Options) timeout(fullMethod string) time.Duration { return o.method(fullMethod).timeout }

// methodInfo is what a call needs to know about its method, worked out once
// per method rather than on every call.
type methodInfo struct {
	desc      kind.Descriptor
	name      string
	timeout   time.Duration
	retryable bool
}

func (o *Options) method(fullMethod string) methodInfo {
	if m, ok := o.methods.Load(fullMethod); ok {
		return m.(methodInfo)
	}
	d, name, _ := kind.ForMethod(fullMethod)
	m := methodInfo{desc: d, name: name, timeout: o.timeoutFor(d, name), retryable: d.Retryable(name)}
	o.methods.Store(fullMethod, m)
	return m
}

// Plugin is one plugin a binary serves.
type Plugin struct {
	Kind   kind.Kind `json:"kind"`
	Name   string    `json:"name"`
	Binary string    `json:"binary"`
}

// Manager discovers plugin binaries and hands out clients for their plugins.
// It is safe for concurrent use; Close stops every process it started.
type Manager struct {
	opts *Options

	mu        sync.Mutex
	plugins   map[kind.Kind]map[string]Plugin
	commands  map[string]Command
	processes map[string]*process
	// ignored are the plugins binaries serve of kinds Salvor does not
	// run (Velero's ItemBlockAction), for runs to say so.
	ignored []Plugin
}

// NewManager returns a manager with no plugins; see Discover and Add.
func NewManager(opts Options) *Manager {
	return &Manager{
		opts:      opts.withDefaults(),
		plugins:   map[kind.Kind]map[string]Plugin{},
		commands:  map[string]Command{},
		processes: map[string]*process{},
	}
}

// Discover adds every executable file under dir (recursively).
func (m *Manager) Discover(ctx context.Context, dir string) error {
	var cmds []Command
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		info, err := os.Stat(path)
		if err != nil {
			return err
		}
		if info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0 {
			abs, err := filepath.Abs(path)
			if err != nil {
				return err
			}
			cmds = append(cmds, Command{Path: abs})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("discovering plugins under %s: %w", dir, err)
	}
	return m.Add(ctx, cmds...)
}

// Add starts each command, asks it which plugins it serves and registers
// them. Invalid names and a kind+name served by two binaries are errors
// naming the binaries; nothing of a failed Add is registered.
func (m *Manager) Add(ctx context.Context, cmds ...Command) error {
	type found struct {
		cmd     Command
		proc    *process
		plugins []*pb.PluginIdentifier
	}
	var (
		results = make([]found, len(cmds))
		wg      sync.WaitGroup
		errs    = make([]error, len(cmds))
	)
	for i, cmd := range cmds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			proc := newProcess(cmd, m.opts)
			resp, err := pb.NewPluginListerClient(conn{p: proc}).ListPlugins(wire.AsSalvorHost(withCall(ctx, "", "")), &pb.Empty{})
			if err != nil {
				proc.close()
				errs[i] = fmt.Errorf("listing the plugins of %s: %w", cmd, err)
				return
			}
			results[i] = found{cmd: cmd, proc: proc, plugins: resp.GetPlugins()}
		}()
	}
	wg.Wait()
	closeAll := func() {
		for _, r := range results {
			if r.proc != nil {
				r.proc.close()
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		closeAll()
		return err
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	var problems []string
	staged := map[kind.Kind]map[string]Plugin{}
	for _, r := range results {
		for _, id := range r.plugins {
			k := kind.Kind(id.GetKind())
			if _, ok := kind.Lookup(k); !ok || k == kind.PluginLister {
				if k != kind.PluginLister {
					m.opts.Logger.Warn("ignoring plugin of a kind Salvor does not use", "kind", k, "name", id.GetName(), "binary", r.cmd.Path)
					m.ignored = append(m.ignored, Plugin{Kind: k, Name: id.GetName(), Binary: r.cmd.Path})
				}
				continue
			}
			if err := kind.ValidateName(id.GetName()); err != nil {
				problems = append(problems, fmt.Sprintf("%s in %s: %v", k, r.cmd.Path, err))
				continue
			}
			p := Plugin{Kind: k, Name: id.GetName(), Binary: r.cmd.Path}
			if prev, ok := m.plugins[k][p.Name]; ok {
				problems = append(problems, fmt.Sprintf("%s %q is served by both %s and %s", k, p.Name, prev.Binary, p.Binary))
				continue
			}
			if prev, ok := staged[k][p.Name]; ok {
				problems = append(problems, fmt.Sprintf("%s %q is served by both %s and %s", k, p.Name, prev.Binary, p.Binary))
				continue
			}
			if staged[k] == nil {
				staged[k] = map[string]Plugin{}
			}
			staged[k][p.Name] = p
		}
	}
	if len(problems) > 0 {
		closeAll()
		sort.Strings(problems)
		return fmt.Errorf("plugin discovery: %s", strings.Join(problems, "; "))
	}
	for k, byName := range staged {
		if m.plugins[k] == nil {
			m.plugins[k] = map[string]Plugin{}
		}
		for n, p := range byName {
			m.plugins[k][n] = p
		}
	}
	for _, r := range results {
		m.commands[r.cmd.Path] = r.cmd
		m.processes[r.cmd.Path] = r.proc
	}
	return nil
}

// List returns every registered plugin, by kind (in table order) then name.
// Ignored returns the plugins of kinds Salvor does not run that the
// binaries added serve, in the order found.
func (m *Manager) Ignored() []Plugin {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.ignored)
}

func (m *Manager) List() []Plugin {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Plugin
	for _, d := range kind.All() {
		names := make([]string, 0, len(m.plugins[d.Kind]))
		for n := range m.plugins[d.Kind] {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			out = append(out, m.plugins[d.Kind][n])
		}
	}
	return out
}

// Close stops every plugin process.
func (m *Manager) Close() {
	m.mu.Lock()
	procs := m.processes
	m.processes = map[string]*process{}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.close()
		}()
	}
	wg.Wait()
}

// find returns the plugin registered as k (or as the older kind offered as
// k) under name, and the kind it was found as.
func (m *Manager) find(k kind.Kind, name string) (Plugin, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p, ok := m.plugins[k][name]; ok {
		return p, nil
	}
	for _, d := range kind.All() {
		if d.OfferedAs == k {
			if p, ok := m.plugins[d.Kind][name]; ok {
				return p, nil
			}
		}
	}
	return Plugin{}, fmt.Errorf("%w: no %s named %q among the discovered plugins", ErrPluginNotFound, k, name)
}

// names lists the plugins available as k, directly or through an adapter.
func (m *Manager) names(k kind.Kind) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[string]bool{}
	for _, d := range kind.All() {
		if d.Kind == k || d.OfferedAs == k {
			for n := range m.plugins[d.Kind] {
				seen[n] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// processFor returns the process that serves p: the binary's shared one, or
// for a stateful kind, one of its own per config.
func (m *Manager) processFor(p Plugin, config map[string]string) *process {
	key := p.Binary
	if d, _ := kind.Lookup(p.Kind); d.Stateful {
		key = p.Binary + "\x00" + string(p.Kind) + "\x00" + p.Name + "\x00" + configHash(config)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if proc, ok := m.processes[key]; ok {
		return proc
	}
	proc := newProcess(m.commands[p.Binary], m.opts)
	m.processes[key] = proc
	return proc
}

func configHash(config map[string]string) string {
	keys := make([]string, 0, len(config))
	for k := range config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%q=%q\n", k, config[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Restarts reports how many times the process serving a binary's stateless
// plugins has been restarted.
func (m *Manager) Restarts(binary string) int {
	proc := m.process(binary)
	if proc == nil {
		return 0
	}
	proc.mu.Lock()
	defer proc.mu.Unlock()
	return proc.restarts
}

// PID reports the process ID currently serving a binary's stateless plugins
// (0 if none is running), so tests and operators can find it.
func (m *Manager) PID(binary string) int {
	if proc := m.process(binary); proc != nil {
		return proc.pid()
	}
	return 0
}

// process is the process serving a binary's stateless plugins, if started.
func (m *Manager) process(binary string) *process {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.processes[binary]
}
