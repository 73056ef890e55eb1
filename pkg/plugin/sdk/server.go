package sdk

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"github.com/spf13/pflag"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/salvor-dev/salvor/pkg/plugin/kind"
	"github.com/salvor-dev/salvor/pkg/plugin/wire"
)

// Handshake is the go-plugin handshake Velero and Salvor share.
var Handshake = wire.Handshake

// MaxMessageSize bounds one gRPC message (an item with its backup, say) in
// either direction.
const MaxMessageSize = wire.MaxMessageSize

// Factory makes the implementation registered under a name. It is called
// once, on the first call for that name; the instance then serves every call.
type Factory[T any] func(log *slog.Logger) (T, error)

// registry holds the implementations of one kind, by name.
type registry[T any] struct {
	kind      kind.Kind
	log       *slog.Logger
	mu        sync.Mutex
	factories map[string]Factory[T]
	instances map[string]T
}

func (r *registry[T]) names() []string {
	out := make([]string, 0, len(r.factories))
	for n := range r.factories {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// get returns the instance for name, making it on first use.
func (r *registry[T]) get(name string) (T, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if impl, ok := r.instances[name]; ok {
		return impl, nil
	}
	var zero T
	f, ok := r.factories[name]
	if !ok {
		return zero, status.Errorf(codes.NotFound, "this binary serves no %s plugin named %q (it serves %s)",
			r.kind, name, strings.Join(r.names(), ", "))
	}
	impl, err := f(r.log.With("plugin", name))
	if err != nil {
		return zero, fmt.Errorf("creating %s plugin %q: %w", r.kind, name, err)
	}
	r.instances[name] = impl
	return impl, nil
}

// served is one kind a binary serves: its names and how to register its
// gRPC service.
type served interface {
	names() []string
	register(*grpc.Server)
}

// Server serves a binary's plugins over Velero's plugin protocol.
type Server struct {
	log      *slog.Logger
	level    *slog.LevelVar
	kinds    map[kind.Kind]served
	problems []string
}

// NewServer returns a server with nothing registered; logs go to stderr.
func NewServer() *Server {
	level := &slog.LevelVar{}
	return &Server{
		log:   NewLogger(os.Stderr, level),
		level: level,
		kinds: map[kind.Kind]served{},
	}
}

// Logger returns the logger the server gives to factories.
func (s *Server) Logger() *slog.Logger { return s.log }

func add[T, C any](s *Server, k kind.Kind, name string, f Factory[T], form func(T) C, reg func(*registry[C], *grpc.Server)) *Server {
	if err := kind.ValidateName(name); err != nil {
		s.problems = append(s.problems, err.Error())
		return s
	}
	var r *registry[C]
	if existing, ok := s.kinds[k]; ok {
		r = existing.(*kindServer[C]).r
	} else {
		r = &registry[C]{kind: k, log: s.log, factories: map[string]Factory[C]{}, instances: map[string]C{}}
		s.kinds[k] = &kindServer[C]{r: r, reg: reg}
	}
	if _, dup := r.factories[name]; dup {
		s.problems = append(s.problems, fmt.Sprintf("%s plugin %q is registered twice", k, name))
		return s
	}
	r.factories[name] = formed(f, form)
	return s
}

type kindServer[T any] struct {
	r   *registry[T]
	reg func(*registry[T], *grpc.Server)
}

func (k *kindServer[T]) names() []string         { return k.r.names() }
func (k *kindServer[T]) register(g *grpc.Server) { k.reg(k.r, g) }

// RegisterBackupItemAction registers a v1 BackupItemAction.
func (s *Server) RegisterBackupItemAction(name string, f Factory[BackupItemAction]) *Server {
	return add(s, kind.BackupItemAction, name, f, backupV1, registerBIAv1)
}

// RegisterBackupItemActionV2 registers a BackupItemActionV2.
func (s *Server) RegisterBackupItemActionV2(name string, f Factory[BackupItemActionV2]) *Server {
	return add(s, kind.BackupItemActionV2, name, f, backupV2, registerBIAv2)
}

// RegisterRestoreItemAction registers a v1 RestoreItemAction.
func (s *Server) RegisterRestoreItemAction(name string, f Factory[RestoreItemAction]) *Server {
	return add(s, kind.RestoreItemAction, name, f, restoreV1, registerRIAv1)
}

// RegisterRestoreItemActionV2 registers a RestoreItemActionV2.
func (s *Server) RegisterRestoreItemActionV2(name string, f Factory[RestoreItemActionV2]) *Server {
	return add(s, kind.RestoreItemActionV2, name, f, restoreV2, registerRIAv2)
}

// RegisterDeleteItemAction registers a DeleteItemAction.
func (s *Server) RegisterDeleteItemAction(name string, f Factory[DeleteItemAction]) *Server {
	return add(s, kind.DeleteItemAction, name, f, deleteForm, registerDIA)
}

// RegisterObjectStore registers an ObjectStore.
func (s *Server) RegisterObjectStore(name string, f Factory[ObjectStore]) *Server {
	return add(s, kind.ObjectStore, name, f, storeForm, registerObjectStore)
}

// RegisterVolumeSnapshotter registers a v1 VolumeSnapshotter.
func (s *Server) RegisterVolumeSnapshotter(name string, f Factory[VolumeSnapshotter]) *Server {
	return add(s, kind.VolumeSnapshotter, name, f, snapshotterV1, registerVSv1)
}

// RegisterVolumeSnapshotterV2 registers a VolumeSnapshotterV2.
func (s *Server) RegisterVolumeSnapshotterV2(name string, f Factory[VolumeSnapshotterV2]) *Server {
	return add(s, kind.VolumeSnapshotterV2, name, f, snapshotterV2, registerVSv2)
}

// Identifier is one plugin a binary serves, as ListPlugins reports it.
type Identifier struct {
	Command string
	Kind    kind.Kind
	Name    string
}

// Plugins lists what the server serves, kinds in table order, names sorted.
func (s *Server) Plugins() []Identifier {
	command := os.Args[0]
	var out []Identifier
	for _, d := range kind.All() {
		if k, ok := s.kinds[d.Kind]; ok {
			for _, n := range k.names() {
				out = append(out, Identifier{Command: command, Kind: d.Kind, Name: n})
			}
		}
	}
	return out
}

// Err reports registration mistakes: invalid or duplicate names.
func (s *Server) Err() error {
	if len(s.problems) == 0 {
		return nil
	}
	return fmt.Errorf("plugin registration: %s", strings.Join(s.problems, "; "))
}

// RegisterServices registers every kind's gRPC service (and PluginLister) on g.
// Serve does this itself; it is exported for in-process tests.
func (s *Server) RegisterServices(g *grpc.Server) {
	registerLister(s, g)
	registerSnapshotterV1Service(s, g)
	for _, d := range kind.All() {
		if k, ok := s.kinds[d.Kind]; ok {
			k.register(g)
		}
	}
}

// NewGRPCServer returns a gRPC server with the SDK's interceptors (deadline,
// panic recovery, error conversion) and every registered service.
func (s *Server) NewGRPCServer(opts ...grpc.ServerOption) *grpc.Server {
	g := grpc.NewServer(append(opts, serverOptions()...)...)
	s.RegisterServices(g)
	return g
}

// serveAs serves srv, a server of the newest version of a kind, as its older
// version k too: each newer message is the older one with fields added
// under new numbers, so the newer handlers read an older host's requests
// and the host reads their answers, skipping the fields it does not know.
// Only k's own methods are served.
func serveAs(g *grpc.Server, newest *grpc.ServiceDesc, k kind.Kind, srv any) {
	d, _ := kind.Lookup(k)
	desc := *newest
	desc.ServiceName = d.Service
	desc.Methods = slices.DeleteFunc(slices.Clone(newest.Methods), func(m grpc.MethodDesc) bool {
		_, ok := d.Methods[m.MethodName]
		return !ok
	})
	g.RegisterService(&desc, srv)
}

// grpcPlugin adapts the server to go-plugin, which asks each named plugin in
// its map to register services; one entry registers them all.
type grpcPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	s *Server
}

func (p grpcPlugin) GRPCServer(_ *goplugin.GRPCBroker, g *grpc.Server) error {
	p.s.RegisterServices(g)
	return nil
}

func (p grpcPlugin) GRPCClient(context.Context, *goplugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, fmt.Errorf("the SDK serves plugins; it is not a host")
}

// Serve parses the flags the host passes (ignoring those it does not know),
// then serves the registered plugins until the host stops the process. It
// exits the process with status 1 on a registration mistake.
func (s *Server) Serve() {
	flags := pflag.NewFlagSet(filepath.Base(os.Args[0]), pflag.ContinueOnError)
	flags.ParseErrorsAllowlist.UnknownFlags = true
	logLevel := flags.String("log-level", "info", "log level: debug, info, warn or error")
	_ = flags.Parse(os.Args[1:])
	if err := s.level.UnmarshalText([]byte(*logLevel)); err != nil {
		s.log.Warn("ignoring bad --log-level", "value", *logLevel)
	}
	if err := s.Err(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	goplugin.Serve(s.serveConfig(nil))
}

func (s *Server) serveConfig(test *goplugin.ServeTestConfig) *goplugin.ServeConfig {
	return &goplugin.ServeConfig{
		HandshakeConfig: Handshake,
		// go-plugin registers every plugin of the map on one gRPC server; a
		// single entry registers all of this binary's services at once.
		Plugins: map[string]goplugin.Plugin{string(kind.PluginLister): grpcPlugin{s: s}},
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			return grpc.NewServer(append(opts, serverOptions()...)...)
		},
		Test: test,
	}
}

// ServeInProcess serves the registered plugins from this process, over
// the same protocol and socket as Serve, until ctx is done; it returns once
// they are reachable, with what a host reattaches to. plugintest's
// StartInProcess uses it: a plugin's test then runs without building a
// binary, and can share memory with the plugin or stop in it under a
// debugger.
func (s *Server) ServeInProcess(ctx context.Context) (*goplugin.ReattachConfig, error) {
	if err := s.Err(); err != nil {
		return nil, err
	}
	reattach := make(chan *goplugin.ReattachConfig, 1)
	stopped := make(chan struct{})
	cfg := s.serveConfig(&goplugin.ServeTestConfig{Context: ctx, ReattachConfigCh: reattach, CloseCh: stopped})
	// go-plugin traces every connection by default; in a test's output only
	// its errors belong.
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Level: hclog.Error, Output: os.Stderr})
	go goplugin.Serve(cfg)
	select {
	case rc := <-reattach:
		return rc, nil
	case <-stopped:
		// go-plugin has logged why (it could not listen, say).
		return nil, fmt.Errorf("serving plugins in process: the server stopped before it listened (see the log above)")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
