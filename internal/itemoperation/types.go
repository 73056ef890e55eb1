package itemoperation

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/salvor-dev/salvor/pkg/plugin/api"
)

// Phase is where an operation is.
type Phase string

const (
	PhaseNew        Phase = "New"
	PhaseInProgress Phase = "InProgress"
	PhaseCompleted  Phase = "Completed"
	PhaseFailed     Phase = "Failed"
)

// ResourceIdentifier names an item; inside these files its keys are
// capitalised, as Velero writes them.
type ResourceIdentifier struct {
	Group     string
	Resource  string
	Namespace string
	Name      string
}

// FromAPI converts a plugin's resource identifier.
func FromAPI(id api.ResourceIdentifier) ResourceIdentifier {
	return ResourceIdentifier{Group: id.Group, Resource: id.Resource, Namespace: id.Namespace, Name: id.Name}
}

// API converts back to a plugin's resource identifier.
func (r ResourceIdentifier) API() api.ResourceIdentifier {
	return api.ResourceIdentifier{GroupResource: schema.GroupResource{Group: r.Group, Resource: r.Resource}, Namespace: r.Namespace, Name: r.Name}
}

// String names the item in messages, as a plugin's identifier does.
func (r ResourceIdentifier) String() string { return r.API().String() }

// Status is an operation's state, updated from the plugin's Progress.
type Status struct {
	Phase          Phase        `json:"phase,omitempty"`
	Error          string       `json:"error,omitempty"`
	NCompleted     int64        `json:"nCompleted,omitempty"`
	NTotal         int64        `json:"nTotal,omitempty"`
	OperationUnits string       `json:"operationUnits,omitempty"`
	Description    string       `json:"description,omitempty"`
	Created        *metav1.Time `json:"created,omitempty"`
	Started        *metav1.Time `json:"started,omitempty"`
	Updated        *metav1.Time `json:"updated,omitempty"`
}

// BackupOperationSpec says which plugin started which operation for which item.
type BackupOperationSpec struct {
	BackupName         string               `json:"backupName"`
	BackupUID          string               `json:"backupUID"`
	BackupItemAction   string               `json:"backupItemAction"`
	ResourceIdentifier ResourceIdentifier   `json:"resourceIdentifier"`
	OperationID        string               `json:"operationID"`
	PostOperationItems []ResourceIdentifier `json:"postOperationItems,omitempty"`
}

// BackupOperation is one record of a backup's item operations file.
type BackupOperation struct {
	Spec   BackupOperationSpec `json:"spec"`
	Status Status              `json:"status"`
}

// RestoreOperationSpec is BackupOperationSpec's restore counterpart.
type RestoreOperationSpec struct {
	RestoreName        string             `json:"restoreName"`
	RestoreUID         string             `json:"restoreUID"`
	RestoreItemAction  string             `json:"restoreItemAction"`
	ResourceIdentifier ResourceIdentifier `json:"resourceIdentifier"`
	OperationID        string             `json:"operationID"`
}

// RestoreOperation is one record of a restore's item operations file.
type RestoreOperation struct {
	Spec   RestoreOperationSpec `json:"spec"`
	Status Status               `json:"status"`
}
