package controller

import (
	"bytes"
	"compress/gzip"
	"context"
	"log/slog"
	"os"
	"sync"

	"github.com/salvor-dev/salvor/internal/persistence"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// runLog is a backup's or a restore's own log: JSON lines, gzip'd into a
// temporary file (not memory), uploaded with its results; every line also
// goes to the server's log.
type runLog struct {
	file *os.File
	gz   *gzip.Writer
	mu   sync.Mutex
	*slog.Logger
}

func newRunLog(server *slog.Logger, backup string) (*runLog, error) {
	f, err := os.CreateTemp("", "salvor-log-*.gz")
	if err != nil {
		return nil, err
	}
	l := &runLog{file: f, gz: gzip.NewWriter(f)}
	own := slog.NewJSONHandler(lockedWriter{l}, &slog.HandlerOptions{Level: slog.LevelInfo})
	l.Logger = slog.New(teeHandler{own, server.Handler()}).With("backup", backup)
	return l, nil
}

type lockedWriter struct{ l *runLog }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.l.mu.Lock()
	defer w.l.mu.Unlock()
	return w.l.gz.Write(p)
}

// finish closes the gzip stream and rewinds the file for upload.
func (l *runLog) finish() (*os.File, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.gz.Close(); err != nil {
		return nil, err
	}
	_, err := l.file.Seek(0, 0)
	return l.file, err
}

func (l *runLog) remove() {
	l.file.Close()
	os.Remove(l.file.Name())
}

// teeHandler sends records to the run's log and the server's.
type teeHandler struct{ a, b slog.Handler }

func (t teeHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return t.a.Enabled(ctx, l) || t.b.Enabled(ctx, l)
}

func (t teeHandler) Handle(ctx context.Context, r slog.Record) error {
	if t.a.Enabled(ctx, r.Level) {
		_ = t.a.Handle(ctx, r.Clone())
	}
	if t.b.Enabled(ctx, r.Level) {
		return t.b.Handle(ctx, r)
	}
	return nil
}

func (t teeHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return teeHandler{t.a.WithAttrs(as), t.b.WithAttrs(as)}
}

func (t teeHandler) WithGroup(g string) slog.Handler {
	return teeHandler{t.a.WithGroup(g), t.b.WithGroup(g)}
}

// logEnd appends to a backup's log in its location the line that says how
// it ended, once its plugin operations are done (the first pass's log ends
// saying it waits): the log's last line then agrees with the phase.
// Logs are best effort, as in Velero.
func logEnd(ctx context.Context, store *persistence.BackupStore, b *salvorv1.Backup, server *slog.Logger, reason string) {
	var buf bytes.Buffer
	l := slog.New(slog.NewJSONHandler(&buf, nil)).With("backup", b.Name)
	st := b.Status
	if st.Phase == salvorv1.BackupPhaseFailed {
		l.Error("backup failed", "phase", st.Phase, "reason", reason)
	} else {
		l.Info("backup finished", "phase", st.Phase, "errors", st.Errors, "warnings", st.Warnings,
			"operationsCompleted", st.BackupItemOperationsCompleted, "operationsFailed", st.BackupItemOperationsFailed)
	}
	if err := store.AppendLog(ctx, b.Name, buf.Bytes()); err != nil {
		server.Warn("adding the end to a backup's log", "backup", b.Name, "error", err)
	}
}
