package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ServerStatusRequestPhase is where a ServerStatusRequest is. The values are Velero's.
type ServerStatusRequestPhase string

const (
	ServerStatusRequestPhaseNew       ServerStatusRequestPhase = "New"
	ServerStatusRequestPhaseProcessed ServerStatusRequestPhase = "Processed"
)

// ServerStatusRequestSpec is empty: the request asks for the server's status.
type ServerStatusRequestSpec struct{}

// PluginInfo is one plugin the server runs.
type PluginInfo struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
}

// ServerStatusRequestStatus is the server's answer.
type ServerStatusRequestStatus struct {
	// +optional
	Phase ServerStatusRequestPhase `json:"phase,omitempty"`
	// +optional
	// +nullable
	ProcessedTimestamp *metav1.Time `json:"processedTimestamp,omitempty"`
	// ServerVersion is the answering server's version.
	// +optional
	ServerVersion string `json:"serverVersion,omitempty"`
	// ServerCommit and ServerBuildDate say which build it is.
	// +optional
	ServerCommit string `json:"serverCommit,omitempty"`
	// +optional
	ServerBuildDate string `json:"serverBuildDate,omitempty"`
	// +optional
	ServerGoVersion string `json:"serverGoVersion,omitempty"`
	// Plugins are the plugins the server runs.
	// +optional
	Plugins []PluginInfo `json:"plugins,omitempty"`
}

// ServerStatusRequest asks the server which version it is and which
// plugins it runs (`salvor version`); the server answers in its status and
// deletes it a minute later.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
type ServerStatusRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec ServerStatusRequestSpec `json:"spec,omitempty"`
	// +optional
	Status ServerStatusRequestStatus `json:"status,omitempty"`
}

// ServerStatusRequestList is a list of ServerStatusRequests.
//
// +kubebuilder:object:root=true
type ServerStatusRequestList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ServerStatusRequest `json:"items"`
}
