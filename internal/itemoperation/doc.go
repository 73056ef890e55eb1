// Package itemoperation holds the records of long-running plugin
// operations stored with a backup or restore (<name>-itemoperations.json.gz),
// in the JSON shape Velero uses, so either tool reads the other's.
package itemoperation
