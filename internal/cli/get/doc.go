// Package get is the `get [NAME...]` verb every noun of the CLI shares:
// the named objects, or all of them in Salvor's namespace, as a table or
// as YAML or JSON that `kubectl apply` takes as it is. Each noun gives
// only its columns (and any filter flags of its own); label columns are
// everyone's.
package get
