// Package sdk is what a plugin author imports to write a Salvor plugin.
//
// A plugin is a binary whose main registers implementations and serves them:
//
//	func main() {
//		sdk.NewServer().
//			RegisterBackupItemActionV2("example.io/my-action", newMyAction).
//			Serve()
//	}
//
//	func newMyAction(log *slog.Logger) (sdk.BackupItemActionV2, error) {
//		return &myAction{log: log}, nil
//	}
//
// The interfaces are those of Velero's plugin designs (BackupItemAction v1
// and v2, RestoreItemAction v1 and v2, VolumeSnapshotter v1 and v2,
// DeleteItemAction, ObjectStore), and the binary speaks Velero's plugin
// protocol, so the same binary runs under Salvor and under Velero.
//
// # Contexts and deadlines
//
// Every call from the host carries a deadline. A plugin sees it by
// implementing the context-taking form of a method (ExecuteWithContext,
// ProgressWithContext, PutObjectWithContext, ...; see the ...WithContext
// interfaces): the server calls that form when the implementation has it, and
// the plain form otherwise, deciding for each method once, when the factory
// has made the implementation. The context is cancelled when the deadline passes
// or the host cancels the call (for example because the user cancelled the
// backup). A plugin that keeps running past the deadline plus the host's
// grace period has its process killed and restarted, so long work belongs in
// an operation (an operation ID returned from Execute), not in the call.
//
// # Operations that survive a restart
//
// Progress and Cancel get only the operation ID. The host may restart the
// plugin's process at any time (after a crash, a hung call or an upgrade) and
// then asks the new process about operations the old one started. So the ID
// must be enough to find the operation: encode its state in the ID (a start
// time and a length, say), or keep it somewhere that outlives the process (a
// file, the storage system's own job ID, a Kubernetes object). The examples
// under examples/ do both.
//
// # Errors and logs
//
// An error returned by a plugin reaches the host with its message intact; wrap
// it with WithStack (or build it with Errorf) and its stack trace goes along.
// A panic becomes an error carrying the panic's text and stack. Log through
// the *slog.Logger handed to the factory: lines go to stderr as JSON and the
// host re-emits them tagged with the plugin's name. Never write to stdout: the
// plugin protocol owns it.
package sdk
