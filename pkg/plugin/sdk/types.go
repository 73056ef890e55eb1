package sdk

import "github.com/salvor-dev/salvor/pkg/plugin/api"

// The values a plugin exchanges with the host; see package api.
type (
	Backup                         = api.Backup
	Restore                        = api.Restore
	ResourceIdentifier             = api.ResourceIdentifier
	ResourceSelector               = api.ResourceSelector
	OperationProgress              = api.OperationProgress
	RestoreItemActionExecuteInput  = api.RestoreItemActionExecuteInput
	RestoreItemActionExecuteOutput = api.RestoreItemActionExecuteOutput
	DeleteItemActionExecuteInput   = api.DeleteItemActionExecuteInput
)

// NewRestoreItemActionExecuteOutput returns an output that restores item as is.
var NewRestoreItemActionExecuteOutput = api.NewRestoreItemActionExecuteOutput
