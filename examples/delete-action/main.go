// Command delete-action is a DeleteItemAction: when a backup is deleted, it
// records each of the backup's items in an audit file (one JSON line per
// item), named by the EXAMPLE_DELETE_AUDIT_FILE environment variable, and
// logs it.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/salvor-dev/salvor/pkg/plugin/sdk"
)

func main() {
	sdk.NewServer().
		RegisterDeleteItemAction("example.io/delete-audit", func(log *slog.Logger) (sdk.DeleteItemAction, error) {
			return &audit{log: log, path: os.Getenv("EXAMPLE_DELETE_AUDIT_FILE")}, nil
		}).
		Serve()
}

type audit struct {
	log  *slog.Logger
	path string
	mu   sync.Mutex
}

func (a *audit) AppliesTo() (sdk.ResourceSelector, error) { return sdk.ResourceSelector{}, nil }

func (a *audit) Execute(in *sdk.DeleteItemActionExecuteInput) error {
	return a.ExecuteWithContext(context.Background(), in)
}

// ExecuteWithContext gives up when Salvor's deadline passes.
func (a *audit) ExecuteWithContext(ctx context.Context, in *sdk.DeleteItemActionExecuteInput) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	obj := in.Item.(*unstructured.Unstructured)
	entry := map[string]string{
		"backup": in.Backup.Name, "kind": obj.GetKind(), "namespace": obj.GetNamespace(), "name": obj.GetName(),
	}
	a.log.Info("item of a deleted backup", "backup", in.Backup.Name, "kind", obj.GetKind(), "name", obj.GetName())
	if a.path == "" {
		return nil
	}
	line, err := json.Marshal(entry)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	f, err := os.OpenFile(a.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("opening the audit file: %w", err)
	}
	defer f.Close()
	_, err = f.Write(append(line, '\n'))
	return err
}
