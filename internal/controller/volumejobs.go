package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/salvor-dev/salvor/internal/operations"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// A backup's or restore's volume data is moved by jobs with resources of
// their own (DataUpload and PodVolumeBackup, DataDownload and
// PodVolumeRestore), which its operations follow through their plugins.
// Those polls back off towards --operation-sync (10 s), so a copy that
// ended just after one was seen up to that long later: seconds added to
// every backup and restore of a volume. A job that changes phase wakes the
// backup or restore it works for instead, and its operations are asked
// about at once.

// jobPhase is a volume job's phase ("" for anything else).
func jobPhase(o client.Object) salvorv1.DataMoverPhase {
	switch j := o.(type) {
	case *salvorv1.DataUpload:
		return j.Status.Phase
	case *salvorv1.PodVolumeBackup:
		return j.Status.Phase
	case *salvorv1.DataDownload:
		return j.Status.Phase
	case *salvorv1.PodVolumeRestore:
		return j.Status.Phase
	}
	return ""
}

// phaseChanged passes the updates of a job that change its phase: its
// progress (bytes done) is not news the operations wait for.
var phaseChanged = builder.WithPredicates(phaseChangedPredicate)

var phaseChangedPredicate = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return jobPhase(e.ObjectOld) != jobPhase(e.ObjectNew)
	},
}

// wakeOwner maps a job to the backup or restore its nameLabel names (the
// name as salvorv1.LabelValue wrote it) and makes that one's operations
// due now: those tracker follows under key(its name). owners lists the
// namespace's backups or restores, for a name too long to be its own
// label.
func wakeOwner(c client.Reader, tracker *operations.Tracker, key func(types.NamespacedName) string, nameLabel string, owners func() client.ObjectList) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(wakeMap(c, tracker, key, nameLabel, owners))
}

func wakeMap(c client.Reader, tracker *operations.Tracker, key func(types.NamespacedName) string, nameLabel string, owners func() client.ObjectList) handler.MapFunc {
	return func(ctx context.Context, job client.Object) []reconcile.Request {
		name := ownerName(job.GetLabels()[nameLabel], func() ([]string, error) {
			list := owners()
			if err := c.List(ctx, list, client.InNamespace(job.GetNamespace())); err != nil {
				return nil, err
			}
			var names []string
			err := meta.EachListItem(list, func(o runtime.Object) error {
				if m, ok := o.(client.Object); ok {
					names = append(names, m.GetName())
				}
				return nil
			})
			return names, err
		})
		if name == "" {
			return nil
		}
		owner := types.NamespacedName{Namespace: job.GetNamespace(), Name: name}
		tracker.Wake(key(owner))
		return []reconcile.Request{{NamespacedName: owner}}
	}
}

// ownerName is the name whose label value is label: the label itself when
// the name was short enough to be one, or else the one of names (asked
// for only then) that shortens to it; "" when none does.
func ownerName(label string, names func() ([]string, error)) string {
	// LabelValue keeps a name of up to 63 characters as it is; only one of
	// 63 may stand for a longer name.
	if len(label) < 63 {
		return label
	}
	all, err := names()
	if err != nil {
		return ""
	}
	for _, n := range all {
		if salvorv1.LabelValue(n) == label {
			return n
		}
	}
	return ""
}
