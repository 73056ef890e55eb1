// Package backup holds `salvor backup`: create, get, describe, logs and
// delete.
package backup
