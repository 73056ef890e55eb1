// Package output prints objects the way every get and describe command does:
// a table, or the object as JSON or YAML with -o.
package output
