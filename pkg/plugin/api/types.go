package api

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// Backup and Restore are the objects plugins receive. They travel as JSON, so
// a plugin reads the fields Velero's Backup and Restore have under the same names.
type (
	Backup  = salvorv1.Backup
	Restore = salvorv1.Restore
)

// ResourceIdentifier names one Kubernetes object: an item a plugin wants backed
// up or restored alongside the one it was given.
type ResourceIdentifier struct {
	schema.GroupResource
	Namespace string
	Name      string
}

func (r ResourceIdentifier) String() string {
	if r.Namespace == "" {
		return fmt.Sprintf("%s %s", r.GroupResource, r.Name)
	}
	return fmt.Sprintf("%s %s/%s", r.GroupResource, r.Namespace, r.Name)
}

// ResourceSelector is what an action's AppliesTo returns: the items its
// Execute is called for. The zero value selects everything.
type ResourceSelector struct {
	IncludedNamespaces []string
	ExcludedNamespaces []string
	IncludedResources  []string
	ExcludedResources  []string
	// LabelSelector is a label selector in its string form, e.g. "app=web".
	LabelSelector string
}

// OperationProgress is what a plugin reports about a long-running operation.
type OperationProgress struct {
	// Completed is true once the operation has ended, successfully or not.
	Completed bool
	// Err, when set, says why the operation failed.
	Err string
	// NCompleted and NTotal count OperationUnits (items, bytes, ...).
	NCompleted     int64
	NTotal         int64
	OperationUnits string
	Description    string
	Started        time.Time
	Updated        time.Time
}

// RestoreItemActionExecuteInput is what a RestoreItemAction's Execute gets.
type RestoreItemActionExecuteInput struct {
	// Item is the item about to be restored, possibly changed by earlier actions.
	Item runtime.Unstructured
	// ItemFromBackup is the item as it was in the backup.
	ItemFromBackup runtime.Unstructured
	Restore        *Restore
}

// RestoreItemActionExecuteOutput is what a RestoreItemAction's Execute returns.
type RestoreItemActionExecuteOutput struct {
	// UpdatedItem is the item to restore; nil keeps the input item.
	UpdatedItem runtime.Unstructured
	// AdditionalItems are restored before this item.
	AdditionalItems []ResourceIdentifier
	// SkipRestore leaves this item out of the restore.
	SkipRestore bool
	// OperationID, when set, names a long-running operation that Salvor
	// follows through Progress and Cancel. (v2 only.)
	OperationID string
	// WaitForAdditionalItems asks Salvor to call AreAdditionalItemsReady until
	// it returns true before restoring this item. (v2 only.)
	WaitForAdditionalItems bool
	// AdditionalItemsReadyTimeout bounds that wait; zero means the server's
	// default. (v2 only.)
	AdditionalItemsReadyTimeout time.Duration
}

// NewRestoreItemActionExecuteOutput returns an output that restores item as is.
func NewRestoreItemActionExecuteOutput(item runtime.Unstructured) *RestoreItemActionExecuteOutput {
	return &RestoreItemActionExecuteOutput{UpdatedItem: item}
}

// WithoutRestore marks the output so the item is not restored.
func (o *RestoreItemActionExecuteOutput) WithoutRestore() *RestoreItemActionExecuteOutput {
	o.SkipRestore = true
	return o
}

// DeleteItemActionExecuteInput is what a DeleteItemAction's Execute gets.
type DeleteItemActionExecuteInput struct {
	Item   runtime.Unstructured
	Backup *Backup
}
