package controller

import (
	"context"

	"github.com/salvor-dev/salvor/internal/itemoperation"
	"github.com/salvor-dev/salvor/internal/metrics"
	"github.com/salvor-dev/salvor/internal/operations"
	"github.com/salvor-dev/salvor/internal/plugin/host"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
	"github.com/salvor-dev/salvor/pkg/plugin/api"
)

// operationAction is an item action whose operations run for the backup
// or restore (O) it acted for.
type operationAction[O any] interface {
	host.Client
	Progress(ctx context.Context, operationID string, of O) (api.OperationProgress, error)
	Cancel(ctx context.Context, operationID string, of O) error
}

// actionPlugins calls the item actions (A) that operations belong to.
type actionPlugins[A operationAction[O], O any] struct {
	m    *host.Manager
	kind host.Kind[A]
	of   O
}

// backupPlugins and restorePlugins are the two kinds in use.
type (
	backupPlugins  = actionPlugins[host.BackupItemAction, *salvorv1.Backup]
	restorePlugins = actionPlugins[host.RestoreItemAction, *salvorv1.Restore]
)

func backupActions(m *host.Manager, b *salvorv1.Backup) backupPlugins {
	return backupPlugins{m, host.BackupItemActions, b}
}

func restoreActions(m *host.Manager, rs *salvorv1.Restore) restorePlugins {
	return restorePlugins{m, host.RestoreItemActions, rs}
}

func (p actionPlugins[A, O]) Progress(ctx context.Context, plugin, id string) (api.OperationProgress, error) {
	a, err := host.Get(ctx, p.m, p.kind, plugin, nil)
	if err != nil {
		return api.OperationProgress{}, err
	}
	return a.Progress(ctx, id, p.of)
}

func (p actionPlugins[A, O]) Cancel(ctx context.Context, plugin, id string) error {
	a, err := host.Get(ctx, p.m, p.kind, plugin, nil)
	if err != nil {
		return err
	}
	metrics.OperationCancels.WithLabelValues(plugin).Inc()
	return a.Cancel(ctx, id, p.of)
}

func viewOf(ops []itemoperation.BackupOperation) []operations.Operation {
	return view(ops, func(op *itemoperation.BackupOperation) operations.Operation {
		return operations.Operation{Plugin: op.Spec.BackupItemAction, OperationID: op.Spec.OperationID, Item: op.Spec.ResourceIdentifier.String(), Status: &op.Status}
	})
}

// view is what the tracker sees of a backup's or restore's operations: one
// entry per record, its status shared so the tracker updates the record.
func view[O any](ops []O, of func(*O) operations.Operation) []operations.Operation {
	out := make([]operations.Operation, len(ops))
	for i := range ops {
		out[i] = of(&ops[i])
	}
	return out
}
