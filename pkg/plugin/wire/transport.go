package wire

import (
	"runtime"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// Handshake is the go-plugin handshake Velero and Salvor share: a host and
// a plugin that agree on it speak the same protocol.
var Handshake = goplugin.HandshakeConfig{
	ProtocolVersion:  2,
	MagicCookieKey:   "VELERO_PLUGIN",
	MagicCookieValue: "hello",
}

// MaxMessageSize bounds one gRPC message (an item with its backup, say) in
// either direction.
const MaxMessageSize = 64 << 20

// window is each HTTP/2 stream's and connection's flow-control window,
// fixed at the largest gRPC's bandwidth-delay estimation would grow it to.
// A fixed window switches that estimation off: it answers the data of a
// call with a PING the other process must wake up for and acknowledge,
// which on a local socket is a wake-up per call for nothing.
const window = 16 << 20

// DialOptions are the host's side of the transport settings.
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMessageSize), grpc.MaxCallSendMsgSize(MaxMessageSize)),
		grpc.WithStaticStreamWindowSize(window),
		grpc.WithStaticConnWindowSize(window),
	}
}

// ServerOptions are the plugin's side of the transport settings. Calls
// are served on long-lived workers, as many as a backup sends at once:
// a goroutine per call grew a fresh stack for every item's decode, an
// eighth of a plugin's CPU in a backup.
func ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.NumStreamWorkers(uint32(8 * runtime.GOMAXPROCS(0))),
		grpc.MaxRecvMsgSize(MaxMessageSize),
		grpc.MaxSendMsgSize(MaxMessageSize),
		grpc.StaticStreamWindowSize(window),
		grpc.StaticConnWindowSize(window),
	}
}
